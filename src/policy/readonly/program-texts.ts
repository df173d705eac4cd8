import type { Word } from "../shell/words.js";

/**
 * Programs that read a program: awk and sed. Their program text is read
 * for its own writes and executions; anything not understood is not proven.
 */

/** awk's program operand: the first operand after -F/-v values; null with -f or none. */
function awkText(args: readonly Word[]): Word | null {
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === "--") return args[i + 1] ?? null;
    if (v === "-F" || v === "-v" || v === "--assign" || v === "--field-separator" || v === "-W") {
      i++;
      continue;
    }
    if (v.startsWith("-") && v.length > 1) continue;
    return args[i]!;
  }
  return null;
}

/** The program with string literals blanked, so a `>` or `|` inside quotes is data. */
function withoutStrings(program: string): string | null {
  let out = "";
  let quote = false;
  for (let i = 0; i < program.length; i++) {
    const c = program[i]!;
    if (quote) {
      if (c === "\\") i++;
      else if (c === '"') {
        quote = false;
        out += '""';
      }
      continue;
    }
    if (c === '"') quote = true;
    else out += c;
  }
  return quote ? null : out;
}

/**
 * True when an awk program only reads and prints to stdout: no system(), no
 * pipe to or from a command, no print/printf redirection into a file, no
 * gawk directive (@load, @include) and no in-place extension. Regex literals
 * are not parsed; a `|` or `>` in one counts against the proof, which is the
 * safe side.
 */
export function awkReadsOnly(args: readonly Word[]): boolean {
  const word = awkText(args);
  if (word === null || word.dynamic) return false;
  const text = withoutStrings(word.value);
  if (text === null) return false;
  if (/\bsystem\s*\(|@|\bclose\s*\(|\bfflush\s*\(/.test(text)) return false;
  // `|` that is not `||`: a pipe to or from a command.
  if (/(?<!\|)\|(?!\|)/.test(text)) return false;
  // print/printf followed, before the statement ends, by `>` outside parentheses: output to a file.
  const statement = /\bprintf?\b([^;}\n]*)/g;
  for (let m = statement.exec(text); m !== null; m = statement.exec(text)) {
    let depth = 0;
    for (const ch of m[1]!) {
      if (ch === "(") depth++;
      else if (ch === ")") depth--;
      else if (ch === ">" && depth <= 0) return false;
    }
  }
  // getline from a file (`getline < FILE`) only reads; `getline` from a command was a pipe above.
  return true;
}

/** One sed script from -e/--expression values or the first operand. */
function sedScripts(args: readonly Word[]): Word[] | null {
  const scripts: Word[] = [];
  let first: Word | null = null;
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!;
    const v = w.value;
    if (v === "-e" || v === "--expression") {
      const s = args[i + 1];
      if (s === undefined) return null;
      scripts.push(s);
      i++;
      continue;
    }
    if (v.startsWith("--expression=")) {
      scripts.push({ ...w, value: v.slice(13) });
      continue;
    }
    if (v === "-l" || v === "--line-length") {
      i++;
      continue;
    }
    if (v.startsWith("-") && v.length > 1) continue;
    if (first === null) first = w;
  }
  if (scripts.length === 0 && first !== null) scripts.push(first);
  return scripts.length === 0 ? null : scripts;
}

/**
 * True when a sed script has no command that writes a file (`w`, `W`, the
 * `w` flag of `s`) or runs one (`e`, the `e` flag of `s`). The script is
 * walked command by command; anything unexpected is not proven.
 */
export function sedReadsOnly(args: readonly Word[]): boolean {
  const scripts = sedScripts(args);
  if (scripts === null) return false;
  return scripts.every((w) => !w.dynamic && sedScriptReads(w.value));
}

function sedScriptReads(script: string): boolean {
  let i = 0;
  const n = script.length;
  const skipBlank = () => {
    while (i < n && /[\s;]/.test(script[i]!)) i++;
  };
  const skipAddress = (): boolean => {
    // A line number, $, /regex/ or \cREGEXc, optionally a range and `!`.
    for (let part = 0; part < 2; part++) {
      if (i < n && /[\d$]/.test(script[i]!)) {
        while (i < n && /[\d$~+]/.test(script[i]!)) i++;
      } else if (script[i] === "/" || script[i] === "\\") {
        const delim = script[i] === "\\" ? script[i + 1] : "/";
        i += script[i] === "\\" ? 2 : 1;
        while (i < n && script[i] !== delim) i += script[i] === "\\" ? 2 : 1;
        if (i >= n) return false;
        i++;
        while (i < n && /[IM]/.test(script[i]!)) i++;
      }
      if (part === 0 && script[i] === ",") i++;
      else break;
    }
    while (i < n && /[\s!]/.test(script[i]!)) i++;
    return true;
  };
  while (i < n) {
    skipBlank();
    if (i >= n) break;
    if (!skipAddress()) return false;
    const cmd = script[i];
    if (cmd === undefined) break;
    i++;
    switch (cmd) {
      case "{":
      case "}":
      case "=":
      case "d":
      case "D":
      case "g":
      case "G":
      case "h":
      case "H":
      case "l":
      case "n":
      case "N":
      case "p":
      case "P":
      case "q":
      case "Q":
      case "x":
      case "z":
      case "F":
        while (i < n && /[0-9 ]/.test(script[i]!)) i++;
        break;
      case "#":
      case ":":
      case "b":
      case "t":
      case "T":
      case "r":
      case "R":
      case "a":
      case "i":
      case "c":
        // The rest of the line is a label, a file to read or text to print.
        while (
          i < n &&
          script[i] !== "\n" &&
          !(cmd !== "a" && cmd !== "i" && cmd !== "c" && cmd !== "#" && script[i] === ";")
        )
          i++;
        break;
      case "s":
      case "y": {
        const delim = script[i];
        if (delim === undefined || delim === "\n" || delim === "\\") return false;
        i++;
        for (let field = 0; field < 2; field++) {
          while (i < n && script[i] !== delim) i += script[i] === "\\" ? 2 : 1;
          if (i >= n) return false;
          i++;
        }
        if (cmd === "s") {
          const flags = /^[0-9gpiImMe w]*/.exec(script.slice(i))![0];
          if (/[we]/.test(flags)) return false;
          i += flags.length;
        }
        break;
      }
      default:
        // w, W (write a file), e (run a command), v, and anything unknown.
        return false;
    }
  }
  return true;
}
