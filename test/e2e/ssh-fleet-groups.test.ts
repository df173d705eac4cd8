import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
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

announceSkip("ssh fan-out groups end-to-end suite");

interface Grouped {
  host_count: number;
  fanout_id: string;
  groups: Array<{ hosts: string; host_count: number; exit_code: number | null; output: string }>;
  failures: Array<{ error: string; hosts: string; host_count: number; message: string }>;
  groups_omitted?: number;
}

const PER_PORT = 15;
const NODES = Array.from({ length: 150 }, (_, i) => `node${String(i + 1).padStart(3, "0")}`);
// Each host answers with the port it reached and exits with port % 7: fifteen hosts per port agree.
const COMMAND = "p=$(echo $SSH_CONNECTION | cut -d' ' -f4); echo port=$p; exit $((p % 7))";

/**
 * A fan-out past 100 hosts through the built server against real sshd: hosts
 * grouped by identical output in ranges, failures by kind, every host's output
 * read back by id, the bound on the object, and cancellation.
 */
describe.skipIf(SSHD_MISSING)("ssh_fanout past 100 hosts over stdio against real sshd", () => {
  let fx: SshFixture;
  let fleet: Sshd;
  let closed: number;
  let s: TestServer;
  const portOf = (i: number) => fleet.ports[i] ?? 0;

  beforeAll(async () => {
    fx = createSshFixture();
    fleet = await fx.start({ ports: 10 });
    closed = await fx.closedPort();
    const inventory: Record<string, Record<string, unknown>> = {};
    NODES.forEach((name, i) => {
      inventory[name] = { hostname: "127.0.0.1", port: portOf(Math.floor(i / PER_PORT)), user: fx.user };
    });
    for (let i = 1; i <= 5; i++)
      inventory[`gone${i}`] = { hostname: "127.0.0.1", port: closed, user: fx.user };
    const inventoryPath = join(fx.dir, "inventory.json");
    writeFileSync(inventoryPath, JSON.stringify(inventory));
    s = await startServer({
      RELAY_SHELL_UNSAFE_NOTICES: "false",
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventoryPath,
      RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "known_hosts"),
    });
  });
  afterAll(async () => {
    await s?.close();
    fx?.close();
  });

  it("groups 155 hosts by identical output in ranges, failures by kind, and reads any host back by id", async () => {
    const r = await s.call("ssh_fanout", { command: COMMAND, concurrency: 64 }, "alice");
    const body = JSON.parse(r.text) as Grouped;
    expect(body.host_count).toBe(155);
    expect(body.fanout_id).toMatch(/^fo-[0-9a-f]{12}$/);
    expect(body.groups).toEqual(
      Array.from({ length: 10 }, (_, k) => ({
        hosts: `node[${String(k * PER_PORT + 1).padStart(3, "0")}-${String((k + 1) * PER_PORT).padStart(3, "0")}]`,
        host_count: PER_PORT,
        exit_code: portOf(k) % 7,
        output: `port=${portOf(k)}\n`,
      })),
    );
    expect(body.failures).toEqual([
      {
        error: "ConnectionRefusedError",
        hosts: "gone[1-5]",
        host_count: 5,
        message: `[UNREACHABLE: ConnectionRefusedError: connection refused by ${fx.user}@127.0.0.1:${closed}]`,
      },
    ]);
    expect(r.structured).toMatchObject({ host_count: 155, failed_hosts: 5, fanout_id: body.fanout_id });

    // One host's output reads as ssh_exec would have given it; an unreached host says why.
    const one = await s.call("ssh_fanout_result", { fanout_id: body.fanout_id, host: "node017" }, "alice");
    const direct = await s.call("ssh_exec", { host: "node017", command: COMMAND });
    expect(one.text).toBe(direct.text);
    const gone = await s.call("ssh_fanout_result", { fanout_id: body.fanout_id, host: "gone2" }, "alice");
    expect(gone.text).toBe(
      `[UNREACHABLE: ConnectionRefusedError: connection refused by ${fx.user}@127.0.0.1:${closed}]`,
    );
    const list = await s.call("ssh_fanout_result", { fanout_id: body.fanout_id }, "alice");
    const lines = list.text.split("\n");
    expect(lines[0]).toBe(`fan-out ${body.fanout_id}: 155 hosts`);
    expect(lines).toHaveLength(156);
    expect(lines).toContain(`node001: exit ${portOf(0) % 7}, ${`port=${portOf(0)}\n`.length} bytes`);
    expect(lines).toContain("gone1: unreachable");
    expect(s.records().at(-1)).toMatchObject({
      tool: "ssh_fanout_result",
      tier: 0,
      args: { fanout_id: body.fanout_id, host: "" },
    });

    // Another client, a host outside the fan-out and a malformed id are each told so.
    const other = await s.call("ssh_fanout_result", { fanout_id: body.fanout_id, host: "node001" }, "bob");
    expect(other.text).toMatch(/^\[ERROR: FanoutError: unknown fan-out: fo-[0-9a-f]{12} \(/);
    const stranger = await s.call(
      "ssh_fanout_result",
      { fanout_id: body.fanout_id, host: "node999" },
      "alice",
    );
    expect(stranger.text).toBe(
      `[ERROR: FanoutError: no host "node999" in fan-out ${body.fanout_id}; host="" lists its hosts]`,
    );
    const bad = await s.call("ssh_fanout_result", { fanout_id: "nope" }, "alice");
    expect(bad.text).toMatch(/^\[ERROR: FanoutError: not a fan-out id: "nope"/);
  });

  it("keeps the grouped object parseable within the budget when every host prints something else", async () => {
    const r = await s.call("ssh_fanout", {
      command: "head -c 20000 /dev/urandom | base64 -w0",
      hosts: NODES.join(","),
      concurrency: 32,
    });
    expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(65536);
    const body = JSON.parse(r.text) as Grouped;
    const shown = body.groups.reduce((sum, g) => sum + g.host_count, 0);
    expect(shown + (body.groups_omitted ?? 0)).toBe(150);
    for (const group of body.groups) {
      expect(group.host_count).toBe(1);
      expect(group.output).toMatch(/\[TRUNCATED - \d+ bytes total, \d+ shown\]$/);
    }
    // The follow-up call gives one host's whole output, which the object could only cut.
    const first = body.groups[0]?.hosts ?? "";
    const whole = await s.call("ssh_fanout_result", { fanout_id: body.fanout_id, host: first });
    expect(whole.text).toMatch(/^\[exit 0\]\n[A-Za-z0-9+/=]{26000,}\s*$/);
  });

  it("stops dialling the remaining hosts when the client cancels", async () => {
    const dir = join(fx.dir, "canary");
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o777);
    const canary = join(dir, "ran");
    writeFileSync(canary, "");
    chmodSync(canary, 0o666);
    const before = s.records().length;
    const abort = new AbortController();
    const call = s.client.callTool(
      {
        name: "ssh_fanout",
        arguments: { command: `sleep 0.4; echo x >> ${canary}`, hosts: NODES.join(","), concurrency: 2 },
      },
      undefined,
      { signal: abort.signal },
    );
    setTimeout(() => abort.abort(), 1500);
    await expect(call).rejects.toThrow();
    // The call ends on the relay too: its record says so, well before 150 hosts at 2 at a time could run.
    const deadline = Date.now() + 10_000;
    while (s.records().length === before && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 1500));
    const ran = readFileSync(canary, "utf8").split("\n").filter(Boolean).length;
    expect(ran).toBeGreaterThan(0);
    expect(ran).toBeLessThanOrEqual(12);
    expect(s.records().at(-1)).toMatchObject({ tool: "ssh_fanout" });
  });
});
