/**
 * One shell word after quote and escape removal. A word that contains an
 * expansion or substitution is `dynamic`: its run-time value is unknown, and
 * each unknown stretch is marked by DYNAMIC in `value` so that literal
 * prefixes (`/dev/$disk`) stay visible to the rules.
 */
export interface Word {
  value: string;
  dynamic: boolean;
  /** Ids of the command/process substitutions inside this word (see ParsedScript.units[].container). */
  subst: number[];
  /** The word is (or contains) a process substitution `<(...)` / `>(...)`. */
  procSub: boolean;
  /** Unquoted glob or brace-expansion characters: the word may expand to other words. */
  glob: boolean;
  /** Source text, for `part`. */
  text: string;
}

export const DYNAMIC = "\u0000";

export function literalWord(value: string, text: string = value): Word {
  return { value, dynamic: false, subst: [], procSub: false, glob: false, text };
}

export function dynamicWord(text: string): Word {
  return { value: DYNAMIC, dynamic: true, subst: [], procSub: false, glob: false, text };
}

/** Join words that touch in the source (the grammar splits `$"x"` into two arguments). */
export function joinWords(a: Word, b: Word): Word {
  return {
    value: a.value + b.value,
    dynamic: a.dynamic || b.dynamic,
    subst: a.subst.length === 0 ? b.subst : b.subst.length === 0 ? a.subst : [...a.subst, ...b.subst],
    procSub: a.procSub || b.procSub,
    glob: a.glob || b.glob,
    text: a.text + b.text,
  };
}

/** Unquoted word: a backslash quotes the next character; backslash-newline vanishes. */
export function unescapeBare(raw: string): string {
  return dropEscapes(raw, () => true);
}

/** Inside double quotes a backslash only quotes `$`, backquote, `"`, `\` and newline. */
export function unescapeDouble(raw: string): string {
  return dropEscapes(raw, (next) => '$`"\\\n'.includes(next));
}

/** Drop the backslash before each character it quotes; a quoted newline vanishes with it. */
function dropEscapes(raw: string, quotes: (next: string) => boolean): string {
  if (!raw.includes("\\")) return raw;
  let out = "";
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    const next = raw[i + 1];
    if (c === "\\" && next !== undefined && quotes(next)) {
      i++;
      if (next !== "\n") out += next;
    } else {
      out += c;
    }
  }
  return out;
}

const SIMPLE_ESCAPES: Record<string, string> = {
  a: "\x07",
  b: "\b",
  e: "\x1b",
  E: "\x1b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
  "\\": "\\",
  "'": "'",
  '"': '"',
  "?": "?",
};

function isHex(c: string | undefined): boolean {
  return c !== undefined && /^[0-9a-fA-F]$/.test(c);
}

function isOctal(c: string | undefined): boolean {
  return c !== undefined && c >= "0" && c <= "7";
}

/** Decode the body of a `$'...'` string (bash ANSI-C quoting). */
export function decodeAnsiC(body: string): string {
  let out = "";
  let i = 0;
  while (i < body.length) {
    const c = body[i]!;
    if (c !== "\\" || i + 1 >= body.length) {
      out += c;
      i++;
      continue;
    }
    const e = body[i + 1]!;
    i += 2;
    const simple = SIMPLE_ESCAPES[e];
    if (simple !== undefined) {
      out += simple;
    } else if (e === "x" || e === "u" || e === "U") {
      const max = e === "x" ? 2 : e === "u" ? 4 : 8;
      let digits = "";
      while (digits.length < max && isHex(body[i])) digits += body[i++];
      if (digits === "") out += `\\${e}`;
      else out += safeCodePoint(Number.parseInt(digits, 16));
    } else if (isOctal(e)) {
      let digits = e;
      while (digits.length < 3 && isOctal(body[i])) digits += body[i++];
      out += String.fromCharCode(Number.parseInt(digits, 8) & 0xff);
    } else if (e === "c" && i < body.length) {
      out += String.fromCharCode(body.charCodeAt(i) & 0x1f);
      i++;
    } else {
      out += `\\${e}`;
    }
  }
  return out;
}

function safeCodePoint(cp: number): string {
  return cp <= 0x10ffff ? String.fromCodePoint(cp) : "\ufffd";
}

/** Unquoted characters that make the shell expand a word into file names or several words. */
export function hasGlobChars(raw: string): boolean {
  if (raw === "[" || raw === "[[" || raw === "]" || raw === "]]") return false;
  if (raw.includes("*") || raw.includes("?")) return true;
  const open = raw.indexOf("[");
  if (open >= 0 && raw.indexOf("]", open + 1) > open) return true;
  const brace = raw.indexOf("{");
  return brace >= 0 && raw.indexOf(",", brace) > brace && raw.indexOf("}", brace) > brace;
}

/** `/usr/bin/rm` → `rm`; a trailing slash keeps the empty name (`/bin/` runs nothing useful). */
export function baseName(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? path : path.slice(slash + 1);
}
