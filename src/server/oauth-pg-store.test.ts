import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PostgresCluster } from "../../test/helpers/postgres.js";
import { postgresBackend } from "../../test/helpers/shared-state.js";
import { cryptoIds, type Logger, silentLogger, systemClock } from "../core/index.js";
import type { PgState } from "../state/index.js";
import { sendJson } from "./http-io.js";
import { createFailureThrottle } from "./http-throttle.js";
import { OAuthFailure, sha256Hex } from "./oauth-common.js";
import { openPgOAuthStore } from "./oauth-pg-store.js";
import { createOAuthProvider, type OAuthProvider } from "./oauth-provider.js";
import { parseRegistration } from "./oauth-registration.js";
import { createOAuthRoutes, type OAuthRoutes } from "./oauth-routes.js";
import { type ClientRecord, OAuthStateError, type OAuthStore } from "./oauth-state.js";

/**
 * The PostgreSQL backend when the database goes away: nothing is granted, nothing crashes, every
 * request that needs the state fails with a server error (503 over HTTP, not a 401 that would
 * send the client to sign in again), and the same pool serves again once the server is back.
 */

const ISSUER = "http://127.0.0.1";
const CONFIG = { issuer: ISSUER, singleClient: true, accessTtl: 3600, refreshTtl: 86_400, codeTtl: 300 };
const VERIFIER = "v".repeat(43);
const CHALLENGE = Buffer.from(sha256Hex(VERIFIER), "hex").toString("base64url");

/** A logger that keeps its error lines, to show what the operator would read. */
function recordingLogger(): Logger & { errors: string[] } {
  const errors: string[] = [];
  return {
    ...silentLogger,
    errors,
    error: (fields, message) => errors.push(`${message} ${JSON.stringify(fields)}`),
  };
}

const postgres = postgresBackend();

describe.skipIf(postgres.skip !== null)("OAuth state on PostgreSQL, unreachable and back", () => {
  let cluster: PostgresCluster;
  let store: OAuthStore;
  let provider: OAuthProvider;
  let routes: OAuthRoutes;
  let http: Server;
  let base: string;
  let client: ClientRecord;
  let secret: string;
  const logger = recordingLogger();

  const pairOf = async () => {
    const code = await provider.authorize(client, {
      redirectUri: "https://app.test/cb",
      redirectUriExplicit: false,
      scope: undefined,
      codeChallenge: CHALLENGE,
      codeChallengeMethod: "S256",
      resource: undefined,
    });
    return provider.exchangeCode(client, code, VERIFIER, undefined, undefined);
  };
  const bearer = (token: string) => fetch(`${base}/mcp`, { headers: { Authorization: `Bearer ${token}` } });
  const refresh = (token: string) =>
    fetch(`${base}/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: token,
        client_id: client.client_id,
        client_secret: secret,
      }),
    });

  beforeAll(async () => {
    await postgres.start();
    cluster = postgres.cluster();
    const [state] = await postgres.relays(1);
    store = openPgOAuthStore(state as PgState);
    provider = createOAuthProvider(CONFIG, { store, clock: systemClock, ids: cryptoIds, logger });
    const throttle = createFailureThrottle({ maxFailures: 3, windowMs: 60_000, maxSources: 10 }, systemClock);
    routes = createOAuthRoutes({
      provider,
      throttle,
      clock: systemClock,
      ids: cryptoIds,
      logger,
      mcpPath: "/mcp",
    });
    http = createServer(async (req, res) => {
      const path = new URL(req.url ?? "/", ISSUER).pathname;
      if (await routes.handle(req, res, path)) return;
      const info = await routes.authenticate(req, res);
      if (info) sendJson(res, 200, { client_id: info.clientId });
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    const registration = parseRegistration({ redirect_uris: ["https://app.test/cb"] }, cryptoIds, 1);
    client = await provider.registerClient(registration.record);
    secret = registration.secret ?? "";
  }, 120_000);
  afterAll(async () => {
    await new Promise((resolve) => http?.close(resolve));
    await postgres.stop();
  });

  it("fails closed while the database is down and serves again once it is back, on the same pool", async () => {
    const pair = await pairOf();
    expect((await bearer(pair.access_token)).status).toBe(200);
    // Issued, never presented here: this relay has not seen it valid.
    const unseen = await pairOf();
    await cluster.stopServer();
    try {
      // The store says what failed, and that it is worth trying again.
      const read = store.getToken("access", sha256Hex(pair.access_token));
      await expect(read).rejects.toBeInstanceOf(OAuthStateError);
      await expect(read).rejects.toMatchObject({ transient: true });
      await expect(read).rejects.toThrow(/reading an OAuth token failed: PostgreSQL at 127\.0\.0\.1:\d+/);
      // A token this relay verified before the outage keeps working until its own expiry
      // (docs/scaling.md); nothing else is granted: a server error, never a verdict either way.
      expect((await bearer(pair.access_token)).status).toBe(200);
      const verdict = provider.verifyAccessToken(unseen.access_token);
      await expect(verdict).rejects.toBeInstanceOf(OAuthFailure);
      await expect(verdict).rejects.toMatchObject({ error: "server_error", status: 503 });
      // Over HTTP: 503 with Retry-After on the MCP endpoint and /token, and no throttling for it.
      for (let i = 0; i < 4; i += 1) {
        const mcp = await bearer(unseen.access_token);
        expect(mcp.status).toBe(503);
        expect(mcp.headers.get("retry-after")).toBe("5");
        expect(await mcp.json()).toEqual({
          error: "server_error",
          error_description: "the authorization state is unavailable; retry later",
        });
      }
      const token = await refresh(pair.refresh_token);
      expect(token.status).toBe(503);
      expect(((await token.json()) as { error: string }).error).toBe("server_error");
      expect(logger.errors.some((line) => line.startsWith("OAuth state unavailable"))).toBe(true);
      expect(logger.errors.join("\n")).not.toContain(cluster.password);
    } finally {
      await cluster.startServer();
    }
    expect((await bearer(pair.access_token)).status).toBe(200);
    const rotated = await refresh(pair.refresh_token);
    expect(rotated.status).toBe(200);
    const next = (await rotated.json()) as { access_token: string };
    expect((await bearer(next.access_token)).status).toBe(200);
  });

  it("answers a refresh token used twice over HTTP with invalid_grant", async () => {
    const pair = await pairOf();
    expect((await refresh(pair.refresh_token)).status).toBe(200);
    const again = await refresh(pair.refresh_token);
    expect(again.status).toBe(400);
    expect(((await again.json()) as { error: string }).error).toBe("invalid_grant");
  });
});
