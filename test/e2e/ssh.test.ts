import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  announceSkip,
  createSshFixture,
  SSHD_MISSING,
  type Sshd,
  type SshFixture,
} from "../fixtures/sshd.js";
import { startServer, type TestServer } from "../helpers/server.js";

announceSkip("ssh_exec end-to-end suite");

/** ssh_exec through the built server and the SDK client, against real OpenSSH servers. */
describe.skipIf(SSHD_MISSING)("ssh_exec over stdio against real sshd", () => {
  let fx: SshFixture;
  let fleet: Sshd;
  let bastion: Sshd;
  let rotating: Sshd;
  let closed: number;
  let s: TestServer;
  let knownHosts: string;
  const port = (i: number) => fleet.ports[i] ?? 0;

  beforeAll(async () => {
    fx = createSshFixture();
    [fleet, bastion, rotating] = await Promise.all([
      fx.start({ ports: 6 }),
      // The second bastion port refuses to open tunnels: "a jump host that refuses".
      fx.start({
        ports: 2,
        logLevel: "DEBUG1",
        extraConfig: (p) => `Match LocalPort ${p[1]}\n  AllowTcpForwarding no\n`,
      }),
      fx.start(),
    ]);
    closed = await fx.closedPort();
    const host = (p: number, extra: Record<string, unknown> = {}) => ({
      hostname: "127.0.0.1",
      port: p,
      user: fx.user,
      ...extra,
    });
    const inventory = join(fx.dir, "inventory.json");
    writeFileSync(
      inventory,
      JSON.stringify({
        web: host(port(0)),
        lab: host(port(1), { known_hosts: "ignore" }),
        strictbox: host(port(2), { known_hosts: "strict" }),
        jumped: host(port(3), { jump: "bastion" }),
        bastion: host(bastion.port),
        badbastion: host(bastion.ports[1] ?? 0),
        rotating: host(rotating.port),
        down: host(closed),
        keyed: host(port(4), { identity_file: fx.clientKey }),
        missingkey: host(port(4), { identity_file: join(fx.dir, "no-such-key") }),
      }),
    );
    const sshConfig = join(fx.dir, "ssh_config");
    writeFileSync(sshConfig, `Host cfghost\n  HostName 127.0.0.1\n  Port ${port(5)}\n  User ${fx.user}\n`);
    knownHosts = join(fx.dir, "relay_known_hosts");
    s = await startServer({
      // Exact-text checks here; notices have their own suites (notices*.test.ts).
      RELAY_SHELL_UNSAFE_NOTICES: "false",
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: sshConfig,
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: knownHosts,
      RELAY_SHELL_SSH_CONNECT_TIMEOUT: "5",
    });
  });
  afterAll(async () => {
    await s?.close();
    fx?.close();
  });

  const pinned = () => {
    try {
      return readFileSync(knownHosts, "utf8");
    } catch {
      return "";
    }
  };

  it("runs a command, reports the exit code and records the connection it used", async () => {
    const first = await s.call("ssh_exec", { host: "web", command: "echo hello; exit 3" });
    expect(first.text).toBe("[exit 3]\nhello\n");
    expect(first.structured).toMatchObject({
      tool: "ssh_exec",
      tier: 0,
      exit_code: 3,
      connection_reused: false,
      host_key: {
        host: "127.0.0.1",
        port: port(0),
        mode: "accept-new",
        status: "learned",
        key_type: "ssh-ed25519",
      },
      jump_host_keys: [],
    });
    expect(s.records().at(-1)).toMatchObject({
      tool: "ssh_exec",
      tier: 0,
      exit_code: 3,
      args: {
        host: "web",
        command: "echo hello; exit 3",
        timeout: 60,
        user: "",
        port: 0,
        key_path: "",
        jump: "",
        known_hosts: "accept-new",
      },
    });
    const second = await s.call("ssh_exec", { host: "web", command: "echo again" });
    expect(second.text).toBe("[exit 0]\nagain\n");
    expect(second.structured).toMatchObject({ connection_reused: true, host_key: { status: "verified" } });
  });

  it("merges stdout and stderr in arrival order and reports signals", async () => {
    const r = await s.call("ssh_exec", {
      host: "web",
      command: "echo a; sleep 0.2; echo b >&2; sleep 0.2; echo c",
    });
    expect(r.text).toBe("[exit 0]\na\nb\nc\n");
    expect((await s.call("ssh_exec", { host: "web", command: "kill -TERM $$" })).text).toBe("[exit -15]\n");
  });

  it("bounds a big output with one budget for both streams and keeps the exit code", async () => {
    const r = await s.call("ssh_exec", {
      host: "web",
      command: "head -c 300000 /dev/zero | tr '\\0' a; head -c 300000 /dev/zero | tr '\\0' b >&2; exit 4",
    });
    expect(r.text.startsWith("[exit 4]\n")).toBe(true);
    expect(r.text.endsWith("\n\n[TRUNCATED - 600000 bytes total, 65536 shown]")).toBe(true);
    expect(r.structured).toMatchObject({ truncated: true, output_bytes: 600000, exit_code: 4 });
  });

  it("times out covering the run, and the remote process is killed", async () => {
    const started = Date.now();
    const r = await s.call("ssh_exec", { host: "web", command: "exec sleep 43", timeout: 1 });
    expect(r.text).toBe("[TIMEOUT after 1s]");
    expect(r.structured.timed_out).toBe(true);
    expect(Date.now() - started).toBeLessThan(5000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(
      (await s.call("ssh_exec", { host: "web", command: "pgrep -f 'slee[p] 43' || echo gone" })).text,
    ).toBe("[exit 0]\ngone\n");
  });

  it("pins a host key on first contact and refuses it once it changed", async () => {
    const first = await s.call("ssh_exec", { host: "rotating", command: "echo first" });
    expect(first.text).toBe("[exit 0]\nfirst\n");
    expect(first.structured.host_key).toMatchObject({
      status: "learned",
      fingerprint: rotating.fingerprint(),
    });
    const line = `[127.0.0.1]:${rotating.port} ${rotating.hostKeyPublic()}`;
    expect(pinned().split("\n")).toContain(line);

    const oldFingerprint = rotating.fingerprint();
    await rotating.rotateHostKey();
    expect(rotating.fingerprint()).not.toBe(oldFingerprint);
    const before = s.records().length;
    const second = await s.call("ssh_exec", { host: "rotating", command: "echo second" });
    expect(second.text).toMatch(
      new RegExp(
        `^\\[ERROR: HostKeyNotVerifiable: host key for \\[127\\.0\\.0\\.1\\]:${rotating.port} has CHANGED`,
      ),
    );
    expect(second.text).toContain(rotating.fingerprint());
    expect(second.text).toContain(oldFingerprint);
    expect(second.text).toContain(`${knownHosts}:`);
    // The pin is untouched, the refusal is audited, and the pool still serves other hosts.
    expect(pinned().split("\n")).toContain(line);
    expect(pinned()).not.toContain(rotating.hostKeyPublic());
    expect(s.records().length).toBe(before + 1);
    expect(s.records().at(-1)).toMatchObject({ tool: "ssh_exec", exit_code: null, denied: false });
    expect((await s.call("ssh_exec", { host: "web", command: "echo healthy" })).text).toBe(
      "[exit 0]\nhealthy\n",
    );
  });

  it("never lets a strict call ride a connection opened under ignore", async () => {
    const lax = await s.call("ssh_exec", { host: "lab", command: "echo lax" });
    expect(lax.text).toBe("[exit 0]\nlax\n");
    expect(lax.structured).toMatchObject({
      connection_reused: false,
      host_key: { mode: "ignore", status: "unchecked" },
    });
    expect(s.records().at(-1)?.args).toMatchObject({ known_hosts: "ignore" });
    expect(pinned()).not.toContain(`[127.0.0.1]:${port(1)}`);
    const laxAgain = await s.call("ssh_exec", { host: "lab", command: "echo lax" });
    expect(laxAgain.structured).toMatchObject({ connection_reused: true, host_key: { status: "unchecked" } });
    // Stricter than the entry's own mode is allowed; it must dial afresh, and the unknown key is refused.
    const strict = await s.call("ssh_exec", { host: "lab", command: "echo strict", known_hosts: "strict" });
    expect(strict.text).toMatch(
      /^\[ERROR: HostKeyNotVerifiable: host key for \[127\.0\.0\.1\]:\d+ is not known and known_hosts=strict/,
    );
    expect(s.records().at(-1)?.args).toMatchObject({ known_hosts: "strict" });
    const inventoryStrict = await s.call("ssh_exec", { host: "strictbox", command: "true" });
    expect(inventoryStrict.text).toMatch(/is not known and known_hosts=strict/);
    // A host pinned earlier passes strict.
    expect((await s.call("ssh_exec", { host: "web", command: "echo ok", known_hosts: "strict" })).text).toBe(
      "[exit 0]\nok\n",
    );
  });

  it("refuses a weaker per-call mode and validates the mode on every call", async () => {
    const weaker = await s.call("ssh_exec", { host: "web", command: "true", known_hosts: "ignore" });
    expect(weaker.text).toBe(
      "[ERROR: ValueError: known_hosts='ignore' is weaker than 'accept-new', the mode this host gets otherwise; " +
        "per-call downgrades need RELAY_SHELL_SSH_ALLOW_WEAKER_KNOWN_HOSTS=true]",
    );
    // web has a pooled connection: the bad value is refused anyway.
    const bogus = await s.call("ssh_exec", { host: "web", command: "true", known_hosts: "bogus" });
    expect(bogus.text).toBe(
      "[ERROR: ValueError: known_hosts must be one of 'accept-new', 'ignore', 'strict']",
    );
    expect(s.records().at(-1)?.args).toMatchObject({ known_hosts: "bogus" });
  });

  it("reaches a host through a bastion, from the inventory and per call", async () => {
    const r = await s.call("ssh_exec", { host: "jumped", command: "echo $SSH_CONNECTION" });
    expect(r.text).toMatch(new RegExp(`^\\[exit 0\\]\\n127\\.0\\.0\\.1 \\d+ 127\\.0\\.0\\.1 ${port(3)}\\n$`));
    expect(r.structured.jump_host_keys).toEqual([
      expect.objectContaining({ port: bastion.port, status: "learned" }),
    ]);
    expect(bastion.log()).toContain(`target 127.0.0.1 port ${port(3)}`);
    const perCall = await s.call("ssh_exec", {
      host: `${fx.user}@127.0.0.1`,
      port: port(5),
      jump: `${fx.user}@127.0.0.1:${bastion.port}`,
      command: "echo $SSH_CONNECTION",
    });
    expect(perCall.text).toMatch(new RegExp(` ${port(5)}\\n$`));
    expect(bastion.log()).toContain(`target 127.0.0.1 port ${port(5)}`);
    expect(s.records().at(-1)?.args).toMatchObject({
      jump: `${fx.user}@127.0.0.1:${bastion.port}`,
      port: port(5),
    });
  });

  it("names the jump host that refuses to tunnel", async () => {
    const r = await s.call("ssh_exec", { host: "web", jump: "badbastion", command: "true" });
    expect(r.text).toMatch(
      new RegExp(
        `^\\[ERROR: ChannelOpenError: jump host badbastion: the bastion refused to open a tunnel to 127\\.0\\.0\\.1:${port(0)} `,
      ),
    );
  });

  it("resolves ssh_config aliases, explicit user@host and named keys", async () => {
    expect((await s.call("ssh_exec", { host: "cfghost", command: "echo cfg" })).text).toBe("[exit 0]\ncfg\n");
    expect((await s.call("ssh_exec", { host: "keyed", command: "whoami" })).text).toBe(
      `[exit 0]\n${fx.user}\n`,
    );
    const explicit = await s.call("ssh_exec", {
      host: `${fx.user}@127.0.0.1`,
      port: port(4),
      command: "echo x",
    });
    expect(explicit.text).toBe("[exit 0]\nx\n");
  });

  const failures: Array<[string, () => Record<string, unknown>, () => RegExp]> = [
    [
      "an unreachable port",
      () => ({ host: "down" }),
      () =>
        new RegExp(
          `^\\[ERROR: ConnectionRefusedError: connection refused by ${fx.user}@127\\.0\\.0\\.1:${closed}\\]$`,
        ),
    ],
    [
      "a wrong key",
      () => ({ host: "web", key_path: fx.wrongKey }),
      () =>
        /^\[ERROR: PermissionDenied: authentication failed for relaytest@127\.0\.0\.1:\d+ \(offered: key .*wrong_ed25519\)\]$/,
    ],
    [
      "a missing key file",
      () => ({ host: "missingkey" }),
      () => /^\[ERROR: FileNotFoundError: key file not found: .*no-such-key\]$/,
    ],
    [
      "an unknown alias",
      () => ({ host: "no-such-host.invalid", timeout: 20 }),
      () => /^\[ERROR: (HostNotFoundError|TimeoutError): /,
    ],
    [
      "a host name with shell characters",
      () => ({ host: "web;reboot" }),
      () => /^\[ERROR: ValueError: invalid host name "web;reboot"\]$/,
    ],
    ["an empty command", () => ({ host: "web", command: " " }), () => /^\[ERROR: empty command\]$/],
  ];

  it.each(failures)(
    "answers %s with a clear error, audited, and the pool stays healthy",
    async (_label, args, pattern) => {
      const before = s.records().length;
      const r = await s.call("ssh_exec", { command: "true", ...args() });
      expect(r.text).toMatch(pattern());
      expect(s.records().length).toBe(before + 1);
      expect(s.records().at(-1)).toMatchObject({ tool: "ssh_exec", exit_code: null, denied: false });
      expect((await s.call("ssh_exec", { host: "web", command: "echo fine" })).text).toBe("[exit 0]\nfine\n");
    },
  );

  it("authenticates with the SSH agent when the server's environment has one", async () => {
    const socket = join(fx.dir, "agent.sock");
    const agent = spawn("ssh-agent", ["-D", "-a", socket], { stdio: "ignore" });
    const emptyHome = join(fx.dir, "agent-home");
    mkdirSync(emptyHome);
    try {
      for (let i = 0; i < 100 && !existsSync(socket); i++) await new Promise((r) => setTimeout(r, 20));
      execFileSync("ssh-add", [fx.clientKey], { env: { SSH_AUTH_SOCK: socket }, stdio: "ignore" });
      const a = await startServer({
        // Exact-text checks here; notices have their own suites (notices*.test.ts).
        RELAY_SHELL_UNSAFE_NOTICES: "false",
        HOME: emptyHome,
        USER: fx.user,
        SSH_AUTH_SOCK: socket,
        RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
        RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "agent_known_hosts"),
      });
      try {
        const r = await a.call("ssh_exec", {
          host: `${fx.user}@127.0.0.1`,
          port: port(0),
          command: "echo via-agent",
        });
        expect(r.text).toBe("[exit 0]\nvia-agent\n");
      } finally {
        await a.close();
      }
      // Without the agent and without keys there is nothing to offer: a clear refusal, no dial.
      const none = await startServer({
        // Exact-text checks here; notices have their own suites (notices*.test.ts).
        RELAY_SHELL_UNSAFE_NOTICES: "false",
        HOME: emptyHome,
        USER: fx.user,
        RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
      });
      try {
        const r = await none.call("ssh_exec", {
          host: `${fx.user}@127.0.0.1`,
          port: port(0),
          command: "true",
        });
        expect(r.text).toMatch(
          /^\[ERROR: PermissionDenied: no credentials to offer relaytest@127\.0\.0\.1:\d+: /,
        );
      } finally {
        await none.close();
      }
    } finally {
      agent.kill();
    }
  });

  it("reports the inventory size in server_info", async () => {
    const info = JSON.parse((await s.call("server_info")).text) as { ssh: { inventory_hosts: number } };
    // Ten inventory entries plus the ssh_config alias.
    expect(info.ssh.inventory_hosts).toBe(11);
  });
});
