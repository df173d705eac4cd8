const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: false });

/** UTF-8 byte length of a string (lone surrogates count as the 3 bytes of U+FFFD). */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

export interface Truncated {
  text: string;
  truncated: boolean;
  totalBytes: number;
}

/**
 * Byte-budget truncation of docs/wire-contract.md §1.4: keep the first `limit` UTF-8 bytes,
 * decode leniently (a cut sequence becomes U+FFFD) and append the marker.
 */
export function truncateUtf8(text: string, limit: number): Truncated {
  // Counted without encoding: output that fits (the usual case) costs no copy.
  const total = utf8Length(text);
  if (total <= limit) return { text, truncated: false, totalBytes: total };
  const bytes = encoder.encode(text);
  const kept = decoder.decode(bytes.subarray(0, limit));
  return {
    text: `${kept}\n\n[TRUNCATED - ${bytes.length} bytes total, ${limit} shown]`,
    truncated: true,
    totalBytes: bytes.length,
  };
}

/** Keep at most `limit` bytes of a UTF-8 buffer as text, never splitting a character. */
export function decodeUtf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

/** `clamp` of docs/wire-contract.md §1.3: swapped bounds are tolerated. */
export function clamp(value: number, lo: number, hi: number): number {
  const [a, b] = lo > hi ? [hi, lo] : [lo, hi];
  return Math.max(a, Math.min(b, value));
}
