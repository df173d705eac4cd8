import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { localBackend, type OAuthWorld, postgresBackend } from "../../test/helpers/shared-state.js";
import { cryptoIds, silentLogger } from "../core/index.js";
import { OAuthFailure, sha256Hex } from "./oauth-common.js";
import { createOAuthProvider, REFRESH_GONE, REFRESH_SPENT } from "./oauth-provider.js";
import { parseRegistration } from "./oauth-registration.js";
import type { ClientRecord, CodeRecord, OAuthStore, StoredToken, TokenRecord } from "./oauth-state.js";

/**
 * One list of behaviours for both OAuth state backends: the files of one relay and the
 * PostgreSQL tables several relays share. Races run the racers on `world.peer` as well, which for
 * PostgreSQL is another pool on the same database, as another relay would be.
 */

const digest = (n: number): string => sha256Hex(`value-${n}`);
const CLIENT: ClientRecord = {
  client_id: "client-a",
  client_id_issued_at: 1_800_000_000,
  client_secret_sha256: sha256Hex("secret"),
  client_secret_expires_at: 0,
  redirect_uris: ["http://127.0.0.1:9999/cb", "https://app.test/cb"],
  token_endpoint_auth_method: "client_secret_post",
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  client_name: "test",
  software_version: "1.2",
};
const PUBLIC_CLIENT: ClientRecord = {
  client_id: "client-b",
  client_id_issued_at: 1_800_000_001,
  redirect_uris: ["myapp:/cb"],
  token_endpoint_auth_method: "none",
  grant_types: [],
  response_types: ["code"],
};
const code = (expires_at = 2_000_000_000): CodeRecord => ({
  client_id: CLIENT.client_id,
  scopes: ["mcp:tools"],
  expires_at,
  code_challenge: "c".repeat(43),
  redirect_uri: "http://127.0.0.1:9999/cb",
  redirect_uri_explicit: true,
  resource: "https://relay.test/mcp",
});
const token = (kind: TokenRecord["kind"], n: number, expires_at = 2_000_000_000): StoredToken => ({
  digest: digest(n),
  record: { kind, client_id: CLIENT.client_id, scopes: ["mcp:tools"], expires_at },
});
const pair = (n: number): StoredToken[] => [token("access", n), token("refresh", n + 1)];

for (const backend of [localBackend(), postgresBackend()]) {
  describe.skipIf(backend.skip !== null)(`OAuth store contract: ${backend.name}`, () => {
    let world: OAuthWorld;
    let store: OAuthStore;
    /** The racers, alternating between this relay's store and the peer's. */
    const racer = (i: number): OAuthStore => (i % 2 === 0 ? world.store : world.peer);

    beforeAll(() => backend.start(), 120_000);
    afterAll(() => backend.stop());
    beforeEach(async () => {
      world = await backend.oauth();
      store = world.store;
    });
    afterEach(() => world.dispose());

    it("keeps clients as registered, optional fields and all, and counts them", async () => {
      expect(await store.clientCount()).toBe(0);
      expect(await store.registerClient(CLIENT, false)).toEqual({ outcome: "stored", record: CLIENT });
      expect(await store.registerClient(PUBLIC_CLIENT, false)).toMatchObject({ outcome: "stored" });
      expect(await store.getClient(CLIENT.client_id)).toEqual(CLIENT);
      expect(await store.getClient(PUBLIC_CLIENT.client_id)).toEqual(PUBLIC_CLIENT);
      expect(await store.getClient("nobody")).toBeUndefined();
      expect(await store.clientCount()).toBe(2);
    });

    it("under lockdown admits one client and its identical re-registration, and nothing else", async () => {
      expect((await store.registerClient(CLIENT, true)).outcome).toBe("stored");
      expect(await store.registerClient({ ...CLIENT }, true)).toEqual({
        outcome: "unchanged",
        record: CLIENT,
      });
      const changed = { ...CLIENT, redirect_uris: ["https://evil.test/cb"] };
      expect(await store.registerClient(changed, true)).toEqual({ outcome: "refused" });
      expect(await store.registerClient(PUBLIC_CLIENT, true)).toEqual({ outcome: "refused" });
      expect(await store.getClient(CLIENT.client_id)).toEqual(CLIENT);
      expect(await store.clientCount()).toBe(1);
      // Without lockdown a client is replaced and others join.
      expect((await store.registerClient(changed, false)).outcome).toBe("stored");
      expect((await store.getClient(CLIENT.client_id))?.redirect_uris).toEqual(["https://evil.test/cb"]);
      expect((await store.registerClient(PUBLIC_CLIENT, false)).outcome).toBe("stored");
    });

    it("of concurrent first registrations under lockdown stores exactly one", async () => {
      const clients = Array.from({ length: 10 }, (_, i) => ({ ...PUBLIC_CLIENT, client_id: `racer-${i}` }));
      const results = await Promise.all(clients.map((c, i) => racer(i).registerClient(c, true)));
      expect(results.filter((r) => r.outcome === "stored")).toHaveLength(1);
      expect(results.filter((r) => r.outcome === "refused")).toHaveLength(9);
      expect(await store.clientCount()).toBe(1);
    });

    it("gives a code once, then never again", async () => {
      await store.saveCode(digest(1), code());
      expect(await store.takeCode(digest(2))).toBeUndefined();
      expect(await store.takeCode(digest(1))).toEqual(code());
      expect(await store.takeCode(digest(1))).toBeUndefined();
      const { resource: _, ...bare } = code();
      await store.saveCode(digest(3), bare);
      expect(await store.takeCode(digest(3))).toEqual(bare);
    });

    it("gives a code to exactly one of 20 concurrent takers", async () => {
      await store.saveCode(digest(1), code());
      const taken = await Promise.all(Array.from({ length: 20 }, (_, i) => racer(i).takeCode(digest(1))));
      expect(taken.filter((record) => record !== undefined)).toEqual([code()]);
    });

    it("keeps tokens by kind and digest, and forgets one on request", async () => {
      await store.saveTokens(pair(1));
      expect(await store.getToken("access", digest(1))).toEqual(token("access", 1).record);
      expect(await store.getToken("refresh", digest(2))).toEqual(token("refresh", 2).record);
      expect(await store.getToken("refresh", digest(1))).toBeUndefined();
      expect(await store.getToken("access", digest(2))).toBeUndefined();
      await store.deleteToken("access", digest(1));
      expect(await store.getToken("access", digest(1))).toBeUndefined();
      expect(await store.getToken("refresh", digest(2))).toBeDefined();
      const withResource = token("access", 9);
      withResource.record.resource = "https://relay.test/mcp";
      await store.saveTokens([withResource]);
      expect(await store.getToken("access", digest(9))).toEqual(withResource.record);
    });

    it("rotates a refresh token once, and only for its own client", async () => {
      await store.saveTokens(pair(1));
      expect(await store.rotateRefresh(digest(2), "someone-else", pair(3))).toBe(false);
      expect(await store.getToken("refresh", digest(2))).toBeDefined();
      expect(await store.getToken("access", digest(3))).toBeUndefined();
      expect(await store.rotateRefresh(digest(1), CLIENT.client_id, pair(3))).toBe(false);
      expect(await store.rotateRefresh(digest(2), CLIENT.client_id, pair(3))).toBe(true);
      expect(await store.getToken("refresh", digest(2))).toBeUndefined();
      expect(await store.getToken("access", digest(3))).toBeDefined();
      expect(await store.getToken("refresh", digest(4))).toBeDefined();
      expect(await store.rotateRefresh(digest(2), CLIENT.client_id, pair(5))).toBe(false);
      expect(await store.getToken("access", digest(5))).toBeUndefined();
    });

    it("lets exactly one of 10 concurrent rotations of one refresh token win", async () => {
      await store.saveTokens(pair(1));
      const next = (i: number) => pair(100 + 2 * i);
      const won = await Promise.all(
        Array.from({ length: 10 }, (_, i) => racer(i).rotateRefresh(digest(2), CLIENT.client_id, next(i))),
      );
      expect(won.filter(Boolean)).toHaveLength(1);
      const winner = won.indexOf(true);
      for (let i = 0; i < 10; i += 1) {
        expect(await store.getToken("access", digest(100 + 2 * i)), String(i)).toEqual(
          i === winner ? token("access", 100 + 2 * i).record : undefined,
        );
      }
    });

    it("revokes a token only for the client it belongs to", async () => {
      await store.saveTokens(pair(1));
      expect(await store.revoke(digest(1), "someone-else")).toBe(0);
      expect(await store.getToken("access", digest(1))).toBeDefined();
      expect(await store.revoke(digest(1), CLIENT.client_id)).toBe(1);
      expect(await store.getToken("access", digest(1))).toBeUndefined();
      expect(await store.revoke(digest(2), CLIENT.client_id)).toBe(1);
      expect(await store.revoke(digest(2), CLIENT.client_id)).toBe(0);
    });

    it("sweeps codes and tokens that expired before now, and nothing else", async () => {
      await store.saveCode(digest(1), code(100));
      await store.saveCode(digest(2), code(150));
      await store.saveTokens([token("access", 3, 100), token("refresh", 4, 150), token("access", 5, 200)]);
      expect(await store.sweep(150)).toEqual({ codes: 1, tokens: 1 });
      expect(await store.takeCode(digest(1))).toBeUndefined();
      expect(await store.takeCode(digest(2))).toEqual(code(150));
      expect(await store.getToken("access", digest(3))).toBeUndefined();
      expect(await store.getToken("refresh", digest(4))).toBeDefined();
      expect(await store.sweep(150)).toEqual({ codes: 0, tokens: 0 });
    });

    it("keeps at most its bounds, dropping the oldest first", async () => {
      const bounded = await backend.oauth({ codes: 3, tokens: 4 });
      try {
        for (let i = 1; i <= 5; i += 1) await bounded.store.saveCode(digest(i), code());
        const codes = await Promise.all([1, 2, 3, 4, 5].map((i) => bounded.store.takeCode(digest(i))));
        expect(codes.map((c) => c !== undefined)).toEqual([false, false, true, true, true]);
        for (const n of [10, 20, 30]) await bounded.store.saveTokens(pair(n));
        expect(await bounded.store.getToken("access", digest(10))).toBeUndefined();
        expect(await bounded.store.getToken("refresh", digest(11))).toBeUndefined();
        for (const n of [20, 30]) expect(await bounded.store.getToken("access", digest(n))).toBeDefined();
      } finally {
        await bounded.dispose();
      }
    });

    it("shows another store on the same state what this one saved", async () => {
      await store.registerClient(CLIENT, true);
      await store.saveCode(digest(1), code());
      await store.saveTokens(pair(2));
      const other = await world.reopen();
      expect(await other.getClient(CLIENT.client_id)).toEqual(CLIENT);
      expect(await other.getToken("access", digest(2))).toEqual(token("access", 2).record);
      expect(await other.takeCode(digest(1))).toEqual(code());
      expect(await other.rotateRefresh(digest(3), CLIENT.client_id, pair(4))).toBe(true);
    });

    it("through the provider, gives one new pair to exactly one of 10 concurrent refreshes", async () => {
      const config = {
        issuer: "https://relay.test",
        singleClient: true,
        accessTtl: 60,
        refreshTtl: 600,
        codeTtl: 60,
      };
      const providers = [world.store, world.peer].map((s) =>
        createOAuthProvider(config, {
          store: s,
          clock: { now: () => 1_800_000_000_000, monotonic: () => 0 },
          ids: cryptoIds,
          logger: silentLogger,
        }),
      );
      const [first, second] = providers as [(typeof providers)[0], (typeof providers)[0]];
      const registration = parseRegistration({ redirect_uris: ["https://app.test/cb"] }, cryptoIds, 1);
      const client = await first.registerClient(registration.record);
      const verifier = "v".repeat(43);
      const challenge = sha256Base64url(verifier);
      const issued = await first.authorize(client, {
        redirectUri: "https://app.test/cb",
        redirectUriExplicit: false,
        scope: undefined,
        codeChallenge: challenge,
        codeChallengeMethod: "S256",
        resource: undefined,
      });
      const start = await second.exchangeCode(client, issued, verifier, undefined, undefined);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 === 0 ? first : second).exchangeRefresh(client, start.refresh_token, undefined, undefined),
        ),
      );
      const winners = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
      expect(winners).toHaveLength(1);
      for (const outcome of outcomes) {
        if (outcome.status === "fulfilled") continue;
        expect(outcome.reason).toBeInstanceOf(OAuthFailure);
        expect(outcome.reason).toMatchObject({ error: "invalid_grant", status: 400 });
        expect([REFRESH_SPENT, REFRESH_GONE]).toContain((outcome.reason as OAuthFailure).message);
      }
      const fresh = winners[0]?.access_token ?? "";
      expect((await first.verifyAccessToken(fresh)).ok).toBe(true);
      expect((await second.verifyAccessToken(fresh)).ok).toBe(true);
      expect((await second.verifyAccessToken(start.access_token)).ok).toBe(true);
    });
  });
}

function sha256Base64url(value: string): string {
  return Buffer.from(sha256Hex(value), "hex").toString("base64url");
}
