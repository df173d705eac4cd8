import type { Word } from "../shell/words.js";

/**
 * Knowledge about code that is executed without being visible in the argv:
 * shells and interpreters, and how each takes its program (an inline string,
 * stdin, a file, a module). Where piped code comes from (decoders.ts) and
 * what an inline program does (inline-code.ts) are known beside it.
 */

export const SHELLS = new Set([
  "sh",
  "bash",
  "dash",
  "zsh",
  "ksh",
  "mksh",
  "ash",
  "yash",
  "fish",
  "csh",
  "tcsh",
  "rbash",
  "ksh93",
  "pdksh",
  "posh",
]);

/** How a shell or interpreter gets the program it runs. */
export type Invocation =
  | { kind: "inline"; code: Word }
  | { kind: "stdin" }
  | { kind: "file"; path: Word }
  | { kind: "module"; argv: Word[] }
  | { kind: "none" }
  /** A package-manager subcommand of a runtime (`bun remove x`): judged like any other tool's. */
  | { kind: "subcommand" };

/** Shell options that take the next word as their value. */
const SHELL_VALUED = new Set(["-o", "+o", "-O", "+O", "--rcfile", "--init-file"]);

export function shellInvocation(args: Word[]): Invocation {
  let command = false;
  let stdin = false;
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === "--" || v === "-") {
      const next = args[i + 1];
      if (next === undefined || (stdin && !command)) return { kind: "stdin" };
      return command ? { kind: "inline", code: next } : { kind: "file", path: next };
    }
    if (SHELL_VALUED.has(v)) {
      if (v === "-o" && args[i + 1]?.value === "noexec") return { kind: "none" };
      i++;
      continue;
    }
    if (v.startsWith("--")) {
      if (v === "--command") command = true;
      continue;
    }
    if ((v.startsWith("-") || v.startsWith("+")) && v.length > 1 && !args[i]!.dynamic) {
      // -n (noexec) reads the script and runs nothing: a syntax check.
      if (v.startsWith("-") && v.includes("n")) return { kind: "none" };
      if (v.includes("c")) command = true;
      if (v.includes("s")) stdin = true;
      continue;
    }
    if (command) return { kind: "inline", code: args[i]! };
    if (stdin) return { kind: "stdin" };
    return { kind: "file", path: args[i]! };
  }
  return command ? { kind: "none" } : { kind: "stdin" };
}

interface InterpreterSpec {
  /** Options whose value is the program text. */
  inline: string[];
  /** Letters that, inside a short cluster, mean "the program follows" (perl -ne). */
  inlineLetters: string;
  /** Options that take a separate value. */
  valued: string[];
  /** Option that names a module to run (`python -m pip`). */
  module: string | null;
  /**
   * Words that name a subcommand of a runtime that is also a package manager
   * (`bun info x`), not a script file; `run` is passed over, since the word after
   * it is the file (or a package script, which is just as unreadable here).
   */
  subcommands?: ReadonlySet<string>;
  /** Subcommands whose next word is program text (`deno eval 'code'`). */
  evalWords?: ReadonlySet<string>;
  /** Options that only check the program's syntax and run nothing (`node --check`, `php -l`, `ruby -c`). */
  check?: readonly string[];
  /** Options whose value is a script file to run (`expect -f x`, `php -f x`, `guile -s x`). */
  fileOptions?: readonly string[];
  /** Letters that take the rest of a short cluster as their value (`perl -MFile::Path`, `ruby -rfileutils`). */
  valuedLetters?: string;
}

/** An interpreter that takes `-e CODE` (or the options named) and a script file as its first operand. */
function plainSpec(
  inline: string[],
  valued: string[] = [],
  more: Partial<InterpreterSpec> = {},
): InterpreterSpec {
  return { inline, inlineLetters: "", valued, module: null, ...more };
}

const PY: InterpreterSpec = {
  inline: ["-c"],
  inlineLetters: "c",
  valued: ["-W", "-X", "--check-hash-based-pycs"],
  module: "-m",
};
const PERL: InterpreterSpec = {
  inline: ["-e", "-E"],
  inlineLetters: "eE",
  valued: ["-I", "-M", "-m", "-x"],
  module: null,
  valuedLetters: "IMmxCdDFi",
};
const RUBY: InterpreterSpec = {
  inline: ["-e"],
  inlineLetters: "e",
  valued: ["-I", "-r", "-C", "-E"],
  module: null,
  check: ["-c"],
  valuedLetters: "IrCEFiKTWx",
};
const NODE: InterpreterSpec = {
  inline: ["-e", "--eval", "-p", "--print"],
  inlineLetters: "ep",
  valued: [
    "-r",
    "--require",
    "--import",
    "--input-type",
    "--loader",
    "--experimental-loader",
    "-C",
    "--conditions",
  ],
  module: null,
  check: ["-c", "--check"],
};
const BUN: InterpreterSpec = {
  ...NODE,
  subcommands: new Set([
    "run",
    "test",
    "x",
    "repl",
    "exec",
    "init",
    "create",
    "install",
    "i",
    "add",
    "a",
    "remove",
    "rm",
    "update",
    "outdated",
    "link",
    "unlink",
    "publish",
    "patch",
    "pm",
    "info",
    "why",
    "audit",
    "build",
    "upgrade",
    "completions",
    "help",
  ]),
};
const PHP: InterpreterSpec = {
  inline: ["-r", "-B", "-R", "-E"],
  inlineLetters: "",
  valued: ["-c", "-d", "-z"],
  module: null,
  check: ["-l", "--syntax-check"],
  fileOptions: ["-f", "--file"],
};
const DENO: InterpreterSpec = {
  ...NODE,
  check: [],
  subcommands: new Set(
    (
      "test fmt lint check info doc compile install uninstall upgrade task bench coverage init repl " +
      "types vendor cache add remove publish jupyter clean outdated completions help lsp"
    ).split(" "),
  ),
  evalWords: new Set(["eval"]),
};
const LUA: InterpreterSpec = { inline: ["-e"], inlineLetters: "", valued: ["-l"], module: null };
const RSCRIPT: InterpreterSpec = { inline: ["-e"], inlineLetters: "", valued: [], module: null };
const OSASCRIPT: InterpreterSpec = { inline: ["-e"], inlineLetters: "", valued: ["-l", "-s"], module: null };

const INTERPRETERS = new Map<string, InterpreterSpec>([
  ["python", PY],
  ["pypy", PY],
  ["ipython", PY],
  ["perl", PERL],
  ["ruby", RUBY],
  ["node", NODE],
  ["nodejs", NODE],
  ["bun", BUN],
  ["php", PHP],
  ["lua", LUA],
  ["luajit", LUA],
  ["rscript", RSCRIPT],
  ["osascript", OSASCRIPT],
  ["tclsh", { inline: [], inlineLetters: "", valued: [], module: null }],
  ["irb", { inline: [], inlineLetters: "", valued: [], module: null }],
  ["wish", plainSpec([])],
  ["deno", DENO],
  ["tsx", NODE],
  ["ts-node", NODE],
  [
    "julia",
    plainSpec(["-e", "-E", "--eval", "--print"], ["-J", "-t", "-p"], { fileOptions: ["-L", "--load"] }),
  ],
  ["raku", plainSpec(["-e"], ["-I", "-M"], { inlineLetters: "e", check: ["-c"] })],
  ["perl6", plainSpec(["-e"], ["-I", "-M"], { inlineLetters: "e", check: ["-c"] })],
  ["elixir", plainSpec(["-e", "--eval"], ["--cookie", "--name", "--sname"], { fileOptions: ["-r", "-pr"] })],
  ["escript", plainSpec([])],
  ["guile", plainSpec(["-c"], ["-L", "-e", "-x"], { fileOptions: ["-s", "-l"] })],
  ["racket", plainSpec(["-e"], ["-S", "-I"], { fileOptions: ["-f", "-r", "-t", "-u"] })],
  ["expect", plainSpec(["-c"], [], { fileOptions: ["-f"] })],
  ["groovy", plainSpec(["-e"], ["-cp", "-classpath", "--classpath"])],
  ["jshell", plainSpec([], ["--class-path", "-R", "-J"])],
  ["qjs", plainSpec(["-e", "--eval"], ["-I", "--include"])],
]);

/** `python3.11` → `python`, `perl5.36` → `perl`. */
export function interpreterName(name: string): string | null {
  if (INTERPRETERS.has(name)) return name;
  const bare = name.replace(/[\d.]+$/, "");
  return INTERPRETERS.has(bare) ? bare : null;
}

export function interpreterInvocation(name: string, args: Word[]): Invocation {
  const spec = INTERPRETERS.get(name);
  if (spec === undefined) return { kind: "none" };
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!;
    const v = w.value;
    if (v === "-") return { kind: "stdin" };
    if (v === "--") {
      const next = args[i + 1];
      return next === undefined ? { kind: "stdin" } : { kind: "file", path: next };
    }
    const eq = v.indexOf("=");
    const opt = v.startsWith("--") && eq > 0 ? v.slice(0, eq) : v;
    if (spec.check?.includes(v)) return { kind: "none" };
    if (spec.fileOptions?.includes(opt)) {
      const path = opt !== v ? { ...w, value: v.slice(eq + 1) } : args[i + 1];
      return path === undefined ? { kind: "none" } : { kind: "file", path };
    }
    if (spec.inline.includes(opt)) {
      if (opt !== v) return { kind: "inline", code: { ...w, value: v.slice(eq + 1) } };
      const code = args[i + 1];
      return code === undefined ? { kind: "none" } : { kind: "inline", code };
    }
    if (spec.module !== null && v === spec.module) return { kind: "module", argv: args.slice(i + 1) };
    if (spec.module !== null && v.startsWith(spec.module) && v.length > 2) {
      return { kind: "module", argv: [{ ...w, value: v.slice(2) }, ...args.slice(i + 1)] };
    }
    if (spec.valued.includes(v)) {
      i++;
      continue;
    }
    if (v.startsWith("-") && v.length > 1) {
      // A cluster such as `-ne` or `-pie`: the inline letter takes the rest, or the next word.
      if (!v.startsWith("--")) {
        const letters = v.slice(1);
        for (let k = 0; k < letters.length; k++) {
          if (spec.valuedLetters?.includes(letters[k]!)) break;
          if (spec.inlineLetters.includes(letters[k]!)) {
            const rest = letters.slice(k + 1);
            if (rest !== "") return { kind: "inline", code: { ...w, value: rest } };
            const code = args[i + 1];
            return code === undefined ? { kind: "none" } : { kind: "inline", code };
          }
        }
        if (spec === PY && letters.length > 1 && letters.endsWith("m")) {
          return { kind: "module", argv: args.slice(i + 1) };
        }
      }
      continue;
    }
    if (spec.evalWords?.has(v)) {
      const code = args[i + 1];
      return code === undefined ? { kind: "none" } : { kind: "inline", code };
    }
    if (spec.subcommands?.has(v)) {
      if (v === "run" || v === "serve") continue;
      return { kind: "subcommand" };
    }
    return { kind: "file", path: w };
  }
  return { kind: "stdin" };
}

/** awk runs programs given as its first operand; only system() and pipes to commands execute anything. */
export function awkProgram(args: Word[]): Word | null {
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === "-f" || v === "--file" || v.startsWith("--file=")) return null;
    if (v === "-F" || v === "-v" || v === "--assign" || v === "--field-separator" || v === "-W") {
      i++;
      continue;
    }
    if (v === "--") return args[i + 1] ?? null;
    if (v.startsWith("-") && v.length > 1) continue;
    return args[i]!;
  }
  return null;
}

/** `awk -f prog.awk`, `gawk --file=x`: the program is a file this classifier cannot read. */
export function awkProgramFile(args: Word[]): boolean {
  return args.some((w) => w.value === "-f" || w.value === "--file" || w.value.startsWith("--file="));
}

export function awkExecutes(program: string): boolean {
  return (
    /\bsystem\s*\(/.test(program) ||
    /\|\s*(?:getline\b|")/.test(program) ||
    /print[^;}|]{0,200}\|\s*"/.test(program)
  );
}

/** Where a shell reads its program from stdin via a path: `bash /dev/stdin`, `source /proc/self/fd/0`. */
export function isStdinPath(path: string): boolean {
  return path === "/dev/stdin" || path === "/proc/self/fd/0" || path === "/dev/fd/0" || path === "-";
}
