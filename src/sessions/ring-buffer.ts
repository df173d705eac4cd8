/** Size of one block of the store; a session that prints little holds one. */
const BLOCK_BYTES = 64 * 1024;
/** Blocks of released rings kept for the next ring: at most the largest ring the settings allow. */
const POOL_LIMIT_BYTES = 16 * 1024 * 1024;

/**
 * Full-size blocks of rings that were released, shared by the rings of one
 * registry. A session that ends leaves its blocks here for the next one
 * instead of to the garbage collector, which frees the buffers of long-lived
 * objects only at its next full collection: with sessions coming and going,
 * dead rings would otherwise pile up beside live ones.
 */
export interface BlockPool {
  take(): Uint8Array | undefined;
  give(block: Uint8Array): void;
  /** Blocks waiting to be reused. */
  readonly size: number;
}

export function createBlockPool(limitBytes = POOL_LIMIT_BYTES): BlockPool {
  const blocks: Uint8Array[] = [];
  const limit = Math.floor(limitBytes / BLOCK_BYTES);
  return {
    take: () => blocks.pop(),
    give(block) {
      if (block.length === BLOCK_BYTES && blocks.length < limit) blocks.push(block);
    },
    get size() {
      return blocks.length;
    },
  };
}

/**
 * A byte queue with a hard capacity. When a write does not fit, the oldest
 * bytes make room and are counted in `dropped`, so a session that floods its
 * terminal costs at most `capacity` bytes however long nobody reads it.
 *
 * The bytes live in fixed-size blocks: memory follows what is buffered, a
 * full ring recycles the block it drops from as the block it writes to (a
 * flood allocates nothing once the ring is full), and nothing is ever copied
 * to grow the store. Reads take from the front without shifting memory (the
 * Python build deleted from the front of a bytearray, which is linear per read).
 */
export class RingBuffer {
  readonly capacity: number;
  readonly #blockBytes: number;
  readonly #pool: BlockPool | null;
  /** Filled from `#head` in the first block to `#tail` in the last. */
  readonly #blocks: Uint8Array[] = [];
  #head = 0;
  #tail = 0;
  /** One emptied block kept for the next write, so steady streaming does not allocate. */
  #spare: Uint8Array | null = null;
  #length = 0;
  #dropped = 0;
  #written = 0;

  /** `pool`: where blocks come from and go back to on release; none = allocate and let go. */
  constructor(capacity: number, pool: BlockPool | null = null) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`ring capacity must be >= 1, got ${capacity}`);
    this.capacity = capacity;
    this.#blockBytes = Math.min(capacity, BLOCK_BYTES);
    // Only full-size blocks are shared; a ring smaller than one block keeps its own.
    this.#pool = this.#blockBytes === BLOCK_BYTES ? pool : null;
  }

  /** Bytes waiting to be read. */
  get length(): number {
    return this.#length;
  }

  /** Bytes discarded, unread, to make room for newer ones. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Every byte ever written. */
  get written(): number {
    return this.#written;
  }

  /** Bytes held in blocks, buffered or not (for tests of the memory bound). */
  get allocated(): number {
    return (this.#blocks.length + (this.#spare ? 1 : 0)) * this.#blockBytes;
  }

  /** Append a chunk; returns how many unread bytes this write discarded. */
  write(chunk: Uint8Array): number {
    const n = chunk.length;
    if (n === 0) return 0;
    this.#written += n;
    // Only the newest `capacity` bytes of the chunk can survive it.
    const kept = n > this.capacity ? chunk.subarray(n - this.capacity) : chunk;
    const overflow = Math.max(0, this.#length + kept.length - this.capacity);
    const lost = overflow + (n - kept.length);
    if (overflow > 0) this.consume(overflow);
    this.#dropped += lost;
    let offset = 0;
    while (offset < kept.length) {
      let block = this.#blocks[this.#blocks.length - 1];
      if (block === undefined || this.#tail === block.length) {
        block = this.#spare ?? this.#pool?.take() ?? new Uint8Array(this.#blockBytes);
        this.#spare = null;
        this.#blocks.push(block);
        this.#tail = 0;
      }
      const step = Math.min(kept.length - offset, block.length - this.#tail);
      block.set(kept.subarray(offset, offset + step), this.#tail);
      this.#tail += step;
      offset += step;
    }
    this.#length += kept.length;
    return lost;
  }

  /**
   * The first `n` unread bytes (fewer when fewer are buffered) as views into
   * the store, in order, without copying or consuming them. The views are
   * valid until the ring is next written, consumed or released.
   */
  views(n: number): Uint8Array[] {
    let left = Math.max(0, Math.min(n, this.#length));
    const out: Uint8Array[] = [];
    for (let i = 0; left > 0; i++) {
      const block = this.#blocks[i] as Uint8Array;
      const start = i === 0 ? this.#head : 0;
      const end = i === this.#blocks.length - 1 ? this.#tail : block.length;
      const step = Math.min(left, end - start);
      out.push(block.subarray(start, start + step));
      left -= step;
    }
    return out;
  }

  /** A copy of the first `n` unread bytes (fewer when fewer are buffered), without consuming them. */
  peek(n: number): Uint8Array {
    const parts = this.views(n);
    const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
    let filled = 0;
    for (const part of parts) {
      out.set(part, filled);
      filled += part.length;
    }
    return out;
  }

  /** Forget the first `n` unread bytes. */
  consume(n: number): void {
    let count = Math.max(0, Math.min(n, this.#length));
    this.#length -= count;
    while (count > 0) {
      const block = this.#blocks[0] as Uint8Array;
      const last = this.#blocks.length === 1;
      const end = last ? this.#tail : block.length;
      const step = Math.min(count, end - this.#head);
      this.#head += step;
      count -= step;
      if (this.#head === end && !last) {
        this.#blocks.shift();
        this.#spare = block;
        this.#head = 0;
      }
    }
    if (this.#length === 0) {
      // Empty (the loop left at most the last block): write into it again from its start.
      this.#head = 0;
      this.#tail = 0;
    }
  }

  /** Drop everything buffered and hand the blocks back for other rings; the ring stays usable. */
  release(): void {
    if (this.#pool) {
      for (const block of this.#blocks) this.#pool.give(block);
      if (this.#spare) this.#pool.give(this.#spare);
    }
    this.#blocks.length = 0;
    this.#spare = null;
    this.#head = 0;
    this.#tail = 0;
    this.#length = 0;
  }

  /** Take up to `n` bytes from the front. */
  read(n: number): Uint8Array {
    const out = this.peek(n);
    this.consume(out.length);
    return out;
  }
}
