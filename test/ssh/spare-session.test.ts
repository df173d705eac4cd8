import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ssh2, { type Client, type Connection } from "ssh2";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Clock } from "../../src/core/index.js";
import { createDialer, type Dialer } from "../../src/ssh/dial.js";
import { execRemote, type RemoteOutcome } from "../../src/ssh/exec.js";
import { createKnownHostsStore } from "../../src/ssh/known-hosts-store.js";
import { createSshPool, type SshPool } from "../../src/ssh/pool.js";
import { openSshPty } from "../../src/ssh/pty.js";
import { transferFiles } from "../../src/ssh/sftp-transfer.js";
import { keepSpare, spareStatus } from "../../src/ssh/spare-session.js";
import type { SshTarget } from "../../src/ssh/target.js";
import {
  announceSkip,
  createSshFixture,
  SSHD_MISSING,
  type Sshd,
  type SshFixture,
} from "../fixtures/sshd.js";
import { until } from "../helpers/processes.js";

announceSkip("ssh spare session tests");

const { Server, utils } = ssh2;

const clock: Clock = { now: () => Date.now(), monotonic: () => performance.now() };

describe.skipIf(SSHD_MISSING)("a session opened ahead of the next exec, against a real sshd", () => {
  let fx: SshFixture;
  let plain: Sshd;
  /** One session at a time: a spare that kept its slot would stop a terminal or SFTP. */
  let oneSession: Sshd;
  /** Four sessions at a time: four commands at once leave no room for a spare. */
  let fourSessions: Sshd;
  let dial: Dialer;
  const pools: SshPool[] = [];

  const target = (port: number): SshTarget => fx.target(port);

  const newPool = (): SshPool => {
    const pool = createSshPool(
      { maxConns: 4, idleTimeoutSeconds: 0, keepaliveSeconds: 0, connectTimeoutSeconds: 5 },
      { dial, clock, sweepTimer: false },
    );
    pools.push(pool);
    return pool;
  };

  /** One command through the pool, as the service runs it; also hands back the connection used. */
  async function run(
    pool: SshPool,
    port: number,
    command: string,
  ): Promise<RemoteOutcome & { client: Client }> {
    const { lease, value } = await pool.open(target(port), {}, (l) =>
      execRemote(l.client, { command, timeoutMs: 10_000, maxBufferBytes: 65_536 }, clock),
    );
    lease.release();
    return { ...value, client: lease.client };
  }

  /**
   * At one session per connection the server may still hold the slot of the
   * command that just ended when the spare's open arrives, and refuse it (then
   * there is simply no spare): ask again, a little later, until one is there.
   */
  async function runUntilSpare(pool: SshPool, port: number): Promise<Client> {
    const done = await run(pool, port, "true");
    expect(done.exitCode).toBe(0);
    for (let attempt = 0; attempt < 20; attempt++) {
      await until(() => spareStatus(done.client).state !== "opening");
      if (spareStatus(done.client).state === "ready") return done.client;
      await new Promise((r) => setTimeout(r, 50));
      keepSpare(done.client);
      await new Promise((r) => setImmediate(r));
    }
    throw new Error("no spare session was ever opened");
  }

  beforeAll(async () => {
    fx = createSshFixture();
    plain = await fx.start();
    oneSession = await fx.start({ extraConfig: () => "Match all\nMaxSessions 1\n" });
    fourSessions = await fx.start({ extraConfig: () => "Match all\nMaxSessions 4\n" });
    const knownHosts = createKnownHostsStore({ pinFile: join(fx.dir, "spare_known_hosts") });
    dial = createDialer({ knownHosts, auth: { home: fx.home, agentSocket: "" } });
  });

  afterAll(() => {
    for (const pool of pools) pool.closeAll();
    fx?.close();
  });

  it("runs the next command on the spare, with the same outcome a fresh channel gives", async () => {
    const pool = newPool();
    const first = await run(pool, plain.port, "true");
    expect(first.exitCode).toBe(0);
    await until(() => spareStatus(first.client).state === "ready");

    const outcomes: RemoteOutcome[] = [];
    for (const command of ["printf out; printf err >&2; exit 3", "kill -KILL $$", "echo $((6 * 7))"]) {
      outcomes.push(await run(pool, plain.port, command));
      await until(() => spareStatus(first.client).state === "ready");
    }
    // If ssh2's internals change, the spares stop being used: this says so instead of a silent slowdown.
    expect(spareStatus(first.client).taken).toBe(3);
    expect(outcomes[0]).toMatchObject({ exitCode: 3, exitSignal: null, timedOut: false });
    expect(outcomes[0]?.output.split("").sort().join("")).toBe("eorrtu");
    expect(outcomes[1]).toMatchObject({ exitCode: -9, exitSignal: "SIGKILL" });
    expect(outcomes[2]).toMatchObject({ exitCode: 0, output: "42\n" });
  });

  it("never takes a slot a command needs: as many commands at once as the server allows sessions", async () => {
    const pool = newPool();
    for (let burst = 0; burst < 5; burst++) {
      const client = await runUntilSpare(pool, fourSessions.port);
      // OpenSSH frees an ended session's slot a moment after its close: let it, so only the spare holds one.
      await new Promise((r) => setTimeout(r, 300));
      const taken = spareStatus(client).taken;
      const done = await Promise.all(
        [0, 1, 2, 3].map((i) => run(pool, fourSessions.port, `sleep 0.2; echo ${burst}-${i}`)),
      );
      // All on the one pooled connection: a refused channel would have sent a command to a new one.
      expect(done.map((d) => [d.exitCode, d.output, d.client === client])).toEqual(
        [0, 1, 2, 3].map((i) => [0, `${burst}-${i}\n`, true]),
      );
      expect(spareStatus(client).taken).toBe(taken + 1);
    }
  });

  it("gives the spare's slot back before a terminal or SFTP opens (MaxSessions 1)", async () => {
    const pool = newPool();
    const dir = mkdtempSync(join(fx.dir, "spare-sftp-"));
    // Relative to the remote user's home, where SFTP starts.
    const remoteFile = `spare-${process.pid}.txt`;
    await run(pool, oneSession.port, `printf 'spare\\n' > ${remoteFile}`);
    for (let round = 0; round < 3; round++) {
      await runUntilSpare(pool, oneSession.port);

      const terminal = await openSshPty(pool, target(oneSession.port), {
        command: "echo term",
        cols: 80,
        rows: 24,
        openTimeoutMs: 5000,
      });
      // On the same connection: had the spare kept its slot, the open would have failed there.
      expect(terminal.reused).toBe(true);
      await terminal.transport.close();

      await runUntilSpare(pool, oneSession.port);
      const copied = await transferFiles(
        { pool, clock },
        {
          direction: "download",
          target: target(oneSession.port),
          host: "one",
          localPath: join(dir, `down-${round}.txt`),
          remotePath: remoteFile,
          recursive: false,
          timeoutMs: 10_000,
          limits: { maxBytes: 1 << 20, maxEntries: 100 },
        },
      );
      expect(copied).toMatchObject({ timedOut: false, reused: true });
      expect(readFileSync(join(dir, `down-${round}.txt`), "utf8")).toBe("spare\n");
    }
  });

  it("a connection dropped with a spare waiting is replaced, and the command still runs", async () => {
    const pool = newPool();
    const first = await run(pool, plain.port, "true");
    await until(() => spareStatus(first.client).state === "ready");
    plain.dropConnections();
    const next = await run(pool, plain.port, "echo again");
    expect(next).toMatchObject({ exitCode: 0, output: "again\n" });
  });
});

/**
 * What OpenSSH does not do but a server may: close a session that got no
 * request yet, or refuse the request on it. An ssh2 server on 127.0.0.1 that
 * runs nothing: every accepted exec prints its command and exits 0.
 */
async function startOddServer(
  behaviour: "close-idle" | "refuse-even",
): Promise<{ port: number; close(): void }> {
  const hostKey = utils.generateKeyPairSync("ed25519");
  const clients = new Set<Connection>();
  const server = new Server({ hostKeys: [hostKey.private] }, (client) => {
    clients.add(client);
    client.on("close", () => clients.delete(client));
    client.on("error", () => undefined);
    client.on("authentication", (ctx) =>
      ctx.method === "publickey" ? ctx.accept() : ctx.reject(["publickey"]),
    );
    let sessions = 0;
    client.on("ready", () => {
      client.on("session", (accept) => {
        const number = ++sessions;
        const session = accept();
        let requested = false;
        session.on("exec", (acceptExec, rejectExec, info) => {
          requested = true;
          if (behaviour === "refuse-even" && number % 2 === 0) {
            rejectExec();
            return;
          }
          const channel = acceptExec();
          channel.write(`${info.command}\n`);
          channel.exit(0);
          channel.end();
        });
        if (behaviour === "close-idle") {
          setTimeout(() => {
            // ssh2's server has no call to close a session that has no request yet.
            const info = (session as unknown as { _chanInfo: { outgoing: { id: number } } })._chanInfo;
            const proto = (client as unknown as { _protocol: { channelClose(id: number): void } })._protocol;
            if (!requested) proto.channelClose(info.outgoing.id);
          }, 100);
        }
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    close() {
      for (const c of clients) c.end();
      server.close();
    },
  };
}

describe("a spare the server takes away never changes an outcome", () => {
  const clock2: Clock = { now: () => Date.now(), monotonic: () => performance.now() };
  let home: string;
  let pool: SshPool | undefined;
  let odd: { port: number; close(): void } | undefined;

  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), "spare-odd-"));
    mkdirSync(join(home, ".ssh"), { mode: 0o700 });
    const key = utils.generateKeyPairSync("ed25519");
    writeFileSync(join(home, ".ssh", "id_ed25519"), key.private, { mode: 0o600 });
  });

  afterEach(() => {
    pool?.closeAll();
    pool = undefined;
    odd?.close();
  });

  afterAll(() => rmSync(home, { recursive: true, force: true }));

  async function runOn(port: number, command: string): Promise<RemoteOutcome & { client: Client }> {
    const knownHosts = createKnownHostsStore({ pinFile: join(home, `kh-${port}`) });
    pool ??= createSshPool(
      { maxConns: 2, idleTimeoutSeconds: 0, keepaliveSeconds: 0, connectTimeoutSeconds: 5 },
      {
        dial: createDialer({ knownHosts, auth: { home, agentSocket: "" } }),
        clock: clock2,
        sweepTimer: false,
      },
    );
    const target: SshTarget = {
      label: "odd",
      host: "127.0.0.1",
      port,
      user: "anyone",
      identityFiles: [join(home, ".ssh", "id_ed25519")],
      identitiesRequired: true,
      mode: "accept-new",
      jump: [],
    };
    const { lease, value } = await pool.open(target, {}, (l) =>
      execRemote(l.client, { command, timeoutMs: 5000, maxBufferBytes: 4096 }, clock2),
    );
    lease.release();
    return { ...value, client: lease.client };
  }

  it("forgets a spare the server closed and runs the command on a fresh channel", async () => {
    odd = await startOddServer("close-idle");
    const first = await runOn(odd.port, "one");
    await until(() => spareStatus(first.client).state === "ready");
    await until(() => spareStatus(first.client).state === "none");
    const next = await runOn(odd.port, "two");
    expect(next).toMatchObject({ exitCode: 0, output: "two\n" });
    expect(next.client).toBe(first.client);
    expect(spareStatus(first.client).taken).toBe(0);
  });

  it("runs the command on a fresh channel when the server refuses it on the spare", async () => {
    odd = await startOddServer("refuse-even");
    const first = await runOn(odd.port, "a");
    await until(() => spareStatus(first.client).state === "ready");
    // The spare is the connection's second session: the server refuses the request on it.
    const second = await runOn(odd.port, "b");
    const third = await runOn(odd.port, "c");
    const outputs = [first, second, third].map((o) => [o.exitCode, o.output]);
    expect(outputs).toEqual([
      [0, "a\n"],
      [0, "b\n"],
      [0, "c\n"],
    ]);
    const client = first.client;
    // Every spare was refused: nothing ran on one.
    expect(client && spareStatus(client).taken).toBe(0);
  });
});
