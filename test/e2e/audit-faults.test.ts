import { spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statfsSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseEnv, SERVER_ENTRY, startServer, type TestServer } from "../helpers/server.js";

/** A proven read (`ls /`, Tier 0) runs a process: refused while its record cannot be written. */
const ACTS_REFUSED =
  /^\[DENIED tier 0 \(READ_ONLY\): the audit log cannot be written; RELAY_SHELL_AUDIT_FAIL_CLOSED refuses every call that acts until it can\]$/;

/** `relay-shell --verify-audit` on a file, as an operator runs it. */
function verifyAudit(path: string, extra: string[] = []): { code: number | null; out: string } {
  const r = spawnSync(process.execPath, [SERVER_ENTRY, "--verify-audit", "--audit-path", path, ...extra], {
    env: baseEnv(),
    encoding: "utf8",
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

interface AuditInfo {
  degraded: boolean;
  degraded_reason: string;
  write_failures: number;
}

function recordsOf(path: string): Array<Record<string, unknown>> {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** server_info's audit section, and whether the call carried the lost-record notice. */
async function auditInfo(s: TestServer): Promise<AuditInfo & { notice: boolean }> {
  const r = await s.call("server_info");
  const [json = "", ...notices] = r.text.split("\n[NOTICE ");
  const audit = (JSON.parse(json) as { audit: AuditInfo }).audit;
  return { ...audit, notice: notices.some((n) => n.startsWith("audit this call ran")) };
}

/** Writes until the file system refuses, or until only `leave` bytes are free. */
function fill(path: string, leave = 0): void {
  const { bavail, bsize } = statfsSync(join(path, ".."));
  const fd = openSync(path, "w");
  const block = Buffer.alloc(bsize, 0x78);
  try {
    for (let free = bavail * bsize; free > leave; free -= bsize) writeSync(fd, block);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
  } finally {
    closeSync(fd);
  }
}

/** Mounts a 256 KiB tmpfs at `dir`: "" when done, otherwise why not. */
function mountTmpfs(dir: string): string {
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", dir], {
    encoding: "utf8",
  });
  if (r.error !== undefined) return `mount could not run: ${r.error.message}`;
  if (r.status !== 0) return `mounting a tmpfs is not permitted here: ${r.stderr.trim()}`;
  return "";
}

// A small tmpfs is a real full disk. Mounting needs root (or CAP_SYS_ADMIN); elsewhere the test is skipped.
describe("the audit file on a 256 KiB tmpfs that fills up", () => {
  let mountPoint: string;
  let mountProblem = "";
  let auditPath: string;
  let fillers: string[];
  let canaries: string;
  let s: TestServer | undefined;

  beforeAll(async () => {
    mountPoint = mkdtempSync(join(tmpdir(), "relay-shell-fulldisk-"));
    canaries = mkdtempSync(join(tmpdir(), "relay-shell-canary-"));
    auditPath = join(mountPoint, "audit.jsonl");
    fillers = [join(mountPoint, "filler-1"), join(mountPoint, "filler-2")];
    mountProblem = mountTmpfs(mountPoint);
    if (mountProblem === "") {
      s = await startServer({ RELAY_SHELL_AUDIT_PATH: auditPath, RELAY_SHELL_AUDIT_CHAIN: "true" });
    }
  });

  afterAll(async () => {
    await s?.close();
    if (mountProblem === "") {
      const umount = spawnSync("umount", [mountPoint]);
      if (umount.status !== 0) spawnSync("umount", ["-l", mountPoint]);
    }
    rmSync(mountPoint, { recursive: true, force: true });
    rmSync(canaries, { recursive: true, force: true });
  });

  it("refuses the call before its side effect, never leaves a torn record, and runs the first call after space returns", async (ctx) => {
    if (s === undefined) return ctx.skip(mountProblem);
    // Nearly full: room for the writer's minimum reservation, not for a whole chunk.
    fill(fillers[0] as string, 80 * 1024);
    const first = await s.call("shell_exec", { command: `touch ${join(canaries, "before")}` });
    expect(first.text).toBe("[exit 0]\n");
    expect(existsSync(join(canaries, "before"))).toBe(true);

    // Full.
    fill(fillers[1] as string);

    // The record of this call could not be guaranteed: it must not run.
    const refused = await s.call("shell_exec", { command: `touch ${join(canaries, "refused")}` });
    expect(refused.text).toMatch(/^\[DENIED tier 1 \(REVERSIBLE\): the audit log cannot be written/);
    expect(existsSync(join(canaries, "refused"))).toBe(false);
    // A read runs a process too: refused although it is Tier 0.
    const read = await s.call("shell_exec", { command: "ls /" });
    expect(read.text).toMatch(ACTS_REFUSED);
    const info = await auditInfo(s);
    expect(info.degraded).toBe(true);
    expect(info.degraded_reason).toMatch(/cannot reserve room for audit records in .*ENOSPC/);
    // The refusal itself went into the room reserved earlier.
    const refusal = recordsOf(auditPath).find(
      (r) => JSON.stringify(r.args).includes("refused") && r.denied === true,
    );
    expect(refusal).toBeDefined();

    // Tier-0 calls still run; their records use up the reserved room until one no longer fits.
    let failures = 0;
    let noticed = false;
    for (let i = 0; i < 2000 && failures === 0; i++) {
      const now = await auditInfo(s);
      failures = now.write_failures;
      noticed ||= now.notice;
    }
    expect(failures).toBeGreaterThan(0);
    // The call whose record did not fit was told so.
    expect(noticed).toBe(true);
    expect(s.stderr()).toMatch(/^AUDIT \{.*"tool": "server_info"/m);

    // What failed to fit was cut back: the file ends on a record boundary and verifies.
    const text = readFileSync(auditPath, "utf8");
    expect(text.endsWith("}\n")).toBe(true);
    for (const line of text.split("\n").filter((l) => l !== "")) expect(() => JSON.parse(line)).not.toThrow();
    const full = verifyAudit(auditPath);
    expect(full.out).toContain("chain intact and genesis-anchored");
    expect(full.code).toBe(0);

    for (const filler of fillers) unlinkSync(filler);
    const after = await s.call("shell_exec", { command: `touch ${join(canaries, "after")}` });
    expect(after.text).toBe("[exit 0]\n");
    expect(existsSync(join(canaries, "after"))).toBe(true);
    expect(JSON.stringify(recordsOf(auditPath).at(-1)?.args)).toContain("after");
    expect(verifyAudit(auditPath).code).toBe(0);
  }, 120_000);
});

describe("a link put in place of the audit file after a rotation", () => {
  let s: TestServer;
  let outside: string;

  beforeAll(async () => {
    outside = mkdtempSync(join(tmpdir(), "relay-shell-victim-"));
    s = await startServer({ RELAY_SHELL_AUDIT_CHAIN: "true" });
  });

  afterAll(async () => {
    await s?.close();
    rmSync(outside, { recursive: true, force: true });
  });

  it("is not followed: calls are refused until it is gone, then a fresh file is opened", async () => {
    const victim = join(outside, "victim");
    writeFileSync(victim, "precious\n");
    const canary = join(outside, "canary");
    expect((await s.call("shell_exec", { command: "echo one" })).text).toBe("[exit 0]\none\n");

    renameSync(s.auditPath, `${s.auditPath}-20261201`);
    symlinkSync(victim, s.auditPath);

    const refused = await s.call("shell_exec", { command: `touch ${canary}` });
    expect(refused.text).toMatch(/^\[DENIED tier 1 \(REVERSIBLE\): the audit log cannot be written/);
    expect(existsSync(canary)).toBe(false);
    // Every call that runs a process is refused, whatever its tier; the relay's own introspection answers.
    const read = await s.call("shell_exec", { command: "ls /" });
    expect(read.text).toMatch(ACTS_REFUSED);
    expect(read.structured.exit_code).toBeNull();
    // Their own records cannot be written either: they say so in a notice.
    expect((await s.call("session_list")).text).toMatch(/^\[\]\n\[NOTICE audit this call ran/);
    expect((await s.call("server_info")).text).toMatch(/^\{/);
    expect((await auditInfo(s)).degraded_reason).toMatch(
      /is a symbolic link, not a regular file; it is not followed/,
    );
    expect(readFileSync(victim, "utf8")).toBe("precious\n");

    unlinkSync(s.auditPath);
    const after = await s.call("shell_exec", { command: `touch ${canary}` });
    expect(after.text).toBe("[exit 0]\n");
    expect(existsSync(canary)).toBe(true);
    expect(lstatSync(s.auditPath).isFile()).toBe(true);
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    // The new file continues the chain of the rotated one: a segment that verifies on its own.
    expect(verifyAudit(s.auditPath, ["--segment"]).code).toBe(0);
    expect(verifyAudit(`${s.auditPath}-20261201`).code).toBe(0);
  }, 60_000);
});
