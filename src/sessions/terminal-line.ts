/**
 * The line a terminal will run, assembled from the pieces sent to it (ADR
 * 0034). A shell runs a line when it gets Enter, not when a piece arrives:
 * `r` then `m -rf /x` is `rm -rf /x`. Each session keeps what was sent since
 * the last Enter; a send is judged as that text completed by the new piece.
 * Bytes that can edit a line before it runs (cursor keys, escape sequences,
 * bracketed paste, Ctrl-U, Ctrl-W, Ctrl-R, backspace, Tab completion) make
 * the text stop being what will run: the line is then opaque until an Enter.
 * Pure: no I/O, no clock.
 */

/** Longest pending line kept, in UTF-16 code units; past it the line is opaque. */
export const MAX_PENDING_LINE = 8192;

/** Why a line cannot be read as the text that will run: "" when it can. */
type LineOpacity = "" | "edited" | "overflow";

/** What a terminal was given since its last Enter. */
export interface PendingLine {
  /** The text as sent, control bytes included; at most MAX_PENDING_LINE code units. */
  text: string;
  opacity: LineOpacity;
}

export const EMPTY_LINE: PendingLine = Object.freeze({ text: "", opacity: "" });

/** One send judged against the pending line. */
export interface LineAssembly {
  /** The lines this send completes with Enter, each a whole command, in order. */
  entered: PendingLine[];
  /** What is left pending after it: the next line's start. */
  rest: PendingLine;
  /**
   * What policy reads: every completed line, then the rest, one per line. An
   * edited line is read as sent and also in its plain forms (control
   * sequences removed, and each piece between them), so an escape in front of
   * a command does not hide it from the classifier or the deny list.
   */
  text: string;
  /** The same lines as the terminal gets them, control bytes included (for the record). */
  raw: string;
  /** The first reason a judged line is opaque, "" when none is. */
  opacity: LineOpacity;
}

/**
 * The lines `data` completes on a terminal whose pending line is `pending`,
 * and what stays pending. `enter` appends an Enter; a CR, an LF or a CRLF in
 * `data` is one too. A line that ends inside quotes or on a backslash is
 * continued by the shell after its Enter, so it stays pending (a backslash-newline
 * is removed, as the shell removes it).
 */
export function assembleLine(pending: PendingLine, data: string, enter: boolean): LineAssembly {
  const entered: PendingLine[] = [];
  let text = pending.text;
  let opacity = pending.opacity;
  const input = enter ? `${data}\n` : data;
  let start = 0;
  for (let i = 0; i < input.length; i++) {
    const code = input.charCodeAt(i);
    if (code !== 0x0a && code !== 0x0d) {
      if (opacity === "" && isEditing(code)) opacity = "edited";
      continue;
    }
    text += input.slice(start, i);
    if (code === 0x0d && input.charCodeAt(i + 1) === 0x0a) i += 1;
    start = i + 1;
    const open = opacity === "" ? openAtEnd(text) : null;
    if (open === "backslash") {
      text = text.slice(0, -1);
    } else if (open === "quote") {
      text += "\n";
    } else {
      entered.push({ text, opacity });
      text = "";
      opacity = "";
    }
    if (text.length > MAX_PENDING_LINE) ({ text, opacity } = overflowed(text));
  }
  text += input.slice(start);
  const rest = text.length > MAX_PENDING_LINE ? overflowed(text) : { text, opacity };
  const judged = rest.text === "" && rest.opacity === "" ? entered : [...entered, rest];
  return {
    entered,
    rest,
    text: judged
      .map((line) => (line.opacity === "edited" ? withPlainForms(line.text) : line.text))
      .join("\n"),
    raw: judged.map((line) => line.text).join("\n"),
    opacity: judged.find((line) => line.opacity !== "")?.opacity ?? "",
  };
}

/** An edited line as sent, then its plain forms on the lines after it. */
function withPlainForms(text: string): string {
  const forms = plainForms(text);
  return forms === "" ? text : `${text}\n${forms}`;
}

/**
 * An edited line as the classifier can read it: the text with every control
 * sequence removed (Tab read as a space), then each piece between the
 * sequences, one per line, each distinct form once. What the edits really
 * make of the line is unknown, which is why the line is opaque (Tier 2) anyway;
 * this only keeps a visible command from ranking below its own tier.
 */
function plainForms(text: string): string {
  const pieces: string[] = [];
  let piece = "";
  let joined = "";
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code === 0x09 || !isEditing(code)) {
      const ch = code === 0x09 ? " " : (text[i] as string);
      piece += ch;
      joined += ch;
      i += 1;
      continue;
    }
    pieces.push(piece);
    piece = "";
    i = sequenceEnd(text, i);
  }
  pieces.push(piece);
  const forms = new Set([joined, ...pieces].filter((form) => form.trim() !== ""));
  return [...forms].join("\n");
}

/** The index after the control sequence that starts at `i`: CSI, SS3, an ESC pair, or one control. */
function sequenceEnd(text: string, i: number): number {
  const code = text.charCodeAt(i);
  let j = i + 1;
  if (code === 0x1b) {
    const next = text[j];
    if (next === "[") j += 1;
    else if (next === "O") return Math.min(text.length, j + 2);
    else return next === undefined ? j : j + 1;
  } else if (code !== 0x9b) {
    return j;
  }
  // CSI: parameter and intermediate bytes, then one final byte.
  while (j < text.length && text.charCodeAt(j) >= 0x20 && text.charCodeAt(j) <= 0x3f) j += 1;
  return Math.min(text.length, j + 1);
}

function overflowed(text: string): PendingLine {
  return { text: text.slice(0, MAX_PENDING_LINE), opacity: "overflow" };
}

/**
 * A byte that can change a line before it runs: every C0 control but CR and
 * LF (Tab completes, ESC starts cursor keys, Alt chords and bracketed paste,
 * Ctrl-U/W/R/H edit or search), DEL, and the C1 controls.
 */
function isEditing(code: number): boolean {
  return code < 0x20 || (code >= 0x7f && code <= 0x9f);
}

/**
 * Whether the shell would go on reading after this line's Enter: it ends on
 * an unescaped backslash (a line continuation), or inside quotes.
 */
function openAtEnd(text: string): "backslash" | "quote" | null {
  let quote: "" | "'" | '"' | "$'" = "";
  let wordStart = true;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote === "'") {
      if (c === "'") quote = "";
      continue;
    }
    if (c === "\\") {
      if (i === text.length - 1) return "backslash";
      i += 1;
      wordStart = false;
      continue;
    }
    if (quote === '"' || quote === "$'") {
      if ((quote === '"' && c === '"') || (quote === "$'" && c === "'")) quote = "";
      continue;
    }
    if (c === "#" && wordStart) {
      const eol = text.indexOf("\n", i);
      if (eol === -1) return null;
      i = eol;
      continue;
    }
    if (c === "'") quote = "'";
    else if (c === '"') quote = '"';
    else if (c === "$" && text[i + 1] === "'") {
      quote = "$'";
      i += 1;
    }
    wordStart = c === " " || c === "\t" || c === "\n" || c === ";" || c === "&" || c === "|" || c === "(";
  }
  return quote === "" ? null : "quote";
}

/** A line for a record or a basis part: control characters shown as `\xNN`, cut to `max` characters. */
export function showLine(text: string, max = 120): string {
  let out = "";
  for (const ch of text) {
    const code = ch.codePointAt(0) as number;
    out += isEditing(code) ? `\\x${code.toString(16).padStart(2, "0")}` : ch;
    if (out.length >= max) return out.slice(0, max);
  }
  return out;
}
