import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSENT_SKIP_REASON, type ConsentWorld, consentId, createConsentWorld } from "../helpers/consent.js";
import {
  type OAuthClient,
  obtainTokens,
  refresh,
  registerClient,
  type TokenPair,
} from "../helpers/oauth-flow.js";
import { POSTGRES_SKIP_REASON, type PostgresCluster, startPostgres } from "../helpers/postgres.js";
import {
  auditRecords,
  connectThrough,
  type FleetClient,
  HAPROXY_SKIP_REASON,
  RELAY_NAMES,
  type RelayFleet,
  startRelayFleet,
} from "../helpers/relays.js";

const SKIP = CONSENT_SKIP_REASON ?? POSTGRES_SKIP_REASON ?? HAPROXY_SKIP_REASON;

/**
 * Three built relays on one PostgreSQL state behind the shipped HAProxy configuration
 * (docs/scaling.md): sessions stay on their relay, and what is single-use stays single-use
 * whichever relay a call reaches.
 */
describe.skipIf(SKIP !== null)("several relays on one PostgreSQL behind HAProxy", () => {
  let world: ConsentWorld;
  let pg: PostgresCluster;
  let fleet: RelayFleet;
  let shared: Record<string, string>;
  let oauth: OAuthClient;
  let tokens: TokenPair;
  const clients: FleetClient[] = [];

  beforeAll(async () => {
    world = createConsentWorld();
    pg = await startPostgres();
    shared = { RELAY_SHELL_STATE_URL: pg.url, RELAY_SHELL_INSTANCE: "operator" };
    fleet = await startRelayFleet(world, pg.url, { RELAY_SHELL_CONSENT_WAIT: "0" }, { oauth: true });
    // Each step through the balancer, so registration, authorization and exchange meet different relays.
    oauth = await registerClient(fleet.base);
    tokens = await obtainTokens(fleet.base, oauth);
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await fleet?.stop();
    await pg?.stop();
    world?.cleanup();
  });

  /** A new MCP session through the balancer, closed after the suite. */
  async function connect(): Promise<FleetClient> {
    const client = await connectThrough(fleet.base, { Authorization: `Bearer ${tokens.access_token}` });
    clients.push(client);
    return client;
  }

  /** The operator's `consent approve`, on the shared state (what `show` printed is what is signed). */
  function approve(id: string): void {
    const shown = world.cli(["show", id], shared);
    const digest = /^digest: +([0-9a-f]{64})$/m.exec(shown.stdout)?.[1];
    expect(shown.status, shown.stderr).toBe(0);
    const approved = world.cli(
      ["approve", id, "--key", world.operatorKey, "--yes", "--digest", digest ?? ""],
      shared,
    );
    expect(approved.status, approved.stderr).toBe(0);
  }

  /** A call the consent gate holds: asked, approved by the operator, asked again. */
  async function signed(client: FleetClient, tool: string, args: Record<string, unknown>) {
    approve(consentId((await client.call(tool, args)).text));
    return client.call(tool, args);
  }

  it("places new MCP sessions on every relay and keeps each session's calls on its relay", async () => {
    const sessions = await Promise.all(Array.from({ length: 6 }, () => connect()));
    const holders = sessions.map((s) => s.holder());
    expect(new Set(holders)).toEqual(new Set(RELAY_NAMES));
    for (const [i, session] of sessions.entries()) {
      for (let call = 0; call < 3; call += 1) {
        const marker = `placed-${i}-${call}`;
        const info = JSON.parse((await session.call("server_info")).text) as {
          state?: Record<string, string>;
        };
        expect(info.state).toEqual({
          backend: "postgresql",
          target: `127.0.0.1:${pg.port}`,
          instance: session.holder(),
        });
        expect((await session.call("shell_exec", { command: `true ${marker}` })).text).toContain("CONSENT");
        const relay = fleet.relay(session.holder());
        const records = auditRecords(relay.audit).filter((r) => JSON.stringify(r.args).includes(marker));
        expect(records.length, `${marker} on ${relay.name}`).toBeGreaterThan(0);
        for (const record of records) expect(record.instance).toBe(relay.name);
      }
    }
  });

  it("admits one client and its tokens on every relay, whichever relay issued them", async () => {
    // Single-client lockdown holds across relays: the second registration is refused wherever it lands.
    for (let i = 0; i < RELAY_NAMES.length; i += 1) {
      const again = await fetch(`${fleet.base}/register`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ redirect_uris: ["http://127.0.0.1:5555/cb"] }),
      });
      expect(again.status).toBe(400);
    }
    const fresh = await obtainTokens(fleet.base, oauth);
    for (const relay of fleet.relays) {
      const direct = await connectThrough(`http://127.0.0.1:${relay.port}`, {
        Authorization: `Bearer ${fresh.access_token}`,
      });
      clients.push(direct);
      expect((await direct.call("server_info")).isError).toBe(false);
      expect(auditRecords(relay.audit).at(-1)).toMatchObject({
        tool: "server_info",
        client_id: oauth.clientId,
      });
    }
    // No token, no session, on any relay.
    await expect(connectThrough(fleet.base)).rejects.toThrow();
  });

  it("lets exactly one of ten racing refreshes win, on any relay, and tells the others why", async () => {
    const pair = await obtainTokens(fleet.base, oauth);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => refresh(fleet.base, oauth, pair.refresh_token)),
    );
    const won = answers.filter((a) => a.status === 200);
    expect(won).toHaveLength(1);
    for (const lost of answers.filter((a) => a.status !== 200)) {
      expect(lost.status).toBe(400);
      expect(lost.body.error).toBe("invalid_grant");
      expect(String(lost.body.error_description)).toMatch(/refresh token already used/);
    }
    const next = won[0]?.body.access_token as string;
    const session = await connectThrough(fleet.base, { Authorization: `Bearer ${next}` });
    clients.push(session);
    expect((await session.call("server_info")).isError).toBe(false);
  });

  it("runs an approved act exactly once when 30 sessions on three relays race for it", async () => {
    const canary = join(world.work, "once");
    const args = { command: `echo ran >> ${canary}` };
    const asker = await connect();
    const id = consentId((await asker.call("shell_exec", args)).text);
    approve(id);
    const racers = await Promise.all(Array.from({ length: 30 }, () => connect()));
    expect(new Set(racers.map((r) => r.holder()))).toEqual(new Set(RELAY_NAMES));
    const answers = await Promise.all(racers.map((r) => r.call("shell_exec", args)));
    const ran = answers.filter((a) => a.text.startsWith("[exit 0]"));
    expect(ran).toHaveLength(1);
    expect(readFileSync(canary, "utf8")).toBe("ran\n");
    // Every other one was refused or asked again; none ran.
    for (const answer of answers) {
      if (answer === ran[0]) continue;
      expect(answer.text).toMatch(/already used|CONSENT REQUIRED/);
    }
    const executed = fleet.relays
      .flatMap((r) => auditRecords(r.audit))
      .filter((r) => r.action === "consent_execute" && JSON.stringify(r.args).includes(canary));
    expect(executed).toHaveLength(1);
  });

  it("lists a terminal on every relay and tells a call for it which relay holds it", async () => {
    const sessions = await Promise.all(Array.from({ length: 6 }, () => connect()));
    const [first] = sessions;
    const other = sessions.find((s) => s.holder() !== first?.holder());
    if (!first || !other) throw new Error("the balancer put every session on one relay");
    // Consent is on: the operator approves the terminal, and later its end.
    const spawned = await signed(first, "shell_spawn", { command: "sh" });
    const id = /session (\S+) started/.exec(spawned.text)?.[1] ?? "";
    expect(id).toMatch(new RegExp(`^sh-[0-9a-f]{12}@${first.holder()}$`));
    // Another relay lists it with its holder, for the same client.
    const listed = JSON.parse((await other.call("session_list")).text) as Array<Record<string, unknown>>;
    expect(listed).toContainEqual(
      expect.objectContaining({ id, kind: "local", held_by: first.holder(), relay_up: true }),
    );
    const elsewhere = await other.call("session_recv", { session_id: id });
    expect(elsewhere.text).toContain(
      `session ${id} is held by relay ${first.holder()}, not by this one (${other.holder()})`,
    );
    // Closed where it lives, it leaves every list.
    expect((await signed(first, "session_kill", { session_id: id, close: true })).isError).toBe(false);
    await new Promise((r) => setTimeout(r, 300));
    const after = JSON.parse((await other.call("session_list")).text) as Array<Record<string, unknown>>;
    expect(after.map((row) => row.id)).not.toContain(id);
  });
});

/** Tier-3 confirmation tokens in the shared state (ADR 0009, ADR 0038). */
describe.skipIf(SKIP !== null)("a confirmation token shared by several relays", () => {
  let world: ConsentWorld;
  let pg: PostgresCluster;
  let fleet: RelayFleet;
  let auth: Record<string, string>;
  const clients: FleetClient[] = [];

  beforeAll(async () => {
    world = createConsentWorld();
    pg = await startPostgres();
    fleet = await startRelayFleet(
      world,
      pg.url,
      { RELAY_SHELL_CONSENT: "false", RELAY_SHELL_CONFIRM_TIER3: "true" },
      { oauth: true },
    );
    const tokens = await obtainTokens(fleet.base, await registerClient(fleet.base));
    auth = { Authorization: `Bearer ${tokens.access_token}` };
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await fleet?.stop();
    await pg?.stop();
    world?.cleanup();
  });

  it("is planned and armed through one relay and consumed exactly once through the others", async () => {
    const sessions: FleetClient[] = [];
    for (let i = 0; i < 12; i += 1) sessions.push(await connectThrough(fleet.base, auth));
    clients.push(...sessions);
    const [planner] = sessions;
    if (!planner) throw new Error("no session");
    const racers = sessions.filter((s) => s.holder() !== planner.holder());
    expect(racers.length).toBeGreaterThan(2);
    const target = join(world.work, "tier3-canary");
    const args = { command: `rm -rf ${target}` };
    const planned = await planner.call("shell_exec", args);
    const token = /operation_confirm\(token="([^"]+)"\)/.exec(planned.text)?.[1] ?? "";
    expect(token, planned.text).not.toBe("");
    const armed = await planner.call("operation_confirm", { token });
    expect(armed.isError, armed.text).toBe(false);
    const answers = await Promise.all(racers.map((r) => r.call("shell_exec", args)));
    const ran = answers.filter((a) => a.text.startsWith("[exit 0]"));
    expect(ran, answers.map((a) => a.text.slice(0, 60)).join("\n")).toHaveLength(1);
    for (const answer of answers) if (answer !== ran[0]) expect(answer.text).toContain("[CONFIRM REQUIRED");
    const executed = fleet.relays
      .flatMap((r) => auditRecords(r.audit))
      .filter((r) => r.action === "confirm_execute");
    expect(executed).toHaveLength(1);
    expect(executed[0]?.instance).not.toBe(planner.holder());
  });
});
