import type { Word } from "./words.js";

/**
 * Knowledge about code that is executed without being visible in the argv:
 * shells and interpreters (how they take their program), downloaders and
 * decoders (where piped code comes from), inline programs (what they do).
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
      i++;
      continue;
    }
    if (v.startsWith("--")) {
      if (v === "--command") command = true;
      continue;
    }
    if ((v.startsWith("-") || v.startsWith("+")) && v.length > 1 && !args[i]!.dynamic) {
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
};
const RUBY: InterpreterSpec = {
  inline: ["-e"],
  inlineLetters: "e",
  valued: ["-I", "-r", "-C", "-E"],
  module: null,
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
    if (spec.subcommands?.has(v)) {
      if (v === "run") continue;
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
    if (v === "-f" || v === "--file") return null;
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

export function awkExecutes(program: string): boolean {
  return (
    /\bsystem\s*\(/.test(program) ||
    /\|\s*(?:getline\b|")/.test(program) ||
    /print[^;}|]{0,200}\|\s*"/.test(program)
  );
}

export const DOWNLOADERS = new Set([
  "curl",
  "wget",
  "wget2",
  "fetch",
  "aria2c",
  "http",
  "https",
  "xh",
  "lwp-request",
  "lwp-download",
  "get",
  "nc",
  "ncat",
  "netcat",
  "socat",
  "tftp",
  "ftp",
  "invoke-webrequest",
  "iwr",
]);

const ALWAYS_DECODES = new Set([
  "gunzip",
  "zcat",
  "gzcat",
  "bunzip2",
  "bzcat",
  "unxz",
  "xzcat",
  "unzstd",
  "zstdcat",
  "lz4cat",
  "unlz4",
  "uncompress",
  "uudecode",
  "lzcat",
  "unlzma",
  "brotli-d",
]);

const DECODE_FLAG = new Set([
  "base64",
  "base32",
  "basenc",
  "gzip",
  "bzip2",
  "xz",
  "zstd",
  "lz4",
  "lzma",
  "brotli",
  "pigz",
]);

/** Does this argv turn encoded or compressed input into something else (base64 -d, xxd -r, openssl enc -d ...)? */
export function isDecoder(name: string, args: string[]): boolean {
  if (ALWAYS_DECODES.has(name)) return true;
  if (DECODE_FLAG.has(name))
    return args.some((a) => /^-[a-zA-Z]*[dD]/.test(a) || a === "--decode" || a === "--decompress");
  if (name === "xxd") return args.some((a) => /^-[a-zA-Z]*r/.test(a));
  if (name === "openssl")
    return args.some((a) => a === "-d" || a === "-decrypt" || a === "-base64" || a === "base64");
  if (name === "printf" || name === "echo")
    return args.some((a) => /\\(?:x[0-9a-fA-F]|[0-7]{2,3}|u[0-9a-fA-F])/.test(a));
  if (name === "rev" || name === "certutil") return true;
  return false;
}

/** API calls that delete or destroy, in the inline-program languages we know. */
const DESTRUCTIVE_CODE =
  /(?:\brmtree\b|\bremove_tree\b|\bos\s*\.\s*(?:remove|unlink|rmdir|removedirs)\b|\bunlink(?:Sync)?\s*\(|\bunlink\s+[\w$@"']|\.unlink\s*\(|\brimraf\b|\bfs(?:\.promises)?\s*\.\s*(?:rm|rmSync|rmdir|rmdirSync|unlink|unlinkSync)\b|\.(?:rmSync|rmdirSync|unlinkSync|rm)\s*\(|\bFileUtils\s*\.\s*(?:rm|rm_r|rm_rf|rm_f|remove_dir|remove_entry)\b|\bFile\s*\.\s*delete\b|\bDir\s*\.\s*(?:rmdir|delete|unlink)\b|\brmdir\s*\(|\bdeleteRecursively\b|\bshred\b|\btruncate\s*\(|\bfork\s+while\s+fork\b|\bwhile\s*\(\s*(?:1|true)\s*\)\s*(?:\{\s*)?(?:os\.)?fork\b)/i;

/** Calls that hand a string to a shell or exec: their string literals are commands. */
const EXECUTES_CODE =
  /(?:\bsystem\s*\(|\bpopen\s*\(|\bexec[a-z]*\s*\(|\bspawn[a-z]*\s*\(|\bsubprocess\b|\bcheck_output\b|\bcall\s*\(|\brun\s*\(|`|%x\s*[({[]|\bshell_exec\s*\(|\bpassthru\s*\(|\bproc_open\s*\(|\bchild_process\b|\bKernel\s*\.\s*(?:system|exec|spawn)\b|\bIO\s*\.\s*popen\b|\bexecSync\b|\bos\s*\.\s*system\b|\bsystem\s+["'])/;

export interface InlineAnalysis {
  destructive: boolean;
  /** Candidate shell command lines found in string literals, when the program runs commands. */
  commands: string[];
}

/**
 * Look inside an inline program. String literals are collected in one linear
 * scan; literals separated only by commas are joined with spaces so that
 * `["rm", "-rf", "/"]` is seen as the command line `rm -rf /`.
 */
export function analyzeInline(code: string): InlineAnalysis {
  const destructive = DESTRUCTIVE_CODE.test(code);
  if (!EXECUTES_CODE.test(code)) return { destructive, commands: [] };
  const commands: string[] = [];
  let group: string[] = [];
  let gapEnd = -1;
  let i = 0;
  while (i < code.length) {
    const q = code[i]!;
    if (q !== '"' && q !== "'" && q !== "`") {
      i++;
      continue;
    }
    let j = i + 1;
    let lit = "";
    while (j < code.length && code[j] !== q) {
      if (code[j] === "\\" && j + 1 < code.length) {
        lit += code[j + 1];
        j += 2;
      } else {
        lit += code[j];
        j++;
      }
    }
    const between = gapEnd < 0 ? "" : code.slice(gapEnd, i);
    if (group.length > 0 && !/^\s*,\s*$/.test(between)) {
      commands.push(group.join(" "));
      group = [];
    }
    group.push(lit);
    gapEnd = j + 1;
    i = j + 1;
  }
  if (group.length > 0) commands.push(group.join(" "));
  return { destructive, commands };
}

/** Where a shell reads its program from stdin via a path: `bash /dev/stdin`, `source /proc/self/fd/0`. */
export function isStdinPath(path: string): boolean {
  return path === "/dev/stdin" || path === "/proc/self/fd/0" || path === "/dev/fd/0" || path === "-";
}
