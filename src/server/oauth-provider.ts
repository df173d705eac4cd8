import { createHash } from "node:crypto";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { type Clock, canonicalJson, type Ids, type Logger } from "../core/index.js";
import {
  CHALLENGE,
  digestsEqual,
  OAuthFailure,
  parseScopes,
  redirectUriMatches,
  sha256Hex,
  VERIFIER,
} from "./oauth-common.js";
import type { ClientRecord, CodeRecord, OAuthStore, TokenRecord } from "./oauth-store.js";

export const LOCKDOWN_MESSAGE = "Dynamic client registration is closed (single-client lockdown).";
const CODE_GONE = "authorization code already used or expired";
const REFRESH_GONE = "refresh token already used or expired";

/** Outstanding codes kept at once; the oldest goes first (a flood of /authorize cannot grow the file). */
const MAX_CODES = 100;
/** Tokens kept at once after expired ones are dropped; the oldest goes first. */
const MAX_TOKENS = 10_000;
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

type VerifyResult = { ok: true; info: AuthInfo } | { ok: false; reason: "invalid" | "expired" };

export interface OAuthProvider {
  readonly config: OAuthConfig;
  getClient(clientId: string): ClientRecord | undefined;
  /**
   * Store a client under the lockdown rule: with lockdown on and a client
   * present, only a byte-identical re-registration of that client passes (as
   * a no-op); anything new or changed is refused.
   */
  registerClient(record: ClientRecord): ClientRecord;
  /** Check a client's credentials at /token and /revoke, in constant time. */
  authenticateClient(clientId: string, secret: string | undefined): ClientRecord;
  /** Which registered redirect URI a request means (errors here must not redirect). */
  resolveRedirectUri(client: ClientRecord, requested: string | undefined): string;
  /** Issue an authorization code for an approved request; returns the code. */
  authorize(client: ClientRecord, request: AuthorizeRequest): string;
  exchangeCode(
    client: ClientRecord,
    code: string,
    verifier: string | undefined,
    redirectUri: string | undefined,
    resource: string | undefined,
  ): TokenResponse;
  exchangeRefresh(
    client: ClientRecord,
    refreshToken: string,
    scope: string | undefined,
    resource: string | undefined,
  ): TokenResponse;
  verifyAccessToken(token: string): VerifyResult;
  /** Remove the presented token only (no cascade between access and refresh). */
  revoke(client: ClientRecord, token: string): void;
}

function dropOldest<V>(map: Map<string, V>, keep: number): void {
  for (const key of map.keys()) {
    if (map.size <= keep) return;
    map.delete(key);
  }
}

/**
 * The OAuth 2.1 authorization server's logic, without HTTP: clients, codes,
 * token pairs, rotation, revocation and lazy expiry, over the file store.
 * Values that grant access (codes, tokens, client secrets) are looked up and
 * stored by their SHA-256, and secrets are compared in constant time.
 */
export function createOAuthProvider(config: OAuthConfig, deps: OAuthProviderDeps): OAuthProvider {
  const { store, clock, ids, logger } = deps;
  const issuerOrigin = new URL(config.issuer).origin;
  const nowSeconds = () => Math.floor(clock.now() / 1000);

  function save(file: "clients" | "codes" | "tokens"): void {
    try {
      store.save(file);
    } catch (err) {
      logger.error({ file, err: String(err) }, "OAuth state could not be written");
      throw new OAuthFailure("server_error", "the authorization state could not be saved", 500);
    }
  }

  function pruneTokens(now: number): void {
    for (const [key, record] of store.tokens) if (record.expires_at < now) store.tokens.delete(key);
    dropOldest(store.tokens, MAX_TOKENS);
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

  function issuePair(clientId: string, scopes: string[], resource: string | undefined): TokenResponse {
    const now = nowSeconds();
    pruneTokens(now);
    const access = ids.token(SECRET_BYTES);
    const refresh = ids.token(SECRET_BYTES);
    const base = { client_id: clientId, scopes, ...(resource ? { resource } : {}) };
    store.tokens.set(`access:${sha256Hex(access)}`, {
      kind: "access",
      ...base,
      expires_at: now + config.accessTtl,
    });
    store.tokens.set(`refresh:${sha256Hex(refresh)}`, {
      kind: "refresh",
      ...base,
      expires_at: now + config.refreshTtl,
    });
    save("tokens");
    return {
      access_token: access,
      token_type: "Bearer",
      expires_in: config.accessTtl,
      refresh_token: refresh,
      scope: scopes.join(" "),
    };
  }

  function allowsGrant(client: ClientRecord, grant: "authorization_code" | "refresh_token"): boolean {
    return client.grant_types.length === 0 || client.grant_types.includes(grant);
  }

  return {
    config,
    getClient: (clientId) => store.clients.get(clientId),

    registerClient(record) {
      if (!record.client_id) throw new OAuthFailure("invalid_client_metadata", "client_id is required");
      if (config.singleClient && store.clients.size > 0) {
        const existing = store.clients.get(record.client_id);
        if (existing && canonicalJson(existing) === canonicalJson(record)) return existing;
        throw new OAuthFailure("invalid_client_metadata", LOCKDOWN_MESSAGE);
      }
      store.clients.set(record.client_id, record);
      save("clients");
      logger.warn(
        { client_id: record.client_id, client_name: record.client_name ?? "", lockdown: config.singleClient },
        config.singleClient
          ? "OAuth client registered; registration is now closed (single-client lockdown)"
          : "OAuth client registered",
      );
      return record;
    },

    authenticateClient(clientId, secret) {
      const client = store.clients.get(clientId);
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
    },

    resolveRedirectUri(client, requested) {
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
    },

    authorize(client, request) {
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
      for (const [key, record] of store.codes) if (record.expires_at < now) store.codes.delete(key);
      dropOldest(store.codes, MAX_CODES - 1);
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
      store.codes.set(sha256Hex(code), record);
      save("codes");
      return code;
    },

    exchangeCode(client, code, verifier, redirectUri, resource) {
      if (code.length > MAX_TOKEN_TEXT) throw new OAuthFailure("invalid_grant", CODE_GONE);
      const key = sha256Hex(code);
      const record = store.codes.get(key);
      if (!record) throw new OAuthFailure("invalid_grant", CODE_GONE);
      // Single use: the code is gone before anything else is checked, so a
      // second exchange (concurrent or a replay) fails whatever the first did.
      store.codes.delete(key);
      save("codes");
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
      return issuePair(client.client_id, record.scopes, target ?? record.resource);
    },

    exchangeRefresh(client, refreshToken, scope, resource) {
      if (!allowsGrant(client, "refresh_token")) {
        throw new OAuthFailure("unauthorized_client", "the client may not use the refresh token grant");
      }
      if (refreshToken.length > MAX_TOKEN_TEXT) throw new OAuthFailure("invalid_grant", REFRESH_GONE);
      const key = `refresh:${sha256Hex(refreshToken)}`;
      const record = store.tokens.get(key);
      if (record?.kind !== "refresh") throw new OAuthFailure("invalid_grant", REFRESH_GONE);
      if (!digestsEqual(record.client_id, client.client_id)) {
        throw new OAuthFailure("invalid_grant", "refresh token does not belong to this client");
      }
      if (record.expires_at < nowSeconds()) {
        store.tokens.delete(key);
        save("tokens");
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
      // Rotation: the presented refresh token is spent before the new pair exists.
      store.tokens.delete(key);
      return issuePair(client.client_id, scopes, target ?? record.resource);
    },

    verifyAccessToken(token) {
      // A refresh token never authenticates a request, with or without the store's key prefix.
      if (token.length === 0 || token.length > MAX_TOKEN_TEXT || token.includes(":")) {
        return { ok: false, reason: "invalid" };
      }
      const key = `access:${sha256Hex(token)}`;
      const record: TokenRecord | undefined = store.tokens.get(key);
      if (record?.kind !== "access") return { ok: false, reason: "invalid" };
      if (record.expires_at < nowSeconds()) {
        store.tokens.delete(key);
        save("tokens");
        return { ok: false, reason: "expired" };
      }
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
    },

    revoke(client, token) {
      if (token.length === 0 || token.length > MAX_TOKEN_TEXT) return;
      const digest = sha256Hex(token);
      let changed = false;
      for (const key of [`access:${digest}`, `refresh:${digest}`]) {
        const record = store.tokens.get(key);
        // RFC 7009: a token of another client is left alone, and the answer is the same.
        if (record && digestsEqual(record.client_id, client.client_id)) {
          store.tokens.delete(key);
          changed = true;
        }
      }
      if (changed) save("tokens");
    },
  };
}
