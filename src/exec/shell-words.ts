import { RelayError } from "../core/index.js";

// Separators between words. `\r` counts as one, as in Python's shlex, so a
// command pasted with CRLF line ends does not grow stray carriage returns.
const BLANKS = new Set([" ", "\t", "\n", "\r"]);
// Inside double quotes a backslash only escapes these; before anything else it stays literal.
const DQUOTE_ESCAPABLE = new Set(["\\", '"', "$", "`", "\n"]);

/**
 * Split text into argv words by POSIX shell quoting rules, with no expansion,
 * globbing or operators (`a;b` stays one word).
 *
 * Unlike Python's `shlex.split` (which treats `#` as an ordinary character),
 * an unquoted `#` at the start of a word begins a comment up to the end of the
 * line, as in the shell. The policy classifier reads the same text as shell, so
 * this keeps what runs from ever containing words the classifier saw as a comment.
 * Backslash-newline outside single quotes is a line continuation and vanishes.
 *
 * Throws RelayError("ValueError") on an unclosed quote or a trailing backslash.
 */
export function splitShellWords(text: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i] as string;
    if (c === "\\" && text[i + 1] === "\n") {
      // Line continuation is removed before words are formed: it neither starts nor ends a word.
      i += 2;
      continue;
    }
    if (BLANKS.has(c)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
      i += 1;
      continue;
    }
    if (c === "#" && !inWord) {
      const eol = text.indexOf("\n", i);
      i = eol === -1 ? n : eol;
      continue;
    }
    inWord = true;
    if (c === "\\") {
      if (i + 1 >= n) throw new RelayError("ValueError", "No escaped character");
      word += text[i + 1];
      i += 2;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end === -1) throw new RelayError("ValueError", "No closing quotation");
      word += text.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      const [body, next] = readDoubleQuoted(text, i + 1);
      word += body;
      i = next;
    } else {
      word += c;
      i += 1;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** The unescaped body of a double-quoted span starting at `start`, and the index after its closing quote. */
function readDoubleQuoted(text: string, start: number): [string, number] {
  let body = "";
  let i = start;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '"') return [body, i + 1];
    if (c === "\\" && i + 1 < text.length && DQUOTE_ESCAPABLE.has(text[i + 1] as string)) {
      const escaped = text[i + 1] as string;
      if (escaped !== "\n") body += escaped;
      i += 2;
      continue;
    }
    body += c;
    i += 1;
  }
  throw new RelayError("ValueError", "No closing quotation");
}
