import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cleanServerMessage, MAX_SERVER_MESSAGE_CHARS, printablePath } from "./server-text.js";

// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

describe("cleanServerMessage", () => {
  it("keeps an ordinary message as it is", () => {
    expect(cleanServerMessage("Permission denied")).toBe("Permission denied");
  });

  it.each([
    ["CSI colour", "\u001b[31mred\u001b[0m alert", "red alert"],
    ["clear screen and title (OSC ended by BEL)", "\u001b[2J\u001b]0;owned\u0007done", "done"],
    ["OSC 8 hyperlink ended by ST", "\u001b]8;;http://x\u001b\\link\u001b]8;;\u001b\\ text", "link text"],
    ["8-bit CSI", "\u009b1mbold", "bold"],
    ["DCS string", "\u001bPq#0;2;0;0;0\u001b\\after", "after"],
    ["newlines and tabs", "line one\r\nline\ttwo", "line one line two"],
    ["bidi override", "abc\u202edcba", "abcdcba"],
    ["nothing but escapes", "\u001b[2J\u0007", "(no message)"],
  ])("removes %s", (_label, raw, clean) => {
    expect(cleanServerMessage(raw)).toBe(clean);
  });

  it("bounds a huge message and says how long it was", () => {
    const out = cleanServerMessage("x".repeat(250_000));
    expect(out).toBe(`${"x".repeat(MAX_SERVER_MESSAGE_CHARS)}… (250000 characters)`);
  });

  it("marks a cut also when the escapes removed most of the head", () => {
    const out = cleanServerMessage("\u001b[31mA".repeat(10_000));
    expect(out.endsWith("… (60000 characters)")).toBe(true);
    expect(out).not.toMatch(CONTROL);
  });

  it("never returns a control character and never grows past its bound", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 3000 }), (raw) => {
        const out = cleanServerMessage(raw);
        expect(out).not.toMatch(CONTROL);
        expect(out.length).toBeLessThanOrEqual(MAX_SERVER_MESSAGE_CHARS + 40);
      }),
    );
  });
});

describe("printablePath", () => {
  it("shows a NUL and an escape as text", () => {
    expect(printablePath("h:/d/bad\u0000name")).toBe("h:/d/bad\\x00name");
    expect(printablePath("a\u001b[31mb")).toBe("a\\x1b[31mb");
    expect(printablePath("x\u202ey")).toBe("x\\u{202e}y");
  });

  it("bounds a long path and says how long it was", () => {
    expect(printablePath("p".repeat(1000), 10)).toBe("pppppppppp… (1000 characters)");
  });

  it("never splits a surrogate pair at the cut", () => {
    expect(printablePath(`${"a".repeat(9)}😀😀`, 10)).toBe(`${"a".repeat(9)}… (13 characters)`);
  });

  it("never returns a control character", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 2000 }), (raw) => {
        expect(printablePath(raw)).not.toMatch(CONTROL);
      }),
    );
  });
});
