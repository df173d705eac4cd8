import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { incompleteTail, Utf8StreamDecoder } from "./utf8-stream.js";

const whole = new TextDecoder("utf-8", { ignoreBOM: true });

function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Uint8Array[] = [];
  let start = 0;
  for (const p of points) {
    pieces.push(bytes.subarray(start, p));
    start = p;
  }
  pieces.push(bytes.subarray(start));
  return pieces;
}

function streamDecode(pieces: Uint8Array[]): string {
  const d = new Utf8StreamDecoder();
  return pieces.map((p) => d.decode(p)).join("") + d.flush();
}

describe("Utf8StreamDecoder", () => {
  it("decodes text split anywhere exactly as the whole text", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 60 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (text, cuts) => {
          const bytes = new TextEncoder().encode(text);
          const out = streamDecode(splitAt(bytes, cuts));
          expect(out).toBe(whole.decode(bytes));
          // Well-formed text survives any split unchanged: no replacement marks appear.
          if (!/\p{Cs}/u.test(text)) expect(out).toBe(text);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("matches a whole-buffer decode for arbitrary (also invalid) bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), fc.array(fc.nat(), { maxLength: 10 }), (bytes, cuts) => {
        expect(streamDecode(splitAt(bytes, cuts))).toBe(whole.decode(bytes));
      }),
      { numRuns: 1000 },
    );
  });

  it("holds a split euro sign until it completes", () => {
    const d = new Utf8StreamDecoder();
    expect(d.decode(Uint8Array.from([0x61, 0xe2, 0x82]))).toBe("a");
    expect(d.pendingBytes).toBe(2);
    expect(d.decode(Uint8Array.from([0xac, 0x62]))).toBe("€b");
    expect(d.pendingBytes).toBe(0);
  });

  it("byte by byte, a four-byte character comes out whole", () => {
    const d = new Utf8StreamDecoder();
    const bytes = new TextEncoder().encode("😀");
    const parts = [...bytes].map((b) => d.decode(Uint8Array.of(b)));
    expect(parts).toEqual(["", "", "", "😀"]);
  });

  it("keeps a leading byte-order mark as text and flushes a dangling lead byte as U+FFFD", () => {
    const d = new Utf8StreamDecoder();
    expect(d.decode(Uint8Array.from([0xef, 0xbb, 0xbf, 0x41]))).toBe("\uFEFFA");
    expect(d.decode(Uint8Array.from([0xf0, 0x9f]))).toBe("");
    expect(d.flush()).toBe("\uFFFD");
    expect(d.flush()).toBe("");
  });

  it("clone tries a decode without touching the original", () => {
    const d = new Utf8StreamDecoder();
    d.decode(Uint8Array.from([0xc3]));
    const copy = d.clone();
    expect(copy.decode(Uint8Array.from([0xa9]))).toBe("é");
    expect(d.pendingBytes).toBe(1);
    expect(d.decode(Uint8Array.from([0xa9]))).toBe("é");
  });

  it("incompleteTail only holds sequences that could still complete", () => {
    expect(incompleteTail(Uint8Array.from([0x41]))).toBe(0);
    expect(incompleteTail(Uint8Array.from([0xc3]))).toBe(1);
    expect(incompleteTail(Uint8Array.from([0xe2, 0x82]))).toBe(2);
    expect(incompleteTail(Uint8Array.from([0xf0, 0x9f, 0x98]))).toBe(3);
    expect(incompleteTail(Uint8Array.from([0xf0, 0x9f, 0x98, 0x80]))).toBe(0);
    expect(incompleteTail(Uint8Array.from([0x80, 0x80]))).toBe(0);
    expect(incompleteTail(Uint8Array.from([0xff]))).toBe(0);
  });
});
