import { writeFileSync } from "node:fs";
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

announceSkip("ssh_spawn end-to-end suite");

describe.skipIf(SSHD_MISSING)("ssh_spawn over stdio against real sshd", () => {
  let fx: SshFixture;
  let sshd: Sshd;
  let s: TestServer;
  let closed: number;

  const call = (name: string, args: Record<string, unknown>, clientId?: string) =>
    s.call(name, args, clientId);

  async function spawnSsh(args: Record<string, unknown>): Promise<string> {
    const r = await call("ssh_spawn", { host: "web", ...args });
    const match = /^session (ssh-[0-9a-f]{12}) started \(ssh web\); use session_recv\/session_send$/.exec(
      r.text,
    );
    if (!match) throw new Error(`ssh_spawn failed: ${r.text}`);
    return match[1] as string;
  }

  /** Read until `pattern` shows up in what was read (bounded); returns everything read. */
  async function recvUntil(id: string, pattern: RegExp, ms = 10_000): Promise<string> {
    let text = "";
    const deadline = Date.now() + ms;
    while (!pattern.test(text)) {
      if (Date.now() > deadline) throw new Error(`no ${String(pattern)} in ${JSON.stringify(text)}`);
      const r = await call("session_recv", { session_id: id, timeout: 1 });
      if (r.text.startsWith("[ERROR")) throw new Error(r.text);
      text += r.text;
      if (r.structured.ended === true && !pattern.test(text))
        throw new Error(`ended early: ${JSON.stringify(text)}`);
    }
    return text;
  }

  const send = (id: string, data: string) => call("session_send", { session_id: id, data });

  beforeAll(async () => {
    fx = createSshFixture();
    sshd = await fx.start();
    closed = await fx.closedPort();
    const inventory = join(fx.dir, "inventory.json");
    const entry = { hostname: "127.0.0.1", port: sshd.port, user: fx.user };
    writeFileSync(inventory, JSON.stringify({ web: entry, down: { ...entry, port: closed } }));
    s = await startServer({
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "relay_known_hosts"),
      // Idle connections close after a second: a terminal must keep its own connection pinned.
      RELAY_SHELL_SSH_IDLE_TIMEOUT: "1",
      RELAY_SHELL_UNSAFE_NOTICES: "false",
    });
  });
  afterAll(async () => {
    await s?.close();
    fx?.close();
  });

  it("opens a remote terminal driven by the session tools", async () => {
    const id = await spawnSsh({ cols: 100, rows: 30 });
    // The login shell: its later input runs commands (ADR 0034).
    expect(s.records().at(-1)).toMatchObject({
      tool: "ssh_spawn",
      tier: 2,
      args: {
        host: "web",
        command: "shell",
        size: "100x30",
        user: "",
        port: 0,
        key_path: "",
        jump: "",
        known_hosts: "accept-new",
      },
    });
    await send(id, "stty size; echo TERM=$TERM");
    const first = await recvUntil(id, /TERM=xterm-256color/);
    expect(first).toMatch(/\b30 100\b/);

    expect((await call("session_resize", { session_id: id, cols: 90, rows: 20 })).text).toBe(
      `resized ${id} to 90x20`,
    );
    await send(id, "stty size");
    expect(await recvUntil(id, /\b20 90\b/)).toMatch(/20 90/);

    const list = JSON.parse((await call("session_list", {})).text) as Array<Record<string, unknown>>;
    expect(list).toContainEqual(
      expect.objectContaining({ id, kind: "ssh", title: "ssh web", size: "90x20" }),
    );

    // Longer than the idle timeout: the pooled connection stays because the terminal holds it.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await send(id, "echo still-$((6*7))");
    await recvUntil(id, /still-42/);

    await send(id, "exit 7");
    await recvUntil(id, new RegExp(`\\[session ${id} ended, exit=7\\]`));
  });

  it("runs a command on the terminal and maps signals the SSH way", async () => {
    const id = await spawnSsh({ command: "sleep 60" });
    expect(s.records().at(-1)?.args).toMatchObject({ command: "sleep 60", size: "120x40" });
    // USR1 is not among the signals SSH carries here: TERM is sent, and the reply says so.
    const r = await call("session_kill", { session_id: id, signal_name: "USR1", close: false });
    expect(r.text).toBe(`sent SIGTERM to ${id}`);
    await recvUntil(id, new RegExp(`\\[session ${id} ended, exit=-15\\]`));
  });

  it("closes a terminal and the program in its foreground", async () => {
    const id = await spawnSsh({});
    // A duration no other run uses, so the count below sees this session's program only.
    const seconds = `${600 + (process.pid % 300)}.${Date.now() % 1000}`;
    const count = `pgrep -fc 'slee[p] ${seconds}'`;
    await send(id, `sleep ${seconds}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await call("ssh_exec", { host: "web", command: count })).text).toBe("[exit 0]\n1\n");
    expect((await call("session_kill", { session_id: id })).text).toBe(`killed and closed ${id}`);
    const deadline = Date.now() + 5000;
    let left = "";
    do {
      left = (await call("ssh_exec", { host: "web", command: count })).text;
    } while (left !== "[exit 1]\n0\n" && Date.now() < deadline);
    expect(left).toBe("[exit 1]\n0\n");
    const list = JSON.parse((await call("session_list", {})).text) as Array<Record<string, unknown>>;
    expect(list.map((row) => row.id)).not.toContain(id);
  });

  it("binds a remote terminal to the client that opened it", async () => {
    const r = await call("ssh_spawn", { host: "web" }, "alice");
    const id = (r.structured.session_id as string) ?? "";
    expect(id).toMatch(/^ssh-[0-9a-f]{12}$/);
    expect((await call("session_send", { session_id: id, data: "echo hi" }, "bob")).text).toBe(
      `[ERROR: SessionError: session ${id} belongs to another client]`,
    );
    expect((await call("session_kill", { session_id: id }, "alice")).text).toBe(`killed and closed ${id}`);
  });

  it("answers an unreachable host with a clear error and leaves no session", async () => {
    const before = JSON.parse((await call("session_list", {})).text) as unknown[];
    const r = await call("ssh_spawn", { host: "down" });
    expect(r.text).toBe(
      `[ERROR: ConnectionRefusedError: connection refused by ${fx.user}@127.0.0.1:${closed}]`,
    );
    expect(s.records().at(-1)).toMatchObject({ tool: "ssh_spawn", exit_code: null, denied: false });
    expect(JSON.parse((await call("session_list", {})).text)).toHaveLength(before.length);
  });
});
