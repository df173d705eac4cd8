import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createOutputSink } from "./output-sink.js";

const bytes = (text: string) => Buffer.from(text, "utf8");

describe("createOutputSink", () => {
  it("keeps arrival order when merged", () => {
    const sink = createOutputSink(100, true);
    sink.write("stdout", bytes("a"));
    sink.write("stderr", bytes("b"));
    sink.write("stdout", bytes("c"));
    expect(sink.drained()).toEqual({ output: "abc", totalBytes: 3, droppedBytes: 0 });
  });

  it("puts stderr after stdout when not merged, under one shared budget", () => {
    const sink = createOutputSink(4, false);
    sink.write("stderr", bytes("EE"));
    sink.write("stdout", bytes("o1"));
    sink.write("stdout", bytes("o2"));
    sink.write("stderr", bytes("FF"));
    expect(sink.drained()).toEqual({ output: "o1EE", totalBytes: 8, droppedBytes: 4 });
  });

  it("decodes a character split across writes, and a cut one as U+FFFD", () => {
    const euro = bytes("€");
    const whole = createOutputSink(10, true);
    for (const b of euro) whole.write("stdout", Uint8Array.of(b));
    expect(whole.drained().output).toBe("€");
    const cut = createOutputSink(2, true);
    cut.write("stdout", euro);
    expect(cut.drained()).toEqual({ output: "\uFFFD", totalBytes: 3, droppedBytes: 1 });
  });

  it("treats a zero or invalid budget as keep nothing", () => {
    for (const budget of [0, -5, Number.NaN]) {
      const sink = createOutputSink(budget, true);
      sink.write("stdout", bytes("abc"));
      expect(sink.drained()).toEqual({ output: "", totalBytes: 3, droppedBytes: 3 });
    }
  });

  it("keeps exactly the first budget bytes of the arrival stream", () => {
    const chunk = fc.record({
      stream: fc.constantFrom("stdout" as const, "stderr" as const),
      data: fc.uint8Array({ maxLength: 50 }),
    });
    fc.assert(
      fc.property(fc.array(chunk, { maxLength: 20 }), fc.nat(400), (chunks, budget) => {
        const sink = createOutputSink(budget, true);
        for (const c of chunks) sink.write(c.stream, c.data);
        const all = Buffer.concat(chunks.map((c) => c.data));
        const kept = Math.min(budget, all.length);
        const expected = new TextDecoder("utf-8", { ignoreBOM: true }).decode(all.subarray(0, kept));
        expect(sink.drained()).toEqual({
          output: expected,
          totalBytes: all.length,
          droppedBytes: all.length - kept,
        });
      }),
    );
  });
});
