/** One unit of a request stream: a whole line, or the news that a line was too long. */
export type Frame = { kind: "line"; text: string } | { kind: "too-large" } | { kind: "not-utf8" };

interface FrameReader {
  /** Feed the next chunk; returns the frames it completed, in order. */
  push(chunk: Buffer): Frame[];
  /** The stream ended: a last line without its newline, when there is one. */
  end(): Frame[];
}

const NEWLINE = 0x0a;

/**
 * Splits a byte stream into newline-terminated frames of at most `maxBytes`
 * (the newline not counted; a carriage return before it is, and is then
 * dropped). A longer line
 * is reported once, as soon as it passes the bound, and the rest of it is
 * discarded as it arrives rather than held, so a client cannot make the
 * broker buffer more than `maxBytes` per connection; the frame after it
 * reads normally. Empty lines are skipped.
 */
export function createFrameReader(maxBytes: number): FrameReader {
  let parts: Buffer[] = [];
  let size = 0;
  // The current line passed the bound: drop what arrives until its newline.
  let discarding = false;
  const decoder = new TextDecoder("utf-8", { fatal: true });

  function finish(): Frame | null {
    let line = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size);
    parts = [];
    size = 0;
    if (line.length > 0 && line[line.length - 1] === 0x0d) line = line.subarray(0, line.length - 1);
    if (line.length === 0) return null;
    try {
      return { kind: "line", text: decoder.decode(line) };
    } catch {
      return { kind: "not-utf8" };
    }
  }

  function push(chunk: Buffer): Frame[] {
    const frames: Frame[] = [];
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline < 0 ? chunk.length : newline;
      const piece = chunk.subarray(start, end);
      if (discarding) {
        if (newline >= 0) discarding = false;
      } else if (size + piece.length > maxBytes) {
        frames.push({ kind: "too-large" });
        parts = [];
        size = 0;
        discarding = newline < 0;
      } else {
        if (piece.length > 0) {
          // A copy: the chunk's memory is not kept alive by a slice of it.
          parts.push(Buffer.from(piece));
          size += piece.length;
        }
        if (newline >= 0) {
          const frame = finish();
          if (frame !== null) frames.push(frame);
        }
      }
      start = newline < 0 ? chunk.length : newline + 1;
    }
    return frames;
  }

  function end(): Frame[] {
    if (discarding || size === 0) {
      discarding = false;
      return [];
    }
    const frame = finish();
    return frame === null ? [] : [frame];
  }

  return { push, end };
}
