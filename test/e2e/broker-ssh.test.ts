import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
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

announceSkip("confirmation broker over SSH suite");

const TOKEN =
  /^\[CONFIRM REQUIRED tier 3 \(IRREVERSIBLE\): .*operation_confirm\(token="([A-Za-z0-9_-]{22})"\)/;
const ARMED = "[armed: re-issue the exact Tier-3 call now to execute it]";

function tokenOf(text: string): string {
  const token = TOKEN.exec(text)?.[1];
  if (!token) throw new Error(`not a challenge: ${text}`);
  return token;
}

/**
 * The confirmation identity of SSH calls (ADR 0009) and follow-ups on the
 * same host, through the built server against real OpenSSH servers. The
 * remote commands only touch canary files in the fixture's temp dir.
 */
describe.skipIf(SSHD_MISSING)("confirmation broker over SSH", () => {
  let fx: SshFixture;
  let fleet: Sshd;
  let bastion: Sshd;
  let s: TestServer;
  let canaries: string;
  const tokens: string[] = [];

  beforeAll(async () => {
    fx = createSshFixture();
    [fleet, bastion] = await Promise.all([fx.start({ ports: 2 }), fx.start()]);
    const host = (port: number) => ({ hostname: "127.0.0.1", port, user: fx.user });
    const inventory = join(fx.dir, "inventory.json");
    writeFileSync(
      inventory,
      JSON.stringify({
        web: host(fleet.ports[0] ?? 0),
        db: host(fleet.ports[1] ?? 0),
        bastion: host(bastion.port),
      }),
    );
    // The remote user is not the test's user: it may delete and create files here, nowhere else of ours.
    canaries = join(fx.dir, "canaries");
    mkdirSync(canaries);
    chmodSync(canaries, 0o777);
    s = await startServer({
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: join(fx.dir, "no-ssh-config"),
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "known_hosts"),
      RELAY_SHELL_CONFIRM_TIER3: "true",
      RELAY_SHELL_CONFIRM_ROLLBACK: "true",
    });
  });
  afterAll(async () => {
    if (s) {
      const audit = s.auditText();
      for (const token of tokens) expect(audit).not.toContain(token);
    }
    await s?.close();
    fx?.close();
  });

  function canary(name: string): string {
    const path = join(canaries, name);
    writeFileSync(path, "canary\n");
    chmodSync(path, 0o666);
    return path;
  }

  it("a token armed for one host, user, port, key, jump or host-key mode authorizes none of the others", async () => {
    const victim = canary("identity.txt");
    const call = { host: "web", command: `rm -f ${victim}` };
    const token = tokenOf((await s.call("ssh_exec", call)).text);
    tokens.push(token);
    expect(s.records().at(-1)).toMatchObject({
      action: "confirm_plan",
      args: { host: "web", user: "", port: 0, key_path: "", jump: "", known_hosts: "accept-new" },
    });
    expect((await s.call("operation_confirm", { token })).text).toBe(ARMED);

    for (const change of [
      { host: "db" },
      { user: "root" },
      { user: fx.user },
      { port: fleet.ports[0] ?? 0 },
      { key_path: fx.clientKey },
      { jump: "bastion" },
      { known_hosts: "strict" },
    ]) {
      const r = await s.call("ssh_exec", { ...call, ...change });
      tokens.push(tokenOf(r.text));
      expect(existsSync(victim), JSON.stringify(change)).toBe(true);
    }
    // None of them spent the token: the exact call still runs, once, over SSH.
    const run = await s.call("ssh_exec", call);
    expect(run.text.startsWith("[exit 0]\n")).toBe(true);
    expect(run.structured.action).toBe("confirm_execute");
    expect(existsSync(victim)).toBe(false);
    tokens.push(tokenOf((await s.call("ssh_exec", call)).text));
  });

  it("verify and rollback run on the same host with the same identity", async () => {
    const victim = canary("restore.txt");
    const backup = canary("restore.bak");
    const call = { host: "web", user: fx.user, key_path: fx.clientKey, command: `rm -f ${victim}` };
    const token = tokenOf((await s.call("ssh_exec", call)).text);
    tokens.push(token);
    const arm = await s.call("operation_confirm", {
      token,
      verify_command: `test -e ${victim}`,
      rollback_command: `cp ${backup} ${victim} && echo "restored on $(hostname) as $(id -un)"`,
      auto_rollback: true,
    });
    expect(arm.text).toBe(ARMED);
    const r = await s.call("ssh_exec", call);
    expect(r.text).toContain(
      `[verify exit 1]\n[verify failed: exit status 1; running the bound rollback once]\n[rollback exit 0]\nrestored on`,
    );
    expect(r.text).toContain(`as ${fx.user}\n`);
    expect(readFileSync(victim, "utf8")).toBe("canary\n");
    const steps = s.records().slice(-3);
    for (const rec of steps) {
      expect(rec.args).toMatchObject({
        host: "web",
        user: fx.user,
        key_path: fx.clientKey,
        known_hosts: "accept-new",
      });
    }
    expect(steps.map((rec) => rec.action)).toEqual(["confirm_execute", "confirm_verify", "confirm_rollback"]);
  });

  it("a fan-out token is bound to its host list, and a fan-out cannot carry follow-ups", async () => {
    const victim = canary("fanout.txt");
    const call = { hosts: "web", command: `rm -f ${victim}` };
    const token = tokenOf((await s.call("ssh_fanout", call)).text);
    tokens.push(token);
    const refused = await s.call("operation_confirm", {
      token,
      verify_command: "true",
      rollback_command: "true",
      auto_rollback: true,
    });
    expect(refused.text).toBe(
      "[ERROR: verify_command cannot be bound: ssh_fanout cannot run verify or rollback commands; the token was not armed]",
    );
    expect((await s.call("operation_confirm", { token })).text).toBe(ARMED);
    tokens.push(tokenOf((await s.call("ssh_fanout", { ...call, hosts: "web,db" })).text));
    expect(existsSync(victim)).toBe(true);
    const run = await s.call("ssh_fanout", call);
    const parsed = JSON.parse(run.text) as { results: Array<{ exit_code: number }>; notices: string[] };
    expect(parsed.results[0]?.exit_code).toBe(0);
    expect(parsed.notices[0]).toContain("it was explicitly confirmed first");
    expect(existsSync(victim)).toBe(false);
  });
});
