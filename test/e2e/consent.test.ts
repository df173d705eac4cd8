import { execFileSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/consent/index.js";
import { cryptoIds, systemClock } from "../../src/core/index.js";
import {
  CONSENT_SKIP_REASON,
  type ConsentRelay,
  type ConsentWorld,
  canaryLines,
  consentId,
  createConsentWorld,
} from "../helpers/consent.js";
import { startServer } from "../helpers/server.js";

/**
 * Transactional consent through the built server, the SDK client and the
 * real `relay-shell consent` CLI signing with a real `ssh-keygen` key. The
 * relay runs as an account of its own that can write neither the
 * allowed-signers file nor read the operator's key; commands under test only
 * ever append to canary files in the world's work directory.
 */
if (CONSENT_SKIP_REASON) process.stderr.write(`[skipped] consent e2e: ${CONSENT_SKIP_REASON}\n`);

const lines = canaryLines;

function approve(world: ConsentWorld, id: string, key = world.operatorKey, status = 0) {
  const r = world.approve(id, key);
  if (r.status !== status) throw new Error(`approve exited ${r.status}, not ${status}: ${r.stderr}`);
  return r;
}

/** Sign the payload of request `id` with `ssh-keygen -Y sign` directly and store it, as a forger with DB access would. */
async function storeSignature(
  world: ConsentWorld,
  id: string,
  sign: (payload: string) => string,
): Promise<void> {
  // As the relay's account would open it: the file is that account's.
  const opened = openSqliteStore(world.db, {
    clock: systemClock,
    ids: cryptoIds,
    busyTimeoutMs: 2000,
    euid: world.user.uid,
  });
  if (!opened.ok) throw new Error(opened.error.detail);
  const store = opened.value;
  try {
    const request = await store.getRequest(id);
    if (!request.ok) throw new Error(request.error.detail);
    const proof = sign(request.value.payload);
    const approved = await store.approve(id, {
      channel: "sshsig",
      proof,
      claimedSigner: "operator@test",
      at: Date.now(),
    });
    if (!approved.ok) throw new Error(approved.error.detail);
  } finally {
    await store.close();
    for (const sidecar of [`${world.db}-wal`, `${world.db}-shm`]) {
      if (existsSync(sidecar)) chownSync(sidecar, world.user.uid, world.user.gid);
    }
  }
}

function sshSign(world: ConsentWorld, key: string, namespace: string, message: string): string {
  const file = join(world.root, `msg-${cryptoIds.hex(4)}`);
  writeFileSync(file, message);
  execFileSync("ssh-keygen", ["-q", "-Y", "sign", "-n", namespace, "-f", key, file], { stdio: "ignore" });
  return readFileSync(`${file}.sig`, "utf8");
}

describe.skipIf(CONSENT_SKIP_REASON !== null)("consent through the built server", () => {
  let world: ConsentWorld;
  let relay: ConsentRelay;

  beforeAll(async () => {
    world = createConsentWorld();
    relay = await world.startRelay();
  });
  afterAll(async () => {
    await relay?.close();
    world?.cleanup();
  });

  const append = (canary: string, extra: Record<string, unknown> = {}) => ({
    command: `echo ran >> ${canary}`,
    cwd: world.work,
    ...extra,
  });

  it("asks, runs the approved act exactly once, and asks again after", async () => {
    const canary = join(world.work, "once");
    const first = await relay.call("shell_exec", append(canary));
    const id = consentId(first.text);
    expect(first.text).toContain("shell_exec");
    expect(first.text).toContain(`echo ran >> ${canary}`);
    expect(first.structured.denied).toBe(false);
    expect(lines(canary)).toBe(0);

    approve(world, id);
    const second = await relay.call("shell_exec", append(canary));
    expect(second.text).toBe("[exit 0]\n");
    expect(lines(canary)).toBe(1);

    const third = await relay.call("shell_exec", append(canary));
    expect(consentId(third.text)).not.toBe(id);
    expect(lines(canary)).toBe(1);

    const records = world
      .records()
      .filter((r) => (r.args as Record<string, unknown>).command === append(canary).command);
    const actions = records.map((r) => r.action);
    expect(actions).toEqual(["consent_request", "consent_execute", "consent_request"]);
    const executed = records[1]?.args as { consent?: Record<string, unknown> };
    expect(executed.consent).toMatchObject({ request: id, approver: "operator@test", channel: "sshsig" });
    expect(String(executed.consent?.key)).toMatch(/^SHA256:/);
  });

  it("says in the notice of an irreversible act that a human approved it", async () => {
    const canary = join(world.work, "irreversible");
    const args = { command: `echo dG91Y2ggaXJyZXZlcnNpYmxl | base64 -d | sh`, cwd: world.work };
    const asked = await relay.call("shell_exec", args);
    expect(asked.text).toContain("decoded (base64): touch irreversible");
    approve(world, consentId(asked.text));
    const ran = await relay.call("shell_exec", args);
    expect(ran.text.startsWith("[exit 0]\n")).toBe(true);
    expect(ran.text).toContain("a human approved this exact act first");
    expect(existsSync(canary)).toBe(true);
  });

  it("never asks for a Tier-0 call", async () => {
    const info = await relay.call("server_info");
    expect(info.text).not.toContain("CONSENT REQUIRED");
    expect(JSON.parse(info.text)).toMatchObject({ name: "relay-shell" });
  });

  it("treats any difference in a bound argument as a new act", async () => {
    const canary = join(world.work, "bound");
    const approved = append(canary, { env_json: '{"MODE":"a"}', stdin: "x" });
    const id = consentId((await relay.call("shell_exec", approved)).text);
    approve(world, id);
    const variants: Array<Record<string, unknown>> = [
      { ...approved, cwd: "/tmp" },
      { ...approved, command: `echo ran  >> ${canary}` },
      { ...approved, env_json: '{"MODE":"b"}' },
      { ...approved, stdin: "y" },
    ];
    for (const variant of variants) {
      const r = await relay.call("shell_exec", variant);
      expect(consentId(r.text)).not.toBe(id);
    }
    expect(lines(canary)).toBe(0);
    // The approved act itself is still there, once.
    expect((await relay.call("shell_exec", approved)).text).toBe("[exit 0]\n");
    expect(lines(canary)).toBe(1);
  });

  it("binds SSH targets and the content of an upload", async () => {
    const target = { host: "127.0.0.1", port: 1, user: "alice", command: "true" };
    const id = consentId((await relay.call("ssh_exec", target)).text);
    approve(world, id);
    for (const variant of [
      { ...target, user: "bob" },
      { ...target, host: "127.0.0.2" },
      { ...target, port: 2 },
    ]) {
      expect(consentId((await relay.call("ssh_exec", variant)).text)).not.toBe(id);
    }

    const file = join(world.work, "upload.txt");
    writeFileSync(file, "version 1\n");
    chmodSync(file, 0o644);
    const upload = { host: "127.0.0.1", port: 1, user: "alice", local_path: file, remote_path: "/tmp/x" };
    const first = await relay.call("ssh_upload", upload);
    const uploadId = consentId(first.text);
    approve(world, uploadId);
    writeFileSync(file, "version 2\n");
    const changed = await relay.call("ssh_upload", upload);
    expect(consentId(changed.text)).not.toBe(uploadId);
  });

  it("treats an approval that does not verify as none: the act waits for a valid one", async () => {
    const canary = join(world.work, "forged");
    // The operator's CLI will not store a signature the relay would refuse, and says why.
    const strangerArgs = append(canary, { env_json: JSON.stringify({ CASE: "stranger" }) });
    const strangerId = consentId((await relay.call("shell_exec", strangerArgs)).text);
    const stranger = approve(world, strangerId, world.strangerKey, 1);
    expect(stranger.stderr).toContain(
      `is not in the allowed-signers file ${world.allowedSigners} for consent`,
    );
    expect(stranger.stderr).toContain("nothing is signed");
    expect(world.cli(["show", strangerId]).stdout).toContain("status:   pending");
    // Stored anyway (as the relay's account could), by a stranger's key, over other bytes or in
    // another namespace: the call asks again, and the operator's own approval then runs it once.
    const cases: Array<[string, (id: string) => Promise<void>]> = [
      [
        "stranger",
        (id) => storeSignature(world, id, (p) => sshSign(world, world.strangerKey, "relay-shell-consent", p)),
      ],
      [
        "tampered",
        (id) =>
          storeSignature(world, id, (p) =>
            sshSign(world, world.operatorKey, "relay-shell-consent", p.replace("ran", "RAN")),
          ),
      ],
      ["namespace", (id) => storeSignature(world, id, (p) => sshSign(world, world.operatorKey, "file", p))],
    ];
    for (const [ran, [name, forge]] of cases.entries()) {
      const args = append(canary, { env_json: JSON.stringify({ CASE: name }) });
      const id = consentId((await relay.call("shell_exec", args)).text);
      await forge(id);
      const r = await relay.call("shell_exec", args);
      expect(consentId(r.text), name).toBe(id);
      expect(r.text, name).toContain(
        `Request ${id} still waits for a valid approval: its stored approval does not verify`,
      );
      expect(lines(canary), name).toBe(ran);
      approve(world, id);
      expect((await relay.call("shell_exec", args)).text, name).toBe("[exit 0]\n");
    }
    expect(lines(canary)).toBe(3);
  });

  it("refuses a denied act with the operator's reason", async () => {
    const canary = join(world.work, "denied");
    const id = consentId((await relay.call("shell_exec", append(canary))).text);
    const denied = world.cli(["deny", id, "--reason", "not during the freeze"]);
    expect(denied.status, denied.stderr).toBe(0);
    const r = await relay.call("shell_exec", append(canary));
    expect(r.text).toContain(`request ${id} was denied`);
    expect(r.text).toContain("not during the freeze");
    expect(lines(canary)).toBe(0);
  });

  it("lets exactly one of two relays sharing the database run one approval", async () => {
    const other = await world.startRelay();
    try {
      for (let round = 0; round < 3; round += 1) {
        const canary = join(world.work, `race-${round}`);
        const id = consentId((await relay.call("shell_exec", append(canary))).text);
        approve(world, id);
        const results = await Promise.all([
          relay.call("shell_exec", append(canary)),
          other.call("shell_exec", append(canary)),
        ]);
        expect(results.filter((r) => r.text === "[exit 0]\n")).toHaveLength(1);
        expect(lines(canary)).toBe(1);
      }
    } finally {
      await other.close();
    }
  });

  it("shows its posture in server_info", async () => {
    const info = JSON.parse((await relay.call("server_info")).text) as Record<string, unknown>;
    expect(info.consent).toMatchObject({
      enabled: true,
      lease_mode: "manual",
      approval_ttl: 300,
      ledger: world.ledger,
    });
  });
});

describe.skipIf(CONSENT_SKIP_REASON !== null)("consent waits, leases and revocation", () => {
  let world: ConsentWorld;
  beforeAll(() => {
    world = createConsentWorld();
  });
  afterAll(() => world?.cleanup());

  it("waits for the decision with progress notifications when RELAY_SHELL_CONSENT_WAIT is set", async () => {
    const relay = await world.startRelay({ RELAY_SHELL_CONSENT_WAIT: "30" });
    try {
      const canary = join(world.work, "waited");
      const progress: string[] = [];
      const pending = relay.call(
        "shell_exec",
        { command: `echo ran >> ${canary}`, cwd: world.work },
        { onprogress: (p) => progress.push(p.message ?? "") },
      );
      let id = "";
      for (let i = 0; i < 100 && id === ""; i += 1) {
        const listed = world.cli(["list"]);
        id = /^\s+(\S+)\s+pending/m.exec(listed.stdout)?.[1] ?? "";
        if (id === "") await new Promise((r) => setTimeout(r, 200));
      }
      expect(id).not.toBe("");
      approve(world, id);
      const result = await pending;
      expect(result.text).toBe("[exit 0]\n");
      expect(lines(canary)).toBe(1);
      expect(progress.length).toBeGreaterThan(0);
      expect(progress[0]).toContain(id);
    } finally {
      await relay.close();
    }
  });

  it("lets a signed read open a window lease of a bounded budget, for this session only", async () => {
    const relay = await world.startRelay({
      RELAY_SHELL_CONSENT_LEASE_MODE: "window",
      RELAY_SHELL_CONSENT_LEASE_BUDGET: "3",
    });
    const other = await world.startRelay({ RELAY_SHELL_CONSENT_LEASE_MODE: "window" });
    try {
      const read = (n: number) => ({ command: `echo read-${n}`, cwd: world.work });
      const id = consentId((await relay.call("shell_exec", read(0))).text);
      approve(world, id);
      expect((await relay.call("shell_exec", read(0))).text).toBe("[exit 0]\nread-0\n");
      for (let n = 1; n <= 3; n += 1) {
        expect((await relay.call("shell_exec", read(n))).text).toBe(`[exit 0]\nread-${n}\n`);
      }
      // The budget is spent.
      consentId((await relay.call("shell_exec", read(4))).text);
      // Another MCP session never shares the lease.
      consentId((await other.call("shell_exec", read(5))).text);
      // A mutation is never covered by a lease.
      consentId((await relay.call("shell_exec", { command: `echo x >> ${join(world.work, "m")}` })).text);
      const leased = world.records().filter((r) => r.action === "consent_lease");
      expect(leased).toHaveLength(3);
    } finally {
      await relay.close();
      await other.close();
    }
  });

  it("lets a lease carry proven reads only: a script written and fed to a shell, SQL on the consent database, each need a signature", async () => {
    const relay = await world.startRelay({
      RELAY_SHELL_CONSENT_LEASE_MODE: "window",
      RELAY_SHELL_CONSENT_LEASE_BUDGET: "10",
    });
    const leased = () => world.records().filter((r) => r.action === "consent_lease").length;
    const before = leased();
    try {
      const canary = join(world.work, "lease-canary");
      mkdirSync(canary, { recursive: true });
      writeFileSync(join(canary, "keep"), "x");
      approve(world, consentId((await relay.call("shell_exec", { command: "ls", cwd: world.work })).text));
      expect((await relay.call("shell_exec", { command: "ls", cwd: world.work })).text).toMatch(
        /^\[exit 0\]/,
      );
      // A read rides the lease.
      expect((await relay.call("shell_exec", { command: "ls -la", cwd: world.work })).text).toMatch(
        /^\[exit 0\]/,
      );
      // Writing a script is not a read, nor is feeding one to a shell: both ask for a signature.
      const script = join(world.work, "s.sh");
      consentId((await relay.call("shell_exec", { command: `printf 'rm -rf ${canary}' > ${script}` })).text);
      writeFileSync(script, `rm -rf ${canary}\n`);
      consentId((await relay.call("shell_exec", { command: `bash < ${script}` })).text);
      consentId((await relay.call("shell_exec", { command: `sh ${script}` })).text);
      // Nor is SQL given to sqlite3 on the consent database, inline or from a file.
      const sql = join(world.work, "undo.sql");
      const undo = "UPDATE requests SET status = 'approved' WHERE status = 'denied';";
      consentId((await relay.call("shell_exec", { command: `sqlite3 ${world.db} "${undo}"` })).text);
      consentId((await relay.call("shell_exec", { command: `printf "${undo}" > ${sql}` })).text);
      consentId((await relay.call("shell_exec", { command: `sqlite3 ${world.db} < ${sql}` })).text);
      expect(existsSync(join(canary, "keep"))).toBe(true);
      expect(leased() - before).toBe(1);
    } finally {
      await relay.close();
    }
  });

  it("lets a lease carry no write typed into a terminal in pieces", async () => {
    const relay = await world.startRelay({
      RELAY_SHELL_CONSENT_LEASE_MODE: "window",
      RELAY_SHELL_CONSENT_LEASE_BUDGET: "10",
    });
    try {
      const canary = join(world.work, "typed");
      approve(world, consentId((await relay.call("shell_exec", { command: "ls", cwd: world.work })).text));
      expect((await relay.call("shell_exec", { command: "ls", cwd: world.work })).text).toMatch(
        /^\[exit 0\]/,
      );
      const spawnArgs = { command: "bash", cwd: world.work };
      approve(world, consentId((await relay.call("shell_spawn", spawnArgs)).text));
      const spawned = await relay.call("shell_spawn", spawnArgs);
      const session = /^session (\S+) started/.exec(spawned.text)?.[1] ?? "";
      expect(session, spawned.text).not.toBe("");
      const answers: string[] = [];
      for (const data of ["echo ran ", "> ", `${canary}\n`]) {
        answers.push((await relay.call("session_send", { session_id: session, data })).text);
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(
        answers.some((a) => a.startsWith("[CONSENT REQUIRED")),
        answers.join("\n---\n"),
      ).toBe(true);
      expect(existsSync(canary)).toBe(false);
    } finally {
      await relay.close();
    }
  });

  it("ends a lease when the operator revokes it", async () => {
    const relay = await world.startRelay({ RELAY_SHELL_CONSENT_LEASE_MODE: "session" });
    try {
      const read = (n: number) => ({ command: `echo rev-${n}`, cwd: world.work });
      approve(world, consentId((await relay.call("shell_exec", read(0))).text));
      expect((await relay.call("shell_exec", read(0))).text).toBe("[exit 0]\nrev-0\n");
      expect((await relay.call("shell_exec", read(1))).text).toBe("[exit 0]\nrev-1\n");
      const leases = world.cli(["leases"]);
      expect(leases.status, leases.stderr).toBe(0);
      const revoked = world.cli(["revoke", "--all"]);
      expect(revoked.status, revoked.stderr).toBe(0);
      consentId((await relay.call("shell_exec", read(2))).text);
    } finally {
      await relay.close();
    }
  });
});

describe.skipIf(CONSENT_SKIP_REASON !== null)(
  "consent refuses to start on trust anchors the relay could write",
  () => {
    let world: ConsentWorld;
    beforeAll(() => {
      world = createConsentWorld();
    });
    afterAll(() => world?.cleanup());

    it("when the allowed-signers file belongs to the relay's own user", async () => {
      chownSync(world.allowedSigners, world.user.uid, world.user.gid);
      try {
        await expect(world.startRelay()).rejects.toThrow(/allowed_signers/);
      } finally {
        chownSync(world.allowedSigners, 0, 0);
      }
    });

    it("when anyone but its owner may write it", async () => {
      chmodSync(world.allowedSigners, 0o666);
      try {
        await expect(world.startRelay()).rejects.toThrow(/writable/);
      } finally {
        chmodSync(world.allowedSigners, 0o644);
      }
    });

    it("when the relay runs as root, which can write every file", async () => {
      await expect(startServer(world.settings())).rejects.toThrow();
    });

    it("when a .env the relay's own account can write would set its settings", async () => {
      const envFile = join(world.home, ".env");
      writeFileSync(envFile, "RELAY_SHELL_CONSENT_LEASE_BUDGET=100000\n");
      chownSync(envFile, world.user.uid, world.user.gid);
      try {
        await expect(world.startRelay()).rejects.toThrow(
          /which the relay's own account can write or replace/,
        );
      } finally {
        rmSync(envFile);
      }
    });

    it("when the consent ledger beside it is missing or not append-only", async () => {
      execFileSync("/usr/bin/chattr", ["-a", world.ledger]);
      try {
        await expect(world.startRelay()).rejects.toThrow(
          /consent\.ledger is not append-only; as root: install/,
        );
        renameSync(world.ledger, `${world.ledger}.away`);
        await expect(world.startRelay()).rejects.toThrow(/consent\.ledger does not exist/);
      } finally {
        if (existsSync(`${world.ledger}.away`)) renameSync(`${world.ledger}.away`, world.ledger);
        execFileSync("/usr/bin/chattr", ["+a", world.ledger]);
      }
    });

    it("and starts when the file is the operator's", async () => {
      const relay = await world.startRelay();
      await relay.close();
    });
  },
);
