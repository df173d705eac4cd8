import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InfraResponse, parseResponse } from "../../src/infra-protocol/index.js";
import { REPO_ROOT, SERVER_ENTRY } from "../helpers/server.js";

/**
 * The broker daemon as operators run it: the built CLI, started as its own
 * unprivileged account, spoken to over its socket by clients running as
 * other local accounts. Every check of the principal is the kernel's
 * (SO_PEERCRED, /proc groups), every receipt is read back from the file.
 */

const IS_ROOT = process.geteuid?.() === 0;
const DIST = join(REPO_ROOT, "dist");
/** The broker's account, a client allowed by uid and by group, and a client allowed nowhere. */
const DAEMON_USER = "relayinfd";
const ALLOWED_USER = "relayinfa";
const OTHER_USER = "relayinfo";
/** A group that allows a profile; only ALLOWED_USER has it, as a supplementary group. */
const PROFILE_GROUP = "relayinfg";

interface Account {
  uid: number;
  gid: number;
}

const createdUsers: string[] = [];
const createdGroups: string[] = [];

function idOf(kind: "passwd" | "group", name: string): number | null {
  const r = spawnSync("getent", [kind, name], { encoding: "utf8" });
  if (r.status !== 0) return null;
  return Number(r.stdout.split(":")[2]);
}

function ensureGroup(name: string): number {
  const existing = idOf("group", name);
  if (existing !== null) return existing;
  execFileSync("groupadd", ["-r", name], { stdio: "ignore" });
  createdGroups.push(name);
  return idOf("group", name) as number;
}

/** A system account without a home or a login shell; created here and removed afterwards. */
function ensureUser(name: string, groups: string[]): Account {
  if (idOf("passwd", name) === null) {
    const extra = groups.length > 0 ? ["-G", groups.join(",")] : [];
    execFileSync(
      "useradd",
      ["-r", "-U", "-M", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", ...extra, name],
      {
        stdio: "ignore",
      },
    );
    createdUsers.push(name);
  } else if (groups.length > 0) {
    execFileSync("usermod", ["-a", "-G", groups.join(","), name], { stdio: "ignore" });
  }
  const uid = idOf("passwd", name) as number;
  const gid = Number(execFileSync("id", ["-g", name], { encoding: "utf8" }).trim());
  return { uid, gid };
}

function removeAccounts(): void {
  // Clients first: a user's own group is only removed with it once no other account is a member.
  const users = createdUsers.splice(0).reverse();
  for (const name of users) spawnSync("userdel", [name], { stdio: "ignore" });
  for (const name of [...users, ...createdGroups.splice(0)])
    spawnSync("groupdel", [name], { stdio: "ignore" });
}

/** Whether the real profile loader, transport and operations are in dist/ (they are built apart). */
async function realPartsBuilt(scratch: string): Promise<boolean> {
  const load = async (file: string) => import(pathToFileURL(join(DIST, "infra", file)).href);
  const attempts: (() => unknown)[] = [
    async () => (await load("profiles.js")).loadProfiles(scratch, { daemonUid: 1 }),
    async () =>
      (await load("remote.js")).createRemote({}, { credentialsDirectory: null, keyFileDirectory: null }),
    async () => (await load("operations.js")).createOperations({}),
  ];
  for (const attempt of attempts) {
    try {
      await attempt();
    } catch (err) {
      if (/not built yet/.test(String(err))) return false;
    }
  }
  return true;
}

/**
 * Until the real profile loader and operations are built, the broker is
 * started through the same CLI entry with those two parts replaced: a
 * reader of the same `<id>.json` files and operations that touch nothing.
 * Everything this suite tests (socket, principal, framing, dispatch,
 * receipts, start-up checks) is the real code either way.
 */
const STAND_IN = `
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { runInfraBrokerCli } from ${JSON.stringify(pathToFileURL(join(DIST, "cli", "infra-broker.js")).href)};

function loadProfiles(dir) {
  const profiles = new Map();
  const broken = new Map();
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".json")).sort()) {
    const id = name.slice(0, -5);
    const file = join(dir, name);
    let p;
    try {
      p = JSON.parse(readFileSync(file, "utf8"));
    } catch (err) {
      broken.set(id, { id, file, problems: ["not valid JSON: " + err.message] });
      continue;
    }
    profiles.set(id, {
      id, file, enabled: p.enabled ?? true, host: p.host, port: p.port ?? 22, user: p.user,
      sourceRoots: p.source_roots, remoteRoot: p.remote_root, knownHostsFile: p.known_hosts,
      credentialId: p.credential,
      limits: { timeoutSeconds: 60, outputBytes: 65536, transferBytes: 1 << 20, fileCount: 100 },
      allowedPrincipals: p.allowed_principals, approval: p.approval ?? "none", receiver: "rrsync",
      requireDryRun: p.require_dry_run ?? true,
    });
  }
  return { profiles, broken };
}

const answer = (what) => async (profile) => ({ code: "OK", message: what + " " + profile.id });
const operations = {
  probe: answer("probed"),
  dryRun: answer("previewed"),
  replicate: answer("replicated"),
  verify: answer("verified"),
};

await runInfraBrokerCli(process.argv.slice(2), {
  loadProfiles,
  createRemote: () => ({}),
  createOperations: () => operations,
});
`;

/** One connection: write `payload`, read `expect` response lines, print them as a JSON array. */
const CLIENT = `
import { connect } from "node:net";
const [path, expect] = process.argv.slice(2);
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const payload = Buffer.concat(chunks);
const socket = connect(path);
const lines = [];
let rest = "";
const finish = (code) => { process.stdout.write(JSON.stringify(lines)); process.exit(code); };
setTimeout(() => finish(3), 15000).unref();
socket.on("error", (err) => { process.stderr.write(String(err)); finish(4); });
socket.on("connect", () => socket.write(payload));
socket.on("data", (data) => {
  rest += data.toString("utf8");
  let at;
  while ((at = rest.indexOf("\\n")) >= 0) {
    lines.push(rest.slice(0, at));
    rest = rest.slice(at + 1);
    if (lines.length === Number(expect)) { socket.end(); finish(0); }
  }
});
socket.on("close", () => finish(lines.length === Number(expect) ? 0 : 5));
`;

interface Broker {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

interface Layout {
  base: string;
  runDir: string;
  socket: string;
  stateDir: string;
  profilesDir: string;
  receipts: string;
  client: string;
  standIn: string;
}

function layout(base: string, daemon: Account): Layout {
  const runDir = join(base, "run");
  const stateDir = join(base, "state");
  const profilesDir = join(base, "profiles");
  mkdirSync(runDir, { mode: 0o750 });
  chmodSync(runDir, 0o750);
  chownSync(runDir, daemon.uid, daemon.gid);
  mkdirSync(stateDir, { mode: 0o700 });
  chownSync(stateDir, daemon.uid, daemon.gid);
  mkdirSync(profilesDir, { mode: 0o755 });
  const client = join(base, "client.mjs");
  const standIn = join(base, "stand-in.mjs");
  writeFileSync(client, CLIENT, { mode: 0o644 });
  writeFileSync(standIn, STAND_IN, { mode: 0o644 });
  return {
    base,
    runDir,
    socket: join(runDir, "broker.sock"),
    stateDir,
    profilesDir,
    receipts: join(stateDir, "receipts.jsonl"),
    client,
    standIn,
  };
}

function brokerArgs(l: Layout, extra: string[] = []): string[] {
  return ["--config", l.profilesDir, "--socket", l.socket, "--state", l.stateDir, ...extra];
}

/** The broker's command line: the built CLI, or the stand-in until the real parts are built. */
function entry(real: boolean, l: Layout): string[] {
  return real ? [SERVER_ENTRY, "infra-broker"] : [l.standIn];
}

const CHILD_ENV = { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C" };

function runOnce(args: string[], account: Account | null) {
  const r = spawnSync(process.execPath, args, {
    env: CHILD_ENV,
    encoding: "utf8",
    timeout: 20_000,
    ...(account ? { uid: account.uid, gid: account.gid } : {}),
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function startBroker(args: string[], account: Account): Promise<Broker> {
  const child = spawn(process.execPath, args, {
    env: CHILD_ENV,
    uid: account.uid,
    gid: account.gid,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the broker did not start:\n${stderr}`)), 20_000);
    child.stderr?.on("data", (data: Buffer) => {
      stderr += data.toString("utf8");
      if (stderr.includes("listening on")) {
        clearTimeout(timer);
        resolve({ child, stderr: () => stderr, exited });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the broker exited with ${code}:\n${stderr}`));
    });
  });
}

async function stopBroker(broker: Broker): Promise<number | null> {
  if (broker.child.exitCode !== null) return broker.child.exitCode;
  broker.child.kill("SIGTERM");
  return broker.exited;
}

/**
 * Send `payload` on one connection as local account `user`, with its
 * supplementary groups (setpriv --init-groups), or with none.
 */
function request(
  l: Layout,
  user: string,
  payload: string | Buffer,
  expected: number,
  groups: "init" | "none" = "init",
): InfraResponse[] {
  const r = spawnSync(
    "setpriv",
    [
      `--reuid=${user}`,
      `--regid=${user}`,
      groups === "init" ? "--init-groups" : "--clear-groups",
      process.execPath,
      l.client,
      l.socket,
      String(expected),
    ],
    { input: payload, env: CHILD_ENV, encoding: "utf8", timeout: 20_000, maxBuffer: 16 << 20 },
  );
  expect(r.status, r.stderr).toBe(0);
  const lines = JSON.parse(r.stdout) as string[];
  return lines.map((line) => {
    const response = parseResponse(line);
    expect(response, line).not.toBeNull();
    return response as InfraResponse;
  });
}

const line = (value: unknown): string => `${JSON.stringify(value)}\n`;

interface ReceiptRecord {
  tool: string;
  tier: number;
  denied: boolean;
  request_id: string;
  args: {
    op: string | null;
    profile: string | null;
    principal: { uid: number; gid: number; pid: number; groups: number[] } | null;
    outcome: string;
    code: string;
    claimed_identity: Record<string, unknown> | null;
    approval_present: boolean;
    receipt_id: string;
  };
}

function receipts(l: Layout): ReceiptRecord[] {
  return readFileSync(l.receipts, "utf8")
    .split("\n")
    .filter((t) => t !== "")
    .map((t) => JSON.parse(t) as ReceiptRecord);
}

function receiptOf(l: Layout, id: string): ReceiptRecord {
  const found = receipts(l).filter((r) => r.request_id === id);
  expect(found).toHaveLength(1);
  return found[0] as ReceiptRecord;
}

function verifyAudit(path: string) {
  return runOnce([SERVER_ENTRY, "--verify-audit", "--audit-path", path], null);
}

/** The codes with which the dispatcher refuses before an operation runs. */
const DISPATCH_REFUSALS = [
  "PROFILE_REQUIRED",
  "PROFILE_NOT_FOUND",
  "PROFILE_INVALID",
  "PRINCIPAL_NOT_ALLOWED",
  "PROFILE_DISABLED",
  "APPROVAL_REQUIRED",
  "APPROVAL_INVALID",
  "RUN_ID_REQUIRED",
  "IDEMPOTENCY_KEY_REQUIRED",
  "RECEIPT_UNAVAILABLE",
  "INTERNAL_ERROR",
];

describe.skipIf(!IS_ROOT)("infra broker daemon", () => {
  let base: string;
  let l: Layout;
  let daemon: Account;
  let allowed: Account;
  let other: Account;
  let profileGroup: number;
  let real = false;
  let broker: Broker | null = null;
  const sentReceipts: string[] = [];

  function writeProfile(id: string, fields: Record<string, unknown>): void {
    const sourceRoot = join(base, "source");
    mkdirSync(sourceRoot, { recursive: true, mode: 0o755 });
    const knownHosts = join(base, "known_hosts");
    if (!existsSync(knownHosts)) writeFileSync(knownHosts, "", { mode: 0o644 });
    const profile = {
      host: "127.0.0.1",
      port: 22,
      user: "receiver",
      source_roots: [sourceRoot],
      remote_root: ".",
      known_hosts: knownHosts,
      credential: "alpha-key",
      allowed_principals: { uids: [], gids: [] },
      approval: "none",
      receiver: "rrsync",
      ...fields,
    };
    writeFileSync(join(l.profilesDir, `${id}.json`), JSON.stringify(profile, null, 2), { mode: 0o644 });
  }

  /** `request` that also remembers every receipt id it was answered with. */
  function ask(user: string, payload: string | Buffer, expected: number, groups: "init" | "none" = "init") {
    const responses = request(l, user, payload, expected, groups);
    for (const r of responses) sentReceipts.push(r.receipt_id);
    return responses;
  }

  beforeAll(async () => {
    base = mkdtempSync(join(tmpdir(), "relay-infra-daemon-"));
    chmodSync(base, 0o755);
    real = await realPartsBuilt(base);
    profileGroup = ensureGroup(PROFILE_GROUP);
    daemon = ensureUser(DAEMON_USER, []);
    // Both clients may reach the socket (the broker's group); only one also has the profile group.
    allowed = ensureUser(ALLOWED_USER, [DAEMON_USER, PROFILE_GROUP]);
    other = ensureUser(OTHER_USER, [DAEMON_USER]);
    l = layout(base, daemon);
    writeProfile("alpha", { allowed_principals: { uids: [allowed.uid], gids: [] } });
    writeProfile("grouped", { allowed_principals: { uids: [], gids: [profileGroup] } });
    writeProfile("disabled", { enabled: false, allowed_principals: { uids: [allowed.uid], gids: [] } });
    writeProfile("consent", { approval: "consent", allowed_principals: { uids: [allowed.uid], gids: [] } });
    writeFileSync(join(l.profilesDir, "broken.json"), "{ not json", { mode: 0o644 });
    broker = await startBroker([...entry(real, l), ...brokerArgs(l)], daemon);
  }, 60_000);

  afterAll(async () => {
    if (broker) await stopBroker(broker);
    removeAccounts();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it("starts as its own account, reports its socket, its profiles and each broken one", () => {
    const out = broker?.stderr() ?? "";
    expect(out).toContain(`listening on ${l.socket} (4 profile(s) loaded, 1 broken)`);
    expect(out).toMatch(/broken profile broken \(.*broken\.json\): .+/);
    const socket = lstatSync(l.socket);
    expect(socket.isSocket()).toBe(true);
    expect(socket.mode & 0o777).toBe(0o660);
    expect(socket.uid).toBe(daemon.uid);
  });

  it("has no TCP or UDP socket open, only Unix ones", () => {
    const pid = broker?.child.pid as number;
    const inodes = new Set(
      readdirSync(`/proc/${pid}/fd`)
        .map((fd) => {
          try {
            return readlinkSync(`/proc/${pid}/fd/${fd}`);
          } catch {
            return "";
          }
        })
        .map((target) => /^socket:\[(\d+)\]$/.exec(target)?.[1])
        .filter((inode): inode is string => inode !== undefined),
    );
    expect(inodes.size).toBeGreaterThan(0);
    const inodesOf = (table: string) =>
      readFileSync(`/proc/${pid}/net/${table}`, "utf8")
        .split("\n")
        .slice(1)
        .map((row) => row.trim().split(/\s+/)[9])
        .filter((inode): inode is string => inode !== undefined);
    for (const table of ["tcp", "tcp6", "udp", "udp6"]) {
      for (const inode of inodesOf(table)) expect(inodes.has(inode), `${table} socket ${inode}`).toBe(false);
    }
    const unix = readFileSync(`/proc/${pid}/net/unix`, "utf8");
    expect(unix).toContain(l.socket);
  });

  it("status shows the profiles the principal may use, every broken profile and the broker's facts", () => {
    const [mine] = ask(ALLOWED_USER, line({ op: "status" }), 1);
    expect(mine?.outcome).toBe("ok");
    const data = mine?.data as {
      broker: Record<string, unknown>;
      principal: { uid: number };
      profiles: { id: string }[];
      broken: { id: string; problems: string[] }[];
    };
    expect(data.profiles.map((p) => p.id)).toEqual(["alpha", "consent", "disabled", "grouped"]);
    expect(data.broken.map((b) => b.id)).toEqual(["broken"]);
    expect(data.broken[0]?.problems.length).toBeGreaterThan(0);
    expect(data.principal.uid).toBe(allowed.uid);
    expect(data.broker).toMatchObject({
      protocol: 1,
      uid: daemon.uid,
      socket: l.socket,
      profiles: 4,
      broken: 1,
    });
    const [theirs] = ask(OTHER_USER, line({ op: "status" }), 1);
    const seen = theirs?.data as { profiles: unknown[]; broken: unknown[] };
    expect(seen.profiles).toEqual([]);
    expect(seen.broken).toHaveLength(1);
  });

  it("answers a 1 MiB line and malformed JSON with typed errors, and the same connection goes on", () => {
    const huge = `{"op":"status","pad":"${"x".repeat(1 << 20)}"}\n`;
    const payload = [
      huge,
      line({ op: "status" }),
      "{ this is not json\n",
      line({ op: "status" }),
      line({ op: "status", profile: "../etc" }),
      line({ op: "status", host: "evil.example" }),
      line({ op: "status" }),
    ].join("");
    const answers = ask(ALLOWED_USER, payload, 7);
    expect(answers.map((a) => a.code)).toEqual([
      "FRAME_TOO_LARGE",
      "OK",
      "MALFORMED_JSON",
      "OK",
      "SCHEMA_VIOLATION",
      "SCHEMA_VIOLATION",
      "OK",
    ]);
    expect(answers[0]?.outcome).toBe("invalid");
    expect(answers[4]?.message).toContain('field "profile"');
    expect(answers[5]?.message).toContain('"host"');
    expect(new Set(answers.map((a) => a.receipt_id)).size).toBe(7);
    // Still serving other connections.
    expect(ask(OTHER_USER, line({ op: "status" }), 1)[0]?.code).toBe("OK");
  });

  it("takes the principal from the socket: a second local user is refused, the listed one passes dispatch", () => {
    const [refused] = ask(OTHER_USER, line({ op: "probe", profile: "alpha" }), 1);
    expect(refused?.code).toBe("PRINCIPAL_NOT_ALLOWED");
    expect(refused?.outcome).toBe("blocked");
    const [passed] = ask(ALLOWED_USER, line({ op: "probe", profile: "alpha" }), 1);
    expect(DISPATCH_REFUSALS).not.toContain(passed?.code);
    const record = receiptOf(l, refused?.receipt_id ?? "");
    expect(record.args.principal?.uid).toBe(other.uid);
    expect(record.tool).toBe("infra.probe");
    expect(record.denied).toBe(true);
  });

  it("allows by a supplementary group the kernel reports, and not without it", () => {
    const [withGroup] = ask(ALLOWED_USER, line({ op: "probe", profile: "grouped" }), 1);
    expect(DISPATCH_REFUSALS).not.toContain(withGroup?.code);
    expect(receiptOf(l, withGroup?.receipt_id ?? "").args.principal?.groups).toContain(profileGroup);
    // Without its supplementary groups the same account cannot even reach the socket (the broker's group).
    const r = spawnSync(
      "setpriv",
      [
        `--reuid=${ALLOWED_USER}`,
        `--regid=${ALLOWED_USER}`,
        "--clear-groups",
        process.execPath,
        l.client,
        l.socket,
        "1",
      ],
      { input: line({ op: "probe", profile: "grouped" }), env: CHILD_ENV, encoding: "utf8", timeout: 20_000 },
    );
    expect(r.status).toBe(4);
    expect(r.stderr).toContain("EACCES");
    const [other_] = ask(OTHER_USER, line({ op: "probe", profile: "grouped" }), 1);
    expect(other_?.code).toBe("PRINCIPAL_NOT_ALLOWED");
  });

  it("ignores a request's claim to be someone else, and records the claim in the receipt", () => {
    const claim = {
      op: "probe",
      profile: "alpha",
      uid: allowed.uid,
      gid: allowed.gid,
      user: ALLOWED_USER,
      groups: [profileGroup],
    };
    const [answer] = ask(OTHER_USER, line(claim), 1);
    expect(answer?.code).toBe("PRINCIPAL_NOT_ALLOWED");
    const record = receiptOf(l, answer?.receipt_id ?? "");
    expect(record.args.principal?.uid).toBe(other.uid);
    expect(record.args.claimed_identity).toEqual({
      uid: allowed.uid,
      gid: allowed.gid,
      user: ALLOWED_USER,
      groups: JSON.stringify([profileGroup]),
    });
    // And status, asked with a claim, still answers for the socket's principal.
    const [status] = ask(OTHER_USER, line({ op: "status", uid: allowed.uid }), 1);
    const seen = status?.data as { principal: { uid: number }; profiles: unknown[] };
    expect(seen.principal.uid).toBe(other.uid);
    expect(seen.profiles).toEqual([]);
  });

  it("refuses before any operation runs, each with its own code", () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ op: "probe" }, "PROFILE_REQUIRED"],
      [{ op: "probe", profile: "nosuch" }, "PROFILE_NOT_FOUND"],
      [{ op: "probe", profile: "broken" }, "PROFILE_INVALID"],
      [{ op: "probe", profile: "disabled" }, "PROFILE_DISABLED"],
      [{ op: "probe", profile: "consent" }, "APPROVAL_REQUIRED"],
      [{ op: "probe", profile: "consent", approval: "signed-by-nobody" }, "APPROVAL_INVALID"],
      [{ op: "verify", profile: "alpha" }, "RUN_ID_REQUIRED"],
      [{ op: "rsync-dry-run", profile: "alpha" }, "RUN_ID_REQUIRED"],
      [{ op: "replicate", profile: "alpha", run_id: "run-1" }, "IDEMPOTENCY_KEY_REQUIRED"],
    ];
    const answers = ask(ALLOWED_USER, cases.map(([req]) => line(req)).join(""), cases.length);
    expect(answers.map((a) => a.code)).toEqual(cases.map(([, code]) => code));
    const approval = receiptOf(l, answers[5]?.receipt_id ?? "");
    expect(approval.args.approval_present).toBe(true);
    expect(approval.args.outcome).toBe("auth-required");
    expect(receiptOf(l, answers[8]?.receipt_id ?? "").tier).toBe(2);
  });

  it("leaves one chained receipt per answer, which --verify-audit accepts", () => {
    const records = receipts(l);
    const ids = new Set(records.map((r) => r.request_id));
    for (const id of sentReceipts) expect(ids.has(id)).toBe(true);
    for (const r of records) {
      expect(r.request_id).toMatch(/^r-[0-9a-f]{24}$/);
      expect(r.args.receipt_id).toBe(r.request_id);
      expect(r.tool).toMatch(/^infra\.(status|probe|rsync-dry-run|replicate|verify|invalid)$/);
    }
    expect(records.find((r) => r.args.code === "FRAME_TOO_LARGE")?.tool).toBe("infra.invalid");
    const verdict = verifyAudit(l.receipts);
    expect(verdict.code, verdict.stdout + verdict.stderr).toBe(0);
    // And an edited receipt is caught.
    const copy = join(base, "tampered.jsonl");
    writeFileSync(
      copy,
      readFileSync(l.receipts, "utf8").replace('"code":"PRINCIPAL_NOT_ALLOWED"', '"code":"OK"'),
    );
    expect(verifyAudit(copy).code).toBe(2);
  });

  it("stops on SIGTERM, removing its socket, and a restart continues the chain", async () => {
    expect(await stopBroker(broker as Broker)).toBe(0);
    expect(existsSync(l.socket)).toBe(false);
    broker = await startBroker([...entry(real, l), ...brokerArgs(l)], daemon);
    const [answer] = ask(ALLOWED_USER, line({ op: "status" }), 1);
    expect(answer?.code).toBe("OK");
    expect(verifyAudit(l.receipts).code).toBe(0);
  });

  it("refuses to start where another broker answers on the socket, and removes a stale one", async () => {
    const busy = runOnce([...entry(real, l), ...brokerArgs(l)], daemon);
    expect(busy.code).toBe(2);
    expect(busy.stderr).toContain(`${l.socket} is in use`);
    expect(await stopBroker(broker as Broker)).toBe(0);
    broker = null;
    // A socket left behind by a killed broker: nobody answers on it.
    const leftover = spawn(
      process.execPath,
      [
        "-e",
        `require("node:net").createServer().listen(${JSON.stringify(l.socket)}, () => console.log("up"))`,
      ],
      { uid: daemon.uid, gid: daemon.gid, stdio: ["ignore", "pipe", "inherit"], env: CHILD_ENV },
    );
    await new Promise((resolve) => leftover.stdout?.once("data", resolve));
    leftover.kill("SIGKILL");
    await new Promise((resolve) => leftover.once("exit", resolve));
    expect(lstatSync(l.socket).isSocket()).toBe(true);
    broker = await startBroker([...entry(real, l), ...brokerArgs(l)], daemon);
    expect(ask(ALLOWED_USER, line({ op: "status" }), 1)[0]?.code).toBe("OK");
  });

  it("does not perform an operation whose receipt cannot be written", async () => {
    // A directory where the receipts file was: the writer refuses it, so nothing may run.
    await stopBroker(broker as Broker);
    broker = await startBroker([...entry(real, l), ...brokerArgs(l)], daemon);
    rmSync(l.receipts);
    mkdirSync(l.receipts);
    const [answer] = request(l, ALLOWED_USER, line({ op: "probe", profile: "alpha" }), 1);
    expect(answer?.code).toBe("RECEIPT_UNAVAILABLE");
    expect(answer?.outcome).toBe("blocked");
    // The receipt that could not reach the file went to the broker's stderr instead.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(broker?.stderr()).toContain(answer?.receipt_id);
    rmSync(l.receipts, { recursive: true });
  });
});

describe.skipIf(!IS_ROOT)("infra broker start-up refusals", () => {
  let base: string;
  let daemon: Account;
  let real = false;

  beforeAll(async () => {
    base = mkdtempSync(join(tmpdir(), "relay-infra-refusals-"));
    chmodSync(base, 0o755);
    real = await realPartsBuilt(base);
    daemon = ensureUser(DAEMON_USER, []);
  });

  afterAll(() => {
    removeAccounts();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  function fresh(name: string): Layout {
    const dir = join(base, name);
    mkdirSync(dir, { mode: 0o755 });
    return layout(dir, daemon);
  }

  function start(l: Layout, account: Account | null) {
    return runOnce([...entry(real, l), ...brokerArgs(l)], account);
  }

  it("refuses to start as root", () => {
    const l = fresh("root");
    chownSync(l.runDir, 0, 0);
    chownSync(l.stateDir, 0, 0);
    const r = start(l, null);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("does not run as root");
    expect(existsSync(l.socket)).toBe(false);
  });

  it.each([
    [
      "0777",
      (l: Layout) => chmodSync(l.runDir, 0o777),
      /socket directory .*run has mode 0777; it must be 0700 or 0750/,
    ],
    ["0770", (l: Layout) => chmodSync(l.runDir, 0o770), /has mode 0770/],
    [
      "owned by root",
      (l: Layout) => chownSync(l.runDir, 0, 0),
      /socket directory .*run is owned by uid 0, not by the broker's uid \d+ \(owner uid 0, mode 0750\)/,
    ],
    [
      "a symbolic link",
      (l: Layout) => {
        const real_ = `${l.runDir}-real`;
        mkdirSync(real_, { mode: 0o700 });
        chownSync(real_, daemon.uid, daemon.gid);
        rmSync(l.runDir, { recursive: true });
        symlinkSync(real_, l.runDir);
      },
      /socket directory .*run is a symbolic link, not a directory/,
    ],
    [
      "missing",
      (l: Layout) => rmSync(l.runDir, { recursive: true }),
      /socket directory .*run does not exist/,
    ],
    [
      "a state directory of 0755",
      (l: Layout) => chmodSync(l.stateDir, 0o755),
      /state directory .*state has mode 0755; it must be 0700/,
    ],
    [
      "a state directory owned by root",
      (l: Layout) => chownSync(l.stateDir, 0, 0),
      /state directory .*state is owned by uid 0/,
    ],
  ])(
    "refuses a socket or state directory that is %s, naming path, owner and mode",
    (name, spoil, message) => {
      const l = fresh(name.replace(/\W+/g, "-"));
      spoil(l);
      const r = start(l, daemon);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(existsSync(l.socket)).toBe(false);
    },
  );

  it("refuses a file in the socket's place that is not a socket, and leaves it there", () => {
    const l = fresh("file-in-the-way");
    writeFileSync(l.socket, "operator's file");
    chownSync(l.socket, daemon.uid, daemon.gid);
    const r = start(l, daemon);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${l.socket} is a regular file, not a socket; it is not removed`);
    expect(readFileSync(l.socket, "utf8")).toBe("operator's file");
  });

  it.each([
    [["--bogus"], "unknown argument: --bogus"],
    [["--config"], "--config needs a path"],
    [["--socket", "/tmp/x.sock", "--state", "/tmp"], "--config DIR is required"],
    [
      ["--config", "/tmp", "--state", "/tmp"],
      "--socket PATH is required (no $RUNTIME_DIRECTORY to default to)",
    ],
    [["--config", "/tmp", "--config", "/tmp"], "--config is given more than once"],
    [["stray"], "unknown argument: stray"],
  ])("refuses the arguments %j with exit 2 and its usage", (args, message) => {
    const r = runOnce([SERVER_ENTRY, "infra-broker", ...args], daemon);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`relay_shell infra-broker: ${message}\nusage: relay-shell infra-broker`);
  });

  it("prints its usage with --help", () => {
    const r = runOnce([SERVER_ENTRY, "infra-broker", "--help"], daemon);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("usage: relay-shell infra-broker --config DIR");
  });
});
