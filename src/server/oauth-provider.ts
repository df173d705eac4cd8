import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { type Clock, fail, type Ids, type Logger, ok, type Result } from "../core/index.js";
import {
  allowsGrant,
  CODE_GONE,
  checkAuthorizeRequest,
  checkCode,
  checkResource,
  checkSameTarget,
  refreshScopes,
  resolveRedirectUri,
} from "./oauth-checks.js";
import { digestsEqual, OAuthFailure, parseScopes, sha256Hex } from "./oauth-common.js";
import { createKnownTokens } from "./oauth-known-tokens.js";
import {
  type ClientRecord,
  type CodeRecord,
  OAuthStateError,
  type OAuthStore,
  type StoredToken,
} from "./oauth-state.js";

export const LOCKDOWN_MESSAGE = "Dynamic client registration is closed (single-client lockdown).";
export const REFRESH_GONE = "refresh token already used or expired";
/** What the loser of two refreshes racing with one refresh token is told. */
export const REFRESH_SPENT = "refresh token already used";
const STATE_FAILED = "the authorization state could not be read or saved";
const STATE_UNAVAILABLE = "the authorization state is unavailable; retry later";

const SECRET_BYTES = 48;
const MAX_TOKEN_TEXT = 512;

export interface OAuthConfig {
  issuer: string;
  singleClient: boolean;
  accessTtl: number;
  refreshTtl: number;
  codeTtl: number;
}

export interface OAuthProviderDeps {
  store: OAuthStore;
  clock: Clock;
  ids: Ids;
  logger: Logger;
}

interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
  scope: string;
}

interface AuthorizeRequest {
  redirectUri: string;
  redirectUriExplicit: boolean;
  scope: string | undefined;
  codeChallenge: string | undefined;
  codeChallengeMethod: string | undefined;
  resource: string | undefined;
}

/** A bearer token checked: who it authenticates, or why it does not. */
export type VerifyResult = Result<AuthInfo, "invalid" | "expired">;

/**
 * Every operation that reads or writes the state is asynchronous. When the state cannot be
 * reached or written, the operation rejects with an OAuthFailure `server_error` (503 while the
 * database is unreachable, 500 otherwise) and grants nothing.
 */
export interface OAuthProvider {
  readonly config: OAuthConfig;
  getClient(clientId: string): Promise<ClientRecord | undefined>;
  /**
   * Store a client under the lockdown rule: with lockdown on and a client
   * present, only a byte-identical re-registration of that client passes (as
   * a no-op); anything new or changed is refused.
   */
  registerClient(record: ClientRecord): Promise<ClientRecord>;
  /** Check a client's credentials at /token and /revoke, in constant time. */
  authenticateClient(clientId: string, secret: string | undefined): Promise<ClientRecord>;
  /** Which registered redirect URI a request means (errors here must not redirect). */
  resolveRedirectUri(client: ClientRecord, requested: string | undefined): string;
  /** Issue an authorization code for an approved request; returns the code. */
  authorize(client: ClientRecord, request: AuthorizeRequest): Promise<string>;
  exchangeCode(
    client: ClientRecord,
    code: string,
    verifier: string | undefined,
    redirectUri: string | undefined,
    resource: string | undefined,
  ): Promise<TokenResponse>;
  /** Rotate a refresh token: of concurrent refreshes with one token exactly one gets a new pair. */
  exchangeRefresh(
    client: ClientRecord,
    refreshToken: string,
    scope: string | undefined,
    resource: string | undefined,
  ): Promise<TokenResponse>;
  verifyAccessToken(token: string): Promise<VerifyResult>;
  /** Remove the presented token only (no cascade between access and refresh). */
  revoke(client: ClientRecord, token: string): Promise<void>;
}

/** A new token pair: the answer for the client, and the hashed records the store keeps. */
interface NewPair {
  response: TokenResponse;
  stored: StoredToken[];
}

/** What every operation of one provider shares: its settings, its state and the tokens it verified. */
interface Provider {
  config: OAuthConfig;
  store: OAuthStore;
  ids: Ids;
  logger: Logger;
  issuerOrigin: string;
  nowSeconds(): number;
  known: ReturnType<typeof createKnownTokens>;
}

/**
 * The OAuth 2.1 authorization server's logic, without HTTP: clients, codes,
 * token pairs, rotation, revocation and lazy expiry, over an OAuth store
 * (files or PostgreSQL). Values that grant access (codes, tokens, client
 * secrets) are looked up and stored by their SHA-256, and secrets are
 * compared in constant time.
 */
export function createOAuthProvider(config: OAuthConfig, deps: OAuthProviderDeps): OAuthProvider {
  const { store, clock, ids, logger } = deps;
  const p: Provider = {
    config,
    store,
    ids,
    logger,
    issuerOrigin: new URL(config.issuer).origin,
    nowSeconds: () => Math.floor(clock.now() / 1000),
    known: createKnownTokens(),
  };
  return {
    config,
    getClient: (clientId) => stored(p, () => store.getClient(clientId)),
    registerClient: (record) => registerClient(p, record),
    authenticateClient: (clientId, secret) => authenticateClient(p, clientId, secret),
    resolveRedirectUri,
    authorize: (client, request) => authorize(p, client, request),
    exchangeCode: (client, code, verifier, redirectUri, resource) =>
      exchangeCode(p, client, code, { verifier, redirectUri }, resource),
    exchangeRefresh: (client, refreshToken, scope, resource) =>
      exchangeRefresh(p, client, refreshToken, scope, resource),
    verifyAccessToken: (token) => verifyAccessToken(p, token),
    revoke: (client, token) => revoke(p, client, token),
  };
}

/** One store operation; a failure of the state becomes a server error that grants nothing. */
async function stored<T>(p: Provider, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof OAuthFailure) throw err;
    const transient = err instanceof OAuthStateError && err.transient;
    p.logger.error(
      { where: p.store.where, err: err instanceof Error ? err.message : String(err) },
      transient ? "OAuth state unavailable" : "OAuth state failed",
    );
    throw transient
      ? new OAuthFailure("server_error", STATE_UNAVAILABLE, 503)
      : new OAuthFailure("server_error", STATE_FAILED, 500);
  }
}

/**
 * Housekeeping before an issue: what expired goes, so the state only grows by what is live. It
 * decides nothing, so its failure (two relays sweeping the same rows at once) is logged and left
 * to the next issue; the write that follows decides the request.
 */
async function sweep(p: Provider, now: number): Promise<void> {
  try {
    await p.store.sweep(now);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    p.logger.warn({ where: p.store.where, err: reason }, "expired OAuth state not swept");
  }
}

/** Draw a pair (after a sweep); the caller keeps it in the store. */
async function newPair(
  p: Provider,
  clientId: string,
  scopes: string[],
  resource: string | undefined,
): Promise<NewPair> {
  const { config } = p;
  const now = p.nowSeconds();
  await sweep(p, now);
  const access = p.ids.token(SECRET_BYTES);
  const refresh = p.ids.token(SECRET_BYTES);
  const base = { client_id: clientId, scopes, ...(resource ? { resource } : {}) };
  return {
    response: {
      access_token: access,
      token_type: "Bearer",
      expires_in: config.accessTtl,
      refresh_token: refresh,
      scope: scopes.join(" "),
    },
    stored: [
      {
        digest: sha256Hex(access),
        record: { kind: "access", ...base, expires_at: now + config.accessTtl },
      },
      {
        digest: sha256Hex(refresh),
        record: { kind: "refresh", ...base, expires_at: now + config.refreshTtl },
      },
    ],
  };
}

async function authenticateClient(
  p: Provider,
  clientId: string,
  secret: string | undefined,
): Promise<ClientRecord> {
  const client = await stored(p, () => p.store.getClient(clientId));
  if (!client) throw new OAuthFailure("invalid_client", "client authentication failed", 401);
  if (client.client_secret_sha256 === undefined) return client;
  const presented = sha256Hex(secret ?? "");
  // Compare even when no secret was sent, so both failures take the same path.
  const matches = digestsEqual(presented, client.client_secret_sha256);
  const expires = client.client_secret_expires_at ?? 0;
  if (!matches || secret === undefined || (expires > 0 && expires < p.nowSeconds())) {
    throw new OAuthFailure("invalid_client", "client authentication failed", 401);
  }
  return client;
}

async function registerClient(p: Provider, record: ClientRecord): Promise<ClientRecord> {
  const { singleClient } = p.config;
  if (!record.client_id) throw new OAuthFailure("invalid_client_metadata", "client_id is required");
  const result = await stored(p, () => p.store.registerClient(record, singleClient));
  if (result.outcome === "refused") throw new OAuthFailure("invalid_client_metadata", LOCKDOWN_MESSAGE);
  if (result.outcome === "unchanged") return result.record;
  p.logger.warn(
    { client_id: record.client_id, client_name: record.client_name ?? "", lockdown: singleClient },
    singleClient
      ? "OAuth client registered; registration is now closed (single-client lockdown)"
      : "OAuth client registered",
  );
  return record;
}

async function authorize(p: Provider, client: ClientRecord, request: AuthorizeRequest): Promise<string> {
  const codeChallenge = checkAuthorizeRequest(client, request);
  const scopes = parseScopes(request.scope);
  const resource = checkResource(p.issuerOrigin, request.resource);
  const now = p.nowSeconds();
  await sweep(p, now);
  const code = p.ids.token(SECRET_BYTES);
  const record: CodeRecord = {
    client_id: client.client_id,
    scopes,
    expires_at: now + p.config.codeTtl,
    code_challenge: codeChallenge,
    redirect_uri: request.redirectUri,
    redirect_uri_explicit: request.redirectUriExplicit,
    ...(resource ? { resource } : {}),
  };
  await stored(p, () => p.store.saveCode(sha256Hex(code), record));
  return code;
}

async function exchangeCode(
  p: Provider,
  client: ClientRecord,
  code: string,
  exchange: { verifier: string | undefined; redirectUri: string | undefined },
  resource: string | undefined,
): Promise<TokenResponse> {
  if (code.length > MAX_TOKEN_TEXT) throw new OAuthFailure("invalid_grant", CODE_GONE);
  // Single use: the code is gone before anything else is checked, so a
  // second exchange (concurrent or a replay) fails whatever the first did.
  const taken = await stored(p, () => p.store.takeCode(sha256Hex(code)));
  const record = checkCode(taken, client, exchange, p.nowSeconds());
  const target = checkResource(p.issuerOrigin, resource);
  checkSameTarget(target, record.resource, "the authorization request");
  const pair = await newPair(p, client.client_id, record.scopes, target ?? record.resource);
  await stored(p, () => p.store.saveTokens(pair.stored));
  return pair.response;
}

async function exchangeRefresh(
  p: Provider,
  client: ClientRecord,
  refreshToken: string,
  scope: string | undefined,
  resource: string | undefined,
): Promise<TokenResponse> {
  if (!allowsGrant(client, "refresh_token")) {
    throw new OAuthFailure("unauthorized_client", "the client may not use the refresh token grant");
  }
  if (refreshToken.length > MAX_TOKEN_TEXT) throw new OAuthFailure("invalid_grant", REFRESH_GONE);
  const digest = sha256Hex(refreshToken);
  const record = await stored(p, () => p.store.getToken("refresh", digest));
  if (record?.kind !== "refresh") throw new OAuthFailure("invalid_grant", REFRESH_GONE);
  if (!digestsEqual(record.client_id, client.client_id)) {
    throw new OAuthFailure("invalid_grant", "refresh token does not belong to this client");
  }
  if (record.expires_at < p.nowSeconds()) {
    await stored(p, () => p.store.deleteToken("refresh", digest));
    throw new OAuthFailure("invalid_grant", REFRESH_GONE);
  }
  const scopes = refreshScopes(record.scopes, scope);
  const target = checkResource(p.issuerOrigin, resource);
  checkSameTarget(target, record.resource, "the original grant");
  // Rotation: the presented refresh token is spent in the same step that keeps the new pair,
  // so of two refreshes racing with it (on this relay or another) only one gets a pair.
  const pair = await newPair(p, client.client_id, scopes, target ?? record.resource);
  const rotated = await stored(p, () => p.store.rotateRefresh(digest, client.client_id, pair.stored));
  if (!rotated) throw new OAuthFailure("invalid_grant", REFRESH_SPENT);
  return pair.response;
}

async function verifyAccessToken(p: Provider, token: string): Promise<VerifyResult> {
  // A refresh token never authenticates a request, with or without the store's key prefix.
  if (token.length === 0 || token.length > MAX_TOKEN_TEXT || token.includes(":")) {
    return fail("invalid");
  }
  const { known } = p;
  const digest = sha256Hex(token);
  // While the state cannot be reached, a token this relay verified before (oauth-known-tokens.ts).
  const record = await stored(p, () =>
    known.lookUp(digest, p.nowSeconds(), () => p.store.getToken("access", digest)),
  );
  if (record?.kind !== "access") {
    known.forget(digest);
    return fail("invalid");
  }
  if (record.expires_at < p.nowSeconds()) {
    known.forget(digest);
    await stored(p, () => p.store.deleteToken("access", digest));
    return fail("expired");
  }
  known.remember(digest, record);
  return ok({
    token,
    clientId: record.client_id,
    scopes: [...record.scopes],
    expiresAt: record.expires_at,
    ...(record.resource ? { resource: new URL(record.resource) } : {}),
  });
}

async function revoke(p: Provider, client: ClientRecord, token: string): Promise<void> {
  if (token.length === 0 || token.length > MAX_TOKEN_TEXT) return;
  // RFC 7009: a token of another client is left alone, and the answer is the same.
  p.known.forget(sha256Hex(token));
  await stored(p, () => p.store.revoke(sha256Hex(token), client.client_id));
}
