import { flatScript, type ParsedScript, plainUnit, type Unit } from "./script.js";
import { literalWord, type Word } from "./words.js";

/**
 * Most commands are one line of plain words (`ls -la`, `git push origin
 * main`). When every character is one the shell treats literally — letters,
 * digits, blanks and `-_./=,:@%+~` — there is no quoting, expansion,
 * operator, redirection or comment, and the argv is the text split on blanks:
 * exactly what the parser would return, at a fraction of the cost of a wasm
 * parse. Reserved words change the grammar, so those lines go to the parser.
 */

const PLAIN = /^[A-Za-z0-9 \t\-_./=,:@%+~]*$/;
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

/** The script of a plain-words line, or null when the parser must decide. */
export function plainScript(text: string): ParsedScript | null {
  if (text.length > 512 || !PLAIN.test(text)) return null;
  const tokens = text.split(/[ \t]+/).filter((t) => t !== "");
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
  return flatScript(words.length === 0 ? [] : [plainUnit(words, text.trim(), assigns)]);
}
