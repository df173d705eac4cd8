import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAuditLog } from "../audit/index.js";
import { runVerifyAudit } from "./verify-audit.js";

let dir: string;
let lines: string[];

function file(name: string, content: string[]): string {
  const path = join(dir, name);
  writeFileSync(path, content.length === 0 ? "" : `${content.join("\n")}\n`);
  return path;
}

function json(stdout: string): Record<string, unknown> {
  return JSON.parse(stdout) as Record<string, unknown>;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "relay-verify-cli-"));
  const path = join(dir, "audit.jsonl");
  const log = createAuditLog(
    { path, format: "jsonl", chain: true, stderrEcho: false },
    { clock: { now: () => 1_750_000_000_000, monotonic: () => 0 } },
  );
  for (let i = 0; i < 4; i++) {
    log.append({
      tool: "shell_exec",
      tier: 1,
      denied: false,
      args: { command: `echo ${i}` },
      output: "x",
      exitCode: 0,
    });
  }
  log.close();
  lines = readFileSync(path, "utf8").trim().split("\n");
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("runVerifyAudit", () => {
  it("exits 0 on an intact genesis-anchored chain", () => {
    const path = file("ok.jsonl", lines);
    const text = runVerifyAudit({ path, segment: false, json: false });
    expect(text).toEqual({
      exitCode: 0,
      stdout: "chain intact and genesis-anchored: 4 record(s) from seq 0\n",
      stderr: "relay-shell: verify-audit OK\n",
    });
    const out = runVerifyAudit({ path, segment: false, json: true });
    expect(out.exitCode).toBe(0);
    expect(out.stderr).toBe("");
    expect(json(out.stdout)).toEqual({
      ok: true,
      chain_ok: true,
      present: true,
      anchored: true,
      segment_mode: false,
      path,
      records: 4,
      start_seq: 0,
      broken_at: null,
      reason: "chain intact and genesis-anchored: 4 record(s) from seq 0",
    });
  });

  it("exits 2 after tampering and names the line", () => {
    const tampered = lines.map((l, i) => (i === 2 ? l.replace("echo 2", "echo 7") : l));
    const path = file("tampered.jsonl", tampered);
    const out = runVerifyAudit({ path, segment: true, json: true });
    expect(out.exitCode).toBe(2);
    expect(json(out.stdout)).toMatchObject({ ok: false, chain_ok: false, broken_at: 3 });
    expect(json(out.stdout).reason).toMatch(/line 3: .*tampered/);
    const text = runVerifyAudit({ path, segment: false, json: false });
    expect(text.stderr).toBe("relay-shell: verify-audit FAILED (line 3)\n");
    expect(text.stdout).toMatch(/tampered/);
  });

  it("refuses head truncation unless --segment", () => {
    const path = file("segment.jsonl", lines.slice(1));
    const strict = runVerifyAudit({ path, segment: false, json: true });
    expect(strict.exitCode).toBe(2);
    expect(json(strict.stdout)).toMatchObject({
      ok: false,
      chain_ok: true,
      anchored: false,
      start_seq: 1,
      broken_at: null,
    });
    expect(json(strict.stdout).reason).toMatch(/--segment/);
    const text = runVerifyAudit({ path, segment: false, json: false });
    expect(text.stderr).toBe("relay-shell: verify-audit FAILED\n");
    const relaxed = runVerifyAudit({ path, segment: true, json: true });
    expect(relaxed.exitCode).toBe(0);
    expect(json(relaxed.stdout)).toMatchObject({ ok: true, anchored: false, segment_mode: true, records: 3 });
  });

  it("exits 2 on a missing file, even with --segment", () => {
    const path = join(dir, "missing.jsonl");
    const out = runVerifyAudit({ path, segment: true, json: true });
    expect(out.exitCode).toBe(2);
    expect(json(out.stdout)).toMatchObject({
      ok: false,
      present: false,
      records: 0,
      reason: `audit file not found or unreadable: ${path}`,
    });
    expect(runVerifyAudit({ path, segment: false, json: false }).stdout).toBe(
      `audit file not found or unreadable: ${path}\n`,
    );
  });

  it("exits 2 on an unchained or empty log and asks about RELAY_SHELL_AUDIT_CHAIN", () => {
    for (const content of [[], ['{"ts":"x","tool":"shell_exec","tier":0,"denied":false}']]) {
      const path = file("unchained.jsonl", content);
      const out = runVerifyAudit({ path, segment: true, json: false });
      expect(out.exitCode).toBe(2);
      expect(out.stdout).toMatch(/no chained records.*RELAY_SHELL_AUDIT_CHAIN/);
      expect(out.stderr).toBe("relay-shell: verify-audit FAILED\n");
    }
  });

  it("exits 2 on a path it cannot read", () => {
    const out = runVerifyAudit({ path: dir, segment: false, json: true });
    expect(out.exitCode).toBe(2);
    expect(json(out.stdout)).toMatchObject({ present: false, chain_ok: false });
    expect(json(out.stdout).reason).toMatch(/not found or unreadable.*cannot access audit file/);
  });
});
