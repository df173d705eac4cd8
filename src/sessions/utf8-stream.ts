// ignoreBOM: a chunk that happens to start with EF BB BF is terminal output, not a byte-order mark.
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const EMPTY = new Uint8Array(0);

/** Length of the sequence a lead byte announces; 0 for bytes that cannot start a multi-byte sequence. */
function sequenceLength(byte: number): number {
  if (byte >= 0xc2 && byte <= 0xdf) return 2;
  if (byte >= 0xe0 && byte <= 0xef) return 3;
  if (byte >= 0xf0 && byte <= 0xf4) return 4;
  return 0;
}

/** How many trailing bytes could still become a character once more bytes arrive. */
export function incompleteTail(bytes: Uint8Array): number {
  const end = bytes.length;
  for (let back = 1; back <= 3 && back <= end; back++) {
    const byte = bytes[end - back] as number;
    if (byte >= 0x80 && byte <= 0xbf) continue; // a continuation byte: its lead is further back
    const need = sequenceLength(byte);
    return need > back ? back : 0;
  }
  return 0;
}

/**
 * Decodes a byte stream that arrives in arbitrary pieces. A character split
 * across two pieces is held back until it is complete, so the text of the
 * pieces joined equals the text of the whole stream decoded at once (invalid
 * bytes become U+FFFD either way). Python decoded each chunk on its own and
 * turned split characters into replacement marks.
 */
export class Utf8StreamDecoder {
  #pending: Uint8Array = EMPTY;

  /** Bytes held back because they may be the start of a character. */
  get pendingBytes(): number {
    return this.#pending.length;
  }

  decode(chunk: Uint8Array): string {
    let bytes = chunk;
    if (this.#pending.length > 0) {
      bytes = new Uint8Array(this.#pending.length + chunk.length);
      bytes.set(this.#pending, 0);
      bytes.set(chunk, this.#pending.length);
    }
    const hold = incompleteTail(bytes);
    this.#pending = hold > 0 ? bytes.slice(bytes.length - hold) : EMPTY;
    return decoder.decode(bytes.subarray(0, bytes.length - hold));
  }

  /** End of stream: whatever is held back can never complete and becomes U+FFFD. */
  flush(): string {
    const rest = this.#pending;
    this.#pending = EMPTY;
    return rest.length > 0 ? decoder.decode(rest) : "";
  }

  /** An independent copy, to try a decode without committing to it. */
  clone(): Utf8StreamDecoder {
    const copy = new Utf8StreamDecoder();
    copy.#pending = this.#pending;
    return copy;
  }
}
