import { describe, expect, it } from "vitest";
import { isNonAsciiSeparator } from "./separators.js";

describe("isNonAsciiSeparator", () => {
  it("is exactly the Zs, Zl and Zp code points above ASCII", () => {
    const category = /^[\p{Zs}\p{Zl}\p{Zp}]$/u;
    const differing: string[] = [];
    for (let code = 0; code <= 0xffff; code++) {
      const expected = code > 0x7f && category.test(String.fromCharCode(code));
      if (isNonAsciiSeparator(code) !== expected) differing.push(code.toString(16));
    }
    expect(differing).toEqual([]);
  });
});
