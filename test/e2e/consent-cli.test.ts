import { spawn, spawnSync } from "node:child_process";
import {
  appendFileSync,
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { actDigest } from "../../src/consent/payload.js";
import { openSqliteStore } from "../../src/consent/sqlite-store.js";
import type { ConsentAct, ConsentRequest, ConsentStore, StoreResult } from "../../src/consent/types.js";
import { cryptoIds, systemClock } from "../../src/core/index.js";
import { createLedger, removeLedger } from "../helpers/consent.js";
import { baseEnv, SERVER_ENTRY } from "../helpers/server.js";

function value<T>(result: StoreResult<T>): T {
  if (!result.ok) throw new Error(`expected ok, got ${result.error.failure}: ${result.error.detail}`);
  return result.value;
}

/** Characters a terminal would act on, or that reorder text, present raw in `text`. */
function rawControls(text: string): string[] {
  return [...text].filter((c) => {
    const cp = c.codePointAt(0) ?? 0;
    return cp === 0x1b || cp === 0x0d || (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e);
  });
}

function run(command: string, args: string[], input?: string, env: Record<string, string> = {}) {
  const r = spawnSync(command, args, { input: input ?? "", encoding: "utf8", env: baseEnv(env) });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

// The consent ledger is append-only (chattr +a), which only root can set up.
describe.skipIf(process.geteuid?.() !== 0)("relay-shell consent (the built CLI)", async () => {
  let dir: string;
  let db: string;
  let key: string;
  let store: ConsentStore;
  let allowedSigners: string;
  let ledger: string;
  const cli = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, [SERVER_ENTRY, "consent", ...args, "--db", db], undefined, {
      RELAY_SHELL_CONSENT_ALLOWED_SIGNERS: allowedSigners,
      ...env,
    });
  /** `--yes` with the digest `consent show` prints for the request's act. */
  const yes = (r: ConsentRequest): string[] => ["--yes", "--digest", actDigest(r.act)];
  /** Let `key` sign approvals: one more line in the operator's allowed-signers file. */
  const allow = (publicKeyFile: string, principal: string): void => {
    const pub = readFileSync(publicKeyFile, "utf8").trim().split(" ").slice(0, 2).join(" ");
    appendFileSync(allowedSigners, `${principal} namespaces="relay-shell-consent" ${pub}\n`);
  };

  const act = (command: string): ConsentAct => ({
    tool: "shell_exec",
    tier: 2,
    bound: { command, cwd: dir, shell: true },
  });
  const request = async (
    command = "touch canary",
    ttlSeconds = 300,
    session = "mcp-session-1",
  ): Promise<ConsentRequest> =>
    value(
      await store.createRequest({
        act: act(command),
        actDigest: actDigest(act(command)),
        basis: "write: touch",
        session,
        clientId: "client-a",
        ttlSeconds,
      }),
    );

  /** `ssh-keygen -Y check-novalidate`: the signature is good for these bytes, this namespace and this key. */
  const checks = (signature: string, payload: string, namespace = "relay-shell-consent"): boolean => {
    const sig = join(dir, `check-${Math.random().toString(16).slice(2)}.sig`);
    writeFileSync(sig, signature);
    return (
      run("ssh-keygen", ["-Y", "check-novalidate", "-n", namespace, "-f", `${key}.pub`, "-s", sig], payload)
        .code === 0
    );
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "consent-cli-"));
    db = join(dir, "state", "consent.db");
    key = join(dir, "operator_ed25519");
    expect(run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "operator", "-f", key]).code).toBe(0);
    store = value(openSqliteStore(db, { clock: systemClock, ids: cryptoIds, busyTimeoutMs: 5000 }));
    const anchors = join(dir, "anchors");
    mkdirSync(anchors, { mode: 0o755 });
    allowedSigners = join(anchors, "allowed_signers");
    writeFileSync(allowedSigners, "", { mode: 0o644 });
    allow(`${key}.pub`, "operator@test");
    ledger = createLedger(join(anchors, "consent.ledger"), { name: "root", uid: 0, gid: 0 });
  });
  afterAll(async () => {
    await store.close();
    removeLedger(ledger);
    rmSync(dir, { recursive: true, force: true });
  });

  it("approve --yes signs the exact payload with ssh-keygen and stores a signature that verifies", async () => {
    const r = await request();
    const out = cli(["approve", r.id, "--key", key, ...yes(r)]);
    expect(out.stderr).not.toMatch(/failed|refused/);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("touch canary");
    expect(out.stdout).toContain("tool: shell_exec");
    const fingerprint = run("ssh-keygen", ["-lf", `${key}.pub`]).stdout.split(" ")[1];
    expect(out.stdout).toContain(`approved ${r.id} (signed by operator@test, ${fingerprint})`);

    const stored = value(await store.getRequest(r.id));
    expect(stored.status).toBe("approved");
    expect(stored.approval?.channel).toBe("sshsig");
    expect(stored.approval?.claimedSigner).toBe(fingerprint);
    const proof = stored.approval?.proof ?? "";
    expect(proof).toMatch(/^-----BEGIN SSH SIGNATURE-----\n[\s\S]+-----END SSH SIGNATURE-----\n$/);
    expect(checks(proof, r.payload)).toBe(true);
    // The signature is over these bytes in this namespace only.
    expect(checks(proof, r.payload.replace("touch canary", "touch canarz"))).toBe(false);
    expect(checks(proof, r.payload, "file")).toBe(false);

    const again = cli(["approve", r.id, "--key", key, ...yes(r)]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`request ${r.id} is already approved`);
  });

  it("approve refuses a key the relay would refuse: before signing when its public key is at hand, after otherwise", async () => {
    const stranger = join(dir, "stranger_ed25519");
    expect(run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "stranger", "-f", stranger]).code).toBe(
      0,
    );
    const before = await request("touch canary-stranger");
    const listed = cli(["approve", before.id, "--key", stranger, ...yes(before)]);
    expect(listed.code).toBe(1);
    expect(listed.stderr).toContain(`is not in the allowed-signers file ${allowedSigners} for consent`);
    expect(listed.stderr).not.toContain("signing with");
    // Without the public key beside it, the signature is made and then checked as the relay will.
    rmSync(`${stranger}.pub`);
    const after = await request("touch canary-stranger-2");
    const signed = cli(["approve", after.id, "--key", stranger, ...yes(after)]);
    expect(signed.code).toBe(1);
    expect(signed.stderr).toMatch(/would be refused by the relay: .*; nothing was stored/);
    for (const r of [before, after]) expect(value(await store.getRequest(r.id)).status).toBe("pending");
    // The operator's own key still approves them.
    expect(cli(["approve", after.id, "--key", key, ...yes(after)]).code).toBe(0);
  });

  it("approve signs the payload's UTF-8 bytes when the act is not ASCII", async () => {
    const r = await request("echo 'héllo 日本' > canary");
    const out = cli(["approve", r.id, "--key", key, ...yes(r)]);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("héllo 日本");
    const proof = value(await store.getRequest(r.id)).approval?.proof ?? "";
    expect(checks(proof, r.payload)).toBe(true);
  });

  it("approve signs through ssh-agent with the public key of a key that has a passphrase", async () => {
    const locked = join(dir, "agent_ed25519");
    expect(run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "correct horse", "-f", locked]).code).toBe(0);
    const socket = join(dir, "agent.sock");
    const agent = spawn("ssh-agent", ["-D", "-a", socket], { stdio: "ignore" });
    try {
      let added = 1;
      for (let i = 0; i < 50 && added !== 0; i += 1) {
        spawnSync("sleep", ["0.1"]);
        // ssh-add reads the passphrase through SSH_ASKPASS when it has no terminal.
        const askpass = join(dir, "askpass.sh");
        writeFileSync(askpass, "#!/bin/sh\necho 'correct horse'\n", { mode: 0o700 });
        added =
          spawnSync("ssh-add", [locked], {
            env: baseEnv({
              SSH_AUTH_SOCK: socket,
              SSH_ASKPASS: askpass,
              SSH_ASKPASS_REQUIRE: "force",
              DISPLAY: ":0",
            }),
            stdio: "ignore",
          }).status ?? 1;
      }
      expect(added).toBe(0);
      const r = await request("touch canary-agent");
      allow(`${locked}.pub`, "agent@test");
      const out = cli(["approve", r.id, "--key", `${locked}.pub`, ...yes(r)], { SSH_AUTH_SOCK: socket });
      expect(out.stderr).not.toMatch(/failed/);
      expect(out.code).toBe(0);
      const proof = value(await store.getRequest(r.id)).approval?.proof ?? "";
      const sig = join(dir, "agent.sig");
      writeFileSync(sig, proof);
      expect(
        run(
          "ssh-keygen",
          ["-Y", "check-novalidate", "-n", "relay-shell-consent", "-f", `${locked}.pub`, "-s", sig],
          r.payload,
        ).code,
      ).toBe(0);
    } finally {
      agent.kill();
    }
  });

  it("approve asks on a terminal and takes only yes", async () => {
    const ask = (id: string, answer: string) =>
      new Promise<{ code: number | null; output: string }>((resolve) => {
        const command = [process.execPath, SERVER_ENTRY, "consent", "approve", id, "--key", key, "--db", db]
          .map((a) => `'${a}'`)
          .join(" ");
        // script(1) gives the CLI a real terminal on stdin.
        const child = spawn("script", ["-qec", command, "/dev/null"], {
          env: baseEnv({ RELAY_SHELL_CONSENT_ALLOWED_SIGNERS: allowedSigners }),
          stdio: "pipe",
        });
        let output = "";
        let answered = false;
        child.stdout.on("data", (chunk: Buffer) => {
          output += chunk.toString("utf8");
          if (!answered && output.includes("Approve this act? [y/N]")) {
            answered = true;
            child.stdin.write(`${answer}\r`);
          }
        });
        child.on("close", (code) => resolve({ code, output }));
      });
    const no = await request("touch canary-no");
    const refused = await ask(no.id, "n");
    expect(refused.output).toContain("touch canary-no");
    expect(refused.output).toContain(`request ${no.id} was not approved`);
    expect(refused.code).toBe(1);
    expect(value(await store.getRequest(no.id)).status).toBe("pending");
    const yes = await request("touch canary-yes");
    const accepted = await ask(yes.id, "y");
    expect(accepted.output).toContain(`approved ${yes.id}`);
    expect(accepted.code).toBe(0);
    expect(value(await store.getRequest(yes.id)).status).toBe("approved");
  });

  it("approve refuses without --key, with a missing key, without a terminal or --yes, and when ssh-keygen fails", async () => {
    const r = await request("touch canary-refused");
    const noKey = cli(["approve", r.id, ...yes(r)]);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain("approve needs --key PATH");
    const missing = cli(["approve", r.id, "--key", join(dir, "nope"), ...yes(r)]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("no such file");
    const noTerminal = cli(["approve", r.id, "--key", key]);
    expect(noTerminal.code).toBe(2);
    expect(noTerminal.stderr).toContain("stdin is not one; give --yes");
    const notAKey = join(dir, "not-a-key");
    writeFileSync(notAKey, "hello\n", { mode: 0o600 });
    const broken = cli(["approve", r.id, "--key", notAKey, ...yes(r)]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/not approved: ssh-keygen failed \(exit \d+\)/);
    expect(value(await store.getRequest(r.id)).status).toBe("pending");
  });

  it("refuses to sign a payload that is not the act shown (a database edited by the relay's user)", async () => {
    const shown = await request("touch canary-shown");
    const hidden = await request("rm -rf canary-hidden");
    const edit = new Database(db);
    edit
      .prepare("UPDATE requests SET payload = ? WHERE id = ?")
      .run(hidden.payload.replaceAll(hidden.id, shown.id).replaceAll(hidden.nonce, shown.nonce), shown.id);
    edit.close();
    const out = cli(["approve", shown.id, "--key", key, ...yes(shown)]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(`request ${shown.id}: its stored payload is not the act shown`);
    expect(value(await store.getRequest(shown.id)).status).toBe("pending");
    expect(cli(["show", shown.id]).stdout).toContain("WARNING: its stored payload is not the act shown");
  });

  it("an unknown, expired, denied or used request is refused with exit 1 and the reason", async () => {
    const unknown = cli(["approve", "0123456789", "--key", key, "--yes", "--digest", "0".repeat(64)]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("not-found: no consent request 0123456789");
    expect(cli(["show", "abcdefabcd"]).code).toBe(1);

    const short = await request("touch canary-late", 0.2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const late = cli(["approve", short.id, "--key", key, ...yes(short)]);
    expect(late.code).toBe(1);
    expect(late.stderr).toContain(`request ${short.id} expired`);
    expect(cli(["deny", short.id]).stderr).toContain("expired");

    const denied = await request("touch canary-denied");
    const d = cli(["deny", denied.id, "--reason", "wrong host"]);
    expect(d.code).toBe(0);
    expect(d.stdout).toContain(`denied ${denied.id}`);
    expect(value(await store.getRequest(denied.id)).denial).toMatchObject({
      by: userInfo().username,
      reason: "wrong host",
    });
    expect(cli(["approve", denied.id, "--key", key, ...yes(denied)]).code).toBe(1);
    expect(cli(["deny", denied.id]).stderr).toContain("already denied");

    const used = await request("touch canary-used");
    expect(cli(["approve", used.id, "--key", key, ...yes(used)]).code).toBe(0);
    value(await store.consume(used.id, used.nonce));
    const reuse = cli(["deny", used.id]);
    expect(reuse.code).toBe(1);
    expect(reuse.stderr).toContain("consumed");
  });

  it("list and show put every live request in plain text, with what a terminal would act on escaped", async () => {
    const hostile = await request("echo ok\u001b[2K\r\u009b31m\u202erm -rf canary");
    const plain = await request("touch canary-list");
    const list = cli(["list"]);
    expect(list.code).toBe(0);
    const line = list.stdout.split("\n").find((l) => l.startsWith(`  ${plain.id}`)) ?? "";
    expect(line).toMatch(
      new RegExp(
        `^  ${plain.id}  pending   shell_exec  tier 2  expires in \\d+s  session mcp-session-…  touch canary-list`,
      ),
    );
    expect(line.length).toBeLessThan(160);
    const hostileLine = list.stdout.split("\n").find((l) => l.startsWith(`  ${hostile.id}`)) ?? "";
    expect(hostileLine).toContain("\\x9b");
    // No raw escape, C1 control or bidirectional override reaches the terminal.
    expect(rawControls(list.stdout)).toEqual([]);

    const show = cli(["show", hostile.id]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("bound arguments:");
    expect(show.stdout).toContain("\\u{202e}rm -rf canary");
    expect(show.stdout).toContain(
      "payload, the exact bytes signed (characters a terminal would act on are escaped here):",
    );
    expect(rawControls(show.stdout)).toEqual([]);
    const plainShow = cli(["show", plain.id]);
    expect(plainShow.stdout).toContain(`payload, the exact bytes signed:\n${plain.payload}\n`);
    const raw = run(
      process.execPath,
      [SERVER_ENTRY, "consent", "show", hostile.id, "--payload", "--db", db],
      "",
      {
        RELAY_SHELL_CONSENT_ALLOWED_SIGNERS: allowedSigners,
      },
    );
    expect(raw.stdout).toBe(hostile.payload);
  });

  it("leases lists sessions and leases; revoke takes a lease, a session or all of them", async () => {
    const now = Date.now();
    value(await store.touchSession("sess-a", "client-a"));
    value(await store.touchSession("sess-b", "client-b"));
    const lease = {
      openedBy: "0000000000",
      mode: "window" as const,
      createdAt: now,
      expiresAt: now + 90_000,
      remaining: 20,
    };
    const a1 = value(await store.openLease({ ...lease, session: "sess-a" }));
    value(await store.openLease({ ...lease, session: "sess-a" }));
    const b1 = value(await store.openLease({ ...lease, session: "sess-b" }));
    const listed = cli(["leases"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(
      /consent sessions:\n(.*\n)* {2}sess-a {2}live {2}client client-a {2}last seen \d+s ago/,
    );
    expect(listed.stdout).toMatch(
      new RegExp(`  ${a1.id}  session sess-a  window  20 reads left  live, expires in \\d+s`),
    );

    expect(cli(["revoke", a1.id]).stdout).toContain(`revoked lease ${a1.id}`);
    expect(cli(["revoke", a1.id]).stdout).toContain("already revoked");
    const session = cli(["revoke", "sess-a"]);
    expect(session.stdout).toContain("revoked 1 lease(s) of consent session sess-a and ended it");
    expect(value(await store.takeLeaseRead("sess-a", 60_000))).toBeNull();
    expect(value(await store.takeLeaseRead("sess-b", 60_000))?.id).toBe(b1.id);
    expect(cli(["revoke", "--all"]).stdout).toContain("revoked 1 lease(s)");
    expect(value(await store.takeLeaseRead("sess-b", 60_000))).toBeNull();
    expect(cli(["leases"]).stdout).toMatch(
      new RegExp(`  ${b1.id}  session sess-b  window  19 reads left  revoked`),
    );
    const unknown = cli(["revoke", "nobody"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("not-found: no lease or consent session nobody");
  });

  it.each([
    [["frobnicate"], "unknown consent command: frobnicate"],
    [["list", "extra"], "list takes no ID"],
    [["show"], "show needs exactly one ID"],
    [["show", "a", "b"], "show needs exactly one ID"],
    [["show", "XYZ"], "not a request id: XYZ"],
    [["approve", "0123456789", "--reason", "x"], "approve does not take --reason"],
    [["approve", "0123456789", "--key"], "--key needs a value"],
    [["approve", "0123456789", "--key", "--yes"], "--key needs a value"],
    [["approve", "0123456789", "--yes=no"], "unknown argument: --yes=no"],
    [["deny", "0123456789", "--reason", "a", "--reason", "b"], "--reason is given more than once"],
    [["revoke"], "revoke needs exactly one ID"],
    [["revoke", "x", "--all"], "revoke takes an ID or --all, not both"],
    [["list", "--bogus"], "unknown argument: --bogus"],
  ])("refuses %j with exit 2 and a clear message", (args, message) => {
    const r = cli(args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(`relay_shell consent: ${message}`);
  });

  it("refuses a missing, loose or absent database with exit 2", () => {
    // Without --db the server's own setting decides: RELAY_SHELL_CONSENT_DB, else the state directory.
    const none = run(process.execPath, [SERVER_ENTRY, "consent", "list"], "", { XDG_STATE_HOME: dir });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(`no consent database at ${join(dir, "relay-shell", "consent.db")}`);
    const configured = run(process.execPath, [SERVER_ENTRY, "consent", "list"], "", {
      RELAY_SHELL_CONSENT_DB: join(dir, "configured.db"),
    });
    expect(configured.stderr).toContain(`no consent database at ${join(dir, "configured.db")}`);
    const absent = run(process.execPath, [SERVER_ENTRY, "consent", "list", "--db", join(dir, "typo.db")]);
    expect(absent.code).toBe(2);
    expect(absent.stderr).toContain("no consent database at");
    const loose = join(dir, "loose.db");
    writeFileSync(loose, "");
    chmodSync(loose, 0o644);
    const r = run(process.execPath, [SERVER_ENTRY, "consent", "list", "--db", loose]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("readable or writable by group or others (mode 0644)");
    expect(readFileSync(loose, "utf8")).toBe("");
  });
});
