/** The encodings a decoded view undoes. */
type Encoding = "base64" | "hex escapes" | "octal escapes" | "$'...'" | "url";

/** What an encoded part of a command really says. `text` is raw: the caller escapes it for a terminal. */
export interface DecodedView {
  encoding: Encoding;
  /** The decoded text, at most MAX_VIEW_BYTES of UTF-8. */
  text: string;
  /** UTF-8 bytes of the decoded text not kept. */
  omittedBytes: number;
}

/** Views per text: an act with more encoded parts than this is shown the first ones. */
export const MAX_VIEWS = 8;
/** Bytes of one view's decoded text that are kept. */
export const MAX_VIEW_BYTES = 2048;
/** Characters of a text that are scanned; a command is bounded long before this (RELAY_SHELL_MAX_INPUT). */
const MAX_SCAN_CHARS = 1 << 20;
/** A decoded view is scanned again once (base64 of escapes), no deeper. */
const MAX_DEPTH = 2;

const ANSI_C = /\$'(?:[^'\\]|\\[\s\S])*'/g;
const WORD = /'[^']*'|"(?:[^"\\]|\\[\s\S])*"|[^\s'"]+/g;
const ESCAPE = /\\(?:x[0-9A-Fa-f]{1,2}|[0-7]{1,4})/g;
const BASE64 = /(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{8,}={0,2}(?![A-Za-z0-9+/=_-])/g;
const PERCENT = /%[0-9A-Fa-f]{2}/g;
const utf8 = new TextDecoder("utf-8", { fatal: true });
const lenient = new TextDecoder("utf-8");

/** Control characters that make up at most a tenth of the text: it reads as text, not bytes. */
function readable(text: string): boolean {
  if (text.trim() === "") return false;
  let controls = 0;
  let total = 0;
  for (const ch of text) {
    total++;
    const code = ch.codePointAt(0) ?? 0;
    if (code === 0) return false;
    if ((code < 0x20 && ch !== "\n" && ch !== "\t" && ch !== "\r") || (code >= 0x7f && code < 0xa0)) {
      controls++;
    }
  }
  return controls * 10 <= total;
}

function strictUtf8(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

const ANY_ESCAPE =
  /\\(?:x([0-9A-Fa-f]{1,2})|0([0-7]{1,3})|([0-7]{1,3})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|c([\s\S])|([\s\S]))/g;

const SIMPLE: Record<string, number> = {
  a: 7,
  b: 8,
  e: 27,
  E: 27,
  f: 12,
  n: 10,
  r: 13,
  t: 9,
  v: 11,
  "\\": 92,
  "'": 39,
  '"': 34,
  "?": 63,
};

/**
 * The bytes of a backslash-escaped string as bash's `$'...'`, `printf` and
 * `echo -e` read it: `\xHH`, octal `\NNN` (and echo's `\0NNN`), `\uHHHH`,
 * `\UHHHHHHHH`, `\cX` and the single-letter escapes. Unknown escapes stay
 * as written.
 */
function unescapeBytes(text: string): Uint8Array {
  const out: number[] = [];
  const push = (s: string) => {
    for (const b of Buffer.from(s, "utf8")) out.push(b);
  };
  let last = 0;
  for (const m of text.matchAll(ANY_ESCAPE)) {
    push(text.slice(last, m.index));
    last = m.index + m[0].length;
    const [, hex, echoOctal, octal, u4, u8, ctrl, other] = m;
    if (hex !== undefined) out.push(Number.parseInt(hex, 16));
    else if (echoOctal !== undefined) out.push(Number.parseInt(echoOctal, 8) & 0xff);
    else if (octal !== undefined) out.push(Number.parseInt(octal, 8) & 0xff);
    else if (u4 !== undefined || u8 !== undefined) {
      const code = Number.parseInt(u4 ?? u8 ?? "", 16);
      push(code <= 0x10ffff ? String.fromCodePoint(code) : "\uFFFD");
    } else if (ctrl !== undefined) out.push(ctrl.charCodeAt(0) & 0x1f);
    else if (other !== undefined && Object.hasOwn(SIMPLE, other)) out.push(SIMPLE[other] ?? 0);
    else push(m[0]);
  }
  push(text.slice(last));
  return Uint8Array.from(out);
}

function unquote(word: string): string {
  if (word.length >= 2 && (word[0] === "'" || word[0] === '"') && word.endsWith(word[0])) {
    return word.slice(1, -1);
  }
  return word;
}

function percentDecode(word: string): string | null {
  const bytes: number[] = [];
  for (let i = 0; i < word.length; i++) {
    const hex = word[i] === "%" ? word.slice(i + 1, i + 3) : "";
    if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      for (const b of Buffer.from(word[i] ?? "", "utf8")) bytes.push(b);
    }
  }
  return strictUtf8(Uint8Array.from(bytes));
}

/** The first `limit` UTF-8 bytes of `text`, never splitting a character, and how many bytes were left. */
function keepBytes(text: string, limit: number): { text: string; omittedBytes: number } {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= limit) return { text, omittedBytes: 0 };
  let end = limit;
  // Back up to the start of the character the cut falls in (continuation bytes are 10xxxxxx).
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString("utf8"), omittedBytes: bytes.length - end };
}

interface Found {
  encoding: Encoding;
  text: string;
}

/** Every candidate in one text, in the order the scanners find them. */
function* candidates(text: string): Generator<Found> {
  for (const m of text.matchAll(ANSI_C)) {
    const inner = m[0].slice(2, -1);
    if (!inner.includes("\\")) continue;
    yield { encoding: "$'...'", text: lenient.decode(unescapeBytes(inner)) };
  }
  for (const m of text.matchAll(WORD)) {
    const word = unquote(m[0]);
    const escapes = word.match(ESCAPE);
    if (escapes && escapes.length >= 2) {
      const encoding = escapes.some((e) => e[1] === "x") ? "hex escapes" : "octal escapes";
      yield { encoding, text: lenient.decode(unescapeBytes(word)) };
    }
    const percents = word.match(PERCENT);
    if (percents && percents.length >= 2) {
      const decoded = percentDecode(word);
      if (decoded !== null && readable(decoded)) yield { encoding: "url", text: decoded };
    }
  }
  for (const m of text.matchAll(BASE64)) {
    const token = m[0];
    const body = token.replace(/=+$/, "");
    if (body.length % 4 === 1 || /^[0-9a-fA-F]+$/.test(body)) continue;
    const decoded = strictUtf8(Buffer.from(body, "base64"));
    if (decoded !== null && decoded.length >= 4 && readable(decoded))
      yield { encoding: "base64", text: decoded };
  }
}

/**
 * The decoded views of the obvious encodings in a command, script or typed
 * text: base64 blobs that decode to readable UTF-8, runs of `\xHH` or octal
 * escapes in a word (printf, echo -e), `$'...'` strings, and URL `%XX`
 * sequences; each decoded text is scanned once more (base64 of escapes).
 * A human approving `echo cm0gLXJmIC8K | base64 -d | sh` sees `rm -rf /`.
 * Bounded: at most MAX_VIEWS views of at most MAX_VIEW_BYTES each, the same
 * decoded text once, and never more than the first MiB of `text` scanned.
 * Never throws.
 */
export function decodedViews(text: string): DecodedView[] {
  const views: DecodedView[] = [];
  const seen = new Set<string>();
  const scan = (source: string, depth: number) => {
    for (const found of candidates(source.slice(0, MAX_SCAN_CHARS))) {
      if (views.length >= MAX_VIEWS) return;
      if (found.text === source || seen.has(found.text)) continue;
      seen.add(found.text);
      views.push({ encoding: found.encoding, ...keepBytes(found.text, MAX_VIEW_BYTES) });
      if (depth < MAX_DEPTH) scan(found.text, depth + 1);
    }
  };
  scan(text, 1);
  return views;
}
