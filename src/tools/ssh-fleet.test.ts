import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fitForJson } from "./ssh-fleet.js";

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
          else expect(fitted).toMatch(/\n\n\[TRUNCATED - \d+ bytes total, \d+ shown\]$/);
        },
      ),
    );
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
