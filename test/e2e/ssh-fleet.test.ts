import { spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  announceSkip,
  createSshFixture,
  SSHD_MISSING,
  type Sshd,
  type SshFixture,
} from "../fixtures/sshd.js";
import { baseEnv, SERVER_ENTRY, startServer, type TestServer } from "../helpers/server.js";

announceSkip("ssh fleet end-to-end suite");

interface Fanout {
  command: string;
  concurrency: number;
  timeout: number;
  host_count: number;
  results: Array<{ host: string; exit_code: number | null; output: string }>;
}

type Progress = Parameters<
  NonNullable<Parameters<TestServer["client"]["callTool"]>[2]>["onprogress"] & {}
>[0];

const HOSTS = Array.from({ length: 10 }, (_, i) => `w${String(i + 1).padStart(2, "0")}`);

/** The fleet tools, the listing tool and the resources, through the built server against real sshd. */
describe.skipIf(SSHD_MISSING)("ssh fleet tools over stdio against real sshd", () => {
  let fx: SshFixture;
  let fleet: Sshd;
  let closed: number;
  let inventory: Record<string, Record<string, unknown>>;
  let inventoryPath: string;
  let sshConfig: string;
  let s: TestServer;
  const portOf = (i: number) => fleet.ports[i] ?? 0;

  beforeAll(async () => {
    fx = createSshFixture();
    fleet = await fx.start({ ports: 10 });
    closed = await fx.closedPort();
    inventory = Object.fromEntries(
      HOSTS.map((name, i) => [name, { hostname: "127.0.0.1", port: portOf(i), user: fx.user }]),
    );
    inventory.down = { hostname: "127.0.0.1", port: closed, user: fx.user };
    inventoryPath = join(fx.dir, "inventory.json");
    writeFileSync(inventoryPath, JSON.stringify(inventory));
    sshConfig = join(fx.dir, "ssh_config");
    writeFileSync(
      sshConfig,
      `Host w01 cfgalias\n  HostName 127.0.0.1\n  Port ${portOf(0)}\n  User ${fx.user}\nHost *.wild\n  User nobody\n`,
    );
    s = await startServer({
      // Exact-text checks here; notices have their own suites (notices*.test.ts).
      RELAY_SHELL_UNSAFE_NOTICES: "false",
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventoryPath,
      RELAY_SHELL_SSH_CONFIG: sshConfig,
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "known_hosts"),
    });
  });
  afterAll(async () => {
    await s?.close();
    fx?.close();
  });

  // Each host answers with its port and exits with port % 7, so exit codes differ per host.
  const COMMAND = "p=$(echo $SSH_CONNECTION | cut -d' ' -f4); echo port=$p; exit $((p % 7))";

  it("fans out over the whole inventory with one host down, with progress notifications", async () => {
    // Progress as it comes off the wire: the SDK's client forgets a request's progress handler as
    // soon as its result arrives, so a last notification read in the same chunk as the result never
    // reaches onprogress, although the server sent it first.
    const progress: Progress[] = [];
    const transport = s.client.transport;
    const deliver = transport?.onmessage;
    if (!transport || !deliver) throw new Error("the client is not connected");
    transport.onmessage = (message, extra) => {
      if ("method" in message && message.method === "notifications/progress")
        progress.push(message.params as unknown as Progress);
      deliver(message, extra);
    };
    const result = await s.client
      .callTool({ name: "ssh_fanout", arguments: { command: COMMAND } }, undefined, { onprogress: () => {} })
      .finally(() => {
        transport.onmessage = deliver;
      });
    const text = (result.content as Array<{ text: string }>)[0]?.text ?? "";
    const parsed = JSON.parse(text) as Fanout;
    const names = ["cfgalias", "down", ...HOSTS];
    expect(parsed).toMatchObject({ command: COMMAND, concurrency: 8, timeout: 60, host_count: names.length });
    // Input order (the sorted inventory), not completion order.
    expect(parsed.results.map((r) => r.host)).toEqual(names);
    const down = parsed.results.find((r) => r.host === "down");
    expect(down).toEqual({
      host: "down",
      exit_code: null,
      output: `[UNREACHABLE: ConnectionRefusedError: connection refused by ${fx.user}@127.0.0.1:${closed}]`,
    });
    for (const [i, name] of HOSTS.entries()) {
      const r = parsed.results.find((x) => x.host === name);
      expect(r).toEqual({ host: name, exit_code: portOf(i) % 7, output: `port=${portOf(i)}\n` });
    }
    expect(progress).toHaveLength(names.length);
    expect(progress.map((p) => p.progress)).toEqual(names.map((_, i) => i + 1));
    expect(progress.every((p) => p.total === names.length && typeof p.message === "string")).toBe(true);
    expect(progress.map((p) => p.message)).toContain("down: unreachable");
    expect(result.structuredContent).toMatchObject({
      host_count: names.length,
      failed_hosts: 1,
      exit_code: null,
    });
    const record = s.records().at(-1);
    // `$((p % 7))` evaluates a variable as arithmetic, which is never proven (docs/policy.md, Tier 0).
    expect(record).toMatchObject({
      tool: "ssh_fanout",
      tier: 1,
      exit_code: null,
      args: { command: COMMAND, hosts: "", timeout: 60, concurrency: 8 },
    });
  });

  it("clamps concurrency and timeout, and records the clamped values", async () => {
    const r = await s.call("ssh_fanout", {
      command: "echo hi",
      hosts: "w01, w02 w03,w04",
      concurrency: 999,
      timeout: 100000,
    });
    const parsed = JSON.parse(r.text) as Fanout;
    expect(parsed).toMatchObject({ concurrency: 256, timeout: 900, host_count: 4 });
    expect(parsed.results.map((x) => [x.host, x.exit_code, x.output])).toEqual(
      ["w01", "w02", "w03", "w04"].map((h) => [h, 0, "hi\n"]),
    );
    expect(s.records().at(-1)?.args).toEqual({
      command: "echo hi",
      hosts: "w01, w02 w03,w04",
      timeout: 900,
      concurrency: 256,
    });
  });

  it("never runs more hosts at once than the concurrency asks for", async () => {
    const r = await s.call("ssh_fanout", {
      command: "s=$(date +%s%3N); sleep 0.3; echo $s $(date +%s%3N)",
      hosts: HOSTS.join(","),
      concurrency: 3,
    });
    const spans = (JSON.parse(r.text) as Fanout).results.map((x) => x.output.trim().split(" ").map(Number));
    expect(spans).toHaveLength(10);
    const overlap = (t: number) => spans.filter(([start = 0, end = 0]) => start <= t && t < end).length;
    const peak = Math.max(...spans.map(([start = 0]) => overlap(start)));
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBeGreaterThanOrEqual(2);
  });

  it("marks a timed-out host in the JSON", async () => {
    const r = await s.call("ssh_fanout", { command: "sleep 5", hosts: "w01 w02", timeout: 1 });
    const parsed = JSON.parse(r.text) as Fanout;
    expect(parsed.results).toEqual([
      { host: "w01", exit_code: null, output: "[TIMEOUT after 1s]" },
      { host: "w02", exit_code: null, output: "[TIMEOUT after 1s]" },
    ]);
  });

  it("refuses past each tool's cap (1000 hosts for a fan-out, 100 for a check) before dialling anything", async () => {
    const hosts = (n: number) => Array.from({ length: n }, (_, i) => `h${i}.invalid`).join(",");
    const before = fleet.log().split("Connection from").length;
    for (const [tool, cap] of [
      ["ssh_fanout", 1000],
      ["ssh_check", 100],
    ] as const) {
      const r = await s.call(tool, { command: "true", hosts: hosts(cap + 1) });
      expect(r.text).toBe(
        `[ERROR: ${cap + 1} hosts exceeds the per-call cap of ${cap}; split into smaller batches]`,
      );
    }
    expect(fleet.log().split("Connection from").length).toBe(before);
  });

  it("checks hosts, one line each, as Tier 0", async () => {
    const r = await s.call("ssh_check", { hosts: "w01,down w02" });
    expect(r.text).toBe("w01: ok\ndown: UNREACHABLE (ConnectionRefusedError)\nw02: ok");
    expect(r.structured).toMatchObject({ tier: 0, host_count: 3, ok_hosts: 2 });
    expect(s.records().at(-1)).toMatchObject({ tool: "ssh_check", tier: 0, args: { hosts: "w01,down w02" } });
    const all = await s.call("ssh_check", {});
    expect(all.text.split("\n")).toEqual([
      "cfgalias: ok",
      "down: UNREACHABLE (ConnectionRefusedError)",
      ...HOSTS.map((h) => `${h}: ok`),
    ]);
    expect(s.records().at(-1)?.args).toEqual({ hosts: "inventory" });
  });

  const KEYSCAN_REFUSALS: Array<[string, Record<string, unknown>, string]> = [
    ["no hosts", { hosts: " , " }, "[no hosts; pass hosts=<host>[,<host>...]]"],
    [
      "33 hosts",
      { hosts: Array.from({ length: 33 }, (_, i) => `h${i}`).join(" ") },
      "[ERROR: 33 hosts exceeds the per-call cap of 32; split into smaller batches]",
    ],
    ["a port out of range", { hosts: "h", port: 70000 }, "[ERROR: port 70000 out of range 1..65535]"],
    [
      "a bad key type",
      { hosts: "h", key_types: "ed25519,x509" },
      "[ERROR: rejected key type 'x509': choose from ['dsa', 'ecdsa', 'ed25519', 'rsa']]",
    ],
    ["no key types", { hosts: "h", key_types: " , " }, "[ERROR: empty key_types]"],
  ];

  it.each(KEYSCAN_REFUSALS)("ssh_keyscan refuses %s", async (_label, args, text) => {
    expect((await s.call("ssh_keyscan", args)).text).toBe(text);
  });

  it.each([";", "`", "$(", "&", "|", "*", ">", "'", '"', "\\", "<", "!"])(
    "ssh_keyscan rejects a host containing %s before anything runs",
    async (meta) => {
      const canary = join(fx.dir, `keyscan-canary-${meta.charCodeAt(0)}`);
      const host = `127.0.0.1${meta}touch${meta === "$(" ? "" : " "}${canary}${meta === "$(" ? ")" : ""}`;
      const r = await s.call("ssh_keyscan", { hosts: `ok.example,${host}` });
      expect(r.text).toMatch(
        /^\[ERROR: rejected host '.*': must match \^\[A-Za-z0-9\._\\-\\\[\\\]:\]\+\$\]$/,
      );
      expect(existsSync(canary)).toBe(false);
    },
  );

  it("scans a real host key with ssh-keyscan", async () => {
    const r = await s.call("ssh_keyscan", {
      hosts: "127.0.0.1",
      port: portOf(0),
      key_types: "ed25519",
      timeout: 5,
    });
    expect(r.text.startsWith("[exit 0]\n")).toBe(true);
    expect(r.text).toContain(`[127.0.0.1]:${portOf(0)} ${fleet.hostKeyPublic()}`);
    expect(s.records().at(-1)).toMatchObject({
      tool: "ssh_keyscan",
      tier: 1,
      exit_code: 0,
      args: { hosts: "127.0.0.1", port: portOf(0), key_types: "ed25519" },
    });
  });

  it("lists the merged inventory, sorted, the inventory replacing an ssh_config alias whole", async () => {
    const r = await s.call("ssh_hosts");
    expect(r.text).toBe(JSON.stringify(JSON.parse(r.text), null, 2));
    const list = JSON.parse(r.text) as Array<Record<string, unknown>>;
    expect(list.map((h) => h.name)).toEqual(["cfgalias", "down", ...HOSTS]);
    expect(list[0]).toEqual({
      name: "cfgalias",
      hostname: "127.0.0.1",
      user: fx.user,
      port: portOf(0),
      identity_file: null,
      jump: null,
      source: "ssh_config",
    });
    expect(list.find((h) => h.name === "w01")).toMatchObject({ source: "inventory", port: portOf(0) });
    expect(r.structured).toMatchObject({ tier: 0, host_count: 12 });
  });

  it("serves the three resources and audits each read as Tier 0 with a fixed label", async () => {
    const listed = await s.client.listResources();
    expect(listed.resources.map((r) => r.uri).sort()).toEqual([
      "relay-shell://inventory",
      "relay-shell://ssh-config",
    ]);
    const templates = await s.client.listResourceTemplates();
    expect(templates.resourceTemplates.map((t) => t.uriTemplate)).toEqual(["relay-shell://inventory/{host}"]);
    const before = s.records().length;

    const read = async (uri: string) => {
      const r = await s.client.readResource({ uri });
      const content = r.contents[0] as { text: string; mimeType?: string };
      expect(content.mimeType).toBe("application/json");
      return content.text;
    };
    const all = await read("relay-shell://inventory");
    expect(all).toBe(JSON.stringify(JSON.parse(all)));
    expect((JSON.parse(all) as unknown[]).length).toBe(12);
    expect(JSON.parse(await read("relay-shell://inventory/w02"))).toMatchObject({
      name: "w02",
      port: portOf(1),
    });
    expect(JSON.parse(await read("relay-shell://inventory/bob%40box.example"))).toEqual({
      name: "bob@box.example",
      hostname: "box.example",
      user: "bob",
      port: null,
      identity_file: null,
      jump: null,
      source: "explicit",
    });
    expect(JSON.parse(await read("relay-shell://ssh-config"))).toEqual({
      path: sshConfig,
      aliases: ["cfgalias", "w01"],
    });

    const reads = s.records().slice(before);
    expect(reads.map((r) => [r.tool, r.tier, r.denied, r.exit_code])).toEqual([
      ["resource:inventory", 0, false, null],
      ["resource:inventory_host", 0, false, null],
      ["resource:inventory_host", 0, false, null],
      ["resource:ssh-config", 0, false, null],
    ]);
    expect(reads.map((r) => r.args)).toEqual([{}, { host: "w02" }, { host: "bob@box.example" }, {}]);
    expect(s.auditText()).not.toContain(`"hostname"`);
  });

  it("a deny rule on an address gates every SSH tool before any connection, in any spelling", async () => {
    const d = await startServer({
      // Exact-text checks here; notices have their own suites (notices*.test.ts).
      RELAY_SHELL_UNSAFE_NOTICES: "false",
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventoryPath,
      RELAY_SHELL_SSH_CONFIG: sshConfig,
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "known_hosts_deny"),
      RELAY_SHELL_POLICY_DENY: "(^|[^0-9.])127\\.0\\.0\\.1([^0-9]|$)",
      RELAY_SHELL_MAX_OUTPUT: "1024",
    });
    try {
      const connections = () => fleet.log().split("Connection from").length;
      const before = connections();
      const calls: Array<[string, Record<string, unknown>]> = [
        ["ssh_exec", { host: "2130706433", port: portOf(0), command: "true" }],
        ["ssh_exec", { host: `${fx.user}@0x7f000001`, port: portOf(0), command: "true" }],
        ["ssh_exec", { host: "0177.0.0.1", port: portOf(0), command: "true" }],
        ["ssh_exec", { host: "[::ffff:127.0.0.1]", port: portOf(0), command: "true" }],
        // An alias whose HostName is the denied address.
        ["ssh_exec", { host: "w01", command: "true" }],
        ["ssh_exec", { host: "127.1", port: portOf(0), command: "true" }],
        ["ssh_fanout", { hosts: "127.1", command: "true" }],
        // Inventory-wide: the probe names the inventory's hosts.
        ["ssh_fanout", { command: "true" }],
        ["ssh_check", { hosts: "2130706433" }],
        ["ssh_check", {}],
        ["ssh_keyscan", { hosts: "0x7f.0.0.1", port: portOf(0) }],
      ];
      for (const [tool, args] of calls) {
        const r = await d.call(tool, args);
        expect(r.text, `${tool} ${JSON.stringify(args)}`).toMatch(
          /^\[DENIED tier \d \(\w+\): matched RELAY_SHELL_POLICY_DENY\]$/,
        );
        expect(d.records().at(-1)).toMatchObject({ tool, denied: true });
      }
      expect(connections()).toBe(before);
      // A name that is not the address is not blocked by the deny gate (it fails later, not DENIED).
      const other = await d.call("ssh_check", { hosts: "localhost", timeout: 2 });
      expect(other.text).toMatch(/^localhost: UNREACHABLE/);
      // A huge body is bounded with the standard marker.
      const big = await d.client.readResource({ uri: "relay-shell://inventory" });
      expect((big.contents[0] as { text: string }).text).toMatch(
        /\[TRUNCATED - \d+ bytes total, 1024 shown\]$/,
      );
    } finally {
      await d.close();
    }
  });

  it("keeps the fan-out JSON parseable within the budget at 100 hosts with huge binary outputs", async () => {
    const bulk: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) {
      bulk[`bulk${String(i).padStart(3, "0")}`] = {
        hostname: "127.0.0.1",
        port: portOf(i % 10),
        user: fx.user,
      };
    }
    const path = join(fx.dir, "bulk.json");
    writeFileSync(path, JSON.stringify(bulk));
    const b = await startServer({
      // Exact-text checks here; notices have their own suites (notices*.test.ts).
      RELAY_SHELL_UNSAFE_NOTICES: "false",
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: path,
      RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "known_hosts_bulk"),
    });
    try {
      const r = await b.call("ssh_fanout", { command: "head -c 100000 /dev/urandom", concurrency: 32 });
      expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(65536);
      const parsed = JSON.parse(r.text) as Fanout;
      expect(parsed.host_count).toBe(100);
      expect(parsed.results).toHaveLength(100);
      for (const result of parsed.results) {
        expect(result.exit_code).toBe(0);
        expect(result.output).toMatch(/\[TRUNCATED - 100000 bytes total, \d+ shown\]$/);
      }
      expect(r.structured.truncated).toBe(false);
    } finally {
      await b.close();
    }
  });

  it("answers an empty fleet with the no-hosts body", async () => {
    const path = join(fx.dir, "empty.json");
    writeFileSync(path, "{}");
    const e = await startServer({
      // Exact-text checks here; notices have their own suites (notices*.test.ts).
      RELAY_SHELL_UNSAFE_NOTICES: "false",
      HOME: fx.home,
      RELAY_SHELL_INVENTORY: path,
      RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
    });
    try {
      const none = "[no hosts configured; pass hosts= or add an inventory]";
      expect((await e.call("ssh_fanout", { command: "true" })).text).toBe(none);
      expect((await e.call("ssh_check", {})).text).toBe(none);
      expect((await e.call("ssh_hosts")).text).toBe("[]");
      const info = JSON.parse((await e.call("server_info")).text) as { ssh: { inventory_hosts: number } };
      expect(info.ssh.inventory_hosts).toBe(0);
    } finally {
      await e.close();
    }
  });

  /** Start the built server with these settings and stdin closed at once. */
  const startWith = (settings: Record<string, string>) =>
    spawnSync(process.execPath, [SERVER_ENTRY], {
      env: baseEnv({ ...settings, RELAY_SHELL_AUDIT_PATH: join(fx.dir, "bad-audit.jsonl") }),
      input: "",
      encoding: "utf8",
      timeout: 20_000,
    });

  it("refuses to start when the inventory file is missing (exit 2)", () => {
    const run = startWith({ RELAY_SHELL_INVENTORY: join(fx.dir, "absent.json") });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/RELAY_SHELL_INVENTORY: cannot read .*absent\.json/);
  });

  it("refuses to start with an ssh_config over its bound, naming the file and the bound (exit 2)", () => {
    // A valid file (one long comment) just past 4 MiB: it used to be cut there silently and served.
    const path = join(fx.dir, "huge_ssh_config");
    writeFileSync(path, `Host big\n  HostName 127.0.0.1\n# ${"x".repeat(4 * 1024 * 1024)}\n`);
    const run = startWith({ RELAY_SHELL_SSH_CONFIG: path });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`RELAY_SHELL_SSH_CONFIG: ${path}: `);
    expect(run.stderr).toMatch(/more than the 4194304 accepted/);
  });

  it.each([
    ["invalid JSON", "{not json", /invalid JSON/],
    ["a top-level array", "[]", /top level must be a JSON object/],
    ["an unknown key", '{"web": {"hostnmae": "10.0.0.1"}}', /entry "web": Unrecognized key: "hostnmae"/],
    ["a bad port", '{"web": {"port": "twenty-two"}}', /entry "web": port: port must be an integer/],
  ])("refuses to start with %s in the inventory (exit 2)", (label, text, pattern) => {
    const path = join(fx.dir, `bad-${label.replace(/\W+/g, "-")}.json`);
    writeFileSync(path, text);
    const env = baseEnv({
      RELAY_SHELL_INVENTORY: path,
      RELAY_SHELL_AUDIT_PATH: join(fx.dir, "bad-audit.jsonl"),
    });
    // --check-config builds the server too, so it reports the same problem (checked once, it costs a start).
    const variants =
      label === "invalid JSON" ? [[SERVER_ENTRY], [SERVER_ENTRY, "--check-config"]] : [[SERVER_ENTRY]];
    for (const args of variants) {
      const run = spawnSync(process.execPath, args, { env, input: "", encoding: "utf8", timeout: 20_000 });
      expect(run.status).toBe(2);
      expect(run.stderr).toContain(`RELAY_SHELL_INVENTORY: ${path}: `);
      expect(run.stderr).toMatch(pattern);
    }
  });
});
