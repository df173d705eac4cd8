/**
 * How host output is made fit for a client that prints it to a terminal
 * (docs/adr/0016-terminal-output-neutralized.md):
 * - `raw`: unchanged;
 * - `safe`: string controls (OSC, DCS, SOS, PM, APC), C1 controls and every
 *   escape sequence that is not a plain colour or cursor move are removed,
 *   other C0 controls except tab, newline and CR are shown as `\xNN`;
 * - `plain`: as `safe`, and colours and cursor moves are removed too.
 */
export type TerminalOutputMode = "raw" | "safe" | "plain";

export const TERMINAL_OUTPUT_MODES: readonly TerminalOutputMode[] = ["raw", "safe", "plain"];

export interface Neutralized {
  text: string;
  /** Escape sequences, string controls and C1 controls removed (one per sequence). */
  removed: number;
  /** C0 controls replaced by a visible `\xNN`. */
  escaped: number;
}

const ESC = 0x1b;
const BEL = 0x07;
const CAN = 0x18;
const SUB = 0x1a;
const DEL = 0x7f;
const C1_ST = 0x9c;

/**
 * CSI final bytes that only paint or move the cursor: SGR (`m`), cursor
 * moves, erase, insert/delete, scroll, tab moves, save/restore. Excluded on
 * purpose: reports the terminal answers on the reader's input (`c`, `n`,
 * `x`), window operations that can report the title (`t`), mode changes
 * that turn on mouse or focus reporting (`h`, `l`), repeat (`b`).
 */
const SAFE_CSI_FINALS = new Set("@ABCDEFGHIJKLMPSTXZ`adefmrsu".split("").map((c) => c.charCodeAt(0)));
/** Two-character escapes that only move the cursor: save, restore, index, next line, reverse index. */
const SAFE_ESC_FINALS = new Set("78DEM".split("").map((c) => c.charCodeAt(0)));

type Kind = "csi" | "string" | "esc";

/** One control construct found in the text, `end` exclusive. */
interface Construct {
  kind: Kind;
  start: number;
  end: number;
  /** The input ended before the construct did: more bytes could still complete it. */
  open: boolean;
  /** Cut short by a character that cannot continue it (that character is not part of it). */
  broken?: boolean;
}

const isC1 = (c: number) => c >= 0x80 && c <= 0x9f;

/** Kind of the construct an introducer at `i` starts, and where its body begins; null for a lone control. */
function introducerAt(
  text: string,
  i: number,
): { kind: Kind; body: number; osc: boolean } | "incomplete" | null {
  const c = text.charCodeAt(i);
  if (c === ESC) {
    if (i + 1 >= text.length) return "incomplete";
    const n = text.charCodeAt(i + 1);
    if (n === 0x5b) return { kind: "csi", body: i + 2, osc: false }; // [
    if (n === 0x5d) return { kind: "string", body: i + 2, osc: true }; // ]
    // P (DCS), X (SOS), ^ (PM), _ (APC)
    if (n === 0x50 || n === 0x58 || n === 0x5e || n === 0x5f)
      return { kind: "string", body: i + 2, osc: false };
    if (n >= 0x20 && n <= 0x7e) return { kind: "esc", body: i + 1, osc: false };
    return null;
  }
  if (c === 0x9b) return { kind: "csi", body: i + 1, osc: false };
  if (c === 0x9d) return { kind: "string", body: i + 1, osc: true };
  if (c === 0x90 || c === 0x98 || c === 0x9e || c === 0x9f)
    return { kind: "string", body: i + 1, osc: false };
  return null;
}

/**
 * End of a CSI whose parameters start at `i`: parameter bytes, then
 * intermediate bytes, then one final byte. `broken` when another character
 * breaks the form: the partial sequence is dropped and that character read
 * again, as a terminal's parser would. `open` when the input ends first.
 */
function csiEnd(text: string, i: number): { end: number; open: boolean; broken: boolean } {
  let j = i;
  while (j < text.length) {
    const c = text.charCodeAt(j);
    if (c >= 0x30 && c <= 0x3f) j++;
    else break;
  }
  while (j < text.length) {
    const c = text.charCodeAt(j);
    if (c >= 0x20 && c <= 0x2f) j++;
    else break;
  }
  if (j >= text.length) return { end: text.length, open: true, broken: false };
  const f = text.charCodeAt(j);
  return f >= 0x40 && f <= 0x7e
    ? { end: j + 1, open: false, broken: false }
    : { end: j, open: false, broken: true };
}

/**
 * End of a string control whose body starts at `i`. It ends at ST (`ESC \`
 * or 0x9C), at BEL for OSC, at CAN or SUB; another ESC or C1 control ends
 * it without being part of it, as in a terminal's parser. `open` when the
 * input ends first (or on a trailing ESC that may be the first half of ST).
 */
function stringEnd(text: string, i: number, osc: boolean): { end: number; open: boolean } {
  for (let j = i; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === ESC) {
      if (j + 1 >= text.length) return { end: text.length, open: true };
      return text.charCodeAt(j + 1) === 0x5c ? { end: j + 2, open: false } : { end: j, open: false };
    }
    if (c === C1_ST || c === CAN || c === SUB || (osc && c === BEL)) return { end: j + 1, open: false };
    if (isC1(c)) return { end: j, open: false };
  }
  return { end: text.length, open: true };
}

/** The construct starting at `i`, or null when the character there is a lone control (ESC or C1). */
function constructAt(text: string, i: number): Construct | null {
  const intro = introducerAt(text, i);
  if (intro === "incomplete") return { kind: "esc", start: i, end: text.length, open: true };
  if (intro === null) return null;
  if (intro.kind === "csi") {
    return { kind: "csi", start: i, ...csiEnd(text, intro.body) };
  }
  if (intro.kind === "string") {
    const { end, open } = stringEnd(text, intro.body, intro.osc);
    return { kind: "string", start: i, end, open };
  }
  // ESC, intermediates (0x20-0x2F)*, final (0x30-0x7E).
  let j = intro.body;
  while (j < text.length && text.charCodeAt(j) >= 0x20 && text.charCodeAt(j) <= 0x2f) j++;
  if (j >= text.length) return { kind: "esc", start: i, end: text.length, open: true };
  const f = text.charCodeAt(j);
  if (f >= 0x30 && f <= 0x7e) return { kind: "esc", start: i, end: j + 1, open: false };
  return { kind: "esc", start: i, end: j, open: false, broken: true };
}

/** A complete sequence `safe` keeps: a 7-bit CSI with numeric parameters and a painting final, or a cursor escape. */
function keptInSafe(text: string, k: Construct): boolean {
  if (k.open || k.broken || text.charCodeAt(k.start) !== ESC) return false;
  if (k.kind === "esc") return k.end - k.start === 2 && SAFE_ESC_FINALS.has(text.charCodeAt(k.start + 1));
  if (k.kind !== "csi") return false;
  for (let j = k.start + 2; j < k.end - 1; j++) {
    const c = text.charCodeAt(j);
    // Digits, `;` and `:` only: a private marker (`?`, `>`) or an intermediate selects another function.
    if (!((c >= 0x30 && c <= 0x39) || c === 0x3b || c === 0x3a)) return false;
  }
  return SAFE_CSI_FINALS.has(text.charCodeAt(k.end - 1));
}

/** `\xNN` for each C0 control and DEL, built once. */
const VISIBLE: readonly string[] = Array.from(
  { length: 0x80 },
  (_, c) => `\\x${c.toString(16).padStart(2, "0")}`,
);

/**
 * Neutralize terminal control sequences in `text` for `mode`. One pass,
 * linear in the length of the text whatever it holds. A sequence the text
 * ends inside (an OSC never terminated, a CSI cut short) is removed: its
 * introducer never reaches the reader, so what follows in a later read
 * cannot complete it.
 */
export function neutralizeTerminalOutput(text: string, mode: TerminalOutputMode): Neutralized {
  if (mode === "raw") return { text, removed: 0, escaped: 0 };
  const out: string[] = [];
  let removed = 0;
  let escaped = 0;
  let run = 0; // start of the pending run of ordinary characters
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    const control = c < 0x20 || c === DEL || isC1(c);
    if (!control || c === 0x09 || c === 0x0a || c === 0x0d) {
      i++;
      continue;
    }
    if (run < i) out.push(text.slice(run, i));
    if (c !== ESC && !isC1(c)) {
      out.push(VISIBLE[c] as string);
      escaped++;
      i++;
    } else {
      const k = constructAt(text, i);
      if (k === null) {
        removed++;
        i++;
      } else {
        if (mode === "safe" && keptInSafe(text, k)) out.push(text.slice(k.start, k.end));
        else removed++;
        i = k.end;
      }
    }
    run = i;
  }
  if (run === 0) return { text, removed, escaped };
  if (run < text.length) out.push(text.slice(run));
  return { text: out.join(""), removed, escaped };
}

/**
 * Where a control sequence starts that `text` ends inside of, or -1. A
 * stream reader holds that tail back until the rest arrives, so a sequence
 * split across two reads is judged whole.
 */
export function openSequenceStart(text: string): number {
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c !== ESC && !isC1(c)) {
      i++;
      continue;
    }
    const k = constructAt(text, i);
    if (k === null) {
      i++;
      continue;
    }
    if (k.open) return k.start;
    i = k.end;
  }
  return -1;
}
