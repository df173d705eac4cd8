import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { canonicalJson } from "../core/index.js";
import { chainHash, GENESIS, resumeAnchor, rotatedSiblings } from "./chain.js";
import type { AuditEntry, AuditLog } from "./types.js";
import { verifyAuditChain } from "./verify.js";
import { createAuditLog } from "./writer.js";

const clock = { now: () => Date.UTC(2026, 0, 2, 3, 4, 5, 6), monotonic: () => 0 };

function entry(tool: string, extra: Partial<AuditEntry> = {}): AuditEntry {
  return { tool, tier: 0, denied: false, args: { n: 1 }, output: "ok", exitCode: 0, ...extra };
}

type Chained = { seq: number; prev: string; chain: string; tool: string } & Record<string, unknown>;

function records(path: string): Chained[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Chained);
}

let dir: string;
let path: string;
let logs: AuditLog[];

function start(chain = true): AuditLog {
  const log = createAuditLog({ path, format: "jsonl", chain, stderrEcho: false }, { clock });
  logs.push(log);
  return log;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "relay-audit-c-"));
  path = join(dir, "audit.jsonl");
  logs = [];
});

afterEach(() => {
  for (const log of logs) log.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("chain fields", () => {
  it("are absent with chaining off", () => {
    const log = start(false);
    log.append(entry("a"));
    const [r] = records(path);
    expect(r).not.toHaveProperty("seq");
    expect(r).not.toHaveProperty("prev");
    expect(r).not.toHaveProperty("chain");
    expect(log.status().chain).toBe(false);
  });

  it("start at genesis, link each prev to the previous chain, and hash the canonical body", () => {
    const log = start();
    for (const t of ["a", "b", "c"]) log.append(entry(t, { requestId: "r" }));
    const rs = records(path);
    expect(rs.map((r) => r.seq)).toEqual([0, 1, 2]);
    expect(rs[0]?.prev).toBe(GENESIS);
    expect(rs[1]?.prev).toBe(rs[0]?.chain);
    expect(rs[2]?.prev).toBe(rs[1]?.chain);
    for (const r of rs) {
      const { chain, ...body } = r;
      expect(chain).toMatch(/^[0-9a-f]{64}$/);
      expect(chainHash(r.prev, body)).toBe(chain);
      expect(Object.keys(r).slice(-3)).toEqual(["seq", "prev", "chain"]);
    }
  });

  it("is refused for CEF/LEEF at this layer too (chain needs JSON)", () => {
    const log = createAuditLog({ path, format: "cef", chain: true, stderrEcho: false }, { clock });
    logs.push(log);
    log.append(entry("a"));
    expect(log.status().chain).toBe(false);
    expect(readFileSync(path, "utf8")).not.toContain("seq=");
  });
});

describe("resume on start", () => {
  it("continues across restarts on the same file", () => {
    start().append(entry("a"));
    logs.pop()?.close();
    const log = start();
    log.append(entry("b"));
    log.append(entry("c"));
    expect(records(path).map((r) => r.seq)).toEqual([0, 1, 2]);
    expect(verifyAuditChain(path)).toMatchObject({ ok: true, records: 3 });
  });

  it("continues from the newest rotated sibling when the active file is empty, ignoring unrelated files", () => {
    const writer = start();
    writer.append(entry("a"));
    writer.append(entry("b"));
    writer.close();
    const rotated = readFileSync(path);
    // Older numbered copy, the newest dateext copy, and a decoy that is newer still.
    writeFileSync(`${path}.1`, `${JSON.stringify({ seq: 99, prev: "x", chain: "old" })}\n`);
    writeFileSync(`${path}-20260102`, rotated);
    writeFileSync(`${path}.tmp`, `${JSON.stringify({ seq: 500, prev: "x", chain: "decoy" })}\n`);
    writeFileSync(
      join(dir, "other.jsonl-20260103"),
      `${JSON.stringify({ seq: 7, prev: "x", chain: "y" })}\n`,
    );
    utimesSync(`${path}.1`, 1000, 1000);
    utimesSync(`${path}-20260102`, 2000, 2000);
    utimesSync(`${path}.tmp`, 3000, 3000);
    writeFileSync(path, "");
    expect(rotatedSiblings(path)).toEqual([`${path}-20260102`, `${path}.1`]);
    const last = records(`${path}-20260102`)[1];
    expect(resumeAnchor(path)).toEqual({ anchor: { seq: 2, prev: last?.chain }, source: `${path}-20260102` });
    start().append(entry("c"));
    expect(records(path)[0]).toMatchObject({ seq: 2, prev: last?.chain });
  });

  it("reads a gzip-compressed newest sibling", () => {
    const writer = start();
    writer.append(entry("a"));
    writer.close();
    const last = records(path)[0];
    writeFileSync(`${path}.1.gz`, gzipSync(readFileSync(path)));
    writeFileSync(path, "");
    start().append(entry("b"));
    expect(records(path)[0]).toMatchObject({ seq: 1, prev: last?.chain });
  });

  it("restarts at genesis when the active tail is not a chained record (a visible seam)", () => {
    start().append(entry("a"));
    logs.pop()?.close();
    writeFileSync(path, `${readFileSync(path, "utf8")}{not json\n`);
    start().append(entry("b"));
    const tail = readFileSync(path, "utf8").trim().split("\n").at(-1) ?? "";
    expect(JSON.parse(tail)).toMatchObject({ seq: 0, prev: GENESIS });
    expect(verifyAuditChain(path)).toMatchObject({ chainOk: false, brokenAt: 2 });
  });

  it("restarts at genesis when the active tail is an unchained record", () => {
    writeFileSync(path, `${JSON.stringify({ ts: "x", tool: "legacy" })}\n`);
    writeFileSync(`${path}.1`, `${JSON.stringify({ seq: 4, prev: "p", chain: "c" })}\n`);
    expect(resumeAnchor(path).anchor).toEqual({ seq: 0, prev: GENESIS });
  });

  it("a restarted writer leaves a file that verifies as one chain", () => {
    for (let round = 0; round < 3; round++) {
      const log = start();
      log.append(entry(`r${round}`));
      log.close();
    }
    expect(verifyAuditChain(path)).toMatchObject({ ok: true, anchored: true, records: 3 });
  });
});

const hasPython = spawnSync("python3", ["-c", "print(1)"], { encoding: "utf8" }).status === 0;

describe.skipIf(!hasPython)("interop", () => {
  it("a Python verifier following docs/wire-contract.md §6.7 accepts what this writer wrote", () => {
    const log = start();
    log.append(
      entry("shell_exec", {
        args: { command: "echo caf\u00e9 \u{1F600}\n", timeout: 2.5, env: { Z: "1", A: "\u0001" } },
      }),
    );
    log.append(entry("session_recv", { args: { session_id: "abc", timeout: 0.1 }, exitCode: null }));
    log.append(entry("audit_tail", { denied: true, args: { lines: 50, "\ufffd": 1, "\u{10000}": 2 } }));
    const script = [
      "import hashlib, json, sys",
      "prev, seq = '0' * 64, 0",
      "for line in open(sys.argv[1], encoding='utf-8'):",
      "    rec = json.loads(line)",
      "    chain = rec.pop('chain')",
      "    assert rec['seq'] == seq and rec['prev'] == prev, (seq, rec)",
      "    body = json.dumps(rec, sort_keys=True, separators=(',', ':'), ensure_ascii=False)",
      "    assert hashlib.sha256((prev + body).encode('utf-8')).hexdigest() == chain, body",
      "    prev, seq = chain, seq + 1",
      "print(seq)",
    ].join("\n");
    const run = spawnSync("python3", ["-c", script, path], { encoding: "utf8" });
    expect(run.stderr).toBe("");
    expect(run.stdout.trim()).toBe("3");
    // The same canonical body, computed here, is what was hashed.
    const [first] = records(path);
    const { chain, ...body } = first as Chained;
    expect(chain).toBe(chainHash(GENESIS, JSON.parse(canonicalJson(body)) as Record<string, unknown>));
  });
});
