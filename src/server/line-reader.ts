/**
 * A message over its bound (a stdio line, an HTTP body), never materialised:
 * only its length and its first and last `keep` bytes are kept, so one giant
 * message costs bounded memory and can still be answered by id.
 */
export interface OversizedMessage {
  bytes: number;
  head: Buffer;
  tail: Buffer;
}

/**
 * Start keeping only the ends of a message that has just passed its bound;
 * `seen` is all of it so far. The ends are copies, so `seen` can be freed.
 */
export function keepEnds(seen: Buffer, keep: number): OversizedMessage {
  return { bytes: seen.length, head: Buffer.from(seen.subarray(0, keep)), tail: lastBytes(seen, keep) };
}

/** Count the next piece of an oversized message, keeping its last `keep` bytes. */
export function growEnds(ends: OversizedMessage, piece: Buffer, keep: number): void {
  ends.bytes += piece.length;
  ends.tail = lastBytes(Buffer.concat([ends.tail, piece]), keep);
}

export interface LineReaderHandlers {
  line(text: string): void;
  oversized(info: OversizedMessage): void;
}

export interface LineReader {
  push(chunk: Buffer): void;
}

const NEWLINE = 0x0a;

/**
 * Splits a byte stream into newline-terminated lines with a hard cap per
 * line. A line over the cap is kept as an OversizedMessage, and the stream
 * stays in sync for the next one.
 */
export function createLineReader(
  maxLineBytes: number,
  keep: number,
  handlers: LineReaderHandlers,
): LineReader {
  let parts: Buffer[] = [];
  let size = 0;
  // Set once the current line passed the cap: from then on only its ends are kept.
  let overflow: OversizedMessage | null = null;

  function append(piece: Buffer): void {
    if (piece.length === 0) return;
    if (overflow) {
      growEnds(overflow, piece, keep);
      return;
    }
    if (size + piece.length > maxLineBytes) {
      overflow = keepEnds(Buffer.concat([...parts, piece]), keep);
      parts = [];
      size = 0;
      return;
    }
    parts.push(piece);
    size += piece.length;
  }

  function endLine(): void {
    if (overflow) {
      const info = overflow;
      overflow = null;
      handlers.oversized(info);
      return;
    }
    const whole = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
    parts = [];
    size = 0;
    let text = whole.toString("utf8");
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (text.trim() !== "") handlers.line(text);
  }

  return {
    push(chunk) {
      let start = 0;
      for (let nl = chunk.indexOf(NEWLINE, start); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
        append(chunk.subarray(start, nl));
        endLine();
        start = nl + 1;
      }
      // Copy the remainder: the chunk's memory may be reused by the stream.
      if (start < chunk.length) append(Buffer.from(chunk.subarray(start)));
    },
  };
}

function lastBytes(buffer: Buffer, keep: number): Buffer {
  return buffer.length <= keep ? buffer : Buffer.from(buffer.subarray(buffer.length - keep));
}

/**
 * Best-effort recovery of the request id, method and tool name of a message
 * too large to parse, from its first and last bytes, so the caller gets an
 * answer instead of a silent drop.
 */
export function describeOversized(info: OversizedMessage): {
  id: string | number | null;
  method: string | null;
  toolName: string | null;
} {
  const head = info.head.toString("utf8");
  const tail = info.tail.toString("utf8");
  const idMatch =
    /"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")\s*[,}]/.exec(tail) ??
    /"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")\s*[,}]/.exec(head);
  let id: string | number | null = null;
  if (idMatch?.[1]) id = idMatch[1].startsWith('"') ? (JSON.parse(idMatch[1]) as string) : Number(idMatch[1]);
  const method =
    /"method"\s*:\s*"([a-z/_]{1,64})"/.exec(head)?.[1] ??
    /"method"\s*:\s*"([a-z/_]{1,64})"/.exec(tail)?.[1] ??
    null;
  const toolName = /"params"\s*:\s*\{\s*"name"\s*:\s*"([A-Za-z0-9_:-]{1,64})"/.exec(head)?.[1] ?? null;
  return { id, method, toolName };
}
