import { decodeUtf8, openSequenceStart, utf8Length } from "../core/index.js";

/** JSON-escaped UTF-8 size of a string's content (without the quotes). */
function jsonSize(text: string): number {
  return utf8Length(JSON.stringify(text)) - 2;
}

/**
 * Cut `text` so that its JSON-escaped form fits in `limit` bytes, marker
 * included. Escaping can grow a byte sixfold (`\u0001`), so a raw byte budget
 * alone would let the fan-out object outgrow its envelope.
 */
export function fitForJson(text: string, limit: number, producedBytes?: number): string {
  const bytes = Buffer.from(text, "utf8");
  // Given only when the capture dropped bytes: the text is cut already, and the marker names what was written.
  const total = producedBytes ?? bytes.length;
  if (producedBytes === undefined && jsonSize(text) <= limit) return text;
  let keep = Math.min(bytes.length, limit);
  for (;;) {
    // A cut inside a character decodes to U+FFFD; drop it rather than show a broken glyph.
    let head = decodeUtf8(bytes.subarray(0, keep)).replace(/\uFFFD$/, "");
    // Nor leave half a colour sequence for the marker to complete.
    const open = openSequenceStart(head);
    if (open !== -1) head = head.slice(0, open);
    const candidate = `${head}\n\n[TRUNCATED - ${total} bytes total, ${utf8Length(head)} shown]`;
    const size = jsonSize(candidate);
    if (size <= limit) return candidate;
    if (keep === 0) return "";
    // Shrink in proportion to the overshoot (escapes make the ratio uneven), always by at least a byte.
    keep = Math.max(0, Math.min(keep - 1, Math.floor((keep * limit) / size) - 1));
  }
}
