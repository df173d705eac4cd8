import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cryptoIds, silentLogger } from "../core/index.js";
import { MCP_SCOPE, OAuthFailure } from "./oauth-common.js";
import {
  createOAuthProvider,
  LOCKDOWN_MESSAGE,
  type OAuthConfig,
  type OAuthProvider,
} from "./oauth-provider.js";
import { parseRegistration } from "./oauth-registration.js";
import { type ClientRecord, OAuthStateError } from "./oauth-state.js";
import { openOAuthStore } from "./oauth-store.js";

const ISSUER = "https://relay.example.test";
const CONFIG: OAuthConfig = {
  issuer: ISSUER,
  singleClient: true,
  accessTtl: 3600,
  refreshTtl: 86400,
  codeTtl: 300,
};
const VERIFIER = `${"v".repeat(20)}${"-._~".repeat(6)}0123456789`;
const CHALLENGE = createHash("sha256").update(VERIFIER).digest("base64url");

function fakeClock(start = 1_800_000_000_000) {
  let now = start;
  return { now: () => now, monotonic: () => now, advance: (seconds: number) => (now += seconds * 1000) };
}

async function failure(fn: () => unknown): Promise<OAuthFailure> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof OAuthFailure) return err;
    throw err;
  }
  throw new Error("expected an OAuthFailure");
}

describe("OAuth provider", () => {
  let dir: string;
  let clock: ReturnType<typeof fakeClock>;
  let provider: OAuthProvider;
  let client: ClientRecord;
  let secret: string;

  const open = (config: OAuthConfig = CONFIG) =>
    createOAuthProvider(config, {
      store: openOAuthStore(join(dir, "oauth"), silentLogger),
      clock,
      ids: cryptoIds,
      logger: silentLogger,
    });
  const register = async (p: OAuthProvider, redirect = "http://127.0.0.1:9999/cb") => {
    const r = parseRegistration({ redirect_uris: [redirect], client_name: "test" }, cryptoIds, 1);
    return { record: await p.registerClient(r.record), secret: r.secret ?? "" };
  };
  const code = (p = provider, c = client, extra: Partial<{ scope: string; resource: string }> = {}) =>
    p.authorize(c, {
      redirectUri: c.redirect_uris[0] ?? "",
      redirectUriExplicit: false,
      scope: extra.scope,
      codeChallenge: CHALLENGE,
      codeChallengeMethod: "S256",
      resource: extra.resource,
    });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-shell-oauth-"));
    clock = fakeClock();
    provider = open();
    ({ record: client, secret } = await register(provider));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("runs the code flow with PKCE S256 and issues a bearer pair for mcp:tools", async () => {
    const pair = await provider.exchangeCode(client, await code(), VERIFIER, undefined, undefined);
    expect(pair).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: MCP_SCOPE });
    expect(pair.access_token).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(pair.refresh_token).toMatch(/^[A-Za-z0-9_-]{64}$/);
    const verdict = await provider.verifyAccessToken(pair.access_token);
    expect(verdict.ok && verdict.value.clientId).toBe(client.client_id);
    expect(verdict.ok && verdict.value.expiresAt).toBe(Math.floor(clock.now() / 1000) + 3600);
  });

  it("stores only hashes: no code, token or client secret appears in the state files", async () => {
    const c = await code();
    const codesFile = readFileSync(join(dir, "oauth", "codes.json"), "utf8");
    expect(codesFile).not.toContain(c);
    const pair = await provider.exchangeCode(client, c, VERIFIER, undefined, undefined);
    const all = ["clients", "codes", "tokens"]
      .map((f) => readFileSync(join(dir, "oauth", `${f}.json`), "utf8"))
      .join("");
    for (const value of [pair.access_token, pair.refresh_token, secret, c]) expect(all).not.toContain(value);
    expect(all).toContain(createHash("sha256").update(pair.access_token).digest("hex"));
  });

  it("uses a code once: a replay, a wrong verifier or another client all fail, and the code is spent", async () => {
    const first = await code();
    await provider.exchangeCode(client, first, VERIFIER, undefined, undefined);
    expect(
      await failure(() => provider.exchangeCode(client, first, VERIFIER, undefined, undefined)),
    ).toMatchObject({
      error: "invalid_grant",
      message: "authorization code already used or expired",
    });

    const second = await code();
    expect(
      (await failure(() => provider.exchangeCode(client, second, `${VERIFIER}x`, undefined, undefined)))
        .message,
    ).toBe("code_verifier does not match the challenge");
    // The wrong verifier spent the code: the right one is now too late.
    expect(
      (await failure(() => provider.exchangeCode(client, second, VERIFIER, undefined, undefined))).error,
    ).toBe("invalid_grant");
  });

  it("refuses an expired code and a code of another client", async () => {
    const stale = await code();
    clock.advance(301);
    expect(
      (await failure(() => provider.exchangeCode(client, stale, VERIFIER, undefined, undefined))).error,
    ).toBe("invalid_grant");
    const noLock = open({ ...CONFIG, singleClient: false });
    const other = (await register(noLock)).record;
    const mine = await code(noLock, client);
    expect(
      (await failure(() => noLock.exchangeCode(other, mine, VERIFIER, undefined, undefined))).message,
    ).toBe("authorization code does not belong to this client");
  });

  it("requires PKCE with S256 and a well-formed challenge, the one scope, and this server as resource", async () => {
    const base = {
      redirectUri: client.redirect_uris[0] ?? "",
      redirectUriExplicit: false,
      scope: undefined,
      resource: undefined,
    };
    for (const method of [undefined, "plain", "s256"]) {
      const f = await failure(() =>
        provider.authorize(client, { ...base, codeChallenge: CHALLENGE, codeChallengeMethod: method }),
      );
      expect(f.error).toBe("invalid_request");
    }
    expect(
      (
        await failure(() =>
          provider.authorize(client, { ...base, codeChallenge: "short", codeChallengeMethod: "S256" }),
        )
      ).error,
    ).toBe("invalid_request");
    expect((await failure(() => code(provider, client, { scope: "admin" }))).error).toBe("invalid_scope");
    expect(
      (await failure(() => code(provider, client, { resource: "https://elsewhere.test/mcp" }))).error,
    ).toBe("invalid_target");
    expect(await code(provider, client, { scope: MCP_SCOPE, resource: `${ISSUER}/mcp` })).toMatch(
      /^[\w-]{64}$/,
    );
  });

  it("checks redirect URIs: registered ones, or a loopback one on another port", async () => {
    expect(provider.resolveRedirectUri(client, undefined)).toBe("http://127.0.0.1:9999/cb");
    expect(provider.resolveRedirectUri(client, "http://127.0.0.1:4242/cb")).toBe("http://127.0.0.1:4242/cb");
    for (const bad of [
      "http://127.0.0.1:9999/other",
      "http://evil.test:9999/cb",
      "https://127.0.0.1:9999/cb",
    ]) {
      expect((await failure(() => provider.resolveRedirectUri(client, bad))).error).toBe("invalid_request");
    }
  });

  it("rotates refresh tokens: the old one is spent, the new pair works, and an idle one expires", async () => {
    const pair = await provider.exchangeCode(client, await code(), VERIFIER, undefined, undefined);
    const next = await provider.exchangeRefresh(client, pair.refresh_token, undefined, undefined);
    expect(next.refresh_token).not.toBe(pair.refresh_token);
    expect(
      await failure(() => provider.exchangeRefresh(client, pair.refresh_token, undefined, undefined)),
    ).toMatchObject({
      error: "invalid_grant",
      message: "refresh token already used or expired",
    });
    expect((await provider.verifyAccessToken(next.access_token)).ok).toBe(true);
    expect(
      (await failure(() => provider.exchangeRefresh(client, next.refresh_token, "other", undefined))).error,
    ).toBe("invalid_scope");
    clock.advance(86401);
    expect(
      (await failure(() => provider.exchangeRefresh(client, next.refresh_token, undefined, undefined))).error,
    ).toBe("invalid_grant");
  });

  it("expires access tokens lazily and forgets them", async () => {
    const pair = await provider.exchangeCode(client, await code(), VERIFIER, undefined, undefined);
    clock.advance(3599);
    expect((await provider.verifyAccessToken(pair.access_token)).ok).toBe(true);
    clock.advance(2);
    expect(await provider.verifyAccessToken(pair.access_token)).toEqual({ ok: false, error: "expired" });
    expect(await provider.verifyAccessToken(pair.access_token)).toEqual({ ok: false, error: "invalid" });
  });

  it("never lets a refresh token (with or without the refresh: prefix) authenticate as an access token", async () => {
    const pair = await provider.exchangeCode(client, await code(), VERIFIER, undefined, undefined);
    const digest = createHash("sha256").update(pair.refresh_token).digest("hex");
    for (const attempt of [
      pair.refresh_token,
      `refresh:${pair.refresh_token}`,
      `refresh:${digest}`,
      digest,
    ]) {
      expect((await provider.verifyAccessToken(attempt)).ok, attempt).toBe(false);
    }
  });

  it("revokes only the presented token (no cascade), and only for its own client", async () => {
    const a = await provider.exchangeCode(client, await code(), VERIFIER, undefined, undefined);
    await provider.revoke(client, a.access_token);
    expect((await provider.verifyAccessToken(a.access_token)).ok).toBe(false);
    const b = await provider.exchangeRefresh(client, a.refresh_token, undefined, undefined);
    await provider.revoke(client, b.refresh_token);
    expect((await provider.verifyAccessToken(b.access_token)).ok).toBe(true);
    expect(
      (await failure(() => provider.exchangeRefresh(client, b.refresh_token, undefined, undefined))).error,
    ).toBe("invalid_grant");
    const noLock = open({ ...CONFIG, singleClient: false });
    const stranger = (await register(noLock)).record;
    await noLock.revoke(stranger, b.access_token);
    expect((await noLock.verifyAccessToken(b.access_token)).ok).toBe(true);
  });

  it("keeps its state across a restart", async () => {
    const pair = await provider.exchangeCode(client, await code(), VERIFIER, undefined, undefined);
    const again = open();
    expect(await again.getClient(client.client_id)).toEqual(client);
    expect((await again.verifyAccessToken(pair.access_token)).ok).toBe(true);
    expect((await again.exchangeRefresh(client, pair.refresh_token, undefined, undefined)).token_type).toBe(
      "Bearer",
    );
  });

  it("authenticates a confidential client by its secret in constant time", async () => {
    expect(await provider.authenticateClient(client.client_id, secret)).toEqual(client);
    for (const wrong of [undefined, "", `${secret}x`, secret.slice(1)]) {
      expect(await failure(() => provider.authenticateClient(client.client_id, wrong))).toMatchObject({
        error: "invalid_client",
        status: 401,
      });
    }
    expect((await failure(() => provider.authenticateClient("nobody", secret))).error).toBe("invalid_client");
  });

  describe("single-client lockdown", () => {
    it("refuses a new client and any change to the existing one, but accepts an identical re-registration", async () => {
      expect((await failure(() => register(provider))).message).toBe(LOCKDOWN_MESSAGE);
      expect(await provider.registerClient({ ...client })).toEqual(client);
      expect(
        (await failure(() => provider.registerClient({ ...client, redirect_uris: ["https://evil.test/cb"] })))
          .message,
      ).toBe(LOCKDOWN_MESSAGE);
      expect((await provider.getClient(client.client_id))?.redirect_uris).toEqual([
        "http://127.0.0.1:9999/cb",
      ]);
    });

    it("with lockdown off, allows new clients and updates", async () => {
      const noLock = open({ ...CONFIG, singleClient: false });
      const other = (await register(noLock)).record;
      expect(await noLock.getClient(other.client_id)).toEqual(other);
      await noLock.registerClient({ ...client, redirect_uris: ["https://app.test/cb"] });
      expect((await noLock.getClient(client.client_id))?.redirect_uris).toEqual(["https://app.test/cb"]);
      expect((await failure(() => noLock.registerClient({ ...client, client_id: "" }))).error).toBe(
        "invalid_client_metadata",
      );
    });
  });

  it("fails closed when the state cannot be written or reached: a server error, nothing granted", async () => {
    const c = await code();
    mkdirSync(join(dir, "oauth", "tokens.json.tmp"));
    expect(
      await failure(() => provider.exchangeCode(client, c, VERIFIER, undefined, undefined)),
    ).toMatchObject({
      error: "server_error",
      status: 500,
      message: "the authorization state could not be read or saved",
    });
    const gone = new OAuthStateError("PostgreSQL at db:5432 is unreachable (ECONNREFUSED)", true);
    const down = createOAuthProvider(CONFIG, {
      store: { ...openOAuthStore(join(dir, "oauth"), silentLogger), getToken: () => Promise.reject(gone) },
      clock,
      ids: cryptoIds,
      logger: silentLogger,
    });
    expect(await failure(() => down.verifyAccessToken("a".repeat(64)))).toMatchObject({
      error: "server_error",
      status: 503,
      message: "the authorization state is unavailable; retry later",
    });
  });

  it("rejects unsafe registrations", async () => {
    for (const uris of [["javascript:alert(1)"], ["http://evil.test/cb"], ["https://a.test/cb#frag"], []]) {
      expect(() => parseRegistration({ redirect_uris: uris }, cryptoIds, 1)).toThrow(OAuthFailure);
    }
    expect(() =>
      parseRegistration(
        { redirect_uris: ["https://a.test/cb"], grant_types: ["client_credentials"] },
        cryptoIds,
        1,
      ),
    ).toThrow(/authorization_code and refresh_token/);
    const pub = parseRegistration(
      { redirect_uris: ["myapp:/cb"], token_endpoint_auth_method: "none" },
      cryptoIds,
      1,
    );
    expect(pub.secret).toBeUndefined();
    expect(pub.record.client_secret_sha256).toBeUndefined();
  });
});
