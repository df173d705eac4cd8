import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSENT_SKIP_REASON, type ConsentWorld, consentId, createConsentWorld } from "../helpers/consent.js";
import { obtainTokens, registerClient } from "../helpers/oauth-flow.js";
import { POSTGRES_SKIP_REASON, type PostgresCluster, startPostgres } from "../helpers/postgres.js";
import {
  auditRecords,
  connectThrough,
  type FleetClient,
  HAPROXY_SKIP_REASON,
  startRelayFleet,
} from "../helpers/relays.js";
import { SERVER_ENTRY } from "../helpers/server.js";

const SKIP = CONSENT_SKIP_REASON ?? POSTGRES_SKIP_REASON ?? HAPROXY_SKIP_REASON;

/** `relay-shell --verify-audit` of one relay's file: exit 0 when its chain is whole. */
function verifies(path: string): { status: number; output: string } {
  const r = spawnSync(process.execPath, [SERVER_ENTRY, "--verify-audit", "--audit-path", path], {
    encoding: "utf8",
    timeout: 60_000,
  });
  return { status: r.status ?? -1, output: `${r.stdout}${r.stderr}` };
}

/**
 * The error a call on a dead relay's session ends with once the balancer has taken that relay out.
 * Until its health check has failed twice, a request may still be sent to the dead relay and end
 * as a network error or HAProxy's 503; a client retries those, so this does too, for at most 15 s.
 */
async function refusalAfterFailover(call: () => Promise<unknown>): Promise<string> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await call();
      return "answered";
    } catch (err) {
      const text = String(err);
      if (!/fetch failed|HTTP 503|other side closed|ECONNRESET/.test(text) || Date.now() > deadline)
        return text;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * What several relays do when one of them, or their database, fails (docs/scaling.md): the others
 * go on without an error, what needs the database is refused and audited, and nothing is lost.
 */
describe.skipIf(SKIP !== null)("several relays when a part fails", () => {
  let world: ConsentWorld;
  let pg: PostgresCluster;

  beforeAll(async () => {
    world = createConsentWorld();
    pg = await startPostgres();
  }, 120_000);

  afterAll(async () => {
    await pg?.stop();
    world?.cleanup();
  });

  /** Three relays with OAuth on a database of their own, and a bearer header for their one client. */
  async function fleetWithToken(database: string, settings: Record<string, string>) {
    const url = await pg.createDatabase(database);
    const fleet = await startRelayFleet(world, url, settings, { oauth: true });
    const client = await registerClient(fleet.base);
    const tokens = await obtainTokens(fleet.base, client);
    return { fleet, url, client, auth: { Authorization: `Bearer ${tokens.access_token}` } };
  }

  it("loses no call on the other relays, and no audit record anywhere, when one relay is killed under 64 clients", async () => {
    const { fleet, auth } = await fleetWithToken("kill", { RELAY_SHELL_CONSENT: "false" });
    const clients: FleetClient[] = [];
    try {
      for (let i = 0; i < 64; i += 1) clients.push(await connectThrough(fleet.base, auth));
      const victim = clients[0]?.holder() ?? "";
      // Each client on the victim holds a terminal, to be told afterwards where it went.
      const terminals = new Map<FleetClient, string>();
      for (const client of clients.filter((c) => c.holder() === victim).slice(0, 4)) {
        const spawned = await client.call("shell_spawn", { command: "sh" });
        terminals.set(client, /session (\S+) started/.exec(spawned.text)?.[1] ?? "");
      }
      const answered = new Map<string, number>();
      const errors: string[] = [];
      let stop = false;
      const load = clients
        .filter((c) => c.holder() !== victim)
        .map(async (client, i) => {
          while (!stop) {
            try {
              const r = await client.call("shell_exec", { command: `echo load-${i}` });
              if (r.isError || !r.text.startsWith("[exit 0]")) errors.push(r.text);
              else answered.set(client.holder(), (answered.get(client.holder()) ?? 0) + 1);
            } catch (err) {
              errors.push(String(err));
            }
          }
        });
      await new Promise((r) => setTimeout(r, 1000));
      await fleet.kill(victim);
      await new Promise((r) => setTimeout(r, 3000));
      stop = true;
      await Promise.all(load);
      expect(errors).toEqual([]);
      expect([...answered.values()].every((n) => n > 0)).toBe(true);

      // The victim's clients find their session gone ("Session not found" from the relay the
      // balancer now sends them to), start a new one through the balancer as the protocol says,
      // and learn that their terminal went with the relay.
      for (const [client, id] of terminals) {
        expect(await refusalAfterFailover(() => client.call("session_recv", { session_id: id }))).toMatch(
          /Session not found/,
        );
        const fresh = await connectThrough(fleet.base, auth);
        clients.push(fresh);
        expect(fresh.holder()).not.toBe(victim);
        const gone = await fresh.call("session_recv", { session_id: id });
        expect(gone.text).toContain(`session ${id} is held by relay ${victim}`);
        expect(gone.text).toContain("If that relay stopped, the terminal ended with it");
      }

      // Every call a live relay answered is in its audit file, and every file's chain is whole.
      for (const relay of fleet.relays) {
        const records = auditRecords(relay.audit);
        expect(records.every((r) => r.instance === relay.name)).toBe(true);
        if (relay.name === victim) {
          // What the victim answered before it died is in its file.
          const spawns = records.filter((r) => r.tool === "shell_spawn" && r.denied === false);
          expect(spawns.length).toBe(terminals.size);
        } else {
          const load = records.filter((r) => r.tool === "shell_exec" && /load-/.test(JSON.stringify(r.args)));
          expect(load.length).toBe(answered.get(relay.name) ?? 0);
        }
        const verified = verifies(relay.audit);
        expect(verified.status, verified.output).toBe(0);
      }
    } finally {
      await Promise.allSettled(clients.map((c) => c.close()));
      await fleet.stop();
    }
  }, 120_000);

  it("refuses and audits gated calls while PostgreSQL is down, and recovers without a restart", async () => {
    const {
      fleet,
      url,
      client: oauth,
      auth,
    } = await fleetWithToken("outage", { RELAY_SHELL_CONSENT_WAIT: "0" });
    const clients: FleetClient[] = [];
    try {
      // One session on each relay (the balancer places new sessions; keep one per relay).
      for (let i = 0; i < 24 && clients.length < fleet.relays.length; i += 1) {
        const session = await connectThrough(fleet.base, auth);
        if (clients.some((c) => c.holder() === session.holder())) await session.close();
        else clients.push(session);
      }
      expect(clients).toHaveLength(fleet.relays.length);
      // An act approved before the outage: single-use, before, during and after it.
      const canary = join(world.work, "outage-once");
      const once = { command: `echo ran >> ${canary}` };
      const asked = await clients[0]?.call("shell_exec", once);
      const extra = { RELAY_SHELL_STATE_URL: url, RELAY_SHELL_INSTANCE: "operator" };
      const id = consentId(asked?.text ?? "");
      const digest = /^digest: +([0-9a-f]{64})$/m.exec(world.cli(["show", id], extra).stdout)?.[1] ?? "";
      const approved = world.cli(
        ["approve", id, "--key", world.operatorKey, "--yes", "--digest", digest],
        extra,
      );
      expect(approved.status, approved.stderr).toBe(0);
      // Issued before the outage and never presented: no relay has seen it valid.
      const unseen = await obtainTokens(fleet.base, oauth);
      await pg.stopServer();
      try {
        // Nothing is granted from memory but what a relay verified itself: a 503 to retry later.
        await expect(
          connectThrough(fleet.base, { Authorization: `Bearer ${unseen.access_token}` }),
        ).rejects.toThrow(/503|unavailable/);
        for (const client of clients) {
          expect((await client.call("shell_exec", once)).text).toContain("nothing ran");
          const refused = await client.call("shell_exec", { command: `true during-${client.holder()}` });
          expect(refused.text).toMatch(
            /consent store cannot be used \(unavailable: PostgreSQL at 127\.0\.0\.1:\d+/,
          );
          expect(refused.text).toContain("nothing ran");
          // Calls that need no shared state go on.
          expect((await client.call("server_info")).isError).toBe(false);
        }
      } finally {
        await pg.startServer();
      }
      for (const relay of fleet.relays) {
        const refusals = auditRecords(relay.audit).filter(
          (r) => r.action === "consent_refuse" && JSON.stringify(r.args).includes("during-"),
        );
        expect(refusals.length, relay.name).toBeGreaterThan(0);
        expect(refusals.every((r) => r.denied === true)).toBe(true);
      }
      // The approval survived the outage whole, and is spent once however many relays race for it.
      const raced = await Promise.all(clients.map((client) => client.call("shell_exec", once)));
      expect(raced.filter((r) => r.text.startsWith("[exit 0]"))).toHaveLength(1);
      expect(readFileSync(canary, "utf8")).toBe("ran\n");
      // Back on their own: the same clients, the same relays, a challenge again.
      for (const client of clients) {
        const after = await client.call("shell_exec", { command: `true after-${client.holder()}` });
        expect(after.text).toContain("[CONSENT REQUIRED");
      }
    } finally {
      await Promise.allSettled(clients.map((c) => c.close()));
      await fleet.stop();
    }
  }, 120_000);
});
