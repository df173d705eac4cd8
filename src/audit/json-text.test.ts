import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, JsonNumberText } from "../core/index.js";
import { parseJsonLossless } from "./json-text.js";

describe("parseJsonLossless", () => {
  it("reproduces the canonical text of every JSON value it parses", () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: "binary" }), (x) => {
        const text = canonicalJson(x);
        expect(canonicalJson(parseJsonLossless(text))).toBe(text);
      }),
      { numRuns: 500 },
    );
  });

  it("builds the same structure as JSON.parse for safe integers and short floats", () => {
    const value = fc.jsonValue({ stringUnit: "binary" }).filter((x) => !/\d{16}/.test(JSON.stringify(x)));
    fc.assert(
      fc.property(value, (x) => {
        const text = JSON.stringify(x, null, 1);
        expect(parseJsonLossless(text)).toEqual(JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });

  it("keeps number text that a double would change", () => {
    const v = parseJsonLossless('{"a":2.0,"b":18446744073709551615,"c":1.5,"d":7,"e":1E2}') as Record<
      string,
      unknown
    >;
    expect(v.a).toBeInstanceOf(JsonNumberText);
    expect(v.b).toBeInstanceOf(JsonNumberText);
    expect(v.c).toBe(1.5);
    expect(v.d).toBe(7);
    expect(canonicalJson(v)).toBe('{"a":2.0,"b":18446744073709551615,"c":1.5,"d":7,"e":100.0}');
  });

  it("accepts whitespace, escapes and Python's NaN/Infinity, keeps __proto__ as data", () => {
    const v = parseJsonLossless(' { "k" : [ "a\\n\\u00e9" , NaN, -Infinity ] , "__proto__": 1 } ');
    expect(canonicalJson(v)).toBe('{"__proto__":1,"k":["a\\n\u00e9",NaN,-Infinity]}');
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
  });

  it("rejects what JSON rejects", () => {
    for (const bad of [
      "",
      "{",
      '{"a":1,}',
      "[1 2]",
      '"raw\ncontrol"',
      "01",
      "{a:1}",
      "[1] x",
      "tru",
      '"\\x"',
    ]) {
      expect(() => parseJsonLossless(bad), bad).toThrow(SyntaxError);
    }
  });
});
