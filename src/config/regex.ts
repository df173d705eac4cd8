/**
 * Operator regexes (POLICY_DENY / POLICY_ALLOW). The Python release used the
 * `re` dialect; this build uses JavaScript with flags "iu". Syntax that only
 * Python understands is named explicitly so an operator porting a pattern
 * gets a fix-it message, and so no Node version reinterprets it silently.
 */

import { fail, ok, type Result } from "../core/index.js";

const POLICY_REGEX_FLAGS = "iu";

const FLAG_LETTERS = /^[aiLmsux]+$/;
const JS_MODIFIER_LETTERS = /^[ims]*$/;

/** `{m}`, `{m,}`, `{m,n}` and Python's `{,n}`: a counted quantifier at `i`, or null. */
function countedQuantifierLength(source: string, i: number): number | null {
  const match = /^\{(?:[0-9]+(?:,[0-9]*)?|,[0-9]+)\}/.exec(source.slice(i, i + 32));
  return match ? match[0].length : null;
}

/** Index just past the character class that opens at `start` (Python rules: a leading `]` is literal). */
function skipClass(source: string, start: number): number {
  let i = start + 1;
  if (source[i] === "^") i++;
  if (source[i] === "]") i++;
  while (i < source.length && source[i] !== "]") i += source[i] === "\\" ? 2 : 1;
  return i + 1;
}

function groupProblem(source: string, i: number): string | null {
  const rest = source.slice(i + 2, i + 40);
  if (rest.startsWith("P<")) return "(?P<name>...) is Python syntax; write (?<name>...)";
  if (rest.startsWith("P=")) return "(?P=name) is Python syntax; write \\k<name>";
  if (rest.startsWith("P>")) return "(?P>name) is Python syntax and has no JavaScript equivalent";
  if (rest.startsWith(">"))
    return "atomic groups (?>...) are Python-only syntax; JavaScript has no equivalent";
  if (rest.startsWith("#")) return "comments (?#...) are Python-only syntax; remove them";
  if (rest.startsWith("(")) return "conditional groups (?(...)...) are Python-only syntax";
  const flags = /^([A-Za-z]*)(?:-([A-Za-z]*))?([:)])/.exec(rest);
  if (flags && (flags[1] !== "" || flags[2] !== undefined)) {
    const on = flags[1] ?? "";
    const off = flags[2] ?? "";
    const letters = on + off;
    if (flags[3] === ")" && FLAG_LETTERS.test(letters)) {
      const group = `(?${on}${off ? `-${off}` : ""})`;
      return `inline flags ${group} are Python-only syntax; remove them (patterns are always compiled with flags "iu")`;
    }
    if (flags[3] === ":" && FLAG_LETTERS.test(letters) && !JS_MODIFIER_LETTERS.test(letters)) {
      return `scoped flags with "${letters.replace(/[ims]/g, "")}" are Python-only syntax; remove them`;
    }
  }
  return null;
}

/**
 * The first Python-only construct in `source` with a hint, or null. A scan
 * outside character classes that respects escapes; the engine remains the
 * judge of everything else.
 */
export function findPythonOnlySyntax(source: string): string | null {
  let afterQuantifier = false;
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (c === "\\") {
      const next = source[i + 1];
      if (next === "A") return "\\A is Python-only syntax; write ^";
      if (next === "Z") return "\\Z is Python-only syntax; write $";
      afterQuantifier = false;
      i += 2;
      continue;
    }
    if (c === "[") {
      afterQuantifier = false;
      i = skipClass(source, i);
      continue;
    }
    if (c === "(") {
      afterQuantifier = false;
      if (source[i + 1] === "?") {
        const problem = groupProblem(source, i);
        if (problem) return problem;
        i += 2; // the "?" opens a group kind, it is not a quantifier
        continue;
      }
      i++;
      continue;
    }
    if (c === "*" || c === "+" || c === "?") {
      if (afterQuantifier) {
        if (c === "+") return "possessive quantifiers (*+, ++, ?+, {m,n}+) are Python-only syntax";
        afterQuantifier = false; // a lazy "?" (or an error the engine reports)
      } else {
        afterQuantifier = true;
      }
      i++;
      continue;
    }
    if (c === "{") {
      const length = countedQuantifierLength(source, i);
      if (length !== null) {
        afterQuantifier = true;
        i += length;
        continue;
      }
    }
    afterQuantifier = false;
    i++;
  }
  return null;
}

/** Compile an operator regex, or explain why it cannot be used. */
export function compilePolicyRegex(source: string): Result<RegExp, string> {
  const python = findPythonOnlySyntax(source);
  if (python) return fail(python);
  try {
    return ok(new RegExp(source, POLICY_REGEX_FLAGS));
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // Python accepts needless escapes such as \- outside a class; the u flag does not.
    const hint = /Invalid escape$/.test(message)
      ? " (with the u flag only syntax characters may be escaped: write - not \\- outside [...])"
      : "";
    return fail(`${message}${hint}`);
  }
}
