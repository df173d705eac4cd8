import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fitForJson } from "./fanout-fit.js";

const escapedSize = (text: string) => Buffer.byteLength(JSON.stringify(text)) - 2;

describe("fan-out output fitting", () => {
  it("never lets the JSON-escaped output outgrow its share", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 3000 }),
        fc.integer({ min: 64, max: 2048 }),
        (text, limit) => {
          const fitted = fitForJson(text, limit);
          expect(escapedSize(fitted)).toBeLessThanOrEqual(limit);
          if (escapedSize(text) <= limit) expect(fitted).toBe(text);
          else if (fitted !== "") {
            expect(fitted).toMatch(/\n\n\[TRUNCATED - \d+ bytes total, \d+ shown\]$/);
            // Exactly one marker, and the shown prefix is really the start of the text.
            expect(fitted.split("[TRUNCATED").length).toBe(2);
            const head = fitted.slice(0, fitted.lastIndexOf("\n\n[TRUNCATED"));
            expect(text.startsWith(head)).toBe(true);
          }
        },
      ),
    );
  });

  it("never leaves half a colour sequence before the marker", () => {
    for (let limit = 100; limit < 140; limit++) {
      const fitted = fitForJson("\u001b[31mx".repeat(100), limit);
      const head = fitted.slice(0, fitted.lastIndexOf("\n\n[TRUNCATED"));
      const rest = head.replaceAll("\u001b[31mx", "");
      expect(rest === "" || rest === "\u001b[31m", `${limit}: ${JSON.stringify(rest)}`).toBe(true);
    }
  });

  it("uses most of the share when it has to cut", () => {
    const fitted = fitForJson("x".repeat(10_000), 1000);
    expect(escapedSize(fitted)).toBeGreaterThan(900);
  });

  it("counts escapes: control bytes cost six bytes each", () => {
    const control = "\u0001".repeat(1000);
    const fitted = fitForJson(control, 600);
    expect(escapedSize(fitted)).toBeLessThanOrEqual(600);
    expect(fitted).toContain("[TRUNCATED - 1000 bytes total,");
  });

  it("reports what the command produced when the buffer already dropped bytes", () => {
    expect(fitForJson("short", 1000, 100_000)).toBe("short\n\n[TRUNCATED - 100000 bytes total, 5 shown]");
  });
});
