import { createHash } from "node:crypto";
import {
  CHALLENGE,
  digestsEqual,
  OAuthFailure,
  parseScopes,
  redirectUriMatches,
  VERIFIER,
} from "./oauth-common.js";
import type { ClientRecord, CodeRecord } from "./oauth-state.js";

/**
 * The checks of the OAuth provider (oauth-provider.ts) that read no state: what a request must
 * carry, and what a stored code or refresh token must match. Each throws the OAuthFailure the
 * client is answered with; the order of the checks is the order the provider applies them.
 */

export const CODE_GONE = "authorization code already used or expired";

export function allowsGrant(client: ClientRecord, grant: "authorization_code" | "refresh_token"): boolean {
  return client.grant_types.length === 0 || client.grant_types.includes(grant);
}

/** The resource a request names, when it names one this server serves. */
export function checkResource(issuerOrigin: string, resource: string | undefined): string | undefined {
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

/** Which registered redirect URI a request means (errors here must not redirect). */
export function resolveRedirectUri(client: ClientRecord, requested: string | undefined): string {
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

/** An authorization request the client may make, with PKCE (S256); the code challenge it carries. */
export function checkAuthorizeRequest(
  client: ClientRecord,
  request: { codeChallenge: string | undefined; codeChallengeMethod: string | undefined },
): string {
  if (!allowsGrant(client, "authorization_code")) {
    throw new OAuthFailure("unauthorized_client", "the client may not use the authorization code grant");
  }
  if (request.codeChallengeMethod !== "S256") {
    throw new OAuthFailure("invalid_request", "PKCE is required with code_challenge_method=S256");
  }
  if (request.codeChallenge === undefined || !CHALLENGE.test(request.codeChallenge)) {
    throw new OAuthFailure("invalid_request", "code_challenge must be a base64url SHA-256 digest");
  }
  return request.codeChallenge;
}

/**
 * A code taken from the store, checked against the exchange that presents it: its client, its
 * expiry, the PKCE verifier and the redirect URI of the authorization request.
 */
export function checkCode(
  record: CodeRecord | undefined,
  client: ClientRecord,
  exchange: { verifier: string | undefined; redirectUri: string | undefined },
  now: number,
): CodeRecord {
  if (!record) throw new OAuthFailure("invalid_grant", CODE_GONE);
  if (!digestsEqual(record.client_id, client.client_id)) {
    throw new OAuthFailure("invalid_grant", "authorization code does not belong to this client");
  }
  if (record.expires_at < now) throw new OAuthFailure("invalid_grant", CODE_GONE);
  const { verifier, redirectUri } = exchange;
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
  return record;
}

/** A target named at the token endpoint may only repeat the one granted; `what` names the grant. */
export function checkSameTarget(target: string | undefined, granted: string | undefined, what: string): void {
  if (target !== undefined && granted !== undefined && target !== granted) {
    throw new OAuthFailure("invalid_target", `resource differs from ${what}`);
  }
}

/** The scopes a refresh asks for: the granted ones when it names none, never more than them. */
export function refreshScopes(granted: string[], scope: string | undefined): string[] {
  if (scope === undefined || scope.trim() === "") return granted;
  const scopes = parseScopes(scope);
  if (!scopes.every((s) => granted.includes(s))) {
    throw new OAuthFailure("invalid_scope", "a refresh cannot widen the granted scope");
  }
  return scopes;
}
