import { describe, expect, it } from "vitest";
import { CEF_HEADER, escapeCef, escapeLeef, formatRecord, LEEF_HEADER, pythonStr } from "./format.js";
import type { AuditRecord } from "./types.js";

const record: AuditRecord = {
  ts: "2026-07-15T10:11:12.345000+00:00",
  tool: "shell_exec",
  tier: 2,
  denied: false,
  args: { command: "echo a|b=c\nd\te\\f", timeout: 2.5 },
  output_sha256: "ab".repeat(32),
  output_len: 12,
  exit_code: null,
  request_id: "req|1=\n2\r3\t4",
};

/** Split on unescaped delimiters, the way a SIEM parser would. */
function splitUnescaped(text: string, delimiter: string): string[] {
  const out: string[] = [];
  let cur = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "\\") {
      cur += text.slice(i, i + 2);
      i++;
    } else if (c === delimiter) {
      out.push(cur);
      cur = "";
    } else {
      cur += c;
    }
  }
  out.push(cur);
  return out;
}

describe("CEF", () => {
  const line = formatRecord(record, "cef");

  it("has the constant header and sorted key=value pairs with Python scalar spellings", () => {
    expect(line.startsWith(CEF_HEADER)).toBe(true);
    const body = line.slice(CEF_HEADER.length);
    expect(body).toContain("denied=False");
    expect(body).toContain("exit_code=None");
    expect(body).toContain("tier=2");
    expect(body).toContain('args={"command":"echo a\\|b\\=c\\\\nd\\\\te\\\\\\\\f","timeout":2.5}');
  });

  it("never splits a record: no raw newline, and only escaped | and = inside values", () => {
    expect(line).not.toMatch(/[\n\r]/);
    const body = line.slice(CEF_HEADER.length);
    expect(splitUnescaped(line, "|")).toHaveLength(8);
    const keys = body.split(" ").map((kv) => kv.split("=")[0]);
    expect(keys.filter((k) => /^[a-z_0-9]+$/.test(k ?? ""))).toEqual([
      "args",
      "denied",
      "exit_code",
      "output_len",
      "output_sha256",
      "request_id",
      "tier",
      "tool",
      "ts",
    ]);
    expect(body).toContain("request_id=req\\|1\\=\\n2\\r3\t4");
  });
});

describe("LEEF", () => {
  const line = formatRecord(record, "leef");

  it("is tab-delimited, sorted, and escapes tab, newline, CR, = and backslash", () => {
    expect(line.startsWith(LEEF_HEADER)).toBe(true);
    expect(line).not.toMatch(/[\n\r]/);
    const fields = splitUnescaped(line.slice(LEEF_HEADER.length), "\t");
    expect(fields.map((f) => f.split("=")[0])).toEqual([
      "args",
      "denied",
      "exit_code",
      "output_len",
      "output_sha256",
      "request_id",
      "tier",
      "tool",
      "ts",
    ]);
    expect(fields).toContain("request_id=req|1\\=\\n2\\r3\\t4");
    expect(fields).toContain("denied=False");
  });
});

describe("helpers", () => {
  it("pythonStr spells scalars the Python way", () => {
    expect([true, false, null, 3, 2.5, 1e22, "s", [1, "a"]].map(pythonStr)).toEqual([
      "True",
      "False",
      "None",
      "3",
      "2.5",
      "1e+22",
      "s",
      '[1,"a"]',
    ]);
  });

  it("escapes each delimiter set exactly", () => {
    expect(escapeCef("a\\b=c|d\ne\rf\tg")).toBe("a\\\\b\\=c\\|d\\ne\\rf\tg");
    expect(escapeLeef("a\\b=c|d\ne\rf\tg")).toBe("a\\\\b\\=c|d\\ne\\rf\\tg");
  });

  it("jsonl keeps the record's field order", () => {
    expect(Object.keys(JSON.parse(formatRecord(record, "jsonl")))).toEqual(Object.keys(record));
  });
});
