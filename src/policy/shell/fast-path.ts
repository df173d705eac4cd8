import { flatScript, type ParsedScript, plainUnit, type Unit } from "./script.js";
import { literalWord, type Word } from "./words.js";

/**
 * Most commands are lines of plain words (`ls -la`, `git push origin
 * main`; an SSH tool's policy text is the command and the host on a line of
 * their own). When every character is one the shell treats literally —
 * letters, digits, blanks, line feeds and `-_./=,:@%+~` — there is no
 * quoting, expansion, operator, redirection, comment or continuation: each
 * line is one simple command and its argv is the line split on blanks,
 * exactly what the parser would return, at a fraction of the cost of a wasm
 * parse. Reserved words change the grammar, so a text with a line that starts
 * with one goes to the parser.
 */

const PLAIN = /^[A-Za-z0-9 \t\n\-_./=,:@%+~]*$/;
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/;
const RESERVED = new Set([
  "if",
  "then",
  "else",
  "elif",
  "fi",
  "case",
  "esac",
  "for",
  "select",
  "while",
  "until",
  "do",
  "done",
  "function",
  "in",
  "coproc",
]);

/** The script of plain-words lines, or null when the parser must decide. */
export function plainScript(text: string): ParsedScript | null {
  if (text.length > 512 || !PLAIN.test(text)) return null;
  const lines = text.split("\n");
  // An assignment alone on a line sets a shell variable for the lines after it (`PATH=/x⏎ls`): when
  // there are several lines, any assignment leaves the text to the parser and the scope it keeps.
  if (lines.length > 1 && lines.some((line) => ASSIGNMENT.test(line.trimStart()))) return null;
  const units: Unit[] = [];
  for (const line of lines) {
    const unit = plainLine(line);
    if (unit === null) return null;
    if (unit !== undefined) units.push(unit);
  }
  return flatScript(units);
}

/** One line's command; undefined when it has none (blank, or assignments only); null for a reserved word. */
function plainLine(line: string): Unit | undefined | null {
  const tokens = line.split(/[ \t]+/).filter((t) => t !== "");
  const assigns: Unit["assigns"] = [];
  let i = 0;
  while (i < tokens.length && ASSIGNMENT.test(tokens[i]!)) {
    const t = tokens[i]!;
    const eq = t.indexOf("=");
    assigns.push({ name: t.slice(0, eq).replace(/\+$/, ""), value: literalWord(t.slice(eq + 1)) });
    i++;
  }
  if (i < tokens.length && RESERVED.has(tokens[i]!)) return null;
  const words: Word[] = tokens.slice(i).map((t) => literalWord(t));
  return words.length === 0 ? undefined : plainUnit(words, line.trim(), assigns);
}
