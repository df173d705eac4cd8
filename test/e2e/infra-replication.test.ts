import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { cryptoIds, silentLogger, systemClock } from "../../src/core/index.js";
import { createProcessRunner } from "../../src/exec/index.js";
import { createOperations } from "../../src/infra/operations.js";
import type { Operations, Profile } from "../../src/infra/types.js";
import {
  announceInfraSkip,
  createInfraFixture,
  INFRA_SKIP_REASON,
  type InfraDaemon,
  type InfraFixture,
  infraExchange,
} from "../fixtures/infra.js";
import { TEST_USER } from "../fixtures/sshd.js";
import { createRsyncRemote, type RsyncRemote } from "../infra/rsync-remote.js";

/**
 * Replication against a real receiver: an OpenSSH sshd whose key for the
 * broker is forced to `rrsync -no-del -no-overwrite <dir>`, with the host key
 * pinned. The operations run as they do in the daemon; the transport is a
 * minimal rsync-over-ssh one with the same options as the broker's, so what
 * rrsync accepts, refuses and lists is what the operations see.
 */

announceInfraSkip("replication through rrsync");

function hashes(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else out.set(relative(root, path), createHash("sha256").update(readFileSync(path)).digest("hex"));
    }
  };
  walk(root);
  return out;
}

describe.skipIf(INFRA_SKIP_REASON !== null)("replication to an rrsync-confined receiver", () => {
  let fx: InfraFixture;
  let work: string;
  let remote: RsyncRemote;
  let ops: Operations;
  let profile: Profile;
  let run = 0;
  let runId = "";
  const runDir = (id: string) => join(fx.receiverDir, "runs", id);
  const pushes = () => remote.calls.filter((c) => c.op === "push" && !c.dryRun).length;

  beforeAll(async () => {
    fx = await createInfraFixture();
    work = mkdtempSync(join(tmpdir(), "infra-replication-"));
    const key = join(work, "key");
    writeFileSync(key, fx.keyText(), { mode: 0o600 });
    const command = [
      "ssh -F /dev/null -o BatchMode=yes -o PasswordAuthentication=no -o IdentitiesOnly=yes",
      "-o IdentityAgent=none -o StrictHostKeyChecking=yes -o GlobalKnownHostsFile=/dev/null",
      `-o UserKnownHostsFile=${fx.knownHosts} -i ${key} -p ${fx.sshd.port}`,
    ].join(" ");
    remote = createRsyncRemote(fx.receiverDir, { command, user: TEST_USER, host: "127.0.0.1" });
    const state = join(work, "state");
    mkdirSync(state, { mode: 0o700 });
    ops = createOperations({
      remote,
      stateDir: state,
      runner: createProcessRunner(),
      clock: systemClock,
      ids: cryptoIds,
      logger: silentLogger,
    });
    profile = {
      id: "replica",
      file: join(fx.configDir, "replica.json"),
      enabled: true,
      host: "127.0.0.1",
      port: fx.sshd.port,
      user: TEST_USER,
      sourceRoots: [fx.sourceDir],
      remoteRoot: ".",
      knownHostsFile: fx.knownHosts,
      credentialId: fx.credentialId,
      limits: { timeoutSeconds: 30, outputBytes: 1 << 20, transferBytes: 1 << 26, fileCount: 1000 },
      allowedPrincipals: { uids: [0], gids: [] },
      approval: "none",
      receiver: "rrsync",
      requireDryRun: true,
    };
  }, 120_000);

  afterAll(() => {
    rmSync(work, { recursive: true, force: true });
    fx?.close();
  });

  beforeEach(() => {
    run += 1;
    runId = `run-${run}`;
    remote.calls.length = 0;
    remote.pushOptions.length = 0;
    remote.pushTimeoutMs = null;
  });

  it("dry-run, replicate, verify: the run directory matches the source file by file by hash", async () => {
    const dry = await ops.dryRun(profile, runId);
    expect(dry).toMatchObject({ code: "OK", data: { files: 4 } });
    expect(dry.data?.itemized_changes).toBeGreaterThanOrEqual(4);
    expect(existsSync(runDir(runId))).toBe(false);
    const rep = await ops.replicate(profile, runId, `key-${runId}-a`);
    expect(rep.code).toBe("OK");
    expect(hashes(join(runDir(runId), "site"))).toEqual(hashes(fx.sourceDir));
    const ver = await ops.verify(profile, runId);
    expect(ver).toMatchObject({ code: "OK", data: { trusted: true, files: 4 } });
  });

  it("refuses a replicate without a dry run, and never writes into an existing run directory", async () => {
    expect((await ops.replicate(profile, runId, `key-${runId}-a`)).code).toBe("DRY_RUN_REQUIRED");
    expect(pushes()).toBe(0);
    mkdirSync(runDir(runId), { recursive: true });
    expect((await ops.dryRun(profile, runId)).code).toBe("RUN_EXISTS");
    rmSync(runDir(runId), { recursive: true });
  });

  it("the same key twice writes once: a file removed in between does not come back", async () => {
    await ops.dryRun(profile, runId);
    const first = await ops.replicate(profile, runId, `key-${runId}-a`);
    expect(first.code).toBe("OK");
    rmSync(join(runDir(runId), "site", "README.txt"));
    expect(await ops.replicate(profile, runId, `key-${runId}-a`)).toEqual({ ...first, replayed: true });
    expect(existsSync(join(runDir(runId), "site", "README.txt"))).toBe(false);
    expect(pushes()).toBe(1);
    expect((await ops.replicate(profile, `${runId}-other`, `key-${runId}-a`)).code).toBe(
      "IDEMPOTENCY_CONFLICT",
    );
    const ver = await ops.verify(profile, runId);
    expect(ver).toMatchObject({
      code: "VERIFY_FAILED",
      data: { differences: [{ path: "site/README.txt", kind: "missing" }] },
    });
  });

  it("verify catches a file tampered on the receiver and a file planted there", async () => {
    await ops.dryRun(profile, runId);
    await ops.replicate(profile, runId, `key-${runId}-a`);
    writeFileSync(join(runDir(runId), "site", "conf", "app.conf"), "listen = 6666\nworkers = 4\n");
    const tampered = await ops.verify(profile, runId);
    expect(tampered).toMatchObject({
      code: "VERIFY_FAILED",
      data: { downloaded: true, differences: [{ path: "site/conf/app.conf", kind: "hash" }] },
    });
    writeFileSync(join(runDir(runId), "site", "planted"), "x");
    const planted = await ops.verify(profile, runId);
    expect(planted.data?.differences).toContainEqual({ path: "site/planted", kind: "extra" });
  });

  it("a push killed mid-transfer is unknown, not retried, and verify says what is there", async () => {
    const big = join(fx.sourceDir, "big.bin");
    writeFileSync(big, Buffer.alloc(2_000_000, 1));
    try {
      expect((await ops.dryRun(profile, runId)).code).toBe("OK");
      // 2 MB at 200 KB/s, stopped after 2 s: the push is cut off part way.
      remote.pushOptions.push("--bwlimit=200");
      remote.pushTimeoutMs = 2000;
      const first = await ops.replicate(profile, runId, `key-${runId}-a`);
      expect(first.code).toBe("WRITE_INTERRUPTED");
      expect(await ops.replicate(profile, runId, `key-${runId}-a`)).toMatchObject({
        code: "WRITE_INTERRUPTED",
        replayed: true,
      });
      expect((await ops.replicate(profile, runId, `key-${runId}-b`)).code).toBe("RUN_EXISTS");
      expect(pushes()).toBe(1);
      expect((await ops.verify(profile, runId)).code).toBe("VERIFY_FAILED");
    } finally {
      rmSync(big);
    }
  });

  it("refuses a source tree with a symlink pointing out of it before anything is sent", async () => {
    const link = join(fx.sourceDir, "conf", "shadow");
    symlinkSync("/etc/shadow", link);
    try {
      const res = await ops.dryRun(profile, runId);
      expect(res.code).toBe("SOURCE_UNSAFE");
      expect(res.message).toContain(link);
      expect(remote.calls.some((c) => c.op === "push")).toBe(false);
    } finally {
      rmSync(link);
    }
  });
});

/**
 * The same cycle with every part real: the built daemon as its own account,
 * the profile from a root-owned file, the key from the credentials
 * directory, the broker's own ssh/rsync transport, a client on the socket.
 */
describe.skipIf(INFRA_SKIP_REASON !== null)("the whole cycle through the daemon's socket", () => {
  let fx: InfraFixture;
  let daemon: InfraDaemon | undefined;

  /** A source large enough that its copy is still running when the daemon is told to stop. */
  let bigDir = "";

  beforeAll(async () => {
    fx = await createInfraFixture();
    fx.writeProfile("site");
    bigDir = join(fx.root, "big");
    mkdirSync(bigDir, { mode: 0o755 });
    const block = Buffer.alloc(1 << 20, 0x5a);
    const fd = openSync(join(bigDir, "blob"), "w", 0o644);
    for (let i = 0; i < 384; i++) writeSync(fd, block);
    closeSync(fd);
    fx.writeProfile("big", {
      source_roots: [bigDir],
      limits: { timeout_seconds: 60, output_bytes: 65536, transfer_bytes: 1024 ** 3, file_count: 10 },
    });
    daemon = await fx.startDaemon();
  }, 120_000);

  afterAll(async () => {
    await daemon?.stop();
    fx?.close();
  });

  it("status, probe, dry-run, replicate, verify: the run matches the source file by file by hash", async () => {
    const base = { v: 1, profile: "site", run_id: "cycle-1" };
    const answers = (await infraExchange(fx.socketPath, [
      { v: 1, op: "status" },
      { ...base, op: "probe", run_id: undefined },
      { ...base, op: "rsync-dry-run" },
      { ...base, op: "replicate", idempotency_key: "cycle-1-key" },
      { ...base, op: "verify" },
    ])) as Array<{ op: string; outcome: string; code: string; receipt_id: string }>;
    expect(answers.map((a) => [a.op, a.outcome, a.code])).toEqual([
      ["status", "ok", "OK"],
      ["probe", "ok", "OK"],
      ["rsync-dry-run", "ok", "OK"],
      ["replicate", "ok", "OK"],
      ["verify", "ok", "OK"],
    ]);
    expect(hashes(join(fx.receiverDir, "runs", "cycle-1", "site"))).toEqual(hashes(fx.sourceDir));
    // The run's directory is a normal directory on the receiver, not the staging area's private 0700.
    expect(statSync(join(fx.receiverDir, "runs", "cycle-1")).mode & 0o7777).toBe(0o755);
    // Every answer left a receipt, and the key's bytes are in no answer, receipt or log line.
    const receipts = readFileSync(join(fx.stateDir, "receipts.jsonl"), "utf8");
    for (const a of answers) expect(receipts).toContain(a.receipt_id);
    const keyBody = fx
      .keyText()
      .split("\n")
      .filter((line) => line.length > 0 && !line.startsWith("-----"))
      .join("");
    for (const text of [JSON.stringify(answers), receipts, daemon?.stderr() ?? ""]) {
      for (let at = 0; at + 24 <= keyBody.length; at += 24)
        expect(text).not.toContain(keyBody.slice(at, at + 24));
    }
  });

  /** A dry run of `base` (a replicate needs one), then a fresh connection for the replicate. */
  async function previewedConnection(base: { v: number; profile: string; run_id: string }) {
    const [preview] = (await infraExchange(fx.socketPath, [{ ...base, op: "rsync-dry-run" }])) as Array<{
      code: string;
    }>;
    expect(preview?.code).toBe("OK");
    const socket = connect(fx.socketPath);
    socket.on("error", () => undefined);
    return socket;
  }

  it("answers a replicate still running when SIGTERM arrives, then exits", async () => {
    const base = { v: 1, profile: "big", run_id: "stopping-1" };
    const socket = await previewedConnection(base);
    let received = "";
    let answeredAt = 0;
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("utf8");
      if (received.includes("\n") && answeredAt === 0) answeredAt = performance.now();
    });
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write(`${JSON.stringify({ ...base, op: "replicate", idempotency_key: "stopping-key" })}\n`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(answeredAt).toBe(0);
    const signalled = performance.now();
    await daemon?.stop();
    await closed;
    expect(daemon?.child.exitCode).toBe(0);
    const answer = JSON.parse(received.split("\n")[0] ?? "null") as { op: string; code: string } | null;
    expect(answer?.op).toBe("replicate");
    expect(["OK", "WRITE_INTERRUPTED"]).toContain(answer?.code);
    expect(answeredAt).toBeGreaterThan(signalled);
  }, 60_000);

  it("a broker killed with SIGKILL mid-copy leaves no ssh or rsync running, and no key copy after a restart", async () => {
    await daemon?.stop();
    daemon = await fx.startDaemon();
    const base = { v: 1, profile: "big", run_id: "killed-1" };
    const socket = await previewedConnection(base);
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write(`${JSON.stringify({ ...base, op: "replicate", idempotency_key: "killed-key" })}\n`);
    // The copy is under way once the receiver runs its rsync. Stopping the receiver's side holds the
    // copy open however fast this machine is: the broker's rsync then waits on a full pipe.
    const login = TEST_USER;
    const deadline = Date.now() + 10_000;
    let receiving = processesOf(login, fx.receiverDir);
    while (!receiving.some((p) => p.args.includes("rsync --server"))) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 20));
      receiving = processesOf(login, fx.receiverDir);
    }
    for (const p of receiving) process.kill(p.pid, "SIGSTOP");
    try {
      expect(processesOf(fx.daemonUser.uid, fx.root).some((p) => p.args.startsWith("rsync "))).toBe(true);
      const child = (daemon as InfraDaemon).child;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
      socket.destroy();
      // Within two seconds nothing of the broker's account runs on: the copy does not go on by itself.
      const gone = Date.now() + 2000;
      let left = processesOf(fx.daemonUser.uid, fx.root);
      while (left.length > 0 && Date.now() < gone) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        left = processesOf(fx.daemonUser.uid, fx.root);
      }
      expect(left).toEqual([]);
    } finally {
      for (const p of receiving) {
        try {
          process.kill(p.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
    daemon = await fx.startDaemon();
    expect(readdirSync(fx.stateDir).filter((name) => name.startsWith(".ssh-home-"))).toEqual([]);
  }, 60_000);
});

/** The processes an account (uid or name) runs now whose command line names `under` (this fixture's files). */
function processesOf(user: number | string, under: string): Array<{ pid: number; args: string }> {
  let out = "";
  try {
    out = execFileSync("ps", ["-u", String(user), "-o", "pid=,args="], { encoding: "utf8" });
  } catch {
    return []; // ps exits 1 when the account runs nothing
  }
  return out
    .split("\n")
    .map((line) => line.trim())
    .map((line) => {
      const space = line.indexOf(" ");
      return { pid: Number(line.slice(0, space)), args: line.slice(space + 1).trim() };
    })
    .filter((p) => p.pid > 0 && p.args.includes(under));
}
