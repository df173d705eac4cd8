import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Clock, RelayError, silentLogger } from "../../src/core/index.js";
import { createDialer, type Dialer } from "../../src/ssh/dial.js";
import { CONNECTION_UNUSABLE, isConnectionUnusable } from "../../src/ssh/errors.js";
import { execRemote } from "../../src/ssh/exec.js";
import { startForward } from "../../src/ssh/forward.js";
import { parseForwardSpec } from "../../src/ssh/forward-spec.js";
import { createKnownHostsStore } from "../../src/ssh/known-hosts-store.js";
import { createSshPool, type SshLease, type SshPool } from "../../src/ssh/pool.js";
import type { SshTarget } from "../../src/ssh/target.js";
import {
  announceSkip,
  createSshFixture,
  SSHD_MISSING,
  type Sshd,
  type SshFixture,
} from "../fixtures/sshd.js";
import { until } from "../helpers/processes.js";

announceSkip("ssh pool unit tests");

function manualClock(): Clock & { advance(ms: number): void } {
  let t = 1_000_000;
  return { now: () => t, monotonic: () => t, advance: (ms) => (t += ms) };
}

describe.skipIf(SSHD_MISSING)("ssh connection pool against a real sshd", () => {
  let fx: SshFixture;
  let sshd: Sshd;
  let bastion: Sshd;
  let dial: Dialer;
  let dials = 0;

  const target = (port: number, extra: Partial<SshTarget> = {}): SshTarget => fx.target(port, extra);

  const pool = (
    overrides: { maxConns?: number; idle?: number } = {},
    clock: Clock = manualClock(),
  ): SshPool =>
    createSshPool(
      {
        maxConns: overrides.maxConns ?? 8,
        idleTimeoutSeconds: overrides.idle ?? 0,
        keepaliveSeconds: 0,
        connectTimeoutSeconds: 5,
      },
      { dial, clock, sweepTimer: false },
    );

  beforeAll(async () => {
    fx = createSshFixture();
    sshd = await fx.start({ ports: 4 });
    bastion = await fx.start({ logLevel: "DEBUG1" });
    const knownHosts = createKnownHostsStore({ pinFile: join(fx.dir, "pool_known_hosts") });
    const real = createDialer({ knownHosts, auth: { home: fx.home, agentSocket: "" } });
    // Counting wraps the real dialer; nothing about the connection is faked.
    dial = (t, o) => {
      dials++;
      return real(t, o);
    };
  });
  afterAll(() => fx?.close());

  it("dials once for concurrent callers and hands every one the same connection", async () => {
    const p = pool();
    const before = dials;
    const leases = await Promise.all(Array.from({ length: 6 }, () => p.acquire(target(sshd.port))));
    expect(dials - before).toBe(1);
    expect(new Set(leases.map((l) => l.client)).size).toBe(1);
    expect(leases.every((l) => !l.reused)).toBe(true);
    expect(p.stats()).toEqual({ open: 1, pinned: 1, dialing: 0 });
    for (const l of leases) l.release();
    const again = await p.acquire(target(sshd.port));
    expect(again.reused).toBe(true);
    expect(again.hostKey.status).toBe("verified");
    again.release();
    expect(dials - before).toBe(1);
    p.closeAll();
  });

  it("forgets a failed dial so the next caller dials again", async () => {
    const p = pool();
    const before = dials;
    const bad = target(sshd.ports[1] ?? 0, { identityFiles: [fx.wrongKey] });
    await expect(p.acquire(bad)).rejects.toMatchObject({ type: "PermissionDenied" });
    await expect(p.acquire(bad)).rejects.toMatchObject({ type: "PermissionDenied" });
    expect(dials - before).toBe(2);
    expect(p.stats()).toEqual({ open: 0, pinned: 0, dialing: 0 });
    const good = await p.acquire(target(sshd.ports[1] ?? 0));
    good.release();
    p.closeAll();
  });

  it("a cancelled waiter does not cancel the shared dial", async () => {
    const p = pool();
    const before = dials;
    const abort = new AbortController();
    const cancelled = p.acquire(target(sshd.ports[2] ?? 0), { signal: abort.signal });
    const patient = p.acquire(target(sshd.ports[2] ?? 0));
    abort.abort();
    await expect(cancelled).rejects.toMatchObject({ type: "CancelledError" });
    const lease = await patient;
    expect(dials - before).toBe(1);
    const out = await execRemote(
      lease.client,
      { command: "echo shared", timeoutMs: 5000, maxBufferBytes: 1024 },
      manualClock(),
    );
    expect(out.output).toBe("shared\n");
    lease.release();
    p.closeAll();
  });

  it("evicts the least recently used unpinned connection at the cap, never a pinned one", async () => {
    const p = pool({ maxConns: 2 });
    const [a, b, c] = [target(sshd.ports[0] ?? 0), target(sshd.ports[1] ?? 0), target(sshd.ports[2] ?? 0)];
    const la = await p.acquire(a);
    const lb = await p.acquire(b);
    lb.release();
    la.release();
    // a was used last, so b is the least recently used.
    const lc = await p.acquire(c);
    expect(p.stats().open).toBe(2);
    const la2 = await p.acquire(a);
    expect(la2.reused).toBe(true);
    const lb2 = await p.acquire(b);
    expect(lb2.reused).toBe(false);
    // a and b are pinned and c is pinned: the cap is exceeded rather than break a connection in use.
    expect(p.stats()).toMatchObject({ open: 3, pinned: 3 });
    const d = await p.acquire(target(sshd.ports[3] ?? 0));
    expect(p.stats().open).toBe(4);
    for (const l of [lc, la2, lb2, d]) l.release();
    const e = await p.acquire(target(sshd.ports[3] ?? 0, { user: fx.user, mode: "strict" }));
    // Inserting one more made room down to the cap: only unpinned ones went.
    expect(p.stats()).toMatchObject({ open: 2, pinned: 1 });
    e.release();
    p.closeAll();
  });

  it("closes idle connections on the injected clock, but never a pinned one", async () => {
    const clock = manualClock();
    const p = pool({ idle: 10 }, clock);
    const idle = await p.acquire(target(sshd.ports[0] ?? 0));
    const busy = await p.acquire(target(sshd.ports[1] ?? 0));
    idle.release();
    clock.advance(9_000);
    p.sweep();
    expect(p.stats().open).toBe(2);
    clock.advance(2_000);
    p.sweep();
    expect(p.stats()).toEqual({ open: 1, pinned: 1, dialing: 0 });
    await expect(
      execRemote(idle.client, { command: "true", timeoutMs: 2000, maxBufferBytes: 64 }, clock),
    ).rejects.toBeInstanceOf(RelayError);
    const out = await execRemote(
      busy.client,
      { command: "echo alive", timeoutMs: 5000, maxBufferBytes: 64 },
      clock,
    );
    expect(out.output).toBe("alive\n");
    busy.release();
    p.closeAll();
  });

  it("purges a connection that closed, even while pinned, and redials next time", async () => {
    const p = pool();
    const lease = await p.acquire(target(sshd.ports[3] ?? 0));
    sshd.dropConnections();
    await until(() => p.stats().open === 0, 3000);
    lease.release();
    const fresh = await p.acquire(target(sshd.ports[3] ?? 0));
    expect(fresh.reused).toBe(false);
    fresh.release();
    p.closeAll();
  });

  it("closeAll during a dial discards the late connection", async () => {
    const p = pool();
    const pending = p.acquire(target(sshd.ports[0] ?? 0));
    p.closeAll();
    await expect(pending).rejects.toBeInstanceOf(RelayError);
    expect(p.stats()).toEqual({ open: 0, pinned: 0, dialing: 0 });
    await expect(p.acquire(target(sshd.port))).rejects.toThrow(/shut down/);
  });

  describe("the one rule for a pooled connection that died", () => {
    const echo = (client: SshLease["client"], text: string) =>
      execRemote(client, { command: `echo ${text}`, timeoutMs: 5000, maxBufferBytes: 256 }, manualClock());

    /** A pooled, idle connection that has just died: ssh2 knows, the pool has not heard yet. */
    async function deadPooled(p: SshPool, t: SshTarget): Promise<void> {
      const first = await p.acquire(t);
      first.release();
      first.client.end();
    }

    it("replaces a reused connection found dead, exactly once, with a fresh dial", async () => {
      const p = pool();
      const t = target(sshd.ports[1] ?? 0);
      await deadPooled(p, t);
      const before = dials;
      const seen: boolean[] = [];
      const { lease, value } = await p.open(t, {}, (l) => {
        seen.push(l.reused);
        return echo(l.client, "fresh");
      });
      // The real exec on the dead connection failed as unusable; the second try dialled.
      expect(seen).toEqual([true, false]);
      expect(value.output).toBe("fresh\n");
      expect(lease.reused).toBe(false);
      expect(dials - before).toBe(1);
      expect(p.stats()).toEqual({ open: 1, pinned: 1, dialing: 0 });
      lease.release();
      p.closeAll();
    });

    it.each([
      ["a reused connection found dead, then the fresh one too", true, 2],
      ["a freshly dialled connection", false, 1],
    ])("does not retry again after a failure on %s", async (_label, pooledFirst, attempts) => {
      const p = pool();
      const t = target(sshd.ports[pooledFirst ? 1 : 2] ?? 0);
      if (pooledFirst) await deadPooled(p, t);
      const before = dials;
      let calls = 0;
      // Every connection this caller gets dies before its command can start.
      const failing = p.open(t, {}, (l) => {
        calls++;
        l.client.end();
        return echo(l.client, "never");
      });
      await expect(failing).rejects.toMatchObject({ type: "ChannelOpenError", code: CONNECTION_UNUSABLE });
      await expect(failing).rejects.toSatisfy(isConnectionUnusable);
      expect(calls).toBe(attempts);
      expect(dials - before).toBe(1);
      expect(p.stats().pinned).toBe(0);
      p.closeAll();
    });

    it("never retries an error that does not say the connection died", async () => {
      const p = pool();
      const t = target(sshd.ports[3] ?? 0);
      const first = await p.acquire(t);
      first.release();
      let calls = 0;
      const failing = p.open(t, {}, async (l) => {
        calls++;
        expect(l.reused).toBe(true);
        // A live server refusing a request is its answer, not a sign the connection died.
        throw new RelayError("ChannelListenError", "the SSH server refused to listen");
      });
      await expect(failing).rejects.toMatchObject({ type: "ChannelListenError" });
      expect(calls).toBe(1);
      // The connection was neither discarded nor left pinned.
      expect(p.stats()).toEqual({ open: 1, pinned: 0, dialing: 0 });
      const again = await p.acquire(t);
      expect(again.reused).toBe(true);
      expect((await echo(again.client, "alive")).output).toBe("alive\n");
      again.release();
      p.closeAll();
    });

    it("a connection that refuses a new channel leaves the pool, but what runs on it goes on", async () => {
      // One session per connection: a second command on the same connection is refused.
      const full = await fx.start({ extraConfig: () => "Match all\nMaxSessions 1\n" });
      const p = pool();
      const t = target(full.port);
      try {
        const held = await p.acquire(t);
        const running = execRemote(
          held.client,
          { command: "sleep 1; echo still-here", timeoutMs: 10_000, maxBufferBytes: 256 },
          manualClock(),
        );
        await new Promise((r) => setTimeout(r, 200));
        const before = dials;
        const { lease, value } = await p.open(t, {}, (l) => echo(l.client, "second"));
        // The refusal on the reused connection sent this call to a fresh one.
        expect(lease.reused).toBe(false);
        expect(dials - before).toBe(1);
        expect(value.output).toBe("second\n");
        lease.release();
        // The command on the full connection was not cut off.
        expect(await running).toMatchObject({ exitCode: 0, output: "still-here\n" });
        // Out of the pool: the next call reuses the fresh connection, and the old one closes
        // once its last holder lets go.
        let closed = false;
        held.client.once("close", () => {
          closed = true;
        });
        held.release();
        await until(() => closed, 3000);
        const again = await p.acquire(t);
        expect(again.client).toBe(lease.client);
        again.release();
      } finally {
        p.closeAll();
        full.stop();
      }
    });

    it("applies to a remote forward's listen request as to a channel", async () => {
      const p = pool();
      const t = target(sshd.ports[0] ?? 0);
      await deadPooled(p, t);
      const seen: boolean[] = [];
      const { lease, value: runtime } = await p.open(t, {}, (l) => {
        seen.push(l.reused);
        return startForward({
          client: l.client,
          spec: parseForwardSpec("R:0:127.0.0.1:9"),
          bindAny: false,
          route: () => () => undefined,
          requestTimeoutMs: 5000,
          logger: silentLogger,
        });
      });
      expect(seen).toEqual([true, false]);
      expect(runtime.listenPort).toBeGreaterThan(0);
      await runtime.close();
      lease.release();
      p.closeAll();
    });
  });

  it("holds the bastion for as long as a connection through it lives", async () => {
    const p = pool();
    const hop: SshTarget = { ...target(bastion.port), label: "bastion" };
    const through = await p.acquire(target(sshd.ports[2] ?? 0, { jump: [hop] }));
    expect(through.jumpHostKeys.map((k) => k.port)).toEqual([bastion.port]);
    through.release();
    // Both idle now, but the bastion stays pinned by the connection that runs inside it.
    expect(p.stats()).toEqual({ open: 2, pinned: 1, dialing: 0 });
    const out = await execRemote(
      through.client,
      { command: "echo $SSH_CONNECTION", timeoutMs: 5000, maxBufferBytes: 256 },
      manualClock(),
    );
    expect(out.output.trim().split(" ")[3]).toBe(String(sshd.ports[2]));
    expect(bastion.log()).toContain(`target 127.0.0.1 port ${sshd.ports[2]}`);
    p.closeAll();
    expect(p.stats().open).toBe(0);
  });
});

describe.skipIf(SSHD_MISSING)("remote exec against a real sshd", () => {
  let fx: SshFixture;
  let sshd: Sshd;
  let p: SshPool;
  const clock = manualClock();

  beforeAll(async () => {
    fx = createSshFixture();
    sshd = await fx.start();
    const knownHosts = createKnownHostsStore({ pinFile: join(fx.dir, "exec_known_hosts") });
    p = createSshPool(
      { maxConns: 4, idleTimeoutSeconds: 0, keepaliveSeconds: 0, connectTimeoutSeconds: 5 },
      {
        dial: createDialer({ knownHosts, auth: { home: fx.home, agentSocket: "" } }),
        clock,
        sweepTimer: false,
      },
    );
  });
  afterAll(() => {
    p?.closeAll();
    fx?.close();
  });

  const run = async (command: string, maxBufferBytes = 1 << 20, timeoutMs = 10_000) => {
    const lease = await p.acquire({
      label: "x",
      host: "127.0.0.1",
      port: sshd.port,
      user: fx.user,
      identityFiles: [],
      identitiesRequired: false,
      mode: "accept-new",
      jump: [],
    });
    try {
      return await execRemote(lease.client, { command, timeoutMs, maxBufferBytes }, clock);
    } finally {
      lease.release();
    }
  };

  it("shares one byte budget between stdout and stderr and keeps the exit status", async () => {
    const out = await run(
      "head -c 300000 /dev/zero | tr '\\0' a; head -c 300000 /dev/zero | tr '\\0' b >&2; exit 3",
      10_000,
    );
    expect(out.exitCode).toBe(3);
    expect(out.totalBytes).toBe(600_000);
    expect(Buffer.byteLength(out.output)).toBeLessThanOrEqual(10_000);
    expect(out.droppedBytes).toBe(600_000 - Buffer.byteLength(out.output));
  });

  it("never loses the exit status of a command that finishes at once", async () => {
    // The status often arrives in the same packet batch as the open confirmation.
    for (let i = 0; i < 30; i++) expect((await run(`exit ${i % 5}`)).exitCode).toBe(i % 5);
  });

  it("merges stdout and stderr in arrival order", async () => {
    const out = await run("echo a; sleep 0.2; echo b >&2; sleep 0.2; echo c");
    expect(out.output).toBe("a\nb\nc\n");
  });

  it("reports a signal death as the negative signal number", async () => {
    const out = await run("kill -TERM $$");
    expect(out.exitCode).toBe(-15);
    expect(out.exitSignal).toBe("SIGTERM");
  });

  it("kills the remote process on timeout", async () => {
    const started = performance.now();
    const out = await run("exec sleep 41", 1024, 500);
    expect(out.timedOut).toBe(true);
    expect(out.exitCode).toBeNull();
    expect(performance.now() - started).toBeLessThan(3000);
    await new Promise((r) => setTimeout(r, 200));
    const check = await run("pgrep -f 'slee[p] 41' || echo gone");
    expect(check.output).toBe("gone\n");
  });
});
