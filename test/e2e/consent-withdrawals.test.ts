import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { actDigest, consentPayload } from "../../src/consent/payload.js";
import type { ConsentAct } from "../../src/consent/types.js";
import {
  CONSENT_SKIP_REASON,
  type ConsentRelay,
  type ConsentWorld,
  canaryLines,
  consentId,
  createConsentWorld,
} from "../helpers/consent.js";

/*
 * The relay's own account against the operator's withdrawals (docs/consent.md, "Threat model";
 * ADR 0037). The server runs as that account; every edit below is made as that account too,
 * through the database file it owns and the ledger it may only append to. Commands under test
 * only append to canaries in the world's work directory.
 */

const BETTER_SQLITE3 = createRequire(import.meta.url).resolve("better-sqlite3");

/** Run `statements` on the consent database as the relay's account, as a command it ran could. */
function asRelaySql(world: ConsentWorld, statements: Array<[string, unknown[]]>): void {
  const script = `const Database = require(${JSON.stringify(BETTER_SQLITE3)});
const db = new Database(process.argv[1]);
for (const [sql, params] of JSON.parse(process.argv[2])) db.prepare(sql).run(...params);
db.close();`;
  const r = spawnSync(
    "/usr/sbin/runuser",
    ["-u", world.user.name, "--", process.execPath, "-e", script, world.db, JSON.stringify(statements)],
    { encoding: "utf8" },
  );
  if (r.status !== 0) throw new Error(`the relay's account could not edit the database: ${r.stderr}`);
}

/** A shell command run as the relay's account; its exit status. */
function asRelayShell(world: ConsentWorld, command: string): number {
  return spawnSync("/usr/sbin/runuser", ["-u", world.user.name, "--", "sh", "-c", command], {
    stdio: "ignore",
  }).status as number;
}

const lines = canaryLines;

describe.skipIf(CONSENT_SKIP_REASON !== null)("consent withdrawals the relay's account cannot undo", () => {
  let world: ConsentWorld;
  let relay: ConsentRelay;

  beforeAll(async () => {
    world = createConsentWorld();
    relay = await world.startRelay();
  });
  afterAll(async () => {
    await relay?.close();
    world?.cleanup();
  });

  const append = (canary: string) => ({ command: `echo ran >> ${canary}`, cwd: world.work });
  const approved = (id: string) => {
    const r = world.approve(id);
    expect(r.status, r.stderr).toBe(0);
  };
  const restart = async (extra: Record<string, string> = {}) => {
    await relay.close();
    relay = await world.startRelay(extra);
  };

  it("a denied approval stays denied after the row is set back to approved and the relay restarts", async () => {
    const canary = join(world.work, "denied");
    const id = consentId((await relay.call("shell_exec", append(canary))).text);
    approved(id);
    expect(world.cli(["deny", id, "--reason", "changed my mind"]).status).toBe(0);
    asRelaySql(world, [["UPDATE requests SET status = 'approved', denial = NULL WHERE id = ?", [id]]]);
    for (const step of ["before", "after"]) {
      if (step === "after") await restart();
      const r = await relay.call("shell_exec", append(canary));
      expect(r.text, step).toMatch(/^\[DENIED tier \d \([A-Z_]+\): consent: /);
      expect(r.text, step).toContain(`request ${id} was denied`);
    }
    // Deleting the row only makes the act ask again.
    asRelaySql(world, [["DELETE FROM requests WHERE id = ?", [id]]]);
    expect(consentId((await relay.call("shell_exec", append(canary))).text)).not.toBe(id);
    expect(lines(canary)).toBe(0);
  });

  it("a spent approval stays spent after the row and its nonce are restored and the relay restarts", async () => {
    const canary = join(world.work, "spent");
    const id = consentId((await relay.call("shell_exec", append(canary))).text);
    approved(id);
    expect((await relay.call("shell_exec", append(canary))).text).toBe("[exit 0]\n");
    asRelaySql(world, [
      ["UPDATE requests SET status = 'approved', consumed_at = NULL WHERE id = ?", [id]],
      ["DELETE FROM nonces", []],
    ]);
    await restart();
    const again = await relay.call("shell_exec", append(canary));
    expect(again.text).toContain(`the approval of request ${id} was already used`);
    expect(lines(canary)).toBe(1);
  });

  it("a revoked lease stays revoked when the database says it is live again", async () => {
    await restart({ RELAY_SHELL_CONSENT_LEASE_MODE: "window", RELAY_SHELL_CONSENT_LEASE_BUDGET: "20" });
    const read = (n: number) => ({ command: `echo lease-${n}`, cwd: world.work });
    for (const how of ["one", "all"]) {
      approved(consentId((await relay.call("shell_exec", read(0))).text));
      expect((await relay.call("shell_exec", read(0))).text).toBe("[exit 0]\nlease-0\n");
      expect((await relay.call("shell_exec", read(1))).text).toBe("[exit 0]\nlease-1\n");
      const lease = /^ {2}([0-9a-f]{10}) .* live, /m.exec(world.cli(["leases"]).stdout)?.[1] ?? "";
      expect(lease, how).not.toBe("");
      expect(world.cli(how === "one" ? ["revoke", lease] : ["revoke", "--all"]).status).toBe(0);
      asRelaySql(world, [["UPDATE leases SET revoked = 0", []]]);
      expect(consentId((await relay.call("shell_exec", read(2))).text), how).toMatch(/^[0-9a-f]{10}$/);
    }
    await restart();
  });

  it("the ledger can be appended to by the relay's account, never truncated, rewritten, moved or removed", async () => {
    const before = readFileSync(world.ledger);
    expect(asRelayShell(world, `: > '${world.ledger}'`)).not.toBe(0);
    expect(asRelayShell(world, `rm -f '${world.ledger}'`)).not.toBe(0);
    expect(asRelayShell(world, `mv '${world.ledger}' '${world.ledger}.old'`)).not.toBe(0);
    expect(asRelayShell(world, `chattr -a '${world.ledger}'`)).not.toBe(0);
    expect(asRelayShell(world, `printf x | dd of='${world.ledger}' conv=notrunc 2>/dev/null`)).not.toBe(0);
    expect(readFileSync(world.ledger).subarray(0, before.length).equals(before)).toBe(true);
    // An unfinished line appended by the account does not swallow the operator's next withdrawal.
    expect(asRelayShell(world, `printf '{"v":1,"kind":"deny","request":"' >> '${world.ledger}'`)).toBe(0);
    const canary = join(world.work, "after-garbage");
    const id = consentId((await relay.call("shell_exec", append(canary))).text);
    approved(id);
    expect(world.cli(["deny", id]).status).toBe(0);
    asRelaySql(world, [["UPDATE requests SET status = 'approved', denial = NULL WHERE id = ?", [id]]]);
    expect((await relay.call("shell_exec", append(canary))).text).toContain(`request ${id} was denied`);
    expect(lines(canary)).toBe(0);
  });

  it("approve --yes signs only the act whose digest the operator copied from show", async () => {
    const canary = join(world.work, "swapped");
    const id = consentId((await relay.call("shell_exec", { command: "uptime", cwd: world.work })).text);
    const shown = world.cli(["show", id]);
    expect(shown.stdout).toContain("uptime");
    const digest = /^digest: +([0-9a-f]{64})$/m.exec(shown.stdout)?.[1] ?? "";
    // The relay's account rewrites the act, its payload and its digest consistently.
    const db = new Database(world.db, { readonly: true });
    const row = db.prepare("SELECT * FROM requests WHERE id = ?").get(id) as Record<string, string | number>;
    const instance = db.prepare("SELECT value FROM meta WHERE key = 'instance_id'").pluck().get() as string;
    db.close();
    const swapped: ConsentAct = {
      tool: "shell_exec",
      tier: 2,
      bound: { ...JSON.parse(String(row.act)).bound, command: `echo ran >> ${canary}` },
    };
    const payload = consentPayload(swapped, {
      request: id,
      nonce: String(row.nonce),
      expiresAt: Number(row.expires_at),
      instance,
    });
    asRelaySql(world, [
      [
        "UPDATE requests SET act = ?, payload = ?, act_digest = ? WHERE id = ?",
        [JSON.stringify(swapped), payload, actDigest(swapped), id],
      ],
    ]);
    const r = world.cli([
      "approve",
      id,
      "--key",
      world.operatorKey,
      "--yes",
      "--digest",
      digest.slice(0, 16),
    ]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`request ${id} now holds another act`);
    expect(r.stderr).toContain("nothing is signed");
    expect(world.cli(["show", id]).stdout).toContain("status:   pending");
    consentId((await relay.call("shell_exec", { command: `echo ran >> ${canary}`, cwd: world.work })).text);
    expect(lines(canary)).toBe(0);
  });

  it("bounds the requests one session may leave waiting, refuses past it, and list counts them", async () => {
    await restart();
    const texts: string[] = [];
    for (let n = 0; n < 17; n += 1) {
      texts.push((await relay.call("shell_exec", append(join(world.work, `flood-${n}`)))).text);
    }
    const held = texts.filter((t) => t.startsWith("[CONSENT REQUIRED"));
    expect(held.length).toBe(16);
    const refused = texts[16] ?? "";
    expect(refused).toMatch(
      /^\[DENIED tier \d \([A-Z_]+\): consent: this consent session already has 16 requests waiting/,
    );
    expect(refused).toContain("no new request was made");
    const audited = world.records().filter((r) => r.action === "consent_refuse");
    expect(audited.at(-1)).toMatchObject({
      args: {
        command: expect.stringContaining("flood-16"),
        consent: { pending_limit: { session: 16, total: 128 } },
      },
    });
    expect(world.cli(["list"]).stdout).toMatch(/^session \S+ {2}client .* 16 pending, 0 approved$/m);
    for (let n = 0; n < 17; n += 1) expect(lines(join(world.work, `flood-${n}`))).toBe(0);
  });
});
