import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createFrameReader, type Frame } from "./frames.js";

function feed(max: number, chunks: (string | Buffer)[]): Frame[] {
  const reader = createFrameReader(max);
  return chunks.flatMap((c) => reader.push(typeof c === "string" ? Buffer.from(c, "utf8") : c));
}

const line = (text: string): Frame => ({ kind: "line", text });

describe("createFrameReader", () => {
  it("splits lines, joins a line split across chunks, skips empty lines, drops a CR", () => {
    expect(feed(100, ['{"a":1}\n{"b"', ":2}\r\n\n", "{}\n"])).toEqual([
      line('{"a":1}'),
      line('{"b":2}'),
      line("{}"),
    ]);
  });

  it("holds a line without its newline until the newline comes", () => {
    const reader = createFrameReader(100);
    expect(reader.push(Buffer.from("abc"))).toEqual([]);
    expect(reader.push(Buffer.from("\n"))).toEqual([line("abc")]);
  });

  it("reads a last line without its newline when the stream ends, but not the rest of a long one", () => {
    const reader = createFrameReader(8);
    reader.push(Buffer.from('{"op":1}'));
    expect(reader.end()).toEqual([line('{"op":1}')]);
    reader.push(Buffer.from("0123456789"));
    expect(reader.end()).toEqual([]);
    expect(reader.end()).toEqual([]);
  });

  it("takes a line of exactly the bound and refuses one byte more", () => {
    expect(feed(4, ["abcd\nabcde\nok\n"])).toEqual([line("abcd"), { kind: "too-large" }, line("ok")]);
  });

  it("reports a long line once, as soon as it passes the bound, then reads the next line", () => {
    const reader = createFrameReader(8);
    expect(reader.push(Buffer.from("0123456789"))).toEqual([{ kind: "too-large" }]);
    expect(reader.push(Buffer.alloc(1 << 20, 0x41))).toEqual([]);
    expect(reader.push(Buffer.from("tail\nnext\n"))).toEqual([line("next")]);
  });

  it("reports bytes that are not UTF-8 as such, and goes on", () => {
    expect(feed(100, [Buffer.from([0xff, 0xfe, 0x0a]), "ok\n"])).toEqual([{ kind: "not-utf8" }, line("ok")]);
  });

  it("keeps a multi-byte character split across chunks whole", () => {
    const bytes = Buffer.from("é\n", "utf8");
    expect(feed(100, [bytes.subarray(0, 1), bytes.subarray(1)])).toEqual([line("é")]);
  });

  it("gives the same frames however the stream is cut", () => {
    const lines = fc.array(fc.oneof(fc.string({ maxLength: 12 }), fc.constant("x".repeat(20))), {
      maxLength: 8,
    });
    fc.assert(
      fc.property(lines, fc.array(fc.nat(), { maxLength: 6 }), (texts, cuts) => {
        const clean = texts.map((t) => t.replace(/[\r\n]/g, ""));
        const stream = Buffer.from(clean.map((t) => `${t}\n`).join(""), "utf8");
        const whole = feed(16, [stream]);
        const points = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
        const pieces: Buffer[] = [];
        let at = 0;
        for (const p of points) {
          pieces.push(stream.subarray(at, p));
          at = p;
        }
        pieces.push(stream.subarray(at));
        expect(feed(16, pieces)).toEqual(whole);
        const expected = clean
          .filter((t) => t !== "")
          .map((t) => (Buffer.byteLength(t) > 16 ? { kind: "too-large" } : line(t)));
        expect(whole).toEqual(expected);
      }),
    );
  });
});
