import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeTransport, registryHarness } from "../../test/helpers/registry.js";
import { buildServer } from "../cli/build.js";
import { loadSettings, type Settings } from "../config/index.js";
import { actDigest, type ConsentAct, describeAct } from "../consent/index.js";
import { canonicalJson, silentLogger, systemClock, type Tier } from "../core/index.js";
import type { Tool } from "../runner/index.js";
import type { SessionRegistry } from "../sessions/index.js";
import { createSshLayer, type ForwardRegistry, type SshService } from "../ssh/index.js";
import { type ActResult, type ConsentActs, createConsentActs } from "./consent-acts.js";

// Nothing here dials, spawns or runs a tool: acts are computed from arguments, the directory and files.
// Created at load: the cases below name directories and files in it.
const root = mkdtempSync(join(tmpdir(), "relay-consent-acts-"));
let settings: Settings;
let tools: readonly Tool[];
/** The tools with an act, sorted: the only ones a human can approve. */
let CONSENT_ACT_TOOLS: string[];
let ssh: SshService;
let acts: ConsentActs;
let registry: SessionRegistry;
const sessionIds: Record<string, string> = {};
const harness = registryHarness();
const CLIENT = "client-a";

/** A forward row as the registry lists it (opening a real one needs an SSH server; the lookup is what is tested). */
const forwardRows = [
  {
    id: "fwd-000001",
    kind: "local" as const,
    spec: "L:8080:db:5432",
    listen_port: 8080,
    target: "db:5432",
    host: "web1",
    listen_host: "127.0.0.1",
    connections: 0,
    owner: CLIENT,
  },
  {
    id: "fwd-000002",
    kind: "dynamic" as const,
    spec: "D:1080",
    listen_port: 1080,
    target: "socks",
    host: "web2",
    listen_host: "127.0.0.1",
    connections: 0,
    owner: "",
  },
];
const forwards: Pick<ForwardRegistry, "list"> = {
  list: (clientId) => forwardRows.filter((f) => f.owner === "" || f.owner === clientId),
};

function dir(name: string): string {
  const path = join(root, name);
  mkdirSync(path, { recursive: true });
  return path;
}

function tool(name: string): Tool {
  const found = tools.find((t) => t.name === name);
  if (!found) throw new Error(`no tool ${name}`);
  return found;
}

/** The act of a call as the gate computes it: the tool's own parser first, then the tool's act. */
async function actOf(name: string, raw: Record<string, unknown>, tier: Tier = 2): Promise<ActResult> {
  const parsed = tool(name).parse(raw);
  if (!parsed.ok) throw new Error(parsed.error.join("; "));
  return acts(name, parsed.value, { tier, clientId: CLIENT });
}

async function boundOf(name: string, raw: Record<string, unknown>, tier: Tier = 2): Promise<ConsentAct> {
  const result = await actOf(name, raw, tier);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

beforeAll(async () => {
  const home = dir("home");
  writeFileSync(
    join(root, "inventory.json"),
    JSON.stringify({
      web1: { hostname: "10.0.0.5", user: "deploy", port: 2222, identity_file: "/keys/web1" },
      web2: { hostname: "web2.internal", user: "deploy" },
      web3: { hostname: "web3.internal", jump: "bastion" },
      bastion: { hostname: "192.0.2.9", user: "jump", port: 22 },
    }),
  );
  writeFileSync(
    join(root, "ssh_config"),
    "Host cfg-db\n  HostName db.internal\n  User postgres\n  Port 2200\n",
  );
  const env = {
    RELAY_SHELL_INVENTORY: join(root, "inventory.json"),
    RELAY_SHELL_SSH_CONFIG: join(root, "ssh_config"),
    RELAY_SHELL_AUDIT_PATH: join(root, "audit.jsonl"),
    // The INFRA tools exist only with a socket; nothing connects to it here.
    RELAY_SHELL_INFRA_SOCKET: join(root, "infra.sock"),
    RELAY_SHELL_TRANSFER_MAX_ENTRIES: "50",
    RELAY_SHELL_TRANSFER_MAX_BYTES: "100000",
  };
  settings = loadSettings(env, { cwd: root, homeDir: home, xdgStateHome: join(root, "state") });
  // The tool list exactly as the server builds it.
  const built = await buildServer({ settings, env: { HOME: home }, logger: silentLogger });
  tools = built.relay.tools;
  CONSENT_ACT_TOOLS = tools
    .filter((t) => t.act !== undefined)
    .map((t) => t.name)
    .sort();
  built.close();
  ssh = createSshLayer(settings, { clock: systemClock, home, localUser: "op", agentSocket: "", cwd: root });
  const { registry: created } = harness.setup({ maxSessions: 10 });
  registry = created;
  const add = async (owner: string, kind: "local" | "ssh", title: string) =>
    (await registry.add({ kind, title, owner, cols: 80, rows: 24, transport: new FakeTransport() })).id;
  sessionIds.mine = await add(CLIENT, "local", "bash");
  sessionIds.unowned = await add("", "ssh", "ssh web1 python3");
  sessionIds.other = await add("client-b", "local", "bash");
  acts = createConsentActs(tools, {
    directory: ssh.directory,
    sessions: registry,
    forwards,
    settings,
    cwd: root,
  });
});

afterAll(() => {
  harness.cleanup();
  ssh?.close();
  rmSync(root, { recursive: true, force: true });
});

describe("the consequential arguments", () => {
  it("has an entry for every tool whose tier can be above 0", () => {
    // A fixed Tier 0 stays 0 unless the tool raises it per call (ssh_check on a host outside the inventory).
    const reachable = tools
      .filter((t) => !(t.tier.kind === "fixed" && t.tier.tier === 0) || t.tierFloor !== undefined)
      .map((t) => t.name)
      .sort();
    // The server's real list: more than the basics, INFRA tools included.
    expect(reachable).toEqual(expect.arrayContaining(["shell_exec", "ssh_upload", "infra_replicate"]));
    expect(reachable.filter((name) => !CONSENT_ACT_TOOLS.includes(name))).toEqual([]);
  });

  it("describes exactly the tools docs/consent.md lists", () => {
    expect(CONSENT_ACT_TOOLS).toEqual([
      "infra_probe",
      "infra_replicate",
      "infra_rsync_dry_run",
      "infra_verify",
      "session_kill",
      "session_resize",
      "session_send",
      "shell_exec",
      "shell_script",
      "shell_spawn",
      "ssh_check",
      "ssh_download",
      "ssh_exec",
      "ssh_fanout",
      "ssh_forward",
      "ssh_forward_close",
      "ssh_keyscan",
      "ssh_spawn",
      "ssh_upload",
    ]);
  });

  it("refuses a tool without an act, and arguments its parser would not have produced", async () => {
    expect(await acts("server_info", {}, { tier: 1, clientId: CLIENT })).toEqual({
      ok: false,
      error: "server_info has no act describing its consequential arguments",
    });
    expect(await acts("no_such_tool", {}, { tier: 2, clientId: CLIENT })).toMatchObject({ ok: false });
    // The gate hands over parsed arguments only; anything else still ends in a refusal, never a throw.
    expect(await acts("shell_exec", { command: 1 }, { tier: 2, clientId: CLIENT })).toMatchObject({
      ok: false,
    });
    // A prototype name is not a tool.
    expect(await acts("constructor", {}, { tier: 2, clientId: CLIENT })).toMatchObject({ ok: false });
  });

  it("never throws, whatever the arguments (property)", async () => {
    const value = fc.oneof(
      fc.string(),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
    );
    const args = fc.oneof(
      fc.dictionary(
        fc.constantFrom("command", "host", "hosts", "session_id", "spec", "env_json", "cwd"),
        value,
      ),
      fc.anything(),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...CONSENT_ACT_TOOLS, "x"), args, async (name, raw) => {
        const result = await acts(name, raw, { tier: 2, clientId: CLIENT });
        expect(typeof result.ok).toBe("boolean");
        if (!result.ok) expect(result.error.length).toBeGreaterThan(0);
      }),
      { numRuns: 300 },
    );
  });

  it("carries the tier it is given: one call at two tiers is two acts", async () => {
    const at1 = await boundOf("shell_exec", { command: "ls" }, 1);
    const at3 = await boundOf("shell_exec", { command: "ls" }, 3);
    expect(at1.tier).toBe(1);
    expect(actDigest(at1)).not.toBe(actDigest(at3));
  });
});

interface Case {
  tool: string;
  base: () => Record<string, unknown>;
  /** Each changes what the act does: a new digest. Together they touch every bound key. */
  bound: Array<Record<string, unknown>>;
  /** Each leaves what the act does alone: the same digest. */
  unbound: Array<Record<string, unknown>>;
}

const cwdA = () => dir("work-a");
const cwdB = () => dir("work-b");
const fileA = () => {
  const path = join(dir("up"), "a.txt");
  writeFileSync(path, "alpha\n");
  return path;
};
const fileB = () => {
  const path = join(dir("up"), "b.txt");
  writeFileSync(path, "bravo\n");
  return path;
};

/** Read when a case is spread, after the sessions exist. */
const UNOWNED = {
  get session_id() {
    return sessionIds.unowned;
  },
};

const CASES: Case[] = [
  {
    tool: "shell_exec",
    base: () => ({ command: "echo hi", cwd: cwdA(), env_json: '{"A":"1","B":null}', stdin: "" }),
    bound: [
      { command: "echo ho" },
      { stdin: "secret input" },
      { env_json: '{"A":"2","B":null}' },
      { env_json: '{"A":"1"}' },
      { cwd: cwdB() },
      { use_shell: false },
    ],
    unbound: [
      { timeout: 7 },
      { max_output: 2048 },
      { merge_stderr: false },
      { env_json: '{ "B": null, "A": "1" }' },
      { env_json: '{"A":1,"B":null}' },
      { cwd: `${cwdA()}/` },
    ],
  },
  {
    tool: "shell_script",
    base: () => ({ script: "echo hi\n", interpreter: "bash", cwd: cwdA() }),
    bound: [
      { script: "echo ho\n" },
      { interpreter: "sh" },
      { strict: false },
      { cwd: cwdB() },
      { env_json: '{"X":"1"}' },
    ],
    unbound: [{ timeout: 9 }, { interpreter: " BASH " }],
  },
  {
    tool: "shell_spawn",
    base: () => ({ command: "python3 -i", cwd: cwdA() }),
    bound: [{ command: "python3 -q" }, { cwd: cwdB() }, { env_json: '{"TERM":"dumb"}' }],
    unbound: [{ cols: 200 }, { rows: 10 }],
  },
  {
    tool: "session_send",
    base: () => ({ session_id: sessionIds.mine, data: "ls -l" }),
    bound: [{ data: "rm -rf /tmp/canary" }, { enter: false }, UNOWNED],
    unbound: [],
  },
  {
    tool: "session_resize",
    base: () => ({ session_id: sessionIds.mine, cols: 100, rows: 30 }),
    bound: [{ cols: 101 }, { rows: 31 }, UNOWNED],
    unbound: [],
  },
  {
    tool: "session_kill",
    base: () => ({ session_id: sessionIds.mine, signal_name: "INT" }),
    bound: [{ signal_name: "KILL" }, { close: false }, UNOWNED],
    unbound: [{ signal_name: "sigint" }, { signal_name: "2" }],
  },
  {
    tool: "ssh_exec",
    base: () => ({ host: "web1", command: "uptime" }),
    bound: [
      { command: "reboot" },
      { host: "web2" },
      { user: "root" },
      { port: 22 },
      { key_path: "/keys/other" },
      { known_hosts: "strict" },
      { jump: "bastion" },
    ],
    unbound: [{ timeout: 3 }, { host: " web1 " }],
  },
  {
    tool: "ssh_spawn",
    base: () => ({ host: "web1", command: "top" }),
    bound: [
      { command: "" },
      { host: "web2" },
      { user: "root" },
      { port: 22 },
      { key_path: "/keys/other" },
      { known_hosts: "strict" },
      { jump: "bastion" },
    ],
    unbound: [{ cols: 90 }, { rows: 20 }],
  },
  {
    tool: "ssh_fanout",
    base: () => ({ command: "uptime", hosts: "web1,web2" }),
    bound: [{ command: "reboot" }, { hosts: "web1,web3" }, { hosts: "web1,web1,web2" }],
    unbound: [{ hosts: "web2 web1" }, { timeout: 4 }, { concurrency: 2 }],
  },
  {
    tool: "ssh_check",
    base: () => ({ hosts: "web1,edge.example" }),
    bound: [{ hosts: "web1,web3" }, { hosts: "web1,web1,edge.example" }],
    unbound: [{ hosts: "edge.example web1" }, { timeout: 30 }],
  },
  {
    tool: "ssh_keyscan",
    base: () => ({ hosts: "a.example,b.example", key_types: "rsa,ed25519" }),
    bound: [{ hosts: "a.example,c.example" }, { port: 2222 }, { key_types: "rsa" }],
    unbound: [{ hosts: "b.example a.example" }, { key_types: "ED25519, rsa" }, { timeout: 30 }],
  },
  {
    tool: "ssh_upload",
    base: () => ({ host: "web1", local_path: fileA(), remote_path: "/srv/a.txt" }),
    bound: [
      { host: "web2" },
      { user: "root" },
      { port: 22 },
      { key_path: "/keys/other" },
      { known_hosts: "strict" },
      { jump: "bastion" },
      { local_path: fileB() },
      { remote_path: "/srv/b.txt" },
      { recursive: true },
    ],
    unbound: [{ timeout: 60 }],
  },
  {
    tool: "ssh_download",
    base: () => ({ host: "web1", remote_path: "/var/log/syslog", local_path: join(cwdA(), "syslog") }),
    bound: [
      { host: "web2" },
      { user: "root" },
      { port: 22 },
      { key_path: "/keys/other" },
      { known_hosts: "strict" },
      { jump: "bastion" },
      { remote_path: "/var/log/auth.log" },
      { local_path: join(cwdB(), "syslog") },
      { recursive: true },
    ],
    unbound: [{ timeout: 60 }],
  },
  {
    tool: "ssh_forward",
    base: () => ({ host: "web1", spec: "L:8080:db:5432" }),
    bound: [
      { spec: "L:8081:db:5432" },
      { spec: "R:8080:db:5432" },
      { spec: "D:8080" },
      { host: "web2" },
      { user: "root" },
      { port: 22 },
      { key_path: "/keys/other" },
      { known_hosts: "strict" },
      { jump: "bastion" },
    ],
    unbound: [{ spec: " l:08080:db:5432 " }],
  },
  {
    tool: "ssh_forward_close",
    base: () => ({ forward_id: "fwd-000001" }),
    bound: [{ forward_id: "fwd-000002" }],
    unbound: [],
  },
  {
    tool: "infra_rsync_dry_run",
    base: () => ({ profile: "backup-a", run_id: "run-1" }),
    bound: [{ profile: "backup-b" }, { run_id: "run-2" }],
    unbound: [],
  },
  {
    tool: "infra_replicate",
    base: () => ({ profile: "backup-a", run_id: "run-1", idempotency_key: "key-00000001" }),
    bound: [{ profile: "backup-b" }, { run_id: "run-2" }, { idempotency_key: "key-00000002" }],
    unbound: [],
  },
];

/** Bound keys no argument of the call changes: fixed by the tool or by the server's settings. */
const DERIVED: Record<string, string[]> = {
  // A forward's bind address is the server's setting, not the call's.
  ssh_forward: ["bind_address"],
  ssh_forward_close: ["bind_address"],
  // The INFRA operation is fixed per tool; the dry run has no idempotency key.
  infra_rsync_dry_run: ["operation", "idempotency_key"],
  infra_replicate: ["operation"],
};

describe("each tool's act", () => {
  it("has a case for every tool with an act", () => {
    const covered = CASES.map((c) => c.tool);
    const untested = CONSENT_ACT_TOOLS.filter(
      (name) => !covered.includes(name) && !["infra_probe", "infra_verify"].includes(name),
    );
    expect(untested).toEqual([]);
  });

  for (const c of CASES) {
    it(`${c.tool}: every bound argument changes the digest, an unbound one does not`, async () => {
      const base = await boundOf(c.tool, c.base());
      const digest = actDigest(base);
      const touched = new Set<string>();
      for (const change of c.bound) {
        const act = await boundOf(c.tool, { ...c.base(), ...change });
        expect(actDigest(act), `${c.tool} ${JSON.stringify(change)}`).not.toBe(digest);
        for (const key of new Set([...Object.keys(base.bound), ...Object.keys(act.bound)])) {
          if (canonicalJson(base.bound[key]) !== canonicalJson(act.bound[key])) touched.add(key);
        }
      }
      for (const change of c.unbound) {
        const act = await boundOf(c.tool, { ...c.base(), ...change });
        expect(actDigest(act), `${c.tool} ${JSON.stringify(change)}`).toBe(digest);
      }
      const untouched = Object.keys(base.bound).filter(
        (k) => !touched.has(k) && !(DERIVED[c.tool] ?? []).includes(k),
      );
      expect(untouched, "bound keys no case changes").toEqual([]);
    });
  }
});

describe("what the human is shown", () => {
  /** How describeAct labels a key; the port, user and alias of a target are on its host line. */
  const label = (key: string) => (key === "key_paths" ? "key" : key.replaceAll("_", " "));

  for (const c of CASES) {
    it(`${c.tool}: every bound argument is in the description`, async () => {
      const act = await boundOf(c.tool, c.base());
      const text = describeAct({
        id: "r1",
        act,
        basis: "b",
        expiresInSeconds: 60,
        session: "s",
        clientId: CLIENT,
      });
      const onHostLine = typeof act.bound.host === "string" && "port" in act.bound && "user" in act.bound;
      for (const [key, value] of Object.entries(act.bound)) {
        if (onHostLine && ["port", "user", "alias"].includes(key)) {
          expect(
            text.split("\n").find((l) => l.startsWith("  host: ")),
            key,
          ).toContain(String(value));
        } else {
          expect(text, key).toMatch(new RegExp(`^  ${label(key)}( \\(.*\\))?:`, "m"));
        }
      }
    });
  }
});

describe("what is bound", () => {
  it("shell_exec: the command and digests, never the stdin or env values", async () => {
    const act = await boundOf("shell_exec", {
      command: "deploy",
      stdin: "hunter2",
      env_json: '{"TOKEN":"s3cr3t-value","DEBUG":null}',
      cwd: "",
    });
    expect(act.bound).toEqual({
      command: "deploy",
      command_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      use_shell: true,
      stdin_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      env_names: ["DEBUG", "TOKEN"],
      env_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      cwd: realpathSync(root),
    });
    const text = canonicalJson(act);
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("s3cr3t-value");
    expect((await boundOf("shell_exec", { command: "ls" })).bound.stdin_sha256).toBeNull();
  });

  it("a working directory and a download's destination by where they really are", async () => {
    const link = join(dir("links"), "here");
    symlinkSync(cwdA(), link);
    const viaA = await boundOf("shell_exec", { command: "ls", cwd: link });
    const down = { host: "web1", remote_path: "/etc/motd", local_path: join(link, "motd") };
    const downA = await boundOf("ssh_download", down);
    expect(viaA.bound.cwd).toBe(realpathSync(cwdA()));
    expect(downA.bound.local_path).toBe(join(realpathSync(cwdA()), "motd"));
    // The same call after the link was pointed elsewhere is another act.
    rmSync(link);
    symlinkSync(cwdB(), link);
    expect(actDigest(await boundOf("shell_exec", { command: "ls", cwd: link }))).not.toBe(actDigest(viaA));
    expect(actDigest(await boundOf("ssh_download", down))).not.toBe(actDigest(downA));
  });

  it("ssh tools: the host the tool dials, resolved from the inventory and ssh_config", async () => {
    const act = await boundOf("ssh_exec", { host: "web3", command: "id" });
    expect(act.bound).toMatchObject({
      alias: "web3",
      host: "web3.internal",
      port: 22,
      user: "op",
      host_key_mode: settings.sshKnownHosts,
      jump: [{ host: "192.0.2.9", port: 22, user: "jump", key_paths: [] }],
    });
    const cfg = await boundOf("ssh_exec", { host: "cfg-db", command: "id" });
    expect(cfg.bound).toMatchObject({ alias: "cfg-db", host: "db.internal", port: 2200, user: "postgres" });
    const inv = await boundOf("ssh_exec", { host: "web1", command: "id" });
    expect(inv.bound).toMatchObject({
      host: "10.0.0.5",
      port: 2222,
      user: "deploy",
      key_paths: ["/keys/web1"],
    });
  });

  it("ssh_fanout: the sorted resolved hosts", async () => {
    const act = await boundOf("ssh_fanout", { command: "id", hosts: "web2, web1" });
    const hosts = act.bound.hosts as Array<Record<string, unknown>>;
    expect(hosts.map((h) => h.host)).toEqual(["10.0.0.5", "web2.internal"]);
    // An empty host list is the whole inventory, as the tool fans out.
    const all = await boundOf("ssh_fanout", { command: "id" });
    expect((all.bound.hosts as unknown[]).length).toBe(ssh.directory.names().length);
  });

  it("ssh_forward: kind, canonical spec, bind address, listen port and destination", async () => {
    const act = await boundOf("ssh_forward", { host: "web1", spec: "l:8080:[::1]:5432" });
    expect(act.bound).toMatchObject({
      kind: "local",
      spec: "L:8080:[::1]:5432",
      bind_address: "127.0.0.1",
      listen_port: 8080,
      destination: { host: "::1", port: 5432 },
    });
  });

  it("the INFRA tools bind exactly operation, profile, run_id and idempotency_key", async () => {
    for (const [name, args, operation] of [
      ["infra_probe", { profile: "p1" }, "probe"],
      ["infra_rsync_dry_run", { profile: "p1", run_id: "r1" }, "rsync-dry-run"],
      ["infra_replicate", { profile: "p1", run_id: "r1", idempotency_key: "idem-0001" }, "replicate"],
      ["infra_verify", { profile: "p1", run_id: "r1" }, "verify"],
    ] as const) {
      const act = await boundOf(name, args);
      expect(Object.keys(act.bound).sort()).toEqual(["idempotency_key", "operation", "profile", "run_id"]);
      expect(act.bound.operation).toBe(operation);
      expect(act.bound.profile).toBe("p1");
    }
    expect((await boundOf("infra_probe", { profile: "p1" })).bound).toMatchObject({
      run_id: null,
      idempotency_key: null,
    });
  });
});

describe("an upload's content digest", () => {
  const upload = (local: string, recursive = false) =>
    boundOf("ssh_upload", { host: "web1", local_path: local, remote_path: "/srv/x", recursive });
  const content = async (local: string, recursive = false) =>
    (await upload(local, recursive)).bound.content as Record<string, unknown>;

  it("changes when a file's content changes, and names a symlink's target", async () => {
    const path = join(dir("content-file"), "f.txt");
    writeFileSync(path, "one\n");
    const first = await content(path);
    expect(first).toMatchObject({ type: "file", size: 4, link: null });
    writeFileSync(path, "two\n");
    expect((await content(path)).sha256).not.toBe(first.sha256);
    chmodSync(path, 0o600);
    expect((await content(path)).mode).toBe("0600");
    const link = join(dir("content-file"), "link");
    symlinkSync(path, link);
    expect(await content(link)).toMatchObject({ type: "file", link: path });
  });

  it("covers a tree: nested content, modes and symlinks are bound, symlinks are not followed", async () => {
    const tree = dir("content-tree/src");
    mkdirSync(join(tree, "sub"), { recursive: true });
    writeFileSync(join(tree, "sub", "deep.txt"), "deep\n");
    writeFileSync(join(tree, "top.txt"), "top\n");
    const outside = join(dir("content-tree"), "outside-secret");
    writeFileSync(outside, "x".repeat(200_000));
    symlinkSync(outside, join(tree, "escape"));
    const first = await content(tree, true);
    // The link's 200 kB target is not read: only its text is bound.
    expect(first).toMatchObject({ type: "directory", entries: 4, files: 2, bytes: 9 });
    writeFileSync(join(tree, "sub", "deep.txt"), "DEEP\n");
    const second = await content(tree, true);
    expect(second.sha256).not.toBe(first.sha256);
    chmodSync(join(tree, "sub", "deep.txt"), 0o700);
    const third = await content(tree, true);
    expect(third.sha256).not.toBe(second.sha256);
    rmSync(join(tree, "escape"));
    symlinkSync("/etc/passwd", join(tree, "escape"));
    expect((await content(tree, true)).sha256).not.toBe(third.sha256);
  });

  it("refuses what the transfer could not send: over its bounds, a directory without recursive, a FIFO", async () => {
    const many = dir("content-many");
    for (let i = 0; i < 60; i++) writeFileSync(join(many, `f${i}`), "");
    const tooMany = await actOf("ssh_upload", {
      host: "web1",
      local_path: many,
      remote_path: "/x",
      recursive: true,
    });
    expect(tooMany).toMatchObject({ ok: false });
    expect(!tooMany.ok && tooMany.error).toContain("RELAY_SHELL_TRANSFER_MAX_ENTRIES");

    const big = join(dir("content-big"), "big");
    writeFileSync(big, Buffer.alloc(100_001));
    const tooBig = await actOf("ssh_upload", { host: "web1", local_path: big, remote_path: "/x" });
    expect(!tooBig.ok && tooBig.error).toContain("RELAY_SHELL_TRANSFER_MAX_BYTES");

    const notRecursive = await actOf("ssh_upload", { host: "web1", local_path: many, remote_path: "/x" });
    expect(!notRecursive.ok && notRecursive.error).toContain("recursive=true");

    // A FIFO is never opened: named, it is refused; inside a tree it is bound as skipped, as the transfer skips it.
    const fifoDir = dir("content-fifo");
    execFileSync("mkfifo", [join(fifoDir, "pipe")]);
    const fifo = await actOf("ssh_upload", {
      host: "web1",
      local_path: join(fifoDir, "pipe"),
      remote_path: "/x",
    });
    expect(!fifo.ok && fifo.error).toContain("not a regular file");
    expect(await content(fifoDir, true)).toMatchObject({ type: "directory", entries: 1, files: 0 });

    const missing = await actOf("ssh_upload", {
      host: "web1",
      local_path: join(root, "nope"),
      remote_path: "/x",
    });
    expect(!missing.ok && missing.error).toContain("ENOENT");
  });
});

describe("unresolvable targets are refused, never bound blank", () => {
  const refused = async (name: string, raw: Record<string, unknown>, words: string) => {
    const result = await actOf(name, raw);
    expect(result.ok, JSON.stringify(result)).toBe(false);
    expect(!result.ok && result.error).toContain(words);
  };

  it("a host that does not resolve", async () => {
    await refused("ssh_exec", { host: "bad host!", command: "id" }, "invalid host name");
    await refused("ssh_exec", { host: "web1", command: "id", port: 70000 }, "out of range");
    await refused("ssh_exec", { host: "web1", command: "id", known_hosts: "trust-me" }, "known_hosts");
    await refused("ssh_fanout", { command: "id", hosts: "web1,bad host!" }, "invalid host name");
    await refused("ssh_keyscan", { hosts: "a;b" }, "rejected host");
  });

  it("a session or forward the caller cannot use", async () => {
    await refused("session_send", { session_id: "nope", data: "ls" }, "no session");
    await refused("session_send", { session_id: sessionIds.other!, data: "ls" }, "no session");
    await refused("session_kill", { session_id: sessionIds.other! }, "no session");
    await refused("ssh_forward_close", { forward_id: "fwd-999999" }, "no forward");
  });

  it("bad input the tool would refuse", async () => {
    await refused("ssh_upload", { host: "web1", local_path: "", remote_path: "/x" }, "local_path is empty");
    await refused(
      "ssh_download",
      { host: "web1", remote_path: "", local_path: "/tmp/x" },
      "remote_path is empty",
    );
    await refused("shell_exec", { command: "ls", env_json: "[1]" }, "env_json");
    await refused("shell_script", { script: "ls", interpreter: "perl" }, "unsupported interpreter");
    await refused("ssh_forward", { host: "web1", spec: "X:1" }, "forward spec");
  });

  it("a session that ended cannot take input", async () => {
    const id = (
      await registry.add({
        kind: "local",
        title: "sh",
        owner: CLIENT,
        cols: 80,
        rows: 24,
        transport: new FakeTransport(),
      })
    ).id;
    const transport = new FakeTransport();
    const ended = (
      await registry.add({ kind: "local", title: "sh", owner: CLIENT, cols: 80, rows: 24, transport })
    ).id;
    transport.events?.exit(0);
    await refused("session_send", { session_id: ended, data: "ls" }, "has ended");
    expect((await actOf("session_send", { session_id: id, data: "ls" })).ok).toBe(true);
  });
});
