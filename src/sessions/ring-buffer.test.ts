import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createBlockPool, RingBuffer } from "./ring-buffer.js";

type Op = { kind: "write"; bytes: number[] } | { kind: "read"; n: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("write" as const),
    bytes: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 90 }),
  }),
  fc.record({ kind: fc.constant("read" as const), n: fc.integer({ min: 0, max: 70 }) }),
);

describe("RingBuffer", () => {
  it("keeps the newest bytes, never exceeds its capacity, and counts exactly what it dropped", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.array(opArb, { maxLength: 60 }), (capacity, ops) => {
        const ring = new RingBuffer(capacity);
        // The model: an unbounded queue trimmed from the front.
        let model: number[] = [];
        let dropped = 0;
        let written = 0;
        for (const op of ops) {
          if (op.kind === "write") {
            const lost = ring.write(Uint8Array.from(op.bytes));
            model = model.concat(op.bytes);
            written += op.bytes.length;
            const over = Math.max(0, model.length - capacity);
            expect(lost).toBe(over);
            model = model.slice(over);
            dropped += over;
          } else {
            const got = ring.read(op.n);
            expect([...got]).toEqual(model.slice(0, op.n));
            model = model.slice(op.n);
          }
          expect(ring.length).toBe(model.length);
          expect(ring.length).toBeLessThanOrEqual(capacity);
          expect(ring.dropped).toBe(dropped);
          expect(ring.written).toBe(written);
        }
        expect([...ring.peek(capacity)]).toEqual(model);
      }),
      { numRuns: 500 },
    );
  });

  it("a single write larger than the capacity keeps only its tail", () => {
    const ring = new RingBuffer(4);
    ring.write(Uint8Array.from([1, 2]));
    expect(ring.write(Uint8Array.from([3, 4, 5, 6, 7, 8]))).toBe(4);
    expect([...ring.read(10)]).toEqual([5, 6, 7, 8]);
    expect(ring.dropped).toBe(4);
    expect(ring.written).toBe(8);
  });

  it("peek does not consume and consume does not over-run", () => {
    const ring = new RingBuffer(8);
    ring.write(new TextEncoder().encode("abcdef"));
    expect(new TextDecoder().decode(ring.peek(3))).toBe("abc");
    expect(ring.length).toBe(6);
    ring.consume(100);
    expect(ring.length).toBe(0);
    expect(ring.read(5).length).toBe(0);
  });

  it("stays bounded when flooded with large chunks", () => {
    const capacity = 256 * 1024;
    const ring = new RingBuffer(capacity);
    const chunk = new Uint8Array(65536).fill(120);
    for (let i = 0; i < 400; i++) ring.write(chunk);
    expect(ring.length).toBe(capacity);
    expect(ring.dropped).toBe(400 * 65536 - capacity);
  });

  it("rejects a capacity below one byte", () => {
    expect(() => new RingBuffer(0)).toThrow(RangeError);
  });
});

describe("RingBuffer memory", () => {
  it("holds at most its capacity plus two blocks, and a full ring recycles instead of allocating", () => {
    const capacity = 1024 * 1024;
    const ring = new RingBuffer(capacity);
    expect(ring.allocated).toBe(0);
    ring.write(new Uint8Array(100));
    expect(ring.allocated).toBe(65536);
    const chunk = new Uint8Array(3000).fill(1);
    let most = 0;
    for (let i = 0; i < 2000; i++) {
      ring.write(chunk);
      most = Math.max(most, ring.allocated);
    }
    expect(ring.length).toBe(capacity);
    expect(most).toBeLessThanOrEqual(capacity + 2 * 65536);
    ring.read(capacity);
    expect(ring.length).toBe(0);
    expect(ring.allocated).toBeLessThanOrEqual(2 * 65536);
  });

  it("a ring smaller than a block uses blocks of its own size", () => {
    const ring = new RingBuffer(10);
    ring.write(new TextEncoder().encode("0123456789abc"));
    expect(new TextDecoder().decode(ring.peek(10))).toBe("3456789abc");
    expect(ring.allocated).toBeLessThanOrEqual(30);
  });
});

describe("RingBuffer release", () => {
  it("empties the ring, which stays usable, and hands its blocks to the pool for the next ring", () => {
    const pool = createBlockPool();
    const a = new RingBuffer(256 * 1024, pool);
    a.write(new Uint8Array(200 * 1024).fill(7));
    const held = a.allocated;
    a.release();
    expect(a.length).toBe(0);
    expect(a.allocated).toBe(0);
    expect(pool.size * 65536).toBe(held);
    // Blocks handed back are written over before anyone reads them: no stale byte leaks through.
    const b = new RingBuffer(256 * 1024, pool);
    b.write(new TextEncoder().encode("fresh"));
    expect(pool.size * 65536).toBe(held - 65536);
    expect(new TextDecoder().decode(b.read(100))).toBe("fresh");
    a.write(new TextEncoder().encode("again"));
    expect(new TextDecoder().decode(a.read(100))).toBe("again");
  });

  it("the pool keeps no more than its limit, and rings smaller than a block do not use it", () => {
    const pool = createBlockPool(2 * 65536);
    const big = new RingBuffer(1024 * 1024, pool);
    big.write(new Uint8Array(500 * 1024));
    big.release();
    expect(pool.size).toBe(2);
    const small = new RingBuffer(1000, pool);
    small.write(new Uint8Array(900));
    expect(pool.size).toBe(2);
    small.release();
    expect(pool.size).toBe(2);
  });
});
