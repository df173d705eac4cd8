import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalJson } from "../core/index.js";
import { GENESIS } from "./chain.js";
import { verifyAuditChain } from "./verify.js";
import { createAuditLog } from "./writer.js";

let dir: string;
let valid: string[]; // the lines of an intact 6-record chain
let counter = 0;

function fileWith(lines: string[], name?: string): string {
  const path = join(dir, name ?? `case-${counter++}.jsonl`);
  writeFileSync(path, lines.length === 0 ? "" : `${lines.join("\n")}\n`);
  return path;
}

function edit(line: string, from: string, to: string): string {
  expect(line).toContain(from);
  return line.replace(from, to);
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "relay-audit-v-"));
  const path = join(dir, "source.jsonl");
  let t = Date.UTC(2026, 6, 15);
  const log = createAuditLog(
    { path, format: "jsonl", chain: true, stderrEcho: false },
    { clock: { now: () => (t += 1234), monotonic: () => 0 } },
  );
  const tools = ["shell_exec", "ssh_exec", "session_recv", "audit_tail", "shell_exec", "server_info"];
  tools.forEach((tool, i) => {
    log.append({
      tool,
      tier: i % 4 === 0 ? 0 : 1,
      denied: i === 3,
      args: { command: `echo ${i} caf\u00e9`, timeout: 2.5 + i },
      output: `[exit 0]\n${i}\n`,
      exitCode: i === 3 ? null : 0,
    });
  });
  log.close();
  valid = readFileSync(path, "utf8").trim().split("\n");
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("verifyAuditChain on intact files", () => {
  it("accepts an intact chain from genesis", () => {
    expect(verifyAuditChain(fileWith(valid))).toEqual({
      ok: true,
      chainOk: true,
      present: true,
      anchored: true,
      records: 6,
      startSeq: 0,
      brokenAt: null,
      reason: "chain intact and genesis-anchored: 6 record(s) from seq 0",
    });
  });

  it("skips leading legacy lines and blank lines inside the region", () => {
    const legacy = ['{"ts":"2025-01-01T00:00:00+00:00","tool":"shell_exec","tier":0}', "not json at all", ""];
    const withBlank = [...valid.slice(0, 3), "", "   ", ...valid.slice(3)];
    const report = verifyAuditChain(fileWith([...legacy, ...withBlank]));
    expect(report).toMatchObject({ ok: true, anchored: true, records: 6 });
  });

  it("head truncation is consistent but not anchored", () => {
    const report = verifyAuditChain(fileWith(valid.slice(2)));
    expect(report).toMatchObject({ ok: false, chainOk: true, anchored: false, records: 4, startSeq: 2 });
    expect(report.reason).toMatch(/from seq 2.*does not start at genesis/);
  });

  it("tail truncation is an anchored valid prefix (the documented limit)", () => {
    expect(verifyAuditChain(fileWith(valid.slice(0, 4)))).toMatchObject({
      ok: true,
      anchored: true,
      records: 4,
    });
  });

  it("reports a missing file, a directory, an empty and an unchained log", () => {
    const missing = join(dir, "nope.jsonl");
    expect(verifyAuditChain(missing)).toMatchObject({
      chainOk: true,
      ok: false,
      present: false,
      records: 0,
      reason: `audit file not found: ${missing}`,
    });
    const sub = join(dir, "a-dir");
    mkdirSync(sub);
    const asDir = verifyAuditChain(sub);
    expect(asDir).toMatchObject({ chainOk: false, present: false });
    expect(asDir.reason).toMatch(/^cannot access audit file: /);
    for (const lines of [[], ['{"tool":"x"}', '{"tool":"y"}']]) {
      expect(verifyAuditChain(fileWith(lines))).toMatchObject({
        chainOk: true,
        ok: false,
        present: true,
        records: 0,
        startSeq: null,
        reason: "no chained records found (empty or unchained log)",
      });
    }
  });

  it("verifies a gzip-compressed rotated file", () => {
    const path = join(dir, "rotated.jsonl.1.gz");
    writeFileSync(path, gzipSync(Buffer.from(`${valid.join("\n")}\n`)));
    expect(verifyAuditChain(path)).toMatchObject({ ok: true, records: 6 });
  });
});

describe("verifyAuditChain finds tampering", () => {
  const cases: Array<{ name: string; mutate: (l: string[]) => string[]; line: number; reason: RegExp }> = [
    {
      name: "an edited body",
      mutate: (l) => l.map((x, i) => (i === 2 ? edit(x, '"tier": 1', '"tier": 0') : x)),
      line: 3,
      reason: /^line 3: record body does not match its chain hash \(tampered\)$/,
    },
    {
      name: "an edited argument",
      mutate: (l) => l.map((x, i) => (i === 1 ? edit(x, "echo 1", "echo 9") : x)),
      line: 2,
      reason: /tampered/,
    },
    {
      name: "a forged chain field",
      mutate: (l) => l.map((x, i) => (i === 4 ? x.replace(/"chain": "[0-9a-f]/, '"chain": "g') : x)),
      line: 5,
      reason: /line 5: .*tampered/,
    },
    {
      name: "a deleted interior record",
      mutate: (l) => [...l.slice(0, 2), ...l.slice(3)],
      line: 3,
      reason: /^line 3: expected seq 2, found 3$/,
    },
    {
      name: "a swapped pair",
      mutate: (l) => [l[0], l[2], l[1], ...l.slice(3)] as string[],
      line: 2,
      reason: /^line 2: expected seq 1, found 2$/,
    },
    {
      name: "an inserted duplicate",
      mutate: (l) => [...l.slice(0, 3), l[1], ...l.slice(3)] as string[],
      line: 4,
      reason: /expected seq 3, found 1/,
    },
    {
      name: "an inserted record with forged linkage",
      mutate: (l) =>
        [
          ...l.slice(0, 3),
          l[3]?.replace(/"prev": "[0-9a-f]+"/, `"prev": "${"1".repeat(64)}"`),
          ...l.slice(3),
        ] as string[],
      line: 4,
      reason: /prev does not match the previous record's chain/,
    },
    {
      name: "a wrong genesis prev",
      mutate: (l) =>
        l.map((x, i) => (i === 0 ? edit(x, `"prev": "${GENESIS}"`, `"prev": "${"f".repeat(64)}"`) : x)),
      line: 1,
      reason: /^line 1: seq 0 must anchor to genesis$/,
    },
    {
      name: "garbage inside the region",
      mutate: (l) => [...l.slice(0, 2), "}{ garbage", ...l.slice(2)],
      line: 3,
      reason: /^line 3: invalid JSON inside the chained region$/,
    },
    {
      name: "a record stripped of its chain fields",
      mutate: (l) => l.map((x, i) => (i === 3 ? x.replace(/, "seq": .*\}$/, "}") : x)),
      line: 4,
      reason: /^line 4: record missing chain fields inside the chained region$/,
    },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const report = verifyAuditChain(fileWith(c.mutate(valid)));
      expect(report.ok).toBe(false);
      expect(report.chainOk).toBe(false);
      expect(report.brokenAt).toBe(c.line);
      expect(report.reason).toMatch(c.reason);
    });
  }

  it("any single-line edit, deletion (but the last), swap or insertion is caught", () => {
    const mutation = fc.oneof(
      fc.record({
        kind: fc.constant("edit" as const),
        line: fc.nat(valid.length - 1),
        at: fc.nat(),
        ch: fc.string({ minLength: 1, maxLength: 1, unit: "binary" }),
      }),
      fc.record({ kind: fc.constant("delete" as const), line: fc.nat(valid.length - 2) }),
      fc.record({ kind: fc.constant("swap" as const), line: fc.nat(valid.length - 2) }),
      fc.record({
        kind: fc.constant("insert" as const),
        line: fc.integer({ min: 1, max: valid.length }),
        copyOf: fc.nat(valid.length - 1),
        garbage: fc.option(fc.string({ minLength: 1 }).filter((s) => s.trim() !== "" && !s.includes("\n"))),
      }),
    );
    fc.assert(
      fc.property(mutation, (m) => {
        const lines = [...valid];
        if (m.kind === "edit") {
          const line = lines[m.line] ?? "";
          const at = m.at % line.length;
          fc.pre(line[at] !== m.ch && m.ch !== "\n");
          const edited = line.slice(0, at) + m.ch + line.slice(at + 1);
          // Whitespace between tokens is not part of a record (the chain hashes its canonical form).
          fc.pre(!sameRecord(line, edited));
          lines[m.line] = edited;
        } else if (m.kind === "delete") {
          lines.splice(m.line, 1);
        } else if (m.kind === "swap") {
          [lines[m.line], lines[m.line + 1]] = [lines[m.line + 1] ?? "", lines[m.line] ?? ""];
        } else {
          lines.splice(m.line, 0, m.garbage ?? valid[m.copyOf] ?? "");
        }
        expect(verifyAuditChain(fileWith(lines, "prop.jsonl")).ok).toBe(false);
      }),
      { numRuns: 400 },
    );
  });
});

const hasPython = spawnSync("python3", ["-c", "print(1)"], { encoding: "utf8" }).status === 0;

describe.skipIf(!hasPython)("foreign logs", () => {
  it("verifies a log written by a Python writer with floats like 2.0 and 64-bit integers", () => {
    const path = join(dir, "python.jsonl");
    const script = [
      "import hashlib, json, sys",
      "prev = '0' * 64",
      "with open(sys.argv[1], 'w', encoding='utf-8') as f:",
      "    for seq, args in enumerate([{'timeout': 2.0}, {'x': 18446744073709551615, 'y': -0.0}, {'z': 1e16}]):",
      "        rec = {'ts': '2026-07-15T10:11:12.345678+00:00', 'tool': 'session_recv', 'tier': 0, 'denied': False,",
      "               'args': args, 'output_sha256': '0' * 64, 'output_len': 0, 'exit_code': None,",
      "               'seq': seq, 'prev': prev}",
      "        body = json.dumps(rec, sort_keys=True, separators=(',', ':'), ensure_ascii=False)",
      "        rec['chain'] = prev = hashlib.sha256((prev + body).encode('utf-8')).hexdigest()",
      "        f.write(json.dumps(rec, ensure_ascii=False) + '\\n')",
    ].join("\n");
    const run = spawnSync("python3", ["-c", script, path], { encoding: "utf8" });
    expect(run.stderr).toBe("");
    expect(readFileSync(path, "utf8")).toContain('"timeout": 2.0');
    expect(verifyAuditChain(path)).toMatchObject({ ok: true, records: 3 });
  });
});

/** Whether two lines parse to the same record (they differ only in whitespace between tokens). */
function sameRecord(a: string, b: string): boolean {
  try {
    return canonicalJson(JSON.parse(a)) === canonicalJson(JSON.parse(b));
  } catch {
    return false;
  }
}
