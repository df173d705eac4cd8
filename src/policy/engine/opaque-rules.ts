import { analyzeInline } from "../opaque/inline-code.js";
import {
  awkExecutes,
  awkProgram,
  awkProgramFile,
  type Invocation,
  interpreterInvocation,
  interpreterName,
  isStdinPath,
  SHELLS,
  shellInvocation as shellInvocationOf,
} from "../opaque/invocation.js";
import { SQL_CLIENTS } from "../rules/data.js";
import type { Redirect, StdinFeed } from "../shell/script.js";
import { DYNAMIC, type Word } from "../shell/words.js";
import { joinAll } from "../wrappers/unwrap.js";
import { type ArgvClassifier, type ArgvCtx, originBasis, type StdinCtx, scriptWord } from "./context.js";

/**
 * Opaque execution: code that runs without appearing as an argv.
 *
 * - A shell reading a script string is parsed again (`bash -c`, `eval`); a
 *   string only known at run time is Tier 3 (dynamic_command).
 * - Anything piped into a shell or interpreter is Tier 3 (piped_to_shell; or
 *   remote_code / decoded_code when a downloader or decoder feeds the pipe):
 *   the program is whatever arrives, and nothing here can see it.
 * - A here-doc or here-string fed to a shell is parsed as a script.
 * - An inline interpreter program (python -c, perl -e, node -e ...) is Tier 2
 *   (inline_interpreter): it can do anything the shell can, but the text is
 *   visible. It is Tier 3 when the text visibly deletes or destroys, and the
 *   shell command lines it passes to system()/subprocess are classified too.
 *
 * Returns true when the command was handled here and the rule tables need not look.
 * `argvHit` is the engine's classifier of an argv, for the one a command runs
 * by name (`python3 -m MODULE`); it is handed in so this module need not
 * import the engine that calls it.
 */
export function classifyOpaque(
  name: string,
  args: Word[],
  c: ArgvCtx,
  unwraps: number,
  argvHit: ArgvClassifier,
): boolean {
  if (unwraps === 0 && c.stdin === null) {
    // `bash < f.sh`, `sudo mysql db < dump.sql`, `ssh host sh < f`: the file is this command's stdin,
    // and the stdin of every command it wraps.
    const input = c.index.inputRedirect(c.part);
    if (input !== null) c.stdin = fileStdin(input);
  }
  if (SQL_CLIENTS.has(name) && unreadableStdin(c.stdin)) {
    // A dump or script fed to a database client: what it drops or overwrites is not visible.
    c.best.consider(2, "data_store_destruction", c.part);
  }
  if (SHELLS.has(name)) {
    runInvocation(shellInvocationOf(args), "shell", c);
    return true;
  }
  if (name === "pwsh" || name === "powershell" || name === "cmd") {
    c.scope.nestedWindows([name, ...args.map((w) => quoteForWindows(w.value))].join(" "), c.best, c.part);
    return true;
  }
  const interp = interpreterName(name);
  if (interp !== null) {
    const inv = interpreterInvocation(interp, args);
    if (inv.kind === "subcommand") return false;
    if (inv.kind === "module") {
      // `python3 -m http.server`, `-m pdb script.py`: a module that serves, debugs or runs other code.
      if (RUNNING_MODULES.test(inv.argv[0]?.value ?? "")) c.best.consider(2, "opaque_program", c.part);
      argvHit(inv.argv, c, unwraps + 1);
    } else
      runInvocation(
        inv,
        interp === "python" || interp === "pypy" || interp === "ipython" ? "python" : "program",
        c,
      );
    return true;
  }
  switch (name) {
    case "eval":
      if (args.length > 0) scriptWord(joinAll(args), c, c.stdin);
      return true;
    case "source":
    case ".": {
      const file = args[0];
      if (file !== undefined) runInvocation({ kind: "file", path: file }, "shell", c);
      return true;
    }
    case "trap":
      if (args.length >= 2 && !args[0]!.value.startsWith("-")) scriptWord(args[0]!, c, null);
      return true;
    case "alias":
      // An alias body runs later under a command name; judge it now.
      for (const a of args) {
        const eq = a.value.indexOf("=");
        if (eq > 0) scriptWord({ ...a, value: a.value.slice(eq + 1) }, c, null);
      }
      return true;
    case "awk":
    case "gawk":
    case "mawk":
    case "nawk":
    case "busybox-awk": {
      if (awkProgramFile(args)) {
        c.best.consider(2, "script_file", c.part);
        return true;
      }
      const program = awkProgram(args);
      if (program !== null && (program.dynamic || awkExecutes(program.value))) inlineProgram(program, c);
      return true;
    }
    case "at":
    case "batch":
      // at reads the job's commands from stdin and runs them with sh later.
      if (c.stdin !== null) stdinCode("shell", c);
      return false;
    default:
      return false;
  }
}

/**
 * Python modules run with -m that serve files or a port, debug, profile or trace another program,
 * or open a REPL: what they do is not the module's name.
 */
const RUNNING_MODULES =
  /^(?:http\.server|SimpleHTTPServer|CGIHTTPServer|smtpd|aiosmtpd|pydoc|pdb|ipdb|trace|cProfile|profile|runpy|code|idlelib|webbrowser|ftplib|xmlrpc\.server|wsgiref\.simple_server|asyncio|uvicorn|gunicorn|flask|django|celery)$/;

function quoteForWindows(value: string): string {
  return /[\s;|&{}()]/.test(value) ? `"${value.replaceAll('"', "")}"` : value;
}

/** What reads the program: a shell, Python (which has a grammar here), or another interpreter. */
type Reader = "shell" | "python" | "program";

function runInvocation(inv: Invocation, kind: Reader, c: ArgvCtx): void {
  switch (inv.kind) {
    case "inline":
      if (kind === "shell") scriptWord(inv.code, c, c.stdin);
      else if (kind === "python") pythonProgram(inv.code, c, null);
      else inlineProgram(inv.code, c);
      return;
    case "stdin":
      stdinCode(kind, c);
      return;
    case "file":
      if (inv.path.procSub) {
        // bash <(curl ...), source <(base64 -d ...): the script is another command's output.
        c.best.consider(3, originBasis(c.index.originOfSubst(inv.path.subst), "piped_to_shell"), c.part);
      } else if (isStdinPath(inv.path.value)) {
        // Naming stdin explicitly: whatever arrives there runs, even when nothing visible feeds it.
        if (c.stdin === null) c.best.consider(3, "piped_to_shell", c.part);
        else stdinCode(kind, c);
      } else {
        // A script file: its text is not part of the call, so nothing here can read it.
        c.best.consider(2, "script_file", c.part);
      }
      return;
    case "module":
    case "none":
    case "subcommand":
      return;
  }
}

/** Stdin feeds that are a file redirected in with `<`: their text is not part of the call. */
const FILE_FEEDS = new WeakSet<StdinFeed>();

/** The stdin of a command whose input is redirected from a file (`< /dev/null` feeds nothing). */
function fileStdin(r: Redirect): StdinCtx | null {
  const target = r.target!;
  if (!target.dynamic && target.value === "/dev/null") return null;
  const feed: StdinFeed = { text: "", dynamic: target.dynamic || target.procSub, subst: target.subst };
  FILE_FEEDS.add(feed);
  return { piped: false, origin: null, feed, literal: null };
}

/** Stdin whose text cannot be read here: a file, or a pipe from anything but echo/printf/a here-doc. */
function unreadableStdin(stdin: StdinCtx | null): boolean {
  if (stdin === null) return false;
  if (stdin.piped) return stdin.literal === null;
  return stdin.feed !== null && FILE_FEEDS.has(stdin.feed);
}

/** A shell or interpreter that takes its program from stdin. */
function stdinCode(kind: Reader, c: ArgvCtx): void {
  const stdin: StdinCtx | null = c.stdin;
  if (stdin === null) return; // interactive: what is typed later is classified when it is sent
  if (stdin.feed !== null && FILE_FEEDS.has(stdin.feed)) {
    // `bash < f.sh`, `python3 < x.py`: the program is a file fed in, unseen like a piped one.
    c.best.consider(3, originBasis(c.index.originOfSubst(stdin.feed.subst), "piped_to_shell"), c.part);
    return;
  }
  if (stdin.piped) {
    // Echoed or here-doc text we can read is judged first, for a more telling basis.
    if (kind === "shell" && stdin.literal !== null && stdin.origin === null)
      c.scope.nested(stdin.literal, c.best, c.part, null);
    c.best.consider(3, originBasis(stdin.origin, "piped_to_shell"), c.part);
    return;
  }
  const feed = stdin.feed;
  if (feed === null) return;
  if (feed.dynamic) {
    const origin = c.index.originOfSubst(feed.subst);
    if (origin !== null) c.best.consider(3, origin, c.part);
  }
  const code: Word = {
    value: feed.text,
    dynamic: false,
    subst: [],
    procSub: false,
    glob: false,
    text: feed.text,
  };
  if (kind === "shell") c.scope.nested(feed.text, c.best, c.part, null);
  else if (kind === "python") pythonProgram(code, c, feed);
  else {
    // No grammar for this language: the program is read only for the shell commands it names.
    c.best.consider(2, "opaque_program", c.part);
    inlineProgram(code, c);
  }
}

/**
 * A Python program given inline or on stdin inside shell text: at least
 * Tier 2 (inline_interpreter, as for every inline program), raised by what
 * the Python classifier finds in it.
 */
function pythonProgram(code: Word, c: ArgvCtx, feed: StdinFeed | null): void {
  if (code.dynamic && code.value.trim() === DYNAMIC) {
    c.best.consider(3, originBasis(c.index.originOfSubst(code.subst), "dynamic_command"), c.part);
    return;
  }
  c.best.consider(2, "inline_interpreter", c.part);
  // An unknown stretch becomes a name, so the literal rest of the program is still read.
  c.scope.nestedPython(code.value.replaceAll(DYNAMIC, "__relay_unknown__"), c.best, c.part, feed);
}

function inlineProgram(code: Word, c: ArgvCtx): void {
  if (code.dynamic && code.value.trim() === DYNAMIC) {
    c.best.consider(3, originBasis(c.index.originOfSubst(code.subst), "dynamic_command"), c.part);
    return;
  }
  const found = analyzeInline(code.value);
  c.best.consider(found.destructive ? 3 : 2, "inline_interpreter", c.part);
  for (const line of found.commands) {
    if (c.best.done) return;
    c.scope.nested(line, c.best, c.part, null);
  }
}
