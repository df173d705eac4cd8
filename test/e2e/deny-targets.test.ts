import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../helpers/server.js";

/**
 * The deny list sees every target of a call (ADR 0020): the working directory
 * in any spelling, the interpreter, the SSH user, port and hops, transfer
 * paths and the forward listen address. The SSH targets are loopback ports
 * that count connections, so "refused before any dial" is observed, not assumed.
 */

interface Trap {
  server: Server;
  port: number;
  connections: number;
}

async function trap(): Promise<Trap> {
  const t: Trap = { server: createServer(), port: 0, connections: 0 };
  t.server.on("connection", (socket) => {
    t.connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => t.server.listen(0, "127.0.0.1", resolve));
  const address = t.server.address();
  t.port = typeof address === "object" && address ? address.port : 0;
  return t;
}

const DENIED = /^\[DENIED tier \d \([A-Z_]+\): matched RELAY_SHELL_POLICY_DENY\]/;

describe("the deny list sees every target of a call", () => {
  let s: TestServer;
  let work: string;
  let open: Trap;
  let closed: Trap;

  beforeAll(async () => {
    open = await trap();
    closed = await trap();
    // Outside the server's own directory, so relative spellings below are relative to it.
    work = mkdtempSync(join(tmpdir(), "relay-deny-targets-"));
    const inventory = join(work, "inventory.json");
    writeFileSync(
      inventory,
      JSON.stringify({ trapweb: { hostname: "127.0.0.1", port: open.port, user: "trap-user" } }),
    );
    // A default key, so that a call the deny list lets through really dials.
    mkdirSync(join(work, ".ssh"), { mode: 0o700 });
    const { privateKey } = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      privateKeyEncoding: { type: "pkcs1", format: "pem" },
      publicKeyEncoding: { type: "pkcs1", format: "pem" },
    });
    writeFileSync(join(work, ".ssh", "id_rsa"), privateKey, { mode: 0o600 });
    const deny = [
      "canary",
      "^cwd=/.+/vault-dir$",
      "^interpreter=python3$",
      "^user=trap-user$",
      `^port=${closed.port}$`,
      "^listen=\\*:",
    ].join("|");
    s = await startServer({
      HOME: work,
      RELAY_SHELL_POLICY_DENY: deny,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: join(work, "no-ssh-config"),
      RELAY_SHELL_SSH_KNOWN_HOSTS: "accept-new",
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(work, "known_hosts"),
      RELAY_SHELL_SSH_CONNECT_TIMEOUT: "3",
      RELAY_SHELL_FORWARD_BIND_ANY: "true",
      RELAY_SHELL_UNSAFE_NOTICES: "false",
    });
    for (const name of ["canary-dir", "plain", "vault-dir/sub"])
      mkdirSync(join(s.dir, name), { recursive: true });
    symlinkSync(join(s.dir, "canary-dir"), join(s.dir, "innocent-link"));
    symlinkSync(join(s.dir, "vault-dir"), join(s.dir, "harmless-link"));
    symlinkSync(join(s.dir, "vault-dir", "sub"), join(s.dir, "plain", "lnk"));
    writeFileSync(join(s.dir, "canary-dir", "file"), "precious");
  });

  afterAll(async () => {
    await s?.close();
    open?.server.close();
    closed?.server.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("a cwd that matches refuses a command that names nothing (the reported case)", async () => {
    const cwd = join(s.dir, "canary-dir");
    const r = await s.call("shell_exec", { command: "touch ./x", cwd });
    expect(r.text).toMatch(DENIED);
    expect(existsSync(join(cwd, "x"))).toBe(false);
    expect(s.records().at(-1)).toMatchObject({ tool: "shell_exec", denied: true, args: { cwd } });
    // The same command elsewhere runs: the refusal came from the directory.
    const ok = await s.call("shell_exec", { command: "touch ./x", cwd: join(s.dir, "plain") });
    expect(ok.text).toMatch(/^\[exit 0\]/);
    expect(existsSync(join(s.dir, "plain", "x"))).toBe(true);
  });

  it.each([
    ["relative", "vault-dir"],
    ["trailing slash", "vault-dir/"],
    ["dot-dot", "./plain/../vault-dir"],
    ["doubled slashes", ".//vault-dir//"],
    ["symlink", "harmless-link"],
    ["symlink then dot-dot (resolved physically)", "plain/lnk/.."],
  ])("a cwd spelled another way (%s) is still seen by an anchored pattern", async (_label, cwd) => {
    const r = await s.call("shell_exec", { command: "touch ./y", cwd });
    expect(r.text).toMatch(DENIED);
    expect(existsSync(join(s.dir, "vault-dir", "y"))).toBe(false);
  });

  it("shell_spawn and shell_script see the cwd too", async () => {
    const cwd = join(s.dir, "canary-dir");
    expect((await s.call("shell_spawn", { command: "true", cwd })).text).toMatch(DENIED);
    expect((await s.call("shell_script", { script: "touch ./z", cwd })).text).toMatch(DENIED);
    expect(existsSync(join(cwd, "z"))).toBe(false);
  });

  it("the interpreter a shell_script selects is a target, however it is named", async () => {
    for (const interpreter of ["python3", "py", "PYTHON"]) {
      const r = await s.call("shell_script", { script: "print(1)", interpreter });
      expect(r.text).toMatch(DENIED);
    }
    expect((await s.call("shell_script", { script: "echo fine", interpreter: "bash" })).text).toBe(
      "[exit 0]\nfine\n",
    );
  });

  it("the control: a loopback trap that is not denied is dialled", async () => {
    const before = open.connections;
    const r = await s.call("ssh_exec", {
      host: "127.0.0.1",
      port: open.port,
      user: "someone",
      command: "true",
    });
    expect(r.text).toMatch(/^\[ERROR: /);
    expect(open.connections).toBeGreaterThan(before);
  });

  it.each<[string, string, Record<string, unknown>, () => Trap]>([
    ["a per-call user", "ssh_exec", { host: "127.0.0.1", user: "trap-user", command: "true" }, () => open],
    ["the inventory's user of an alias", "ssh_exec", { host: "trapweb", command: "true" }, () => open],
    ["a port", "ssh_exec", { host: "127.0.0.1", user: "someone", command: "true" }, () => closed],
    [
      "the user of a jump hop",
      "ssh_exec",
      { host: "127.0.0.1", user: "someone", command: "true", jump: "trap-user@127.0.0.1:PORT" },
      () => open,
    ],
    ["an alias in a fan-out", "ssh_fanout", { hosts: "trapweb", command: "true" }, () => open],
    ["an alias in ssh_check", "ssh_check", { hosts: "trapweb" }, () => open],
    ["an alias in ssh_spawn", "ssh_spawn", { host: "trapweb" }, () => open],
    [
      "a transfer path through a symlink",
      "ssh_upload",
      { host: "127.0.0.1", user: "someone", local_path: "innocent-link/file", remote_path: "/tmp/x" },
      () => open,
    ],
    [
      "a download destination inside a denied directory",
      "ssh_download",
      { host: "127.0.0.1", user: "someone", remote_path: "/etc/hostname", local_path: "innocent-link/new" },
      () => open,
    ],
    ["a listen address", "ssh_forward", { host: "127.0.0.1", user: "someone", spec: "D:0" }, () => open],
  ])("%s is refused before any dial", async (_label, tool, template, target) => {
    const t = target();
    const args: Record<string, unknown> = { ...template };
    if (tool !== "ssh_fanout" && tool !== "ssh_check" && args.host === "127.0.0.1") args.port = t.port;
    if (typeof args.jump === "string") args.jump = args.jump.replace("PORT", String(open.port));
    const before = open.connections + closed.connections;
    const r = await s.call(tool, args);
    expect(r.text).toMatch(DENIED);
    expect(open.connections + closed.connections).toBe(before);
    expect(s.records().at(-1)).toMatchObject({ tool, denied: true });
  });

  it.each([
    ["empty quotes", "touch can''ary"],
    ["a backslash", "touch c\\anary"],
    ["a variable", "n=can; touch ${n}ary"],
    ["printf escapes", "touch \"$(printf '\\143anary')\""],
  ])(
    "the deny list is a regex over text: %s gets past it (docs/policy.md says so)",
    async (_label, command) => {
      const dir = join(s.dir, "plain");
      rmSync(join(dir, "canary"), { force: true });
      const r = await s.call("shell_exec", { command, cwd: dir });
      expect(r.text).toMatch(/^\[exit 0\]/);
      expect(existsSync(join(dir, "canary"))).toBe(true);
    },
  );

  it("an allow pattern is not satisfied by a target: guarded mode stays as narrow", async () => {
    const g = await startServer({
      RELAY_SHELL_POLICY_MODE: "guarded",
      // Written for the working directory only: it must not admit the Tier-2 command below.
      RELAY_SHELL_POLICY_ALLOW: "cwd=|allowed-dir",
    });
    try {
      mkdirSync(join(g.dir, "allowed-dir"));
      const cwd = join(g.dir, "allowed-dir");
      const r = await g.call("shell_exec", { command: "chmod -R u+w .", cwd });
      expect(r.text).toMatch(/^\[DENIED tier 2 \(STATEFUL\): guarded mode refuses Tier 2/);
      // The same allow pattern admits when the command text itself matches.
      const ok = await g.call("shell_exec", { command: `chmod -R u+w ${cwd}`, cwd });
      expect(ok.text).toMatch(/^\[exit 0\]/);
    } finally {
      await g.close();
    }
  });
});

describe("an anchored host pattern sees every spelling of an address", () => {
  let s: TestServer;
  let t: Trap;
  let home: string;

  beforeAll(async () => {
    t = await trap();
    home = mkdtempSync(join(tmpdir(), "relay-deny-address-"));
    mkdirSync(join(home, ".ssh"), { mode: 0o700 });
    const { privateKey } = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      privateKeyEncoding: { type: "pkcs1", format: "pem" },
      publicKeyEncoding: { type: "pkcs1", format: "pem" },
    });
    writeFileSync(join(home, ".ssh", "id_rsa"), privateKey, { mode: 0o600 });
    s = await startServer({
      HOME: home,
      RELAY_SHELL_POLICY_DENY: "^host=127\\.0\\.0\\.1$",
      RELAY_SHELL_SSH_CONFIG: join(home, "no-ssh-config"),
      RELAY_SHELL_SSH_KNOWN_HOSTS: "accept-new",
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(home, "known_hosts"),
      RELAY_SHELL_SSH_CONNECT_TIMEOUT: "3",
    });
  });

  afterAll(async () => {
    await s?.close();
    t?.server.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it.each(["127.0.0.1", "2130706433", "127.1", "0x7f.0.0.1", "someone@127.1"])(
    "ssh_exec to %s is refused before any dial",
    async (host) => {
      const r = await s.call("ssh_exec", { host, port: t.port, command: "true" });
      expect(r.text).toMatch(DENIED);
      expect(t.connections).toBe(0);
    },
  );

  it("a forward destination spelled as one number", async () => {
    const r = await s.call("ssh_forward", { host: "localhost", port: t.port, spec: "L:0:2130706433:80" });
    expect(r.text).toMatch(DENIED);
    expect(t.connections).toBe(0);
  });
});
