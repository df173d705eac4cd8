import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InfraResponse, parseResponse } from "../../src/infra-protocol/index.js";
import {
  accountTool,
  announceInfraSkip,
  createInfraFixture,
  INFRA_SKIP_REASON,
  type InfraDaemon,
  type InfraFixture,
  infraExchange,
  infraFlood,
  type RequestFrame,
  type SystemUser,
} from "../fixtures/infra.js";
import { SERVER_ENTRY } from "../helpers/server.js";

/**
 * The broker daemon as operators run it: the built CLI, started as its own
 * unprivileged account, spoken to over its socket by clients running as
 * other local accounts. Every check of the principal is the kernel's
 * (SO_PEERCRED, /proc groups), every receipt is read back from the file.
 */

announceInfraSkip("infra broker daemon");

/** A group that allows one profile; only the fixture's client account gets it, as a supplementary group. */
const PROFILE_GROUP = "relayinfg";
const ROOT: SystemUser = { name: "root", uid: 0, gid: 0 };

/** Stop with SIGTERM and report how the process ended. */
async function stopWithCode(daemon: InfraDaemon): Promise<number | null> {
  await daemon.stop();
  return daemon.child.exitCode;
}

/** Send frames on one connection (as root, or as `user` with its groups) and read the typed answers. */
async function exchange(
  fx: InfraFixture,
  frames: RequestFrame[],
  user?: SystemUser,
): Promise<InfraResponse[]> {
  const raw = await infraExchange(fx.socketPath, frames, user ? { user } : {});
  expect(raw).toHaveLength(frames.length);
  return raw.map((value) => {
    const response = parseResponse(JSON.stringify(value));
    expect(response, JSON.stringify(value)).not.toBeNull();
    return response as InfraResponse;
  });
}

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

function receiptsPath(fx: InfraFixture): string {
  return join(fx.stateDir, "receipts.jsonl");
}

function receipts(fx: InfraFixture): ReceiptRecord[] {
  return readFileSync(receiptsPath(fx), "utf8")
    .split("\n")
    .filter((t) => t !== "")
    .map((t) => JSON.parse(t) as ReceiptRecord);
}

function receiptOf(fx: InfraFixture, id: string): ReceiptRecord {
  const found = receipts(fx).filter((r) => r.request_id === id);
  expect(found).toHaveLength(1);
  return found[0] as ReceiptRecord;
}

function cli(args: string[], user: SystemUser | null) {
  const r = spawnSync(process.execPath, [SERVER_ENTRY, ...args], {
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C.UTF-8" },
    encoding: "utf8",
    timeout: 20_000,
    ...(user ? { uid: user.uid, gid: user.gid } : {}),
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function verifyAudit(path: string) {
  return cli(["--verify-audit", "--audit-path", path], null);
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

describe.skipIf(INFRA_SKIP_REASON !== null)("infra broker daemon", () => {
  let fx: InfraFixture;
  let broker: InfraDaemon | null = null;
  let profileGroup = 0;
  let createdGroup = false;
  const answered: string[] = [];
  /** Every response line received, for the search for key bytes. */
  const transcript: string[] = [];

  /** `exchange`, remembering every receipt id it was answered with. */
  async function ask(frames: RequestFrame[], user?: SystemUser): Promise<InfraResponse[]> {
    const responses = await exchange(fx, frames, user);
    for (const r of responses) {
      answered.push(r.receipt_id);
      transcript.push(JSON.stringify(r));
    }
    return responses;
  }

  beforeAll(async () => {
    fx = await createInfraFixture();
    if (spawnSync("getent", ["group", PROFILE_GROUP]).status !== 0) {
      accountTool("groupadd", ["--system", PROFILE_GROUP]);
      createdGroup = true;
    }
    profileGroup = Number(
      execFileSync("getent", ["group", PROFILE_GROUP], { encoding: "utf8" }).split(":")[2],
    );
    accountTool("usermod", ["-a", "-G", PROFILE_GROUP, fx.clientUser.name]);
    const client = { uids: [fx.clientUser.uid], gids: [] };
    fx.writeProfile("alpha", { allowed_principals: client });
    fx.writeProfile("grouped", { allowed_principals: { uids: [], gids: [profileGroup] } });
    fx.writeProfile("disabled", { enabled: false, allowed_principals: client });
    fx.writeProfile("consent", { approval: "consent", allowed_principals: client });
    writeFileSync(join(fx.configDir, "broken.json"), "{ not json", { mode: 0o644 });
    broker = await fx.startDaemon();
  }, 90_000);

  afterAll(async () => {
    await broker?.stop();
    if (fx) {
      accountTool("gpasswd", ["-d", fx.clientUser.name, PROFILE_GROUP], false);
      if (createdGroup) accountTool("groupdel", [PROFILE_GROUP], false);
      fx.close();
    }
  });

  it("starts as its own account, reports its socket, its profiles and each broken one", () => {
    const out = broker?.stderr() ?? "";
    expect(out).toContain(`listening on ${fx.socketPath} (4 profile(s) loaded, 1 broken)`);
    expect(out).toMatch(/broken profile broken \(.*broken\.json\): .+/);
    const socket = lstatSync(fx.socketPath);
    expect(socket.isSocket()).toBe(true);
    expect(socket.mode & 0o777).toBe(0o660);
    expect(socket.uid).toBe(fx.daemonUser.uid);
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
    expect(readFileSync(`/proc/${pid}/net/unix`, "utf8")).toContain(fx.socketPath);
  });

  it("status shows the profiles the principal may use, every broken profile and the broker's facts", async () => {
    const [mine] = await ask([{ op: "status" }], fx.clientUser);
    expect(mine?.outcome).toBe("ok");
    const data = mine?.data as {
      broker: Record<string, unknown>;
      principal: { uid: number; groups: number[] };
      profiles: { id: string }[];
      broken: { id: string; problems: string[] }[];
    };
    expect(data.profiles.map((p) => p.id)).toEqual(["alpha", "consent", "disabled", "grouped"]);
    expect(data.broken.map((b) => b.id)).toEqual(["broken"]);
    expect(data.broken[0]?.problems.length).toBeGreaterThan(0);
    expect(data.principal.uid).toBe(fx.clientUser.uid);
    expect(data.principal.groups).toContain(profileGroup);
    expect(data.broker).toMatchObject({
      protocol: 1,
      uid: fx.daemonUser.uid,
      socket: fx.socketPath,
      profiles: 4,
      broken: 1,
    });
    expect(JSON.stringify(mine)).not.toContain(fx.keyText().trim().split("\n")[1] ?? "no key");
    const [theirs] = await ask([{ op: "status" }], fx.otherUser);
    const seen = theirs?.data as { profiles: unknown[]; broken?: unknown[]; broker?: unknown };
    expect(seen.profiles).toEqual([]);
    // A caller no profile lists is not shown the broken profile's problems (paths, modes) or the broker.
    expect(seen.broken).toBeUndefined();
    expect(seen.broker).toBeUndefined();
  });

  it("answers a 1 MiB line and malformed JSON with typed errors, and the same connection goes on", async () => {
    const answers = await ask(
      [
        `{"op":"status","pad":"${"x".repeat(1 << 20)}"}`,
        { op: "status" },
        "{ this is not json",
        { op: "status" },
        { op: "status", profile: "../etc" },
        { op: "status", host: "evil.example" },
        { op: "status" },
      ],
      fx.clientUser,
    );
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
    // The broker is still up for everyone else.
    expect((await ask([{ op: "status" }], fx.otherUser))[0]?.code).toBe("OK");
  });

  it("takes the principal from the socket: a second local user is refused, the listed one passes dispatch", async () => {
    const [refused] = await ask([{ op: "probe", profile: "alpha" }], fx.otherUser);
    expect(refused?.code).toBe("PRINCIPAL_NOT_ALLOWED");
    expect(refused?.outcome).toBe("blocked");
    const [passed] = await ask([{ op: "probe", profile: "alpha" }], fx.clientUser);
    expect(DISPATCH_REFUSALS).not.toContain(passed?.code);
    const record = receiptOf(fx, refused?.receipt_id ?? "");
    expect(record.args.principal?.uid).toBe(fx.otherUser.uid);
    expect(record.tool).toBe("infra.probe");
    expect(record.denied).toBe(true);
    expect(receiptOf(fx, passed?.receipt_id ?? "").args.principal?.uid).toBe(fx.clientUser.uid);
  });

  it("allows by a supplementary group the kernel reports, and not without it", async () => {
    const [withGroup] = await ask([{ op: "probe", profile: "grouped" }], fx.clientUser);
    expect(DISPATCH_REFUSALS).not.toContain(withGroup?.code);
    expect(receiptOf(fx, withGroup?.receipt_id ?? "").args.principal?.groups).toContain(profileGroup);
    // Without its supplementary groups the account cannot even reach the socket (the broker's group).
    const probe = `require("node:net").connect(${JSON.stringify(fx.socketPath)})
      .on("connect", () => process.exit(0)).on("error", (e) => { process.stderr.write(e.code); process.exit(3); })`;
    const bare = spawnSync(
      "setpriv",
      [
        `--reuid=${fx.clientUser.uid}`,
        `--regid=${fx.clientUser.gid}`,
        "--clear-groups",
        process.execPath,
        "-e",
        probe,
      ],
      { encoding: "utf8", timeout: 20_000 },
    );
    expect(bare.status).toBe(3);
    expect(bare.stderr).toContain("EACCES");
    const [other] = await ask([{ op: "probe", profile: "grouped" }], fx.otherUser);
    expect(other?.code).toBe("PRINCIPAL_NOT_ALLOWED");
  });

  it("ignores a request's claim to be someone else, and records the claim in the receipt", async () => {
    const claim = {
      op: "probe",
      profile: "alpha",
      uid: fx.clientUser.uid,
      gid: fx.clientUser.gid,
      user: fx.clientUser.name,
      groups: [profileGroup],
    };
    const [answer] = await ask([claim], fx.otherUser);
    expect(answer?.code).toBe("PRINCIPAL_NOT_ALLOWED");
    const record = receiptOf(fx, answer?.receipt_id ?? "");
    expect(record.args.principal?.uid).toBe(fx.otherUser.uid);
    expect(record.args.claimed_identity).toEqual({
      uid: fx.clientUser.uid,
      gid: fx.clientUser.gid,
      user: fx.clientUser.name,
      groups: JSON.stringify([profileGroup]),
    });
    // Status, asked with a claim, still answers for the socket's principal.
    const [status] = await ask([{ op: "status", uid: fx.clientUser.uid }], fx.otherUser);
    const seen = status?.data as { principal: { uid: number }; profiles: unknown[] };
    expect(seen.principal.uid).toBe(fx.otherUser.uid);
    expect(seen.profiles).toEqual([]);
    // A caller no profile lists learns that, and nothing of the broker or its broken profiles.
    expect(status?.message).toBe(`no profile is usable by uid ${fx.otherUser.uid}`);
    expect(Object.keys(status?.data ?? {}).sort()).toEqual(["principal", "profiles"]);
    expect(JSON.stringify(status)).not.toContain(fx.configDir);
  });

  /** An approval in the wire's shape whose payload nobody signed. */
  const UNSIGNED = {
    request: "c-0001",
    nonce: "0".repeat(32),
    payload: "{}",
    signature: "-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----\n",
    signer: "nobody@example.org",
  };

  it("refuses before any operation runs, each with its own code", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ op: "probe" }, "PROFILE_REQUIRED"],
      [{ op: "probe", profile: "nosuch" }, "PROFILE_NOT_FOUND"],
      [{ op: "probe", profile: "broken" }, "PROFILE_INVALID"],
      [{ op: "probe", profile: "disabled" }, "PROFILE_DISABLED"],
      [{ op: "rsync-dry-run", profile: "consent", run_id: "run-1" }, "APPROVAL_REQUIRED"],
      [{ op: "rsync-dry-run", profile: "consent", run_id: "run-1", approval: UNSIGNED }, "APPROVAL_INVALID"],
      [{ op: "verify", profile: "alpha" }, "RUN_ID_REQUIRED"],
      [{ op: "rsync-dry-run", profile: "alpha" }, "RUN_ID_REQUIRED"],
      [{ op: "replicate", profile: "alpha", run_id: "run-1" }, "IDEMPOTENCY_KEY_REQUIRED"],
    ];
    const answers = await ask(
      cases.map(([req]) => req),
      fx.clientUser,
    );
    expect(answers.map((a) => a.code)).toEqual(cases.map(([, code]) => code));
    const approval = receiptOf(fx, answers[5]?.receipt_id ?? "");
    expect(approval.args.approval_present).toBe(true);
    expect(approval.args.outcome).toBe("auth-required");
    expect(receiptOf(fx, answers[8]?.receipt_id ?? "").tier).toBe(2);
  });

  it("leaves one chained receipt per answer, which --verify-audit accepts", () => {
    const records = receipts(fx);
    const ids = new Set(records.map((r) => r.request_id));
    for (const id of answered) expect(ids.has(id)).toBe(true);
    for (const r of records) {
      expect(r.request_id).toMatch(/^r-[0-9a-f]{24}$/);
      expect(r.args.receipt_id).toBe(r.request_id);
      expect(r.tool).toMatch(/^infra\.(status|probe|rsync-dry-run|replicate|verify|invalid)$/);
    }
    expect(records.find((r) => r.args.code === "FRAME_TOO_LARGE")?.tool).toBe("infra.invalid");
    const verdict = verifyAudit(receiptsPath(fx));
    expect(verdict.code, verdict.stdout + verdict.stderr).toBe(0);
    // And an edited receipt is caught.
    const copy = join(fx.root, "tampered.jsonl");
    writeFileSync(
      copy,
      readFileSync(receiptsPath(fx), "utf8").replace('"code": "PRINCIPAL_NOT_ALLOWED"', '"code": "OK"'),
    );
    expect(verifyAudit(copy).code).toBe(2);
  });

  it("never lets the key's bytes into a response, a receipt or its log", async () => {
    // A probe the client may run reads the credential (the real transport) before any of this is searched.
    await ask([{ op: "probe", profile: "alpha" }], fx.clientUser);
    const body = fx
      .keyText()
      .split("\n")
      .filter((row) => row !== "" && !row.startsWith("-----"));
    expect(body.length).toBeGreaterThan(0);
    const written = [transcript.join("\n"), readFileSync(receiptsPath(fx), "utf8"), broker?.stderr() ?? ""];
    for (const text of written) for (const row of body) expect(text).not.toContain(row);
  });

  it("bounds what a stranger's flood costs and answers the allowed principal's status meanwhile", async () => {
    const before = lstatSync(receiptsPath(fx)).size;
    // Eight connections of `{}` lines for four seconds from an account no profile lists.
    const flooding = infraFlood(fx.socketPath, fx.otherUser, { connections: 8, ms: 4000 });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      const asked = performance.now();
      const [answer] = await ask([{ op: "status" }], fx.clientUser);
      waits.push(performance.now() - asked);
      expect(answer?.code).toBe("OK");
      expect((answer?.data as { profiles?: unknown[] } | undefined)?.profiles?.length).toBeGreaterThan(0);
    }
    const poured = await flooding;
    expect(poured).toBeGreaterThan(1 << 20);
    // A status costs a client process start (runuser, node): well under two seconds, flood or not.
    expect(Math.max(...waits)).toBeLessThan(2000);
    // The summaries' window closes, then the receipts that flood cost are counted.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const grown = lstatSync(receiptsPath(fx)).size - before;
    expect(grown).toBeLessThan(256 * 1024);
    const summaries = receipts(fx).filter(
      (r) =>
        r.args.principal?.uid === fx.otherUser.uid && (r.args as { burst?: unknown }).burst !== undefined,
    );
    expect(summaries.length).toBeGreaterThan(0);
    expect(verifyAudit(receiptsPath(fx)).code).toBe(0);
  }, 30_000);

  it("stops on SIGTERM, removing its socket, and a restart continues the chain", async () => {
    expect(await stopWithCode(broker as InfraDaemon)).toBe(0);
    expect(existsSync(fx.socketPath)).toBe(false);
    broker = await fx.startDaemon();
    expect((await ask([{ op: "status" }]))[0]?.code).toBe("OK");
    expect(verifyAudit(receiptsPath(fx)).code).toBe(0);
  });

  it("refuses to start where another broker answers on the socket, and removes a stale one", async () => {
    const busy = await fx.startDaemon({ expectExit: true });
    expect(busy.child.exitCode).toBe(2);
    expect(busy.stderr()).toContain(`${fx.socketPath} is in use`);
    expect(await stopWithCode(broker as InfraDaemon)).toBe(0);
    broker = null;
    // A socket left behind by a killed broker: nobody answers on it.
    const leftover = spawn(
      process.execPath,
      [
        "-e",
        `require("node:net").createServer().listen(${JSON.stringify(fx.socketPath)}, () => console.log("up"))`,
      ],
      { uid: fx.daemonUser.uid, gid: fx.daemonUser.gid, stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise((resolve) => leftover.stdout?.once("data", resolve));
    leftover.kill("SIGKILL");
    await new Promise((resolve) => leftover.once("exit", resolve));
    expect(lstatSync(fx.socketPath).isSocket()).toBe(true);
    broker = await fx.startDaemon();
    expect((await ask([{ op: "status" }]))[0]?.code).toBe("OK");
  });

  it("does not perform an operation whose receipt cannot be written", async () => {
    // A directory where the receipts file was: the writer refuses it, so nothing may run.
    rmSync(receiptsPath(fx));
    mkdirSync(receiptsPath(fx));
    try {
      const [answer] = await exchange(fx, [{ op: "probe", profile: "alpha" }], fx.clientUser);
      expect(answer?.code).toBe("RECEIPT_UNAVAILABLE");
      expect(answer?.outcome).toBe("blocked");
      // The receipt that could not reach the file went to the broker's stderr instead.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(broker?.stderr()).toContain(answer?.receipt_id);
    } finally {
      rmSync(receiptsPath(fx), { recursive: true });
    }
  });
});

describe.skipIf(INFRA_SKIP_REASON !== null)("infra broker start-up refusals", () => {
  let fx: InfraFixture;

  beforeAll(async () => {
    fx = await createInfraFixture();
  }, 90_000);

  afterAll(() => fx?.close());

  interface Dirs {
    runDir: string;
    socket: string;
    stateDir: string;
  }

  /** A socket and state directory of the broker's own, as they should be, for one case to spoil. */
  function fresh(name: string): Dirs {
    const base = join(fx.root, "cases", name);
    mkdirSync(base, { recursive: true, mode: 0o755 });
    const own = (path: string, mode: number) => {
      mkdirSync(path, { mode });
      chmodSync(path, mode);
      chownSync(path, fx.daemonUser.uid, fx.daemonUser.gid);
    };
    const dirs = {
      runDir: join(base, "run"),
      socket: join(base, "run", "broker.sock"),
      stateDir: join(base, "state"),
    };
    own(dirs.runDir, 0o750);
    own(dirs.stateDir, 0o700);
    return dirs;
  }

  /** Always the built CLI: every refusal here comes before the profiles are read. */
  async function start(dirs: Dirs, user?: SystemUser): Promise<InfraDaemon> {
    return fx.startDaemon({
      expectExit: true,
      replaceArgs: ["--config", fx.configDir, "--socket", dirs.socket, "--state", dirs.stateDir],
      ...(user ? { user } : {}),
    });
  }

  it("removes a key copy a crashed broker left before anything can refuse the start", async () => {
    const dirs = fresh("stale-key");
    const stale = join(dirs.stateDir, ".ssh-home-crashed");
    mkdirSync(stale, { mode: 0o700 });
    writeFileSync(join(stale, "id"), fx.keyText(), { mode: 0o600 });
    chownSync(stale, fx.daemonUser.uid, fx.daemonUser.gid);
    chownSync(join(stale, "id"), fx.daemonUser.uid, fx.daemonUser.gid);
    // The start is refused later, at the profiles: the key copy must already be gone.
    const daemon = await fx.startDaemon({
      expectExit: true,
      replaceArgs: [
        "--config",
        join(fx.root, "no-such-profiles"),
        "--socket",
        dirs.socket,
        "--state",
        dirs.stateDir,
      ],
    });
    expect(daemon.child.exitCode).toBe(2);
    expect(daemon.stderr()).toContain("cannot read the profiles");
    expect(existsSync(stale)).toBe(false);
  });

  it("refuses to start as root", async () => {
    const dirs = fresh("root");
    chownSync(dirs.runDir, 0, 0);
    chownSync(dirs.stateDir, 0, 0);
    const daemon = await start(dirs, ROOT);
    expect(daemon.child.exitCode).toBe(2);
    expect(daemon.stderr()).toContain("does not run as root");
    expect(existsSync(dirs.socket)).toBe(false);
  });

  it.each([
    [
      "0777",
      (d: Dirs) => chmodSync(d.runDir, 0o777),
      /socket directory .*run has mode 0777; it must be 0700 or 0750/,
    ],
    ["0770", (d: Dirs) => chmodSync(d.runDir, 0o770), /has mode 0770/],
    [
      "owned by root",
      (d: Dirs) => chownSync(d.runDir, 0, 0),
      /socket directory .*run is owned by uid 0, not by the broker's uid \d+ \(owner uid 0, mode 0750\)/,
    ],
    [
      "a symbolic link",
      (d: Dirs) => {
        const target = `${d.runDir}-real`;
        mkdirSync(target, { mode: 0o700 });
        chownSync(target, fx.daemonUser.uid, fx.daemonUser.gid);
        rmSync(d.runDir, { recursive: true });
        symlinkSync(target, d.runDir);
      },
      /socket directory .*run is a symbolic link, not a directory/,
    ],
    ["missing", (d: Dirs) => rmSync(d.runDir, { recursive: true }), /socket directory .*run does not exist/],
    [
      "a state directory of 0755",
      (d: Dirs) => chmodSync(d.stateDir, 0o755),
      /state directory .*state has mode 0755; it must be 0700/,
    ],
    [
      "a state directory owned by root",
      (d: Dirs) => chownSync(d.stateDir, 0, 0),
      /state directory .*state is owned by uid 0/,
    ],
  ])(
    "refuses a socket or state directory that is %s, naming path, owner and mode",
    async (name, spoil, message) => {
      const dirs = fresh(name.replace(/\W+/g, "-"));
      spoil(dirs);
      const daemon = await start(dirs);
      expect(daemon.child.exitCode).toBe(2);
      expect(daemon.stderr()).toMatch(message);
      expect(existsSync(dirs.socket)).toBe(false);
    },
  );

  it("takes the socket and state directories systemd names when the flags are not given", async () => {
    const dirs = fresh("systemd-defaults");
    chmodSync(dirs.runDir, 0o777);
    chmodSync(dirs.stateDir, 0o755);
    const daemon = await fx.startDaemon({
      expectExit: true,
      replaceArgs: ["--config", fx.configDir],
      env: { RUNTIME_DIRECTORY: dirs.runDir, STATE_DIRECTORY: dirs.stateDir },
    });
    expect(daemon.child.exitCode).toBe(2);
    expect(daemon.stderr()).toContain(`socket directory ${dirs.runDir} has mode 0777`);
    expect(daemon.stderr()).toContain(`state directory ${dirs.stateDir} has mode 0755`);
    const relative = await fx.startDaemon({
      expectExit: true,
      replaceArgs: ["--config", fx.configDir],
      env: { RUNTIME_DIRECTORY: "run", STATE_DIRECTORY: dirs.stateDir },
    });
    expect(relative.child.exitCode).toBe(2);
    expect(relative.stderr()).toContain('RUNTIME_DIRECTORY: expected an absolute directory path, got "run"');
  });

  it("refuses a file in the socket's place that is not a socket, and leaves it there", async () => {
    const dirs = fresh("file-in-the-way");
    writeFileSync(dirs.socket, "operator's file");
    chownSync(dirs.socket, fx.daemonUser.uid, fx.daemonUser.gid);
    const daemon = await start(dirs);
    expect(daemon.child.exitCode).toBe(2);
    expect(daemon.stderr()).toContain(`${dirs.socket} is a regular file, not a socket; it is not removed`);
    expect(readFileSync(dirs.socket, "utf8")).toBe("operator's file");
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
    [["--allowed-signers"], "--allowed-signers needs a path"],
    [
      ["--allowed-signers", "/tmp/a", "--allowed-signers", "/tmp/b"],
      "--allowed-signers is given more than once",
    ],
    [["stray"], "unknown argument: stray"],
  ])("refuses the arguments %j with exit 2 and its usage", (args, message) => {
    const r = cli(["infra-broker", ...args], fx.daemonUser);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`relay_shell infra-broker: ${message}\nusage: relay-shell infra-broker`);
  });

  it("prints its usage with --help", () => {
    const r = cli(["infra-broker", "--help"], fx.daemonUser);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("usage: relay-shell infra-broker --config DIR");
  });
});
