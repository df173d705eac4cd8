import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  chownSync,
  closeSync,
  copyFileSync,
  existsSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cryptoIds, RelayError, silentLogger, systemClock } from "../../src/core/index.js";
import { createProcessRunner, type ProcessRequest, type ProcessRunner } from "../../src/exec/index.js";
import { createRemote, loadProfiles, type RemoteOptions } from "../../src/infra/index.js";
import { createOperations } from "../../src/infra/operations.js";
import { describeIssues, profileFileSchema } from "../../src/infra/profile-schema.js";
import type { Profile, Remote, RemoteResult } from "../../src/infra/types.js";
import { createInfraFixture, INFRA_SKIP_REASON, type InfraFixture } from "../fixtures/infra.js";
import {
  announceSkip,
  createSshFixture,
  SSHD_MISSING,
  type Sshd,
  type SshFixture,
} from "../fixtures/sshd.js";
import { REPO_ROOT } from "../helpers/server.js";

announceSkip("INFRA-1 ssh/rsync transport suite");

const RRSYNC = "/usr/bin/rrsync";
const SKIP = SSHD_MISSING || !existsSync(RRSYNC) || !existsSync("/usr/bin/rsync");
if (!SSHD_MISSING && SKIP)
  process.stderr.write(`[skipped] INFRA-1 transport suite: ${RRSYNC} or rsync missing\n`);

/** Every file under `root` with its SHA-256, by relative path. */
function hashes(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (lstatSync(path).isDirectory()) walk(path);
      else out[relative(root, path)] = createHash("sha256").update(readFileSync(path)).digest("hex");
    }
  };
  walk(root);
  return out;
}

/** Every file under `root`, read whole (for the search of key bytes). */
function allFiles(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

/** The runner the daemon uses, recording what each child was given and checking its key file while it runs. */
function recordingRunner(inner: ProcessRunner) {
  const requests: ProcessRequest[] = [];
  const keyModes: string[] = [];
  const runner: ProcessRunner = {
    run(request, signal) {
      requests.push(request);
      const shell = request.argv?.[request.argv.indexOf("-e") + 1] ?? "";
      const words = shell.split(" ");
      const keyFile = words[words.indexOf("-i") + 1];
      if (request.argv?.includes("-e") && keyFile !== undefined) {
        keyModes.push(
          `${(statSync(keyFile).mode & 0o777).toString(8)} ${(statSync(dirname(keyFile)).mode & 0o777).toString(8)}`,
        );
      }
      return inner.run(request, signal);
    },
    active: () => inner.active(),
    killAll: () => inner.killAll(),
  };
  return { runner, requests, keyModes };
}

const DEPLOY = join(REPO_ROOT, "deploy", "infra-broker");

/** The one key line of the documented receiver-side authorized_keys. */
function documentedKeyLine(): string {
  const lines = readFileSync(join(DEPLOY, "receiver-authorized_keys"), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "" && !l.startsWith("#"));
  expect(lines).toHaveLength(1);
  return lines[0] ?? "";
}

describe("the deployment examples", () => {
  it("the example profile passes the profile schema", () => {
    const parsed = profileFileSchema.safeParse(
      JSON.parse(readFileSync(join(DEPLOY, "example-profile.json"), "utf8")),
    );
    expect(parsed.success ? [] : describeIssues(parsed.error)).toEqual([]);
  });

  it("the unit starts the broker with the flags it has and loads the key as a credential", () => {
    const unit = readFileSync(join(DEPLOY, "relay-shell-infra-broker.service"), "utf8");
    expect(unit).toMatch(
      /^ExecStart=.* infra-broker --config \S+ --socket \/run\/relay-infra\/\S+ --state \/var\/lib\/relay-infra$/m,
    );
    expect(unit).not.toMatch(/--allow-key-file/);
    for (const line of [
      "LoadCredential=backup-key:",
      "RuntimeDirectory=relay-infra",
      "StateDirectory=relay-infra",
      "ProtectSystem=strict",
      "NoNewPrivileges=yes",
      "PrivateTmp=yes",
      "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
      "SystemCallFilter=@system-service",
    ]) {
      expect(unit).toContain(`\n${line}`);
    }
  });
});

describe.skipIf(SKIP)("INFRA-1 transport against a real sshd with rrsync as the forced command", () => {
  let fx: SshFixture;
  let sshd: Sshd;
  let base: string;
  let receiver: string;
  let pinDir: string;
  let pin: string;
  let creds: string;
  let stateDir: string;
  let sources: string;
  let profile: Profile;
  let recorder: ReturnType<typeof recordingRunner>;
  let remote: Remote;
  let keyLines: string[];
  const results: RemoteResult[] = [];

  const record = async (p: Promise<RemoteResult>): Promise<RemoteResult> => {
    const result = await p;
    results.push(result);
    return result;
  };

  function makeRemote(options: Partial<RemoteOptions> = {}): Remote {
    return createRemote(
      { stateDir, runner: recorder.runner, clock: systemClock, ids: cryptoIds, logger: silentLogger },
      { credentialsDirectory: creds, keyFileDirectory: null, ...options },
    );
  }

  function writePin(port = sshd.port, key = sshd.hostKeyPublic()): void {
    writeFileSync(pin, `[127.0.0.1]:${port} ${key}\n`, { mode: 0o644 });
  }

  beforeAll(async () => {
    fx = createSshFixture();
    base = mkdtempSync(join(tmpdir(), "relay-infra-remote-"));
    chmodSync(base, 0o755);
    receiver = join(base, "receiver");
    mkdirSync(join(receiver, "backups"), { recursive: true, mode: 0o755 });
    if (process.geteuid?.() === 0) {
      const uid = Number(execFileSync("id", ["-u", fx.user], { encoding: "utf8" }).trim());
      chownSync(receiver, uid, uid);
      chownSync(join(receiver, "backups"), uid, uid);
    }
    // The receiver is set up with the documented authorized_keys line, its directory and key swapped in.
    const keys = join(base, "rrsync_authorized_keys");
    const publicKey = readFileSync(`${fx.clientKey}.pub`, "utf8").trim();
    const documented = documentedKeyLine();
    expect(documented).toMatch(
      /^command="\/usr\/bin\/rrsync -no-del -no-overwrite \/srv\/relay-receiver",restrict ssh-/,
    );
    const line = documented
      .replace("/srv/relay-receiver", receiver)
      .replace(/ssh-ed25519 \S+ \S+$/, publicKey);
    writeFileSync(keys, `${line}\n`, { mode: 0o644 });
    sshd = await fx.start({ extraConfig: () => `Match User ${fx.user}\n  AuthorizedKeysFile ${keys}\n` });

    pinDir = join(base, "pins");
    mkdirSync(pinDir, { mode: 0o755 });
    pin = join(pinDir, "known_hosts");
    writePin();
    creds = join(base, "credentials");
    mkdirSync(creds, { mode: 0o700 });
    copyFileSync(fx.clientKey, join(creds, "backup-key"));
    chmodSync(join(creds, "backup-key"), 0o600);
    copyFileSync(fx.wrongKey, join(creds, "wrong-key"));
    chmodSync(join(creds, "wrong-key"), 0o600);
    keyLines = readFileSync(fx.clientKey, "utf8")
      .split("\n")
      .filter((line) => line.length >= 20 && !line.startsWith("-----"));
    expect(keyLines.length).toBeGreaterThan(0);

    sources = join(base, "source");
    mkdirSync(join(sources, "site", "assets"), { recursive: true });
    writeFileSync(join(sources, "site", "index.html"), "<h1>hello</h1>\n");
    writeFileSync(join(sources, "site", "assets", "app.js"), "console.log(1)\n".repeat(1000));
    writeFileSync(join(sources, "site", "empty"), "");

    const profiles = join(base, "profiles");
    mkdirSync(profiles, { mode: 0o755 });
    writeFileSync(
      join(profiles, "backup.json"),
      JSON.stringify({
        host: "127.0.0.1",
        port: sshd.port,
        user: fx.user,
        source_roots: [join(sources, "site")],
        remote_root: "backups",
        known_hosts: pin,
        credential: "backup-key",
        limits: { timeout_seconds: 60 },
        allowed_principals: { uids: [0] },
        approval: "none",
        receiver: "rrsync",
      }),
      { mode: 0o644 },
    );
    const set = loadProfiles(profiles, { daemonUid: 4242 });
    expect([...set.broken.values()]).toEqual([]);
    profile = set.profiles.get("backup") as Profile;

    stateDir = join(base, "state");
    mkdirSync(stateDir, { mode: 0o700 });
    recorder = recordingRunner(createProcessRunner());
    remote = makeRemote();
  });

  afterAll(() => {
    fx?.close();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it("preflight: the pin names the host and the credential is readable", async () => {
    expect(await record(remote.preflight(profile))).toEqual({
      ok: true,
      value: { output: "", durationMs: 0 },
    });
  });

  it("preflight: a pin file without the host, or no pin file, is PIN_MISSING (no key is ever learned)", async () => {
    const otherPin = join(pinDir, "other_hosts");
    writeFileSync(otherPin, `[127.0.0.1]:1 ${sshd.hostKeyPublic()}\n`, { mode: 0o644 });
    const noEntry = await record(remote.preflight({ ...profile, knownHostsFile: otherPin }));
    expect(noEntry).toMatchObject({ ok: false, error: { code: "PIN_MISSING", interrupted: false } });
    expect(noEntry.ok || noEntry.error.message).toMatch(/has no key for \[127\.0\.0\.1\]:\d+/);
    const absent = await record(remote.preflight({ ...profile, knownHostsFile: join(pinDir, "absent") }));
    expect(absent).toMatchObject({ ok: false, error: { code: "PIN_MISSING" } });
    // A probe refuses too, before any connection: nothing was added to the pin file.
    expect(await record(remote.probe({ ...profile, knownHostsFile: otherPin }))).toMatchObject({
      ok: false,
      error: {
        code: "PIN_MISSING",
      },
    });
    expect(readFileSync(otherPin, "utf8")).toBe(`[127.0.0.1]:1 ${sshd.hostKeyPublic()}\n`);
  });

  it("preflight: a hashed pin entry is found", async () => {
    const hashed = join(pinDir, "hashed_hosts");
    writeFileSync(hashed, `[127.0.0.1]:${sshd.port} ${sshd.hostKeyPublic()}\n`, { mode: 0o644 });
    execFileSync("ssh-keygen", ["-H", "-f", hashed], { stdio: "ignore" });
    rmSync(`${hashed}.old`, { force: true });
    expect(readFileSync(hashed, "utf8")).toMatch(/^\|1\|/);
    chmodSync(hashed, 0o644);
    expect(await record(remote.preflight({ ...profile, knownHostsFile: hashed }))).toMatchObject({
      ok: true,
    });
    expect(await record(remote.probe({ ...profile, knownHostsFile: hashed }))).toMatchObject({ ok: true });
  });

  it("preflight: a pin file writable by others is refused", async () => {
    const loose = join(pinDir, "loose_hosts");
    writeFileSync(loose, `[127.0.0.1]:${sshd.port} ${sshd.hostKeyPublic()}\n`);
    chmodSync(loose, 0o666);
    const result = await record(remote.probe({ ...profile, knownHostsFile: loose }));
    expect(result).toMatchObject({ ok: false, error: { code: "PROFILE_INVALID" } });
    expect(result.ok || result.error.message).toMatch(/writable by group or others \(mode 0666\)/);
  });

  it("preflight: a pin file that became a link, or another account's file, since loading is refused", async () => {
    const linked = join(pinDir, "linked_hosts");
    symlinkSync(pin, linked);
    expect(await record(remote.preflight({ ...profile, knownHostsFile: linked }))).toMatchObject({
      ok: false,
      error: {
        code: "PROFILE_INVALID",
        message: expect.stringMatching(/is a symbolic link/),
      },
    });
    if (process.geteuid?.() === 0) {
      const foreign = join(pinDir, "foreign_hosts");
      writeFileSync(foreign, readFileSync(pin), { mode: 0o644 });
      chownSync(foreign, 5151, 5151);
      expect(await record(remote.preflight({ ...profile, knownHostsFile: foreign }))).toMatchObject({
        ok: false,
        error: {
          code: "PROFILE_INVALID",
          message: expect.stringMatching(
            /owned by uid 5151, neither root nor the owner of the profile directory/,
          ),
        },
      });
    }
  });

  it.skipIf(process.geteuid?.() !== 0)(
    "preflight: a pin in a directory the daemon's account owns is refused",
    async () => {
      // The daemon (uid 4242 here) could replace a file in a directory it owns, whoever owns the file.
      const daemonDir = join(base, "daemon-pins");
      mkdirSync(daemonDir, { mode: 0o755 });
      chownSync(daemonDir, 4242, 4242);
      const swapped = join(daemonDir, "known_hosts");
      writeFileSync(swapped, readFileSync(pin), { mode: 0o644 });
      const asDaemon = makeRemote({ daemonUid: 4242 });
      expect(await record(asDaemon.preflight({ ...profile, knownHostsFile: swapped }))).toMatchObject({
        ok: false,
        error: {
          code: "PROFILE_INVALID",
          message: expect.stringMatching(/directory \S+daemon-pins is owned by the daemon's own uid 4242/),
        },
      });
      expect(await record(asDaemon.preflight(profile))).toMatchObject({ ok: true });
    },
  );

  it("probe connects, passes rrsync and lists the remote root", async () => {
    const result = await record(remote.probe(profile));
    expect(result).toMatchObject({ ok: true });
    expect(result.ok && result.value.output).toMatch(/^d\S+\s+[\d,]+ \S+ \S+ \.$/m);
  });

  it("push, list and pull: a dry run writes nothing, the copy lands file by file, a second copy overwrites nothing", async () => {
    const run = join(receiver, "backups", "runs", "r1");
    const dry = await record(remote.push(profile, join(sources, "site"), "runs/r1", { dryRun: true }));
    expect(dry).toMatchObject({ ok: true });
    expect(dry.ok && dry.value.output).toMatch(/^<f\+{9} index\.html$/m);
    expect(existsSync(run)).toBe(false);

    const copy = await record(remote.push(profile, join(sources, "site"), "runs/r1", { dryRun: false }));
    expect(copy).toMatchObject({ ok: true });
    expect(copy.ok && copy.value.output).toMatch(/^<f\+{9} assets\/app\.js$/m);
    expect(hashes(run)).toEqual(hashes(join(sources, "site")));

    // The run directory is immutable: a changed source does not overwrite what is there.
    const before = hashes(run);
    writeFileSync(join(sources, "site", "index.html"), "<h1>changed</h1>\n");
    const again = await record(remote.push(profile, join(sources, "site"), "runs/r1", { dryRun: false }));
    expect(again).toMatchObject({ ok: true });
    expect(hashes(run)).toEqual(before);
    writeFileSync(join(sources, "site", "index.html"), "<h1>hello</h1>\n");

    const listing = await record(remote.list(profile, "runs/r1"));
    expect(listing).toMatchObject({ ok: true });
    const names = (listing.ok ? listing.value.output : "")
      .split("\n")
      .filter(Boolean)
      .map((line) => line.split(/\s+/).slice(4).join(" "));
    expect(names.sort()).toEqual([".", "assets", "assets/app.js", "empty", "index.html"]);
    // Sizes in plain digits, not grouped ("15,000"), for the caller to compare with its manifest.
    expect(listing.ok && listing.value.output).toMatch(/^-\S+ +15000 \S+ \S+ assets\/app\.js$/m);

    const into = mkdtempSync(join(stateDir, "pull-"));
    const pulled = await record(remote.pull(profile, "runs/r1", into, 1024 * 1024));
    expect(pulled).toMatchObject({ ok: true });
    expect(hashes(into)).toEqual(hashes(run));

    const small = mkdtempSync(join(stateDir, "pull-small-"));
    expect(await record(remote.pull(profile, "runs/r1", small, 100))).toMatchObject({ ok: true });
    expect(Object.keys(hashes(small)).sort()).toEqual(["empty", "index.html"]);
    rmSync(into, { recursive: true });
    rmSync(small, { recursive: true });
  });

  it("a run that does not exist is RUN_NOT_FOUND; a missing remote root is RECEIVER_REFUSED", async () => {
    expect(await record(remote.list(profile, "runs/never"))).toMatchObject({
      ok: false,
      error: {
        code: "RUN_NOT_FOUND",
      },
    });
    const into = mkdtempSync(join(stateDir, "pull-"));
    expect(await record(remote.pull(profile, "runs/never", into, 1000))).toMatchObject({
      ok: false,
      error: {
        code: "RUN_NOT_FOUND",
      },
    });
    rmSync(into, { recursive: true });
    expect(await record(remote.probe({ ...profile, remoteRoot: "nowhere" }))).toMatchObject({
      ok: false,
      error: {
        code: "RECEIVER_REFUSED",
      },
    });
  });

  it("a remote path outside the remote root never reaches rsync", async () => {
    const count = recorder.requests.length;
    for (const path of ["../escape", "runs/../../x", "/etc", "-e", "runs/*"]) {
      expect(() => remote.list(profile, path)).toThrow(RelayError);
      expect(() => remote.push(profile, join(sources, "site"), path, { dryRun: true })).toThrow(RelayError);
    }
    expect(recorder.requests.length).toBe(count);
  });

  it("a receiver-side link pointing out of the rrsync directory is refused by the receiver, nothing written outside", async () => {
    const outside = join(base, "outside");
    mkdirSync(outside, { mode: 0o777 });
    symlinkSync(outside, join(receiver, "escape"));
    const escaped = { ...profile, remoteRoot: "escape" };
    const push = await record(remote.push(escaped, join(sources, "site"), "runs/r2", { dryRun: false }));
    expect(push).toMatchObject({ ok: false, error: { code: "RECEIVER_REFUSED", interrupted: false } });
    expect(push.ok || push.error.message).toMatch(/rrsync refused/);
    expect(readdirSync(outside)).toEqual([]);
    expect(await record(remote.probe(escaped))).toMatchObject({
      ok: false,
      error: { code: "RECEIVER_REFUSED" },
    });
  });

  it("a receiver whose key is not confined by rrsync is refused at probe", async () => {
    const open = await fx.start();
    try {
      writeFileSync(
        pin,
        `[127.0.0.1]:${sshd.port} ${sshd.hostKeyPublic()}\n[127.0.0.1]:${open.port} ${open.hostKeyPublic()}\n`,
      );
      const result = await record(remote.probe({ ...profile, port: open.port, remoteRoot: "." }));
      expect(result).toMatchObject({ ok: false, error: { code: "RECEIVER_REFUSED", interrupted: false } });
      expect(result.ok || result.error.message).toMatch(
        /accepted --log-file=\/dev\/null, which rrsync -no-overwrite refuses: the key is not confined/,
      );
    } finally {
      open.stop();
      writePin();
    }
  });

  it("a key the receiver does not accept is CREDENTIAL_REJECTED", async () => {
    const result = await record(remote.probe({ ...profile, credentialId: "wrong-key" }));
    expect(result).toMatchObject({ ok: false, error: { code: "CREDENTIAL_REJECTED", interrupted: false } });
    expect(result.ok || result.error.detail).toMatch(/Permission denied/);
  });

  it("a missing, loose, linked or foreign key is CREDENTIAL_UNAVAILABLE, naming the path and mode", async () => {
    const missing = await record(remote.probe({ ...profile, credentialId: "absent-key" }));
    expect(missing).toMatchObject({ ok: false, error: { code: "CREDENTIAL_UNAVAILABLE" } });
    expect(missing.ok || missing.error.message).toContain(join(creds, "absent-key"));

    copyFileSync(fx.clientKey, join(creds, "loose-key"));
    chmodSync(join(creds, "loose-key"), 0o644);
    const loose = await record(remote.probe({ ...profile, credentialId: "loose-key" }));
    expect(loose).toMatchObject({ ok: false, error: { code: "CREDENTIAL_UNAVAILABLE" } });
    expect(loose.ok || loose.error.message).toBe(
      `the key ${join(creds, "loose-key")} has mode 0644; only 0600 or 0400, or 0440 with systemd's credential ACL, is accepted`,
    );
    expect(await record(remote.preflight({ ...profile, credentialId: "loose-key" }))).toMatchObject({
      ok: false,
      error: {
        code: "CREDENTIAL_UNAVAILABLE",
      },
    });

    symlinkSync(join(creds, "backup-key"), join(creds, "linked-key"));
    expect(await record(remote.probe({ ...profile, credentialId: "linked-key" }))).toMatchObject({
      ok: false,
      error: {
        code: "CREDENTIAL_UNAVAILABLE",
        message: expect.stringMatching(/is a symbolic link/),
      },
    });
    if (process.geteuid?.() === 0) {
      copyFileSync(fx.clientKey, join(creds, "foreign-key"));
      chmodSync(join(creds, "foreign-key"), 0o600);
      chownSync(join(creds, "foreign-key"), 5151, 5151);
      expect(await record(remote.probe({ ...profile, credentialId: "foreign-key" }))).toMatchObject({
        ok: false,
        error: {
          code: "CREDENTIAL_UNAVAILABLE",
          message: expect.stringMatching(/owned by uid 5151/),
        },
      });
    }
  });

  it("the key file directory is used only when the fallback is given, and then a 0400 key works", async () => {
    const fallback = join(base, "keyfiles");
    mkdirSync(fallback, { mode: 0o700 });
    copyFileSync(fx.clientKey, join(fallback, "backup-key"));
    chmodSync(join(fallback, "backup-key"), 0o400);
    const none = makeRemote({ credentialsDirectory: null });
    expect(await record(none.probe(profile))).toMatchObject({
      ok: false,
      error: {
        code: "CREDENTIAL_UNAVAILABLE",
        message: expect.stringMatching(/no credential source/),
      },
    });
    const withFallback = makeRemote({ credentialsDirectory: null, keyFileDirectory: fallback });
    expect(await record(withFallback.probe(profile))).toMatchObject({ ok: true });
  });

  it("a closed port is NETWORK_FAILURE", async () => {
    const port = await fx.closedPort();
    writeFileSync(
      pin,
      `[127.0.0.1]:${sshd.port} ${sshd.hostKeyPublic()}\n[127.0.0.1]:${port} ${sshd.hostKeyPublic()}\n`,
    );
    const result = await record(remote.probe({ ...profile, port }));
    expect(result).toMatchObject({ ok: false, error: { code: "NETWORK_FAILURE", interrupted: false } });
    expect(result.ok || result.error.message).toMatch(/Connection refused/);
    writePin();
  });

  it("the child's environment is PATH, HOME and LANG only: an agent holding the accepted key is never asked", async () => {
    const agentSocket = join(base, "agent.sock");
    const agent: ChildProcess = spawn("ssh-agent", ["-D", "-a", agentSocket], { stdio: "ignore" });
    const saved = process.env.SSH_AUTH_SOCK;
    try {
      for (let i = 0; i < 200 && !existsSync(agentSocket); i++) await new Promise((r) => setTimeout(r, 10));
      execFileSync("ssh-add", [fx.clientKey], { env: { SSH_AUTH_SOCK: agentSocket }, stdio: "ignore" });
      process.env.SSH_AUTH_SOCK = agentSocket;
      const from = recorder.requests.length;
      const result = await record(remote.probe({ ...profile, credentialId: "wrong-key" }));
      expect(result).toMatchObject({ ok: false, error: { code: "CREDENTIAL_REJECTED" } });
      const made = recorder.requests.slice(from);
      expect(made.length).toBeGreaterThan(0);
      for (const request of made) {
        expect(Object.keys(request.env).sort()).toEqual(["HOME", "LANG", "PATH"]);
        expect(request.env.LANG).toBe("C");
        expect(request.env.HOME?.startsWith(`${stateDir}/`)).toBe(true);
      }
    } finally {
      if (saved === undefined) delete process.env.SSH_AUTH_SOCK;
      else process.env.SSH_AUTH_SOCK = saved;
      agent.kill();
    }
  });

  it("every ssh/rsync argv is the fixed one, with no remote command", () => {
    const rsyncRuns = recorder.requests.filter((r) => r.argv?.[0] === "rsync");
    expect(rsyncRuns.length).toBeGreaterThan(5);
    for (const request of rsyncRuns) {
      const argv = request.argv ?? [];
      const shell = argv[argv.indexOf("-e") + 1] ?? "";
      expect(shell).toMatch(
        /^ssh -F \/dev\/null -o BatchMode=yes .* -o IdentityAgent=none -o StrictHostKeyChecking=yes -o UserKnownHostsFile=\S+ -o GlobalKnownHostsFile=\/dev\/null .* -i \S+ -p \d+ -l \S+$/,
      );
      // The remote path is the last or second-to-last word and always host:path; nothing after `--` but paths.
      const rest = argv.slice(argv.indexOf("--") + 1);
      expect(rest.length).toBeLessThanOrEqual(2);
      expect(rest.filter((a) => a.startsWith("127.0.0.1:")).length).toBe(1);
      expect(argv.some((a) => a.startsWith("--delete") || a.startsWith("--remove") || a === "-s")).toBe(
        false,
      );
      // Remote options only as the confinement check of a listing.
      const remoteOptions = argv.filter((a) => a.startsWith("-M") || a.startsWith("--remote-option"));
      for (const option of remoteOptions) {
        expect(["-M--log-file=/dev/null", "-M--delete-excluded"]).toContain(option);
        expect(argv).toContain("--list-only");
      }
    }
    // The key was a 0600 file in a 0700 directory while each process ran.
    expect(new Set(recorder.keyModes)).toEqual(new Set(["600 700"]));
  });

  it("a copy whose connection is cut mid-transfer is WRITE_INTERRUPTED", async () => {
    const big = join(base, "big-source");
    mkdirSync(big);
    // Sparse: costs no disk here, takes long enough to cut on the way.
    const fd = openSync(join(big, "blob"), "w");
    ftruncateSync(fd, 2 * 1024 ** 3);
    closeSync(fd);
    const target = join(receiver, "backups", "runs", "cut");
    const pending = record(remote.push(profile, big, "runs/cut", { dryRun: false }));
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (existsSync(target) && readdirSync(target).length > 0) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(existsSync(target) && readdirSync(target).length > 0).toBe(true);
    sshd.dropConnections();
    const result = await pending;
    expect(result).toMatchObject({ ok: false, error: { code: "WRITE_INTERRUPTED", interrupted: true } });
    expect(result.ok || result.error.message).toMatch(
      /may have written; the run's state on the receiver is unknown/,
    );
    rmSync(target, { recursive: true, force: true });
    rmSync(big, { recursive: true, force: true });
  });

  it("a copy stopped by the profile's time limit is WRITE_INTERRUPTED", async () => {
    const big = join(base, "slow-source");
    mkdirSync(big);
    const fd = openSync(join(big, "blob"), "w");
    ftruncateSync(fd, 8 * 1024 ** 3);
    closeSync(fd);
    const limited = { ...profile, limits: { ...profile.limits, timeoutSeconds: 1 } };
    const started = Date.now();
    const result = await record(remote.push(limited, big, "runs/slow", { dryRun: false }));
    expect(result).toMatchObject({ ok: false, error: { code: "WRITE_INTERRUPTED", interrupted: true } });
    expect(result.ok || result.error.message).toMatch(/stopped after the profile's 1 s limit/);
    expect(Date.now() - started).toBeLessThan(15_000);
    rmSync(join(receiver, "backups", "runs", "slow"), { recursive: true, force: true });
    rmSync(big, { recursive: true, force: true });
  });

  it("a dry run whose itemized output passes its bound is LIMIT_EXCEEDED, not a cut preview", async () => {
    const many = join(base, "many-source");
    mkdirSync(many);
    for (let i = 0; i < 400; i++) writeFileSync(join(many, `file-with-a-long-name-${i}.txt`), `${i}`);
    // The bound of a preview is output_bytes or 640 bytes per file of file_count, whichever is larger.
    const limited = { ...profile, limits: { ...profile.limits, outputBytes: 4096, fileCount: 4 } };
    const result = await record(remote.push(limited, many, "runs/many", { dryRun: true }));
    expect(result).toMatchObject({ ok: false, error: { code: "LIMIT_EXCEEDED" } });
    // A profile that may replicate 1000 files can preview (and list back) 400, whatever its output_bytes.
    const roomy = { ...profile, limits: { ...profile.limits, outputBytes: 4096, fileCount: 1000 } };
    expect(await record(remote.push(roomy, many, "runs/many", { dryRun: true }))).toMatchObject({ ok: true });
    expect(await record(remote.push(profile, many, "runs/many", { dryRun: true }))).toMatchObject({
      ok: true,
    });
    rmSync(many, { recursive: true, force: true });
  });

  it("a rotated host key is PIN_CHANGED, and the pin file is left as it was", async () => {
    const pinned = readFileSync(pin, "utf8");
    await sshd.rotateHostKey();
    const result = await record(remote.probe(profile));
    expect(result).toMatchObject({ ok: false, error: { code: "PIN_CHANGED", interrupted: false } });
    expect(result.ok || result.error.detail).toMatch(/REMOTE HOST IDENTIFICATION HAS CHANGED/);
    expect(readFileSync(pin, "utf8")).toBe(pinned);
    writePin();
    expect(await record(remote.probe(profile))).toMatchObject({ ok: true });
  });

  /** The operations of the daemon over this real transport, with a ledger of their own. */
  function realOperations(name: string) {
    const ledgerDir = join(base, `ops-${name}`);
    mkdirSync(ledgerDir, { mode: 0o700 });
    const ops = createOperations({
      remote: makeRemote(),
      stateDir: ledgerDir,
      runner: recorder.runner,
      clock: systemClock,
      ids: cryptoIds,
      logger: silentLogger,
    });
    const runRecord = (runId: string) =>
      JSON.parse(
        readFileSync(join(ledgerDir, "replication", "runs", profile.id, runId, "run.json"), "utf8"),
      ) as { replication: { state: string } | null };
    return { ops, runRecord };
  }

  /** Every entry under `root` by its relative path as bytes (latin1 keeps them), with a hash for files. */
  function byteTree(root: string): Record<string, string> {
    const out: Record<string, string> = {};
    const walk = (dir: Buffer, rel: string) => {
      for (const name of readdirSync(dir, { encoding: "buffer" })) {
        const path = Buffer.concat([dir, Buffer.from("/"), name]);
        const key = `${rel}${name.toString("latin1")}`;
        if (lstatSync(path).isDirectory()) {
          out[`${key}/`] = "dir";
          walk(path, `${key}/`);
        } else out[key] = createHash("sha256").update(readFileSync(path)).digest("hex");
      }
    };
    walk(Buffer.from(root), "");
    return out;
  }

  it("names are bytes: a tree of hostile names survives dry run, replicate and verify (ok)", async () => {
    const hostile = join(base, "hostile", "site");
    mkdirSync(join(hostile, "répertoire"), { recursive: true });
    const names: Array<string | Buffer> = [
      "café.txt",
      Buffer.from([0x69, 0x6e, 0x76, 0xff, 0xfe, 0x2e, 0x62, 0x69, 0x6e]), // "inv\xff\xfe.bin", not UTF-8
      Buffer.from([0x6c, 0x61, 0x74, 0x69, 0x6e, 0xe9]), // "latin" + Latin-1 é: the mojibake of café's é
      "new\nline",
      "back\\slash",
      "x\\#101",
      "#hash",
      "-dash",
      " sp ace ",
      "tab\tx",
      "répertoire/ü-日本.bin",
    ];
    names.forEach((name, i) => {
      const path =
        typeof name === "string"
          ? Buffer.from(join(hostile, name))
          : Buffer.concat([Buffer.from(`${hostile}/`), name]);
      writeFileSync(path, `content ${i}\n`);
    });
    const hostileProfile: Profile = { ...profile, sourceRoots: [hostile] };
    const { ops } = realOperations("hostile");
    const dry = await ops.dryRun(hostileProfile, "hostile-1");
    expect(dry).toMatchObject({ code: "OK", data: { files: names.length } });
    const written = await ops.replicate(hostileProfile, "hostile-1", "hostile-key-1");
    expect(written).toMatchObject({ code: "OK" });
    expect(byteTree(join(receiver, "backups", "runs", "hostile-1", "site"))).toEqual(byteTree(hostile));
    const verified = await ops.verify(hostileProfile, "hostile-1");
    expect({ code: verified.code, data: verified.data }).toMatchObject({ code: "OK" });

    // A byte changed in one name on the receiver is one name missing and one extra, never a match.
    const runSite = join(receiver, "backups", "runs", "hostile-1", "site");
    execFileSync("mv", ["--", join(runSite, "café.txt"), join(runSite, "cafe\u0301.txt")]);
    const changed = await ops.verify(hostileProfile, "hostile-1");
    expect(changed).toMatchObject({
      code: "VERIFY_FAILED",
      data: { difference_counts: { missing: 1, extra: 1 } },
    });
    // Differences are shown as text where the bytes are UTF-8.
    expect(changed.data?.differences).toEqual(
      expect.arrayContaining([
        { path: "site/café.txt", kind: "missing" },
        { path: "site/cafe\u0301.txt", kind: "extra" },
      ]),
    );
    expect(readdirSync(join(base, "ops-hostile", "replication", "scratch"))).toEqual([]);
  });

  it("a copy cut part way after a file named like ssh's refusal is WRITE_INTERRUPTED, and the run is unknown", async () => {
    const cut = join(base, "cut-source", "site");
    mkdirSync(cut, { recursive: true });
    // Sorted first ('P' < 'b'), so its itemized line is printed before the cut.
    writeFileSync(join(cut, "Permission denied (publickey)"), "sent before the cut\n");
    const fd = openSync(join(cut, "blob"), "w");
    ftruncateSync(fd, 512 * 1024 ** 2);
    closeSync(fd);
    const cutProfile: Profile = {
      ...profile,
      sourceRoots: [cut],
      limits: { ...profile.limits, transferBytes: 1024 ** 3 },
    };
    const { ops, runRecord } = realOperations("cut");
    expect(await ops.dryRun(cutProfile, "cut-1")).toMatchObject({ code: "OK" });
    const target = join(receiver, "backups", "runs", "cut-1", "site");
    const pending = ops.replicate(cutProfile, "cut-1", "cut-key-0001");
    const deadline = Date.now() + 30_000;
    // Cut once the first file is in place and the blob is on its way.
    while (Date.now() < deadline) {
      if (existsSync(target) && readdirSync(target).some((n) => n.startsWith(".blob."))) break;
      await new Promise((r) => setTimeout(r, 2));
    }
    expect(existsSync(join(target, "Permission denied (publickey)"))).toBe(true);
    sshd.dropConnections();
    const result = await pending;
    expect(result).toMatchObject({ code: "WRITE_INTERRUPTED", data: { run_id: "cut-1" } });
    expect(result.data?.cause_code).not.toBe("CREDENTIAL_REJECTED");
    expect(runRecord("cut-1").replication).toMatchObject({ state: "unknown" });
    rmSync(join(base, "cut-source"), { recursive: true, force: true });
  }, 60_000);

  it("the key's bytes are in no result and nothing of the key is left in the state directory", () => {
    const text = JSON.stringify(results);
    for (const line of keyLines) expect(text).not.toContain(line);
    const argvText = JSON.stringify(recorder.requests.map((r) => r.argv));
    for (const line of keyLines) expect(argvText).not.toContain(line);
    expect(readdirSync(stateDir).filter((name) => name.startsWith(".ssh-home-"))).toEqual([]);
    for (const file of allFiles(stateDir)) {
      const content = readFileSync(file, "utf8");
      for (const line of keyLines) expect(content).not.toContain(line);
    }
  });

  it("key directories left by a crash are removed when the transport is built", () => {
    mkdirSync(join(stateDir, ".ssh-home-stale"), { mode: 0o700 });
    writeFileSync(join(stateDir, ".ssh-home-stale", "id"), readFileSync(fx.clientKey), { mode: 0o600 });
    makeRemote();
    expect(existsSync(join(stateDir, ".ssh-home-stale"))).toBe(false);
  });

  it("refuses a state directory rsync's -e would split", () => {
    expect(() =>
      createRemote(
        {
          stateDir: "/var/lib/relay infra",
          runner: recorder.runner,
          clock: systemClock,
          ids: cryptoIds,
          logger: silentLogger,
        },
        { credentialsDirectory: creds, keyFileDirectory: null },
      ),
    ).toThrow(/without whitespace/);
  });
});

/**
 * The transport as it runs in the daemon: as the daemon's own unprivileged
 * account, with the key where systemd's LoadCredential= puts it (the
 * account's 0400 file in a 0500 directory), against root-owned profiles and
 * pin. A small driver runs the built modules under runuser.
 */
const DRIVER = `
const [dist, configDir, stateDir, credentials, runId, pullInto] = process.argv.slice(1);
const { loadProfiles, createRemote } = await import(dist + "/infra/index.js");
const { createProcessRunner } = await import(dist + "/exec/index.js");
const { cryptoIds, silentLogger, systemClock } = await import(dist + "/core/index.js");
const set = loadProfiles(configDir, { daemonUid: process.geteuid() });
const profile = set.profiles.get("replica");
const remote = createRemote(
  { stateDir, runner: createProcessRunner(), clock: systemClock, ids: cryptoIds, logger: silentLogger },
  { credentialsDirectory: credentials, keyFileDirectory: null },
);
const results = {};
results.preflight = await remote.preflight(profile);
results.probe = await remote.probe(profile);
results.dry = await remote.push(profile, profile.sourceRoots[0], "runs/" + runId, { dryRun: true });
results.push = await remote.push(profile, profile.sourceRoots[0], "runs/" + runId, { dryRun: false });
results.list = await remote.list(profile, "runs/" + runId);
results.pull = await remote.pull(profile, "runs/" + runId, pullInto, 1 << 20);
process.stdout.write(JSON.stringify({ uid: process.geteuid(), broken: [...set.broken.values()], results }));
`;

/** Run DRIVER as the daemon's account (the built transport, as the broker would) and parse its report. */
function driveAsDaemon<T>(
  infra: InfraFixture,
  credentials: string,
  run: string,
  pullInto: string,
  env: Record<string, string> = {},
): T {
  const out = execFileSync(
    "/usr/sbin/runuser",
    [
      "-u",
      infra.daemonUser.name,
      "--",
      process.execPath,
      "--input-type=module",
      "-e",
      DRIVER,
      join(REPO_ROOT, "dist"),
      infra.configDir,
      infra.stateDir,
      credentials,
      run,
      pullInto,
    ],
    { encoding: "utf8", env: { PATH: "/usr/bin:/bin", LANG: "C.UTF-8", ...env } },
  );
  return JSON.parse(out) as T;
}

describe.skipIf(INFRA_SKIP_REASON !== null)("INFRA-1 transport as the daemon's own account", () => {
  let infra: InfraFixture;

  beforeAll(async () => {
    infra = await createInfraFixture();
    infra.writeProfile("replica");
    const mine = infra.writeProfile("mine");
    chownSync(mine, infra.daemonUser.uid, infra.daemonUser.gid);
  });

  afterAll(() => infra?.close());

  it("loads root's profiles, refuses one the daemon owns, and copies a run file by file", () => {
    const pullInto = join(infra.stateDir, "pulled");
    mkdirSync(pullInto);
    chownSync(pullInto, infra.daemonUser.uid, infra.daemonUser.gid);
    const report = driveAsDaemon<{
      uid: number;
      broken: Array<{ id: string; problems: string[] }>;
      results: Record<string, RemoteResult>;
    }>(infra, infra.credentialsDir, "r1", pullInto, { SSH_AUTH_SOCK: "/nonexistent" });
    expect(report.uid).toBe(infra.daemonUser.uid);
    expect(report.broken).toEqual([
      {
        id: "mine",
        file: join(infra.configDir, "mine.json"),
        problems: [expect.stringMatching(/owned by the daemon's own uid/)],
      },
    ]);
    for (const [name, result] of Object.entries(report.results)) {
      expect({
        name,
        ok: result.ok,
        ...(result.ok ? {} : { code: result.error.code, message: result.error.message }),
      }).toEqual({
        name,
        ok: true,
      });
    }
    expect(hashes(join(infra.receiverDir, "runs", "r1"))).toEqual(hashes(infra.sourceDir));
    expect(hashes(pullInto)).toEqual(hashes(infra.sourceDir));

    const keyLines = infra
      .keyText()
      .split("\n")
      .filter((line) => line.length >= 20 && !line.startsWith("-----"));
    for (const line of keyLines) expect(JSON.stringify(report)).not.toContain(line);
    expect(readdirSync(infra.stateDir).filter((name) => name.startsWith(".ssh-home-"))).toEqual([]);
    for (const file of allFiles(infra.stateDir)) {
      const content = readFileSync(file, "latin1");
      for (const line of keyLines) expect(content).not.toContain(line);
    }
  });

  it("reads the key as systemd's LoadCredential= hands it over: root's 0400 file with an ACL for the daemon", () => {
    if (!existsSync("/usr/bin/setfacl")) throw new Error("setfacl is missing: apt-get install acl");
    // What systemd does for a service with User=: root owns the directory (0500) and the file (0400), and
    // an ACL entry for the service's uid grants r-x on the one and r on the other.
    const creds = join(infra.root, "systemd-credentials");
    mkdirSync(creds, { mode: 0o500 });
    const key = join(creds, infra.credentialId);
    writeFileSync(key, infra.keyText(), { mode: 0o400 });
    chmodSync(key, 0o400);
    execFileSync("/usr/bin/setfacl", ["-m", `u:${infra.daemonUser.uid}:rx`, creds]);
    execFileSync("/usr/bin/setfacl", ["-m", `u:${infra.daemonUser.uid}:r`, key]);
    expect(statSync(key).mode & 0o7777).toBe(0o440);
    expect(statSync(key).uid).toBe(0);
    const pullInto = join(infra.stateDir, "pulled-acl");
    mkdirSync(pullInto);
    chownSync(pullInto, infra.daemonUser.uid, infra.daemonUser.gid);
    const report = driveAsDaemon<{ results: Record<string, RemoteResult> }>(infra, creds, "r-acl", pullInto);
    for (const [name, result] of Object.entries(report.results)) {
      expect({ name, ok: result.ok, ...(result.ok ? {} : { message: result.error.message }) }).toEqual({
        name,
        ok: true,
      });
    }
    expect(hashes(join(infra.receiverDir, "runs", "r-acl"))).toEqual(hashes(infra.sourceDir));

    // One entry more (another user may read it too) and the same key is refused.
    execFileSync("/usr/bin/setfacl", ["-m", `u:${infra.clientUser.uid}:r`, key]);
    const pullAgain = join(infra.stateDir, "pulled-acl2");
    mkdirSync(pullAgain);
    chownSync(pullAgain, infra.daemonUser.uid, infra.daemonUser.gid);
    const refused = driveAsDaemon<{ results: Record<string, RemoteResult> }>(
      infra,
      creds,
      "r-acl2",
      pullAgain,
    );
    expect(refused.results.preflight).toMatchObject({
      ok: false,
      error: {
        code: "CREDENTIAL_UNAVAILABLE",
        message: expect.stringMatching(/has mode 0440 with the ACL user::r--,user:\d+:r--,user:\d+:r--/),
      },
    });
  });
});
