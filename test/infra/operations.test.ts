import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cryptoIds, silentLogger, systemClock } from "../../src/core/index.js";
import { createProcessRunner } from "../../src/exec/index.js";
import { createOperations } from "../../src/infra/operations.js";
import { MAX_STAGED_RUNS } from "../../src/infra/runs.js";
import type { InfraContext, Operations, Profile, Remote } from "../../src/infra/types.js";
import { createRsyncRemote, type RsyncRemote } from "./rsync-remote.js";

/**
 * The replication operations against real rsync on the local disk: real
 * files, real staging copies, a real ledger; only ssh and rrsync are left
 * out (the end-to-end suite has them).
 */

let dir: string;
let source: string;
let receiver: string;
let state: string;
let remote: RsyncRemote;
let ops: Operations;

function profile(extra: Partial<Profile> = {}, limits: Partial<Profile["limits"]> = {}): Profile {
  return {
    id: "backup",
    file: "/etc/relay-shell/infra/backup.json",
    enabled: true,
    host: "127.0.0.1",
    port: 22,
    user: "receiver",
    sourceRoots: [source],
    remoteRoot: "store",
    knownHostsFile: "/dev/null",
    credentialId: "backup",
    limits: { timeoutSeconds: 30, outputBytes: 1 << 20, transferBytes: 1 << 26, fileCount: 1000, ...limits },
    allowedPrincipals: { uids: [0], gids: [] },
    approval: "none",
    receiver: "rrsync",
    requireDryRun: true,
    ...extra,
  };
}

function context(remoteImpl: Remote): InfraContext {
  return {
    remote: remoteImpl,
    stateDir: state,
    runner: createProcessRunner(),
    clock: systemClock,
    ids: cryptoIds,
    logger: silentLogger,
  };
}

/** Path → SHA-256 of every regular file under `root`. */
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

const runDir = (runId: string) => join(receiver, "store", "runs", runId);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "infra-ops-"));
  source = join(dir, "site");
  receiver = join(dir, "receiver");
  state = join(dir, "state");
  mkdirSync(join(source, "assets", "img"), { recursive: true });
  mkdirSync(join(source, "empty"));
  mkdirSync(join(receiver, "store"), { recursive: true });
  mkdirSync(state, { mode: 0o700 });
  writeFileSync(join(source, "index.html"), "<h1>hello</h1>\n");
  writeFileSync(join(source, "assets", "app.js"), "console.log(1)\n");
  writeFileSync(join(source, "assets", "img", "logo.bin"), Buffer.alloc(70_000, 7));
  writeFileSync(join(source, "name with spaces.txt"), "spaces\n");
  remote = createRsyncRemote(receiver);
  ops = createOperations(context(remote));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("the replication cycle", () => {
  it("dry-run, replicate and verify: the run directory holds the source, file by file by hash", async () => {
    const p = profile();
    const dry = await ops.dryRun(p, "r1");
    expect(dry.code).toBe("OK");
    expect(dry.data).toMatchObject({ files: 4, bytes: 70_000 + 15 + 15 + 7, itemized_changes: 8 });
    expect(existsSync(runDir("r1"))).toBe(false);

    const rep = await ops.replicate(p, "r1", "key-r1-0001");
    expect(rep.code).toBe("OK");
    expect(rep.data?.snapshot).toBe(dry.data?.snapshot);
    expect(hashes(join(runDir("r1"), "site"))).toEqual(hashes(source));
    expect(existsSync(join(runDir("r1"), "site", "empty"))).toBe(true);

    const ver = await ops.verify(p, "r1");
    expect(ver.code).toBe("OK");
    expect(ver.data).toMatchObject({ trusted: true, replication: "replicated", files: 4 });
  });

  it("replicates the snapshot the dry run previewed, not what the source became afterwards", async () => {
    const p = profile();
    await ops.dryRun(p, "r1");
    writeFileSync(join(source, "index.html"), "<h1>changed after the preview</h1>\n");
    writeFileSync(join(source, "late.txt"), "late\n");
    expect((await ops.replicate(p, "r1", "key-r1-0001")).code).toBe("OK");
    expect(readFileSync(join(runDir("r1"), "site", "index.html"), "utf8")).toBe("<h1>hello</h1>\n");
    expect(existsSync(join(runDir("r1"), "site", "late.txt"))).toBe(false);
    expect((await ops.verify(p, "r1")).code).toBe("OK");
  });

  it("a second dry run of the same run replaces the staged snapshot", async () => {
    const p = profile();
    const first = await ops.dryRun(p, "r1");
    writeFileSync(join(source, "index.html"), "<h1>second</h1>\n");
    const second = await ops.dryRun(p, "r1");
    expect(second.code).toBe("OK");
    expect(second.data?.snapshot).not.toBe(first.data?.snapshot);
    expect((await ops.replicate(p, "r1", "key-r1-0001")).data?.snapshot).toBe(second.data?.snapshot);
    expect(readFileSync(join(runDir("r1"), "site", "index.html"), "utf8")).toBe("<h1>second</h1>\n");
  });

  it("probe answers OK with a summary, and a failed preflight with its own code", async () => {
    writeFileSync(join(receiver, "store", "marker"), "x");
    const ok = await ops.probe(profile());
    expect(ok.code).toBe("OK");
    expect(ok.data?.root_entries).toBe(2);
    remote.failures.set("preflight", { code: "PIN_MISSING", interrupted: false });
    expect((await ops.probe(profile())).code).toBe("PIN_MISSING");
    remote.failures.set("probe", { code: "PIN_CHANGED", interrupted: false });
    expect((await ops.probe(profile())).code).toBe("PIN_CHANGED");
  });
});

describe("replicate's gates", () => {
  it("refuses a replicate without a dry run of the staged snapshot, and writes nothing", async () => {
    const res = await ops.replicate(profile(), "r1", "key-r1-0001");
    expect(res.code).toBe("DRY_RUN_REQUIRED");
    expect(existsSync(runDir("r1"))).toBe(false);
    expect(remote.calls.some((c) => c.op === "push")).toBe(false);
    // Nothing was attempted under the key: after the dry run the same key goes through.
    expect((await ops.dryRun(profile(), "r1")).code).toBe("OK");
    expect((await ops.replicate(profile(), "r1", "key-r1-0001")).code).toBe("OK");
  });

  it("keeps a bounded number of previews per profile: the oldest is dropped and needs a new dry run", async () => {
    const p = profile();
    for (let i = 1; i <= MAX_STAGED_RUNS + 1; i++) expect((await ops.dryRun(p, `r${i}`)).code).toBe("OK");
    const staged = readdirSync(join(state, "replication", "runs", "backup"));
    expect(staged).toHaveLength(MAX_STAGED_RUNS);
    expect(staged).not.toContain("r1");
    expect((await ops.replicate(p, "r1", "key-r1-0001")).code).toBe("DRY_RUN_REQUIRED");
    expect((await ops.replicate(p, "r2", "key-r2-0001")).code).toBe("OK");
    // A replicated run is not a preview: it keeps its manifest for verify and takes no room among them.
    for (let i = 20; i < 20 + MAX_STAGED_RUNS; i++) await ops.dryRun(p, `r${i}`);
    expect((await ops.verify(p, "r2")).code).toBe("OK");
  });

  it("a staged copy changed since its dry run is dropped before anything is sent", async () => {
    const p = profile();
    await ops.dryRun(p, "r1");
    const staged = join(state, "replication", "runs", "backup", "r1", "tree", "site", "index.html");
    writeFileSync(staged, "<h1>HELLO</h1>\n");
    const res = await ops.replicate(p, "r1", "key-r1-0001");
    expect(res.code).toBe("DRY_RUN_REQUIRED");
    expect(res.message).toContain("no longer matches its manifest");
    expect(remote.calls.filter((c) => c.op === "push" && !c.dryRun)).toHaveLength(0);
    expect(existsSync(runDir("r1"))).toBe(false);
    // A new preview stages the source again, and that one goes.
    await ops.dryRun(p, "r1");
    expect((await ops.replicate(p, "r1", "key-r1-0001")).code).toBe("OK");
    expect(readFileSync(join(runDir("r1"), "site", "index.html"), "utf8")).toBe("<h1>hello</h1>\n");
  });

  it("a failed second dry run leaves no usable preview of the first", async () => {
    const p = profile();
    expect((await ops.dryRun(p, "r1")).code).toBe("OK");
    symlinkSync("/etc/passwd", join(source, "passwd"));
    expect((await ops.dryRun(p, "r1")).code).toBe("SOURCE_UNSAFE");
    expect((await ops.replicate(p, "r1", "key-r1-0001")).code).toBe("DRY_RUN_REQUIRED");
  });

  it("takes the snapshot at replicate time when the profile does not require a dry run", async () => {
    const p = profile({ requireDryRun: false });
    const res = await ops.replicate(p, "r1", "key-r1-0001");
    expect(res.code).toBe("OK");
    expect(hashes(join(runDir("r1"), "site"))).toEqual(hashes(source));
    expect((await ops.verify(p, "r1")).code).toBe("OK");
  });

  it("without a required dry run, a snapshot whose preview failed is not what goes: the source now is", async () => {
    const p = profile({ requireDryRun: false });
    remote.failures.set("dry-push", { code: "NETWORK_FAILURE", interrupted: false });
    expect((await ops.dryRun(p, "r1")).code).toBe("NETWORK_FAILURE");
    writeFileSync(join(source, "index.html"), "<h1>current</h1>\n");
    expect((await ops.replicate(p, "r1", "key-r1-0001")).code).toBe("OK");
    expect(readFileSync(join(runDir("r1"), "site", "index.html"), "utf8")).toBe("<h1>current</h1>\n");
  });

  it("never writes into a run directory that exists, on the receiver or in the ledger", async () => {
    const p = profile();
    mkdirSync(runDir("taken"), { recursive: true });
    writeFileSync(join(runDir("taken"), "theirs"), "not ours\n");
    expect((await ops.dryRun(p, "taken")).code).toBe("RUN_EXISTS");
    expect((await ops.replicate(profile({ requireDryRun: false }), "taken", "key-taken-01")).code).toBe(
      "RUN_EXISTS",
    );
    expect(readdirSync(runDir("taken"))).toEqual(["theirs"]);

    await ops.dryRun(p, "r1");
    expect((await ops.replicate(p, "r1", "key-r1-0001")).code).toBe("OK");
    const again = await ops.replicate(p, "r1", "key-r1-0002");
    expect(again.code).toBe("RUN_EXISTS");
    expect((await ops.dryRun(p, "r1")).code).toBe("RUN_EXISTS");
  });

  it("the same key twice writes once: a file removed in between does not come back", async () => {
    const p = profile();
    await ops.dryRun(p, "r1");
    const first = await ops.replicate(p, "r1", "key-r1-0001");
    expect(first.code).toBe("OK");
    rmSync(join(runDir("r1"), "site", "index.html"));
    const second = await ops.replicate(p, "r1", "key-r1-0001");
    expect(second).toEqual({ ...first, replayed: true });
    expect(existsSync(join(runDir("r1"), "site", "index.html"))).toBe(false);
    expect(remote.calls.filter((c) => c.op === "push" && !c.dryRun)).toHaveLength(1);
    const record = JSON.parse(readFileSync(join(state, "replication", "keys", "key-r1-0001.json"), "utf8"));
    expect(record).toMatchObject({ profile: "backup", run_id: "r1", state: "done", outcome: { code: "OK" } });
    // And verify tells the truth about the removed file.
    const ver = await ops.verify(p, "r1");
    expect(ver.code).toBe("VERIFY_FAILED");
    expect(ver.data?.differences).toEqual([{ path: "site/index.html", kind: "missing" }]);
  });

  it("the same key for a different run or profile is a conflict and acts on nothing", async () => {
    const p = profile();
    await ops.dryRun(p, "r1");
    await ops.replicate(p, "r1", "key-shared-01");
    await ops.dryRun(p, "r2");
    const other = await ops.replicate(p, "r2", "key-shared-01");
    expect(other.code).toBe("IDEMPOTENCY_CONFLICT");
    expect(existsSync(runDir("r2"))).toBe(false);
    const otherProfile = await ops.replicate(
      profile({ id: "mirror", requireDryRun: false }),
      "r1",
      "key-shared-01",
    );
    expect(otherProfile.code).toBe("IDEMPOTENCY_CONFLICT");
  });

  it("two profiles racing with one key: one replicates, the other is a conflict", async () => {
    mkdirSync(join(receiver, "other"));
    const a = profile({ requireDryRun: false });
    const b = profile({ id: "mirror", remoteRoot: "other", requireDryRun: false });
    const results = await Promise.all([
      ops.replicate(a, "r1", "key-race-0001"),
      ops.replicate(b, "r1", "key-race-0001"),
    ]);
    expect(results.map((r) => r.code).sort()).toEqual(["IDEMPOTENCY_CONFLICT", "OK"]);
    expect(remote.calls.filter((c) => c.op === "push" && !c.dryRun)).toHaveLength(1);
    expect(existsSync(runDir("r1")) !== existsSync(join(receiver, "other", "runs", "r1"))).toBe(true);
  });

  it("a run directory the transport reports RUN_NOT_FOUND is absent; any other listing failure stops the run", async () => {
    const p = profile();
    remote.failures.set("list", { code: "RUN_NOT_FOUND", interrupted: false });
    expect((await ops.dryRun(p, "r1")).code).toBe("OK");
    remote.failures.set("list", { code: "NETWORK_FAILURE", interrupted: false });
    const lost = await ops.replicate(p, "r1", "key-r1-0001");
    expect(lost).toEqual({ code: "NETWORK_FAILURE", message: "Injected NETWORK_FAILURE." });
    expect(remote.calls.filter((c) => c.op === "push" && !c.dryRun)).toHaveLength(0);
    // Nothing was attempted under the key: it still replicates.
    expect((await ops.replicate(p, "r1", "key-r1-0001")).code).toBe("OK");
  });

  it("a push refused before any write is recorded under its key, and the run stays open to a new key", async () => {
    const p = profile();
    await ops.dryRun(p, "r1");
    remote.failures.set("push", { code: "NETWORK_FAILURE", interrupted: false });
    const first = await ops.replicate(p, "r1", "key-r1-0001");
    expect(first.code).toBe("NETWORK_FAILURE");
    expect(await ops.replicate(p, "r1", "key-r1-0001")).toEqual({ ...first, replayed: true });
    expect(remote.calls.filter((c) => c.op === "push" && !c.dryRun)).toHaveLength(1);
    expect((await ops.replicate(p, "r1", "key-r1-0002")).code).toBe("OK");
    expect((await ops.verify(p, "r1")).code).toBe("OK");
  });
});

describe("interrupted writes", () => {
  it("a push killed mid-transfer is unknown, never retried, and verify tells the truth", async () => {
    for (const name of ["a", "b", "c", "d"])
      writeFileSync(join(source, `big-${name}.bin`), Buffer.alloc(400_000, name));
    const p = profile();
    expect((await ops.dryRun(p, "r1")).code).toBe("OK");
    // 1.6 MB at 400 KB/s, stopped after 1 s: the push is cut off part way.
    remote.pushOptions.push("--bwlimit=400");
    remote.pushTimeoutMs = 1000;
    const first = await ops.replicate(p, "r1", "key-r1-0001");
    expect(first).toMatchObject({
      code: "WRITE_INTERRUPTED",
      data: { run_id: "r1", cause_code: "TRANSFER_FAILED", cause: "Rsync ran out of time and was stopped." },
    });
    expect(existsSync(runDir("r1"))).toBe(true);

    const again = await ops.replicate(p, "r1", "key-r1-0001");
    expect(again).toEqual({ ...first, replayed: true });
    expect((await ops.replicate(p, "r1", "key-r1-0002")).code).toBe("RUN_EXISTS");
    expect(remote.calls.filter((c) => c.op === "push" && !c.dryRun)).toHaveLength(1);

    const ver = await ops.verify(p, "r1");
    expect(ver.code).toBe("VERIFY_FAILED");
    const counts = ver.data?.difference_counts as Record<string, number>;
    // What was cut short shows: files not there yet, or rsync's temporary file of the one being written.
    expect((counts.missing ?? 0) + (counts.extra ?? 0)).toBeGreaterThan(0);

    remote.pushTimeoutMs = null;
    // The operator completes the copy by hand (and removes rsync's leftovers); verify then trusts the run.
    for (const name of readdirSync(join(runDir("r1"), "site"))) {
      if (name.startsWith(".big-")) rmSync(join(runDir("r1"), "site", name));
    }
    execFileSync("rsync", ["-r", "--ignore-existing", `${source}/`, join(runDir("r1"), "site")]);
    const trusted = await ops.verify(profile(), "r1");
    expect(trusted.code).toBe("OK");
    expect(trusted.data).toMatchObject({ replication: "unknown", trusted: true });
  });

  it("a key left started after its push was recorded done replays the replication, not an unknown", async () => {
    const p = profile();
    await ops.dryRun(p, "r1");
    const first = await ops.replicate(p, "r1", "key-r1-0001");
    // The broker died after the run's record said replicated and before the key's record said done.
    const keyFile = join(state, "replication", "keys", "key-r1-0001.json");
    const record = JSON.parse(readFileSync(keyFile, "utf8"));
    writeFileSync(keyFile, JSON.stringify({ ...record, state: "started", outcome: null }));
    const restarted = createOperations(context(remote));
    expect(await restarted.replicate(p, "r1", "key-r1-0001")).toEqual({ ...first, replayed: true });
    expect(JSON.parse(readFileSync(keyFile, "utf8")).state).toBe("done");
  });

  it("a replicate left started by a broker that died is reported unknown when it starts again", async () => {
    const p = profile();
    await ops.dryRun(p, "r1");
    let release: () => void = () => undefined;
    const hanging: Remote = {
      ...remote,
      push: () =>
        new Promise((resolve) => {
          release = () => resolve({ ok: true, value: { output: "", durationMs: 0 } });
        }),
    };
    const dying = createOperations(context(hanging));
    const pending = dying.replicate(p, "r1", "key-r1-0001");
    await expect.poll(() => existsSync(join(state, "replication", "keys", "key-r1-0001.json"))).toBe(true);
    await expect
      .poll(() => readFileSync(join(state, "replication", "runs", "backup", "r1", "run.json"), "utf8"))
      .toContain('"started"');

    const restarted = createOperations(context(remote));
    const replayed = await restarted.replicate(p, "r1", "key-r1-0001");
    expect(replayed).toMatchObject({ code: "WRITE_INTERRUPTED", replayed: true });
    expect((await restarted.replicate(p, "r1", "key-r1-0002")).code).toBe("RUN_EXISTS");
    expect(remote.calls.filter((c) => c.op === "push" && !c.dryRun)).toHaveLength(0);
    release();
    await pending;
  });
});

describe("verify", () => {
  it("catches a file tampered on the receiver, with its size unchanged", async () => {
    const p = profile();
    await ops.dryRun(p, "r1");
    await ops.replicate(p, "r1", "key-r1-0001");
    expect((await ops.verify(p, "r1")).code).toBe("OK");
    writeFileSync(join(runDir("r1"), "site", "assets", "app.js"), "console.log(2)\n");
    const res = await ops.verify(p, "r1");
    expect(res.code).toBe("VERIFY_FAILED");
    expect(res.data).toMatchObject({
      downloaded: true,
      differences: [{ path: "site/assets/app.js", kind: "hash" }],
      replication: "replicated",
      trusted: false,
    });
    expect(readdirSync(join(state, "replication", "scratch"))).toEqual([]);
    const record = JSON.parse(
      readFileSync(join(state, "replication", "runs", "backup", "r1", "run.json"), "utf8"),
    );
    expect(record.verified).toBeNull();
  });

  it("catches an extra file without downloading anything", async () => {
    const p = profile();
    await ops.dryRun(p, "r1");
    await ops.replicate(p, "r1", "key-r1-0001");
    writeFileSync(join(runDir("r1"), "site", "planted.sh"), "#!/bin/sh\n");
    const res = await ops.verify(p, "r1");
    expect(res.code).toBe("VERIFY_FAILED");
    expect(res.data).toMatchObject({
      downloaded: false,
      differences: [{ path: "site/planted.sh", kind: "extra" }],
    });
    expect(remote.calls.some((c) => c.op === "pull")).toBe(false);
  });

  it("catches a file grown on the receiver and a symlink planted there", async () => {
    const p = profile();
    await ops.dryRun(p, "r1");
    await ops.replicate(p, "r1", "key-r1-0001");
    writeFileSync(join(runDir("r1"), "site", "index.html"), "x".repeat(500));
    const pulls = remote.calls.filter((c) => c.op === "pull").length;
    const grown = await ops.verify(p, "r1");
    expect(grown.data).toMatchObject({
      downloaded: false,
      differences: [{ path: "site/index.html", kind: "size" }],
    });
    expect(remote.calls.filter((c) => c.op === "pull")).toHaveLength(pulls);
    writeFileSync(join(runDir("r1"), "site", "index.html"), "<h1>hello</h1>\n");
    rmSync(join(runDir("r1"), "site", "assets", "app.js"));
    symlinkSync("/etc/passwd", join(runDir("r1"), "site", "assets", "app.js"));
    const linked = await ops.verify(p, "r1");
    expect(linked.code).toBe("VERIFY_FAILED");
    expect(linked.data?.differences).toContainEqual({ path: "site/assets/app.js", kind: "type" });
  });

  it("answers RUN_NOT_FOUND for a run this broker never staged, and VERIFY_FAILED for a run directory that is gone", async () => {
    expect((await ops.verify(profile(), "never")).code).toBe("RUN_NOT_FOUND");
    const p = profile();
    await ops.dryRun(p, "r1");
    await ops.replicate(p, "r1", "key-r1-0001");
    rmSync(runDir("r1"), { recursive: true });
    const res = await ops.verify(p, "r1");
    expect(res.code).toBe("VERIFY_FAILED");
    expect(res.data?.run_directory_missing).toBe(true);
  });
});

describe("unsafe sources and limits", () => {
  it("refuses a symlink pointing out of the source root, naming it", async () => {
    symlinkSync("/etc/passwd", join(source, "assets", "passwd"));
    const res = await ops.dryRun(profile(), "r1");
    expect(res.code).toBe("SOURCE_UNSAFE");
    expect(res.message).toContain(join(source, "assets", "passwd"));
    expect(existsSync(join(state, "replication", "runs", "backup", "r1", "tree"))).toBe(false);
    expect(remote.calls.some((c) => c.op === "push")).toBe(false);
  });

  it("refuses a symlink inside the root too, a fifo, and a root given with `..`", async () => {
    symlinkSync("index.html", join(source, "alias.html"));
    expect((await ops.dryRun(profile(), "r1")).code).toBe("SOURCE_UNSAFE");
    rmSync(join(source, "alias.html"));
    execFileSync("mkfifo", [join(source, "pipe")]);
    expect((await ops.dryRun(profile(), "r1")).code).toBe("SOURCE_UNSAFE");
    rmSync(join(source, "pipe"));
    const dotted = await ops.dryRun(profile({ sourceRoots: [`${source}/../site`] }), "r1");
    expect(dotted.code).toBe("SOURCE_UNSAFE");
    expect((await ops.dryRun(profile(), "r1")).code).toBe("OK");
  });

  it("stops at the file count and the byte bound with LIMIT_EXCEEDED", async () => {
    const few = await ops.dryRun(profile({}, { fileCount: 4 }), "r1");
    expect(few.code).toBe("LIMIT_EXCEEDED");
    const small = await ops.dryRun(profile({}, { transferBytes: 60_000 }), "r1");
    expect(small.code).toBe("LIMIT_EXCEEDED");
    expect(small.message).toContain("60000");
    expect(statSync(state).isDirectory()).toBe(true);
    expect((await ops.dryRun(profile(), "r1")).code).toBe("OK");
  });
});
