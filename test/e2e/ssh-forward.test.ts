import { writeFileSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
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

announceSkip("ssh_forward end-to-end suite");

/** An echo server: every byte comes back, prefixed so a reply cannot be mistaken for the request. */
async function echoServer(host: string): Promise<{ server: Server; port: number } | null> {
  const server = createServer((socket) => {
    socket.on("error", () => undefined);
    socket.on("data", (chunk) => socket.write(Buffer.concat([Buffer.from("echo:"), chunk])));
  });
  return new Promise((resolve) => {
    server.once("error", () => resolve(null));
    server.listen(0, host, () => {
      const address = server.address();
      resolve({ server, port: typeof address === "object" && address ? address.port : 0 });
    });
  });
}

/** Connect, and collect what arrives; `expect(n)` waits until n bytes came (bounded). */
function open(port: number, host = "127.0.0.1") {
  const socket: Socket = connect({ host, port });
  let received = Buffer.alloc(0);
  let ended = false;
  socket.on("data", (chunk) => {
    received = Buffer.concat([received, chunk]);
  });
  socket.on("error", () => {
    ended = true;
  });
  socket.on("close", () => {
    ended = true;
  });
  const connected = new Promise<boolean>((resolve) => {
    socket.once("connect", () => resolve(true));
    socket.once("error", () => resolve(false));
  });
  async function read(n: number, ms = 5000): Promise<Buffer> {
    const deadline = Date.now() + ms;
    while (received.length < n && !ended && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    const out = received.subarray(0, n);
    received = received.subarray(out.length);
    return out;
  }
  return { socket, connected, read, isEnded: () => ended };
}

/** Whether something accepts connections on the port (the probe socket is closed again). */
async function accepting(port: number): Promise<boolean> {
  const c = open(port);
  const ok = await c.connected;
  c.socket.destroy();
  return ok;
}

async function roundTrip(port: number, text: string): Promise<string> {
  const c = open(port);
  expect(await c.connected).toBe(true);
  c.socket.write(text);
  const reply = await c.read(text.length + 5);
  c.socket.destroy();
  return reply.toString();
}

function portOf(text: string): number {
  const match = / listening on port (\d+)$/.exec(text);
  if (!match) throw new Error(`no port in ${JSON.stringify(text)}`);
  return Number(match[1]);
}

function idOf(text: string): string {
  const match = /^forward (fwd-[0-9a-f]{12}) active: /.exec(text);
  if (!match) throw new Error(`no id in ${JSON.stringify(text)}`);
  return match[1] as string;
}

describe.skipIf(SSHD_MISSING)("ssh_forward over stdio against real sshd", () => {
  let fx: SshFixture;
  let sshd: Sshd;
  let s: TestServer;
  let echo: { server: Server; port: number };
  let echo6: { server: Server; port: number } | null;
  let busy: Server;
  let busyPort: number;

  const call = (name: string, args: Record<string, unknown>, clientId?: string) =>
    s.call(name, args, clientId);

  beforeAll(async () => {
    fx = createSshFixture();
    sshd = await fx.start();
    const inventory = join(fx.dir, "inventory.json");
    const entry = { hostname: "127.0.0.1", port: sshd.port, user: fx.user };
    writeFileSync(inventory, JSON.stringify({ web: entry, vault: entry }));
    echo = (await echoServer("127.0.0.1")) as { server: Server; port: number };
    echo6 = await echoServer("::1");
    const held = (await echoServer("127.0.0.1")) as { server: Server; port: number };
    busy = held.server;
    busyPort = held.port;
    s = await startServer({
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "relay_known_hosts"),
      RELAY_SHELL_MAX_FORWARDS: "2",
      RELAY_SHELL_POLICY_DENY: "\\bvault\\b|\\b10\\.9\\.8\\.7\\b",
      // The texts are asserted exactly; the tier notice every mutating call carries is not this suite's subject.
      RELAY_SHELL_UNSAFE_NOTICES: "false",
    });
  });
  afterAll(async () => {
    await s?.close();
    echo?.server.close();
    echo6?.server.close();
    busy?.close();
    fx?.close();
  });

  it("carries traffic through a local forward on 127.0.0.1", async () => {
    const spec = `L:0:127.0.0.1:${echo.port}`;
    const r = await call("ssh_forward", { host: "web", spec });
    expect(r.text).toMatch(
      new RegExp(`^forward fwd-[0-9a-f]{12} active: local ${spec} listening on port \\d+$`),
    );
    const port = portOf(r.text);
    expect(r.structured).toMatchObject({ tier: 2, listen_port: port, listen_host: "127.0.0.1" });
    expect(await roundTrip(port, "hello L")).toBe("echo:hello L");
    // Two at once over the one SSH connection.
    const [a, b] = await Promise.all([roundTrip(port, "first"), roundTrip(port, "second")]);
    expect([a, b]).toEqual(["echo:first", "echo:second"]);
    expect(s.records().at(-1)).toMatchObject({
      tool: "ssh_forward",
      tier: 2,
      args: { host: "web", spec, user: "", port: 0, key_path: "", jump: "", known_hosts: "accept-new" },
    });
    expect((await call("ssh_forward_close", { forward_id: idOf(r.text) })).text).toBe(
      `closed forward ${idOf(r.text)}`,
    );
    // The listener is gone.
    expect(await accepting(port)).toBe(false);
  });

  it("carries traffic through a remote forward back to the relay side", async () => {
    const spec = `R:0:127.0.0.1:${echo.port}`;
    const r = await call("ssh_forward", { host: "web", spec });
    expect(r.text).toMatch(
      new RegExp(`^forward fwd-[0-9a-f]{12} active: remote ${spec} listening on port \\d+$`),
    );
    // sshd listens on its host, which here is this machine.
    const port = portOf(r.text);
    expect(await roundTrip(port, "hello R")).toBe("echo:hello R");
    await call("ssh_forward_close", { forward_id: idOf(r.text) });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await accepting(port)).toBe(false);
  });

  it("serves SOCKS5 on a dynamic forward: IPv4, domain and IPv6 targets, and its refusals", async () => {
    const r = await call("ssh_forward", { host: "web", spec: "D:0" });
    expect(r.text).toMatch(/^forward fwd-[0-9a-f]{12} active: dynamic D:0 listening on port \d+$/);
    const port = portOf(r.text);
    const portBytes = (p: number) => [p >> 8, p & 0xff];

    const socks = async (request: number[], greeting = [5, 1, 0]) => {
      const c = open(port);
      expect(await c.connected).toBe(true);
      c.socket.write(Buffer.from(greeting));
      const method = [...(await c.read(2))];
      if (method[1] !== 0) return { c, method, reply: [] as number[] };
      c.socket.write(Buffer.from(request));
      return { c, method, reply: [...(await c.read(10))] };
    };

    const v4 = await socks([5, 1, 0, 1, 127, 0, 0, 1, ...portBytes(echo.port)]);
    expect(v4.method).toEqual([5, 0]);
    expect(v4.reply).toEqual([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    v4.c.socket.write("via socks");
    expect((await v4.c.read(14)).toString()).toBe("echo:via socks");
    v4.c.socket.destroy();

    const name = [..."localhost"].map((ch) => ch.charCodeAt(0));
    const domain = await socks([5, 1, 0, 3, name.length, ...name, ...portBytes(echo.port)]);
    expect(domain.reply[1]).toBe(0);
    domain.c.socket.write("by name");
    expect((await domain.c.read(12)).toString()).toBe("echo:by name");
    domain.c.socket.destroy();

    const loop6 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    if (echo6) {
      const v6 = await socks([5, 1, 0, 4, ...loop6, ...portBytes(echo6.port)]);
      expect(v6.reply[1]).toBe(0);
      v6.c.socket.write("six");
      expect((await v6.c.read(8)).toString()).toBe("echo:six");
      v6.c.socket.destroy();
    }
    // Nothing listens there: the SSH server's refusal becomes "connection refused".
    const refused = await socks([5, 1, 0, 1, 127, 0, 0, 1, ...portBytes(await fx.closedPort())]);
    expect(refused.reply.slice(0, 2)).toEqual([5, 5]);
    expect(await refused.c.read(1)).toHaveLength(0);
    // BIND is not offered; neither is any authentication method but "none".
    const bind = await socks([5, 2, 0, 1, 127, 0, 0, 1, ...portBytes(echo.port)]);
    expect(bind.reply.slice(0, 2)).toEqual([5, 7]);
    const auth = await socks([], [5, 1, 2]);
    expect(auth.method).toEqual([5, 0xff]);
    const badType = await socks([5, 1, 0, 9, 0, 0]);
    expect(badType.reply.slice(0, 2)).toEqual([5, 8]);

    await call("ssh_forward_close", { forward_id: idOf(r.text) });
  });

  it("reaches an IPv6 destination written in brackets", async (ctx) => {
    if (!echo6) {
      ctx.skip("no IPv6 loopback on this machine");
      return;
    }
    const spec = `L:0:[::1]:${echo6.port}`;
    const r = await call("ssh_forward", { host: "web", spec });
    expect(r.text).toMatch(/ active: local L:0:\[::1\]:\d+ listening on port \d+$/);
    expect(await roundTrip(portOf(r.text), "v6")).toBe("echo:v6");
    const list = JSON.parse((await call("ssh_forward_list", {})).text) as Array<Record<string, unknown>>;
    expect(list).toContainEqual(expect.objectContaining({ id: idOf(r.text), target: `[::1]:${echo6.port}` }));
    await call("ssh_forward_close", { forward_id: idOf(r.text) });
  });

  const badSpecs: Array<[string, string]> = [
    ["X:1:2", "forward spec must start with L:, R: or D:"],
    ["8080:db:5432", "forward spec must start with L:, R: or D:"],
    ["L:abc:db:5432", "invalid L forward spec; expected L:<listen_port>:<dest_host>:<dest_port>"],
    ["L:8080:db", "invalid L forward spec; expected L:<listen_port>:<dest_host>:<dest_port>"],
    ["l:0:::1:80", "invalid L forward spec; expected L:<listen_port>:<dest_host>:<dest_port>"],
    ["R:0:db:70000", "invalid R forward spec; expected R:<listen_port>:<dest_host>:<dest_port>"],
    ["R:0:db;reboot:22", "invalid R forward spec; expected R:<listen_port>:<dest_host>:<dest_port>"],
    ["d:1080:x", "invalid D forward spec; expected D:<listen_port>"],
    [`D:${"9".repeat(5000)}`, "invalid D forward spec; expected D:<listen_port>"],
  ];

  const labelled = badSpecs.map(([spec, message]) => [
    spec.length > 30 ? `${spec.slice(0, 12)}… (${spec.length} chars)` : spec,
    spec,
    message,
  ]);

  it.each(labelled)("refuses the spec %s before dialling", async (_label, spec, message) => {
    // Host "down" would fail the dial: a ValueError proves nothing was dialled.
    const r = await call("ssh_forward", { host: `${fx.user}@127.0.0.1`, port: await fx.closedPort(), spec });
    expect(r.text).toBe(`[ERROR: ValueError: ${message}]`);
    expect(s.records().at(-1)).toMatchObject({ tool: "ssh_forward", denied: false, exit_code: null });
  });

  it("reports a port already in use, locally and on the SSH host", async () => {
    const local = await call("ssh_forward", { host: "web", spec: `L:${busyPort}:127.0.0.1:${echo.port}` });
    expect(local.text).toBe(
      `[ERROR: OSError: cannot listen on 127.0.0.1:${busyPort}: address already in use (EADDRINUSE)]`,
    );
    const remote = await call("ssh_forward", { host: "web", spec: `R:${busyPort}:127.0.0.1:${echo.port}` });
    expect(remote.text).toBe(
      `[ERROR: ChannelListenError: the SSH server refused to listen on 127.0.0.1:${busyPort} ` +
        "(port in use, or remote forwarding not allowed)]",
    );
    expect(JSON.parse((await call("ssh_forward_list", {})).text)).toEqual([]);
  });

  it("holds the forward cap, also against concurrent calls, and lists and closes", async () => {
    const spec = `L:0:127.0.0.1:${echo.port}`;
    const results = await Promise.all([0, 1, 2].map(() => call("ssh_forward", { host: "web", spec })));
    const texts = results.map((r) => r.text);
    const opened = texts.filter((t) => t.startsWith("forward fwd-"));
    expect(opened).toHaveLength(2);
    expect(texts).toContain(
      "[ERROR: ForwardError: forward limit reached (2); close an existing forward first]",
    );
    const again = await call("ssh_forward", { host: "web", spec: "D:0" });
    expect(again.text).toBe(
      "[ERROR: ForwardError: forward limit reached (2); close an existing forward first]",
    );

    const list = JSON.parse((await call("ssh_forward_list", {})).text) as Array<Record<string, unknown>>;
    expect(list.map((f) => f.id).sort()).toEqual(opened.map(idOf).sort());
    expect(list[0]).toEqual({
      id: expect.stringMatching(/^fwd-[0-9a-f]{12}$/),
      kind: "local",
      spec,
      listen_port: expect.any(Number),
      target: `127.0.0.1:${echo.port}`,
      host: "web",
      listen_host: "127.0.0.1",
      connections: 0,
      owner: "",
    });
    for (const id of opened.map(idOf)) {
      expect((await call("ssh_forward_close", { forward_id: id })).text).toBe(`closed forward ${id}`);
    }
    expect((await call("ssh_forward_list", {})).text).toBe("[]");
    const unknown = await call("ssh_forward_close", { forward_id: "fwd-000000000000" });
    expect(unknown.text).toBe("[ERROR: unknown forward: fwd-000000000000]");
    expect(s.records().at(-1)).toMatchObject({
      tool: "ssh_forward_close",
      tier: 1,
      args: { forward_id: "fwd-000000000000" },
    });
    // Slots are free again.
    const d = await call("ssh_forward", { host: "web", spec: "D:0" });
    expect(d.text).toMatch(/^forward fwd-/);
    await call("ssh_forward_close", { forward_id: idOf(d.text) });
  });

  it("binds each forward to the client that opened it", async () => {
    const r = await call("ssh_forward", { host: "web", spec: `L:0:127.0.0.1:${echo.port}` }, "alice");
    const id = idOf(r.text);
    expect(JSON.parse((await call("ssh_forward_list", {}, "bob")).text)).toEqual([]);
    expect(JSON.parse((await call("ssh_forward_list", {}, "alice")).text)).toEqual([
      expect.objectContaining({ id, owner: "alice" }),
    ]);
    const refused = `[ERROR: ForwardError: forward ${id} belongs to another client]`;
    expect((await call("ssh_forward_close", { forward_id: id }, "bob")).text).toBe(refused);
    expect((await call("ssh_forward_close", { forward_id: id })).text).toBe(refused);
    expect(s.records().at(-1)).toMatchObject({ tool: "ssh_forward_close", args: { forward_id: id } });
    // Still carrying traffic after the refused attempts.
    expect(await roundTrip(portOf(r.text), "still")).toBe("echo:still");
    expect((await call("ssh_forward_close", { forward_id: id }, "alice")).text).toBe(`closed forward ${id}`);
  });

  it("lets a deny rule on the host or on the destination refuse a forward", async () => {
    const host = await call("ssh_forward", { host: "vault", spec: `L:0:127.0.0.1:${echo.port}` });
    expect(host.text).toBe("[DENIED tier 2 (STATEFUL): matched RELAY_SHELL_POLICY_DENY]");
    expect(s.records().at(-1)).toMatchObject({ tool: "ssh_forward", denied: true });
    // 168364039 is 10.9.8.7 spelled as one number: the canonical form is in the probe.
    const dest = await call("ssh_forward", { host: "web", spec: "L:0:168364039:80" });
    expect(dest.text).toBe("[DENIED tier 2 (STATEFUL): matched RELAY_SHELL_POLICY_DENY]");
    expect((await call("ssh_forward_list", {})).text).toBe("[]");
  });

  it("drops a forward whose SSH connection died, and a new one dials afresh", async () => {
    const r = await call("ssh_forward", { host: "web", spec: `L:0:127.0.0.1:${echo.port}` });
    const port = portOf(r.text);
    expect(await roundTrip(port, "up")).toBe("echo:up");
    sshd.dropConnections();
    const deadline = Date.now() + 5000;
    while ((await call("ssh_forward_list", {})).text !== "[]" && Date.now() < deadline) {
      await new Promise((done) => setTimeout(done, 50));
    }
    expect((await call("ssh_forward_list", {})).text).toBe("[]");
    expect(await accepting(port)).toBe(false);
    const again = await call("ssh_forward", { host: "web", spec: `L:0:127.0.0.1:${echo.port}` });
    expect(again.structured.connection_reused).toBe(false);
    expect(await roundTrip(portOf(again.text), "again")).toBe("echo:again");
    await call("ssh_forward_close", { forward_id: idOf(again.text) });
  });

  it("closes every forward when the server stops", async () => {
    const other = await startServer({
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "relay_known_hosts"),
    });
    const r = await other.call("ssh_forward", {
      host: `${fx.user}@127.0.0.1`,
      port: sshd.port,
      spec: `L:0:127.0.0.1:${echo.port}`,
    });
    const port = portOf(r.text.split("\n")[0] ?? "");
    expect(await roundTrip(port, "before")).toBe("echo:before");
    await other.close();
    const deadline = Date.now() + 5000;
    while ((await accepting(port)) && Date.now() < deadline)
      await new Promise((done) => setTimeout(done, 50));
    expect(await accepting(port)).toBe(false);
  });
});
