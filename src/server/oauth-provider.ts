import { createHash } from "node:crypto";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import type { Clock, Ids, Logger } from "../core/index.js";
import {
  CHALLENGE,
  digestsEqual,
  OAuthFailure,
  parseScopes,
  redirectUriMatches,
  sha256Hex,
  VERIFIER,
} from "./oauth-common.js";
import { createKnownTokens } from "./oauth-known-tokens.js";
import {
  type ClientRecord,
  type CodeRecord,
  OAuthStateError,
  type OAuthStore,
  type StoredToken,
} from "./oauth-state.js";

export const LOCKDOWN_MESSAGE = "Dynamic client registration is closed (single-client lockdown).";
const CODE_GONE = "authorization code already used or expired";
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

export type VerifyResult = { ok: true; info: AuthInfo } | { ok: false; reason: "invalid" | "expired" };

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

/**
 * The OAuth 2.1 authorization server's logic, without HTTP: clients, codes,
 * token pairs, rotation, revocation and lazy expiry, over an OAuth store
 * (files or PostgreSQL). Values that grant access (codes, tokens, client
 * secrets) are looked up and stored by their SHA-256, and secrets are
 * compared in constant time.
 */
export function createOAuthProvider(config: OAuthConfig, deps: OAuthProviderDeps): OAuthProvider {
  const { store, clock, ids, logger } = deps;
  const issuerOrigin = new URL(config.issuer).origin;
  const nowSeconds = () => Math.floor(clock.now() / 1000);
  const known = createKnownTokens();

  /** One store operation; a failure of the state becomes a server error that grants nothing. */
  async function stored<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof OAuthFailure) throw err;
      const transient = err instanceof OAuthStateError && err.transient;
      logger.error(
        { where: store.where, err: err instanceof Error ? err.message : String(err) },
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
  async function sweep(now: number): Promise<void> {
    try {
      await store.sweep(now);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      logger.warn({ where: store.where, err: reason }, "expired OAuth state not swept");
    }
  }

  function checkResource(resource: string | undefined): string | undefined {
    if (resource === undefined || resource === "") return undefined;
    if (resource.length > 2048 || !URL.canParse(resource)) {
      throw new OAuthFailure("invalid_target", "resource must be an absolute URL");
    }
    const url = new URL(resource);
    if (url.hash !== "" || url.origin !== issuerOrigin) {
      throw new OAuthFailure("invalid_target", "resource is not served by this server");
    }
    return resource;
  }

  /** Draw a pair (after a sweep); the caller keeps it in the store. */
  async function newPair(clientId: string, scopes: string[], resource: string | undefined): Promise<NewPair> {
    const now = nowSeconds();
    await sweep(now);
    const access = ids.token(SECRET_BYTES);
    const refresh = ids.token(SECRET_BYTES);
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

  function allowsGrant(client: ClientRecord, grant: "authorization_code" | "refresh_token"): boolean {
    return client.grant_types.length === 0 || client.grant_types.includes(grant);
  }

  async function authenticateClient(clientId: string, secret: string | undefined): Promise<ClientRecord> {
    const client = await stored(() => store.getClient(clientId));
    if (!client) throw new OAuthFailure("invalid_client", "client authentication failed", 401);
    if (client.client_secret_sha256 === undefined) return client;
    const presented = sha256Hex(secret ?? "");
    // Compare even when no secret was sent, so both failures take the same path.
    const matches = digestsEqual(presented, client.client_secret_sha256);
    const expires = client.client_secret_expires_at ?? 0;
    if (!matches || secret === undefined || (expires > 0 && expires < nowSeconds())) {
      throw new OAuthFailure("invalid_client", "client authentication failed", 401);
    }
    return client;
  }

  async function registerClient(record: ClientRecord): Promise<ClientRecord> {
    if (!record.client_id) throw new OAuthFailure("invalid_client_metadata", "client_id is required");
    const result = await stored(() => store.registerClient(record, config.singleClient));
    if (result.outcome === "refused") throw new OAuthFailure("invalid_client_metadata", LOCKDOWN_MESSAGE);
    if (result.outcome === "unchanged") return result.record;
    logger.warn(
      { client_id: record.client_id, client_name: record.client_name ?? "", lockdown: config.singleClient },
      config.singleClient
        ? "OAuth client registered; registration is now closed (single-client lockdown)"
        : "OAuth client registered",
    );
    return record;
  }

  function resolveRedirectUri(client: ClientRecord, requested: string | undefined): string {
    if (requested !== undefined) {
      if (!client.redirect_uris.some((registered) => redirectUriMatches(requested, registered))) {
        throw new OAuthFailure("invalid_request", "redirect_uri is not registered for this client");
      }
      return requested;
    }
    const [only] = client.redirect_uris;
    if (client.redirect_uris.length !== 1 || only === undefined) {
      throw new OAuthFailure("invalid_request", "redirect_uri is required: the client registered several");
    }
    return only;
  }

  async function authorize(client: ClientRecord, request: AuthorizeRequest): Promise<string> {
    if (!allowsGrant(client, "authorization_code")) {
      throw new OAuthFailure("unauthorized_client", "the client may not use the authorization code grant");
    }
    if (request.codeChallengeMethod !== "S256") {
      throw new OAuthFailure("invalid_request", "PKCE is required with code_challenge_method=S256");
    }
    if (request.codeChallenge === undefined || !CHALLENGE.test(request.codeChallenge)) {
      throw new OAuthFailure("invalid_request", "code_challenge must be a base64url SHA-256 digest");
    }
    const scopes = parseScopes(request.scope);
    const resource = checkResource(request.resource);
    const now = nowSeconds();
    await sweep(now);
    const code = ids.token(SECRET_BYTES);
    const record: CodeRecord = {
      client_id: client.client_id,
      scopes,
      expires_at: now + config.codeTtl,
      code_challenge: request.codeChallenge,
      redirect_uri: request.redirectUri,
      redirect_uri_explicit: request.redirectUriExplicit,
      ...(resource ? { resource } : {}),
    };
    await stored(() => store.saveCode(sha256Hex(code), record));
    return code;
  }

  async function exchangeCode(
    client: ClientRecord,
    code: string,
    verifier: string | undefined,
    redirectUri: string | undefined,
    resource: string | undefined,
  ): Promise<TokenResponse> {
    if (code.length > MAX_TOKEN_TEXT) throw new OAuthFailure("invalid_grant", CODE_GONE);
    // Single use: the code is gone before anything else is checked, so a
    // second exchange (concurrent or a replay) fails whatever the first did.
    const record = await stored(() => store.takeCode(sha256Hex(code)));
    if (!record) throw new OAuthFailure("invalid_grant", CODE_GONE);
    if (!digestsEqual(record.client_id, client.client_id)) {
      throw new OAuthFailure("invalid_grant", "authorization code does not belong to this client");
    }
    if (record.expires_at < nowSeconds()) throw new OAuthFailure("invalid_grant", CODE_GONE);
    if (verifier === undefined || !VERIFIER.test(verifier)) {
      throw new OAuthFailure("invalid_grant", "code_verifier is missing or malformed");
    }
    const derived = createHash("sha256").update(verifier, "ascii").digest("base64url");
    if (!digestsEqual(derived, record.code_challenge)) {
      throw new OAuthFailure("invalid_grant", "code_verifier does not match the challenge");
    }
    if (redirectUri !== undefined ? redirectUri !== record.redirect_uri : record.redirect_uri_explicit) {
      throw new OAuthFailure("invalid_grant", "redirect_uri does not match the authorization request");
    }
    const target = checkResource(resource);
    if (target !== undefined && record.resource !== undefined && target !== record.resource) {
      throw new OAuthFailure("invalid_target", "resource differs from the authorization request");
    }
    const pair = await newPair(client.client_id, record.scopes, target ?? record.resource);
    await stored(() => store.saveTokens(pair.stored));
    return pair.response;
  }

  async function exchangeRefresh(
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
    const record = await stored(() => store.getToken("refresh", digest));
    if (record?.kind !== "refresh") throw new OAuthFailure("invalid_grant", REFRESH_GONE);
    if (!digestsEqual(record.client_id, client.client_id)) {
      throw new OAuthFailure("invalid_grant", "refresh token does not belong to this client");
    }
    if (record.expires_at < nowSeconds()) {
      await stored(() => store.deleteToken("refresh", digest));
      throw new OAuthFailure("invalid_grant", REFRESH_GONE);
    }
    let scopes = record.scopes;
    if (scope !== undefined && scope.trim() !== "") {
      scopes = parseScopes(scope);
      if (!scopes.every((s) => record.scopes.includes(s))) {
        throw new OAuthFailure("invalid_scope", "a refresh cannot widen the granted scope");
      }
    }
    const target = checkResource(resource);
    if (target !== undefined && record.resource !== undefined && target !== record.resource) {
      throw new OAuthFailure("invalid_target", "resource differs from the original grant");
    }
    // Rotation: the presented refresh token is spent in the same step that keeps the new pair,
    // so of two refreshes racing with it (on this relay or another) only one gets a pair.
    const pair = await newPair(client.client_id, scopes, target ?? record.resource);
    const rotated = await stored(() => store.rotateRefresh(digest, client.client_id, pair.stored));
    if (!rotated) throw new OAuthFailure("invalid_grant", REFRESH_SPENT);
    return pair.response;
  }

  async function verifyAccessToken(token: string): Promise<VerifyResult> {
    // A refresh token never authenticates a request, with or without the store's key prefix.
    if (token.length === 0 || token.length > MAX_TOKEN_TEXT || token.includes(":")) {
      return { ok: false, reason: "invalid" };
    }
    const digest = sha256Hex(token);
    // While the state cannot be reached, a token this relay verified before (oauth-known-tokens.ts).
    const record = await stored(() =>
      known.lookUp(digest, nowSeconds(), () => store.getToken("access", digest)),
    );
    if (record?.kind !== "access") {
      known.forget(digest);
      return { ok: false, reason: "invalid" };
    }
    if (record.expires_at < nowSeconds()) {
      known.forget(digest);
      await stored(() => store.deleteToken("access", digest));
      return { ok: false, reason: "expired" };
    }
    known.remember(digest, record);
    return {
      ok: true,
      info: {
        token,
        clientId: record.client_id,
        scopes: [...record.scopes],
        expiresAt: record.expires_at,
        ...(record.resource ? { resource: new URL(record.resource) } : {}),
      },
    };
  }

  async function revoke(client: ClientRecord, token: string): Promise<void> {
    if (token.length === 0 || token.length > MAX_TOKEN_TEXT) return;
    // RFC 7009: a token of another client is left alone, and the answer is the same.
    known.forget(sha256Hex(token));
    await stored(() => store.revoke(sha256Hex(token), client.client_id));
  }

  return {
    config,
    getClient: (clientId) => stored(() => store.getClient(clientId)),
    registerClient,
    authenticateClient,
    resolveRedirectUri,
    authorize,
    exchangeCode,
    exchangeRefresh,
    verifyAccessToken,
    revoke,
  };
}
