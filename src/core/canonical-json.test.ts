import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  canonicalJson,
  compactJson,
  compareCodePoints,
  JsonNumberText,
  pythonFloatRepr,
  pythonJson,
  quoteString,
  renderNumberText,
} from "./canonical-json.js";

/** Python's json string escaping (ensure_ascii=False) spelled out, plus \udxxx for a lone surrogate. */
function referenceQuote(s: string): string {
  const short: Record<number, string> = {
    8: "\\b",
    9: "\\t",
    10: "\\n",
    12: "\\f",
    13: "\\r",
    34: '\\"',
    92: "\\\\",
  };
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const next = s.charCodeAt(i + 1);
    if (short[c] !== undefined) out += short[c];
    else if (c < 0x20) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += s.slice(i, i + 2);
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) out += `\\u${c.toString(16)}`;
    else out += s[i];
  }
  return `${out}"`;
}

// Expected outputs were produced by CPython 3.11
// json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).
// The same table is printed in docs/audit.md.
const VECTORS: Array<{ name: string; input: unknown; expected: string }> = [
  {
    name: "sorted keys, literals",
    input: { b: 1, a: [true, false, null], c: "x" },
    expected: '{"a":[true,false,null],"b":1,"c":"x"}',
  },
  {
    name: "code-point key order (astral after U+FFFD)",
    input: { "\ufffd": 1, "\u{1F600}": 2, z: 3, Z: 4, "": 5 },
    expected: '{"":5,"Z":4,"z":3,"\ufffd":1,"\u{1F600}":2}',
  },
  {
    name: "string escapes",
    input: {
      text: "caf\u00e9 \u65e5\u672c \u{1F600}",
      ctl: "\u0000\u0001\u001f\u007f",
      short: '\b\f\n\r\t"\\/',
      sep: "\u2028",
    },
    expected:
      '{"ctl":"\\u0000\\u0001\\u001f\u007f","sep":"\u2028","short":"\\b\\f\\n\\r\\t\\"\\\\/",' +
      '"text":"caf\u00e9 \u65e5\u672c \u{1F600}"}',
  },
  {
    name: "numbers",
    input: {
      timeout: 2.5,
      small: 0.00001,
      tiny: 0.0001,
      big: 1.5e300,
      neg: -0.1,
      third: 1 / 3,
      int: -42,
      huge: 12345678901234567890n,
    },
    expected:
      '{"big":1.5e+300,"huge":12345678901234567890,"int":-42,"neg":-0.1,"small":1e-05,' +
      '"third":0.3333333333333333,"timeout":2.5,"tiny":0.0001}',
  },
  {
    name: "nested record",
    input: { args: { command: "echo hi", cwd: "/tmp" }, tier: 1, denied: false, exit_code: null },
    expected: '{"args":{"command":"echo hi","cwd":"/tmp"},"denied":false,"exit_code":null,"tier":1}',
  },
];

describe("canonicalJson vectors", () => {
  for (const v of VECTORS) {
    it(v.name, () => {
      expect(canonicalJson(v.input)).toBe(v.expected);
    });
  }
});

describe("canonicalJson edge values", () => {
  it("omits undefined members and writes undefined array items as null", () => {
    expect(canonicalJson({ a: undefined, b: [undefined, 1] })).toBe('{"b":[null,1]}');
  });

  it("stringifies values JSON has no form for", () => {
    expect(canonicalJson({ n: Number.NaN, i: Number.POSITIVE_INFINITY, big: -5n })).toBe(
      '{"big":-5,"i":"Infinity","n":"NaN"}',
    );
    expect(canonicalJson(Symbol("s"))).toBe('"Symbol(s)"');
  });

  it("writes safe integers as integers, -0 as 0, and larger integral doubles as floats", () => {
    expect(canonicalJson([2.0, -0, 2 ** 53 - 1, 2 ** 53, 1e21, 2 ** 64])).toBe(
      "[2,0,9007199254740991,9007199254740992.0,1e+21,1.8446744073709552e+19]",
    );
  });

  it("uses toJSON (dates) and survives cycles", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(canonicalJson({ d: new Date(0), c: cyclic })).toBe(
      '{"c":{"a":1,"self":"[circular]"},"d":"1970-01-01T00:00:00.000Z"}',
    );
  });

  it("escapes lone surrogates so nothing is lost in UTF-8", () => {
    const text = canonicalJson("a\ud800b\udc00");
    expect(text).toBe('"a\\ud800b\\udc00"');
    expect(JSON.parse(text)).toBe("a\ud800b\udc00");
  });

  it("escapes every UTF-16 unit exactly as the reference rules say", () => {
    for (let c = 0; c <= 0xffff; c++) {
      const s = `a${String.fromCharCode(c)}`;
      if (quoteString(s) !== referenceQuote(s)) expect(quoteString(s)).toBe(referenceQuote(s));
    }
    fc.assert(
      fc.property(
        fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) }),
        (s) => {
          expect(quoteString(s)).toBe(referenceQuote(s));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("keeps a __proto__ member as data", () => {
    const value = JSON.parse('{"__proto__":{"x":1},"a":2}') as unknown;
    expect(canonicalJson(value)).toBe('{"__proto__":{"x":1},"a":2}');
  });

  it("pythonJson writes Python's default separators, insertion order and non-ASCII as is", () => {
    expect(pythonJson({ z: 1.5, a: { y: "é\n", b: [1, null, true] } })).toBe(
      '{"z": 1.5, "a": {"y": "é\\n", "b": [1, null, true]}}',
    );
    // Parsed back and canonicalised, it is the hashed text.
    const record = { ts: "t", tool: "server_info", args: { k: "a, b: c" } };
    expect(canonicalJson(JSON.parse(pythonJson(record)))).toBe(canonicalJson(record));
  });

  it("compactJson keeps insertion order with the same scalar forms", () => {
    expect(compactJson({ z: 1.5, a: { y: "\n", b: null } })).toBe('{"z":1.5,"a":{"y":"\\n","b":null}}');
  });

  it("renders number text the way Python re-serialises it", () => {
    expect(renderNumberText("2.0")).toBe("2.0");
    expect(renderNumberText("1E2")).toBe("100.0");
    expect(renderNumberText("-0")).toBe("0");
    expect(renderNumberText("-0.0")).toBe("-0.0");
    expect(renderNumberText("18446744073709551615")).toBe("18446744073709551615");
    expect(canonicalJson({ t: new JsonNumberText("30.0") })).toBe('{"t":30.0}');
  });

  it("pythonFloatRepr matches Python at the layout boundaries", () => {
    const cases: Array<[number, string]> = [
      [1e16, "1e+16"],
      [1e15, "1000000000000000.0"],
      [123456789012345680, "1.2345678901234568e+17"],
      [0.0001, "0.0001"],
      [0.00001, "1e-05"],
      [1.5e-7, "1.5e-07"],
      [5e-324, "5e-324"],
      [1.7976931348623157e308, "1.7976931348623157e+308"],
      [-0, "-0.0"],
      [2, "2.0"],
      [0.1 + 0.2, "0.30000000000000004"],
    ];
    for (const [x, repr] of cases) expect(pythonFloatRepr(x)).toBe(repr);
  });
});

describe("canonicalJson properties", () => {
  it("round-trips every JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: "binary" }), (x) => {
        // JSON itself cannot carry -0; compare with what JSON.parse would see.
        expect(JSON.parse(canonicalJson(x))).toEqual(JSON.parse(JSON.stringify(x)));
      }),
      { numRuns: 500 },
    );
  });

  it("is a fixed point of parse-then-canonicalise and ignores member order", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ unit: "binary" }), fc.jsonValue()), (obj) => {
        const text = canonicalJson(obj);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
        const reversed = Object.fromEntries(Object.entries(obj).reverse());
        expect(canonicalJson(reversed)).toBe(text);
      }),
      { numRuns: 300 },
    );
  });

  it("float repr round-trips to the same double", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (x) => {
        expect(Object.is(Number(pythonFloatRepr(x)), x)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("compareCodePoints orders like an array of code points", () => {
    const byCodePoints = (a: string, b: string): number => {
      const x = [...a].map((c) => c.codePointAt(0) ?? 0);
      const y = [...b].map((c) => c.codePointAt(0) ?? 0);
      for (let i = 0; i < Math.min(x.length, y.length); i++) {
        if (x[i] !== y[i]) return (x[i] ?? 0) - (y[i] ?? 0);
      }
      return x.length - y.length;
    };
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string({ unit: "binary" }), (a, b) => {
        expect(Math.sign(compareCodePoints(a, b))).toBe(Math.sign(byCodePoints(a, b)));
      }),
      { numRuns: 1000 },
    );
  });
});

const hasPython = spawnSync("python3", ["-c", "print(1)"], { encoding: "utf8" }).status === 0;

describe.skipIf(!hasPython)("interop with CPython's json module", () => {
  it("Python re-serialises our canonical text to the same bytes", () => {
    const values = [
      ...fc.sample(fc.jsonValue({ stringUnit: "binary", maxDepth: 3 }), 400),
      ...fc.sample(fc.double({ noNaN: true, noDefaultInfinity: true }), 400),
      ...VECTORS.map((v) => v.input),
    ];
    const lines = values.map((v) => canonicalJson(v));
    const script = [
      "import sys, json",
      "for line in sys.stdin.buffer.read().decode('utf-8').split('\\n'):",
      "    if line:",
      "        out = json.dumps(json.loads(line), sort_keys=True, separators=(',', ':'), ensure_ascii=False)",
      "        sys.stdout.buffer.write(out.encode('utf-8') + b'\\n')",
    ].join("\n");
    const run = spawnSync("python3", ["-c", script], { input: `${lines.join("\n")}\n`, encoding: "utf8" });
    expect(run.stderr).toBe("");
    expect(run.stdout.split("\n").slice(0, -1)).toEqual(lines);
  });
});
