import type { IncomingMessage, ServerResponse } from "node:http";
import type { Clock, Ids, Logger } from "../core/index.js";
import { headerValue, mediaType, readBody, sendJson } from "./http-io.js";
import type { FailureThrottle } from "./http-throttle.js";
import { OAuthFailure } from "./oauth-common.js";
import type { OAuthProvider } from "./oauth-provider.js";
import { parseRegistration, registrationResponse } from "./oauth-registration.js";
import type { ClientRecord } from "./oauth-state.js";

/**
 * The endpoints of the authorization server that act (docs/wire-contract.md §9.2): /register,
 * /authorize, /token and /revoke, dispatched by oauth-routes.ts. Each throws the OAuthFailure it
 * is answered with; a failure that is the client's counts against its source.
 */

/** OAuth request bodies are small forms and JSON documents. */
const MAX_OAUTH_BODY = 64 * 1024;
const MAX_PARAM = 4096;

export interface EndpointDeps {
  provider: OAuthProvider;
  throttle: FailureThrottle;
  clock: Clock;
  ids: Ids;
  logger: Logger;
}

/** A refused request counts against its source, and is logged. */
export function failed(
  deps: Pick<EndpointDeps, "throttle" | "logger">,
  source: string,
  what: string,
  failure: { error: string; message: string },
): void {
  deps.throttle.fail(source);
  deps.logger.warn({ source, what, error: failure.error, reason: failure.message }, "OAuth request refused");
}

/** Form parameters, each at most once (RFC 6749 §3.1) and bounded. */
function parseParams(text: string): Map<string, string> {
  const params = new Map<string, string>();
  for (const [key, value] of new URLSearchParams(text)) {
    if (params.has(key)) throw new OAuthFailure("invalid_request", "a parameter is repeated");
    if (value.length > MAX_PARAM) throw new OAuthFailure("invalid_request", "a parameter is too long");
    params.set(key, value);
  }
  return params;
}

async function readForm(req: IncomingMessage): Promise<Map<string, string>> {
  if (mediaType(req) !== "application/x-www-form-urlencoded") {
    throw new OAuthFailure("invalid_request", "Content-Type must be application/x-www-form-urlencoded");
  }
  const body = await readBody(req, MAX_OAUTH_BODY);
  if (body.kind !== "ok") throw new OAuthFailure("invalid_request", "request body too large", 413);
  return parseParams(body.body.toString("utf8"));
}

/** Client credentials from HTTP Basic or from the form (never both). */
function clientCredentials(
  req: IncomingMessage,
  params: Map<string, string>,
): { id: string; secret: string | undefined; basic: boolean } {
  const header = headerValue(req, "authorization");
  if (header !== undefined && /^basic /i.test(header)) {
    if (params.has("client_secret")) {
      throw new OAuthFailure("invalid_request", "use one client authentication method");
    }
    const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon < 0) throw new OAuthFailure("invalid_client", "client authentication failed", 401);
    try {
      return {
        id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, " ")),
        secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, " ")),
        basic: true,
      };
    } catch {
      throw new OAuthFailure("invalid_client", "client authentication failed", 401);
    }
  }
  const id = params.get("client_id");
  if (id === undefined || id === "") throw new OAuthFailure("invalid_request", "client_id is required");
  return { id, secret: params.get("client_secret"), basic: false };
}

export async function register(deps: EndpointDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (mediaType(req) !== "application/json") {
    throw new OAuthFailure("invalid_client_metadata", "Content-Type must be application/json");
  }
  const body = await readBody(req, MAX_OAUTH_BODY);
  if (body.kind !== "ok") throw new OAuthFailure("invalid_client_metadata", "request body too large", 413);
  let json: unknown;
  try {
    json = JSON.parse(body.body.toString("utf8"));
  } catch {
    throw new OAuthFailure("invalid_client_metadata", "body is not JSON");
  }
  const registration = parseRegistration(json, deps.ids, Math.floor(deps.clock.now() / 1000));
  await deps.provider.registerClient(registration.record);
  sendJson(res, 201, registrationResponse(registration), { Pragma: "no-cache" });
}

export async function authorize(
  deps: EndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  source: string,
): Promise<void> {
  const { provider } = deps;
  let params: Map<string, string>;
  if (req.method === "POST") params = await readForm(req);
  else params = parseParams(new URL(req.url ?? "/", "http://x").search);
  // Phase 1: until the client and its redirect URI are known, errors are answered here.
  const clientId = params.get("client_id") ?? "";
  const client: ClientRecord | undefined = clientId === "" ? undefined : await provider.getClient(clientId);
  if (!client) {
    const failure = new OAuthFailure("invalid_request", "unknown or missing client_id");
    failed(deps, source, "authorize", failure);
    throw failure;
  }
  const redirectUri = provider.resolveRedirectUri(client, params.get("redirect_uri"));
  // Phase 2: errors go back to the client's redirect URI.
  const state = params.get("state");
  const target = new URL(redirectUri);
  try {
    if (params.get("response_type") !== "code") {
      throw new OAuthFailure("unsupported_response_type", "response_type must be code");
    }
    const code = await provider.authorize(client, {
      redirectUri,
      redirectUriExplicit: params.has("redirect_uri"),
      scope: params.get("scope"),
      codeChallenge: params.get("code_challenge"),
      codeChallengeMethod: params.get("code_challenge_method"),
      resource: params.get("resource"),
    });
    target.searchParams.set("code", code);
    deps.logger.info({ client_id: client.client_id }, "OAuth authorization approved");
  } catch (err) {
    if (!(err instanceof OAuthFailure) || err.status >= 500) throw err;
    target.searchParams.set("error", err.error);
    target.searchParams.set("error_description", err.message);
  }
  if (state !== undefined) target.searchParams.set("state", state);
  res.writeHead(302, {
    Location: target.href,
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
  });
  res.end();
}

/** The form of a /token or /revoke request and the client it authenticates; a failure counts against the source. */
async function authenticatedForm(
  deps: EndpointDeps,
  req: IncomingMessage,
  source: string,
  endpoint: "token" | "revoke",
): Promise<{ params: Map<string, string>; client: ClientRecord }> {
  const params = await readForm(req);
  const credentials = clientCredentials(req, params);
  try {
    return { params, client: await deps.provider.authenticateClient(credentials.id, credentials.secret) };
  } catch (err) {
    // A state that cannot be reached is not the client's failure: it does not count against it.
    if (err instanceof OAuthFailure && err.status < 500) failed(deps, source, endpoint, err);
    throw err;
  }
}

export async function token(
  deps: EndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  source: string,
): Promise<void> {
  const { provider } = deps;
  const { params, client } = await authenticatedForm(deps, req, source, "token");
  const grant = params.get("grant_type");
  let answer: unknown;
  try {
    if (grant === "authorization_code") {
      const code = params.get("code");
      if (!code) throw new OAuthFailure("invalid_request", "code is required");
      answer = await provider.exchangeCode(
        client,
        code,
        params.get("code_verifier"),
        params.get("redirect_uri"),
        params.get("resource"),
      );
    } else if (grant === "refresh_token") {
      const refresh = params.get("refresh_token");
      if (!refresh) throw new OAuthFailure("invalid_request", "refresh_token is required");
      answer = await provider.exchangeRefresh(client, refresh, params.get("scope"), params.get("resource"));
    } else {
      throw new OAuthFailure(
        "unsupported_grant_type",
        "grant_type must be authorization_code or refresh_token",
      );
    }
  } catch (err) {
    if (err instanceof OAuthFailure && err.error === "invalid_grant") failed(deps, source, "token", err);
    throw err;
  }
  sendJson(res, 200, answer, { Pragma: "no-cache" });
}

export async function revoke(
  deps: EndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  source: string,
): Promise<void> {
  const { params, client } = await authenticatedForm(deps, req, source, "revoke");
  const value = params.get("token");
  if (!value) throw new OAuthFailure("invalid_request", "token is required");
  await deps.provider.revoke(client, value);
  sendJson(res, 200, {});
}
