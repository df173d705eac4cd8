/** The first allocation; the store doubles up to the capacity only when a session really prints that much. */
const INITIAL_BYTES = 4096;

/**
 * A byte queue with a hard capacity. When a write does not fit, the oldest
 * bytes make room and are counted in `dropped`, so a session that floods its
 * terminal costs at most `capacity` bytes however long nobody reads it.
 * Reads take from the front without shifting memory (the Python build deleted
 * from the front of a bytearray, which is linear per read).
 */
export class RingBuffer {
  readonly capacity: number;
  #store: Uint8Array;
  #start = 0;
  #length = 0;
  #dropped = 0;
  #written = 0;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`ring capacity must be >= 1, got ${capacity}`);
    this.capacity = capacity;
    this.#store = new Uint8Array(Math.min(capacity, INITIAL_BYTES));
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

  /** Append a chunk; returns how many unread bytes this write discarded. */
  write(chunk: Uint8Array): number {
    const n = chunk.length;
    if (n === 0) return 0;
    this.#written += n;
    if (n >= this.capacity) {
      const lost = this.#length + (n - this.capacity);
      this.#dropped += lost;
      this.#ensure(this.capacity);
      this.#store.set(chunk.subarray(n - this.capacity), 0);
      this.#start = 0;
      this.#length = this.capacity;
      return lost;
    }
    const overflow = Math.max(0, this.#length + n - this.capacity);
    if (overflow > 0) {
      this.consume(overflow);
      this.#dropped += overflow;
    }
    this.#ensure(this.#length + n);
    const size = this.#store.length;
    const end = (this.#start + this.#length) % size;
    const first = Math.min(n, size - end);
    this.#store.set(chunk.subarray(0, first), end);
    if (first < n) this.#store.set(chunk.subarray(first), 0);
    this.#length += n;
    return overflow;
  }

  /** A copy of the first `n` unread bytes (fewer when fewer are buffered), without consuming them. */
  peek(n: number): Uint8Array {
    const count = Math.max(0, Math.min(n, this.#length));
    const out = new Uint8Array(count);
    const size = this.#store.length;
    const first = Math.min(count, size - this.#start);
    out.set(this.#store.subarray(this.#start, this.#start + first), 0);
    if (first < count) out.set(this.#store.subarray(0, count - first), first);
    return out;
  }

  /** Forget the first `n` unread bytes. */
  consume(n: number): void {
    const count = Math.max(0, Math.min(n, this.#length));
    this.#length -= count;
    this.#start = this.#length === 0 ? 0 : (this.#start + count) % this.#store.length;
  }

  /** Take up to `n` bytes from the front. */
  read(n: number): Uint8Array {
    const out = this.peek(n);
    this.consume(out.length);
    return out;
  }

  /** Grow the store (never beyond the capacity), keeping the unread bytes in order. */
  #ensure(needed: number): void {
    const size = this.#store.length;
    if (needed <= size) return;
    let next = size;
    while (next < needed) next *= 2;
    next = Math.min(this.capacity, next);
    const grown = new Uint8Array(next);
    grown.set(this.peek(this.#length), 0);
    this.#store = grown;
    this.#start = 0;
  }
}
