import type { IncomingMessage, ServerResponse } from "node:http";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import type { Clock, Ids, Logger } from "../core/index.js";
import { headerValue, mediaType, readBody, sendJson } from "./http-io.js";
import { type FailureThrottle, sourceOf } from "./http-throttle.js";
import { MCP_SCOPE, OAuthFailure } from "./oauth-common.js";
import type { OAuthProvider, VerifyResult } from "./oauth-provider.js";
import { parseRegistration, registrationResponse } from "./oauth-registration.js";
import type { ClientRecord } from "./oauth-state.js";

/** OAuth request bodies are small forms and JSON documents. */
const MAX_OAUTH_BODY = 64 * 1024;
const MAX_PARAM = 4096;
/** Seconds a client is asked to wait while the authorization state is unreachable. */
const UNAVAILABLE_RETRY_AFTER = "5";

export interface OAuthRoutesDeps {
  provider: OAuthProvider;
  throttle: FailureThrottle;
  clock: Clock;
  ids: Ids;
  logger: Logger;
  /** The MCP endpoint path, for the path-specific protected-resource metadata. */
  mcpPath: string;
}

export interface OAuthRoutes {
  /** Answer an OAuth endpoint; false when the path is not one. */
  handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean>;
  /**
   * The bearer check in front of the MCP endpoint: the caller's AuthInfo, or
   * null once the request has been answered (401, 403, 429, or 503 while the
   * authorization state is unreachable).
   */
  authenticate(req: IncomingMessage, res: ServerResponse): Promise<AuthInfo | null>;
}

function oauthError(res: ServerResponse, failure: OAuthFailure, headers: Record<string, string> = {}): void {
  const retry: Record<string, string> =
    failure.status === 503 ? { "Retry-After": UNAVAILABLE_RETRY_AFTER } : {};
  sendJson(
    res,
    failure.status,
    { error: failure.error, error_description: failure.message },
    { Pragma: "no-cache", ...retry, ...headers },
  );
}

function methodNotAllowed(res: ServerResponse, allow: string): void {
  sendJson(res, 405, { error: "invalid_request", error_description: "method not allowed" }, { Allow: allow });
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

/**
 * The authorization server's HTTP endpoints (docs/wire-contract.md §9.2) and the bearer
 * check for the MCP endpoint. The server has no login page: /authorize
 * approves at once for a registered client (see ADR 0012), which is why
 * single-client lockdown is the default.
 */
export function createOAuthRoutes(deps: OAuthRoutesDeps): OAuthRoutes {
  const { provider, throttle, logger } = deps;
  const issuer = new URL(provider.config.issuer);
  const endpoint = (path: string) => new URL(path, issuer).href;
  const resourceMetadataPath = `/.well-known/oauth-protected-resource${deps.mcpPath}`;
  const resourceMetadataUrl = endpoint(resourceMetadataPath);
  const authMethods = ["client_secret_post", "client_secret_basic", "none"];
  const serverMetadata = {
    issuer: issuer.href,
    authorization_endpoint: endpoint("/authorize"),
    token_endpoint: endpoint("/token"),
    registration_endpoint: endpoint("/register"),
    revocation_endpoint: endpoint("/revoke"),
    response_types_supported: ["code"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: authMethods,
    revocation_endpoint_auth_methods_supported: authMethods,
    scopes_supported: [MCP_SCOPE],
  };
  const resourceMetadata = {
    resource: issuer.href,
    authorization_servers: [issuer.href],
    scopes_supported: [MCP_SCOPE],
    bearer_methods_supported: ["header"],
    resource_name: "relay-shell",
  };

  const refused = (req: IncomingMessage, res: ServerResponse, source: string): boolean => {
    const wait = throttle.blockedFor(source);
    if (wait === 0) return false;
    logger.warn({ source, path: req.url?.slice(0, 100) ?? "" }, "authentication throttled");
    sendJson(
      res,
      429,
      { error: "too_many_requests", error_description: "too many failed attempts; retry later" },
      { "Retry-After": String(Math.ceil(wait / 1000)) },
    );
    return true;
  };

  const failed = (source: string, what: string, failure: { error: string; message: string }) => {
    throttle.fail(source);
    logger.warn({ source, what, error: failure.error, reason: failure.message }, "OAuth request refused");
  };

  async function register(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
    await provider.registerClient(registration.record);
    sendJson(res, 201, registrationResponse(registration), { Pragma: "no-cache" });
  }

  async function authorize(req: IncomingMessage, res: ServerResponse, source: string): Promise<void> {
    let params: Map<string, string>;
    if (req.method === "POST") params = await readForm(req);
    else params = parseParams(new URL(req.url ?? "/", "http://x").search);
    // Phase 1: until the client and its redirect URI are known, errors are answered here.
    const clientId = params.get("client_id") ?? "";
    const client: ClientRecord | undefined = clientId === "" ? undefined : await provider.getClient(clientId);
    if (!client) {
      const failure = new OAuthFailure("invalid_request", "unknown or missing client_id");
      failed(source, "authorize", failure);
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
      logger.info({ client_id: client.client_id }, "OAuth authorization approved");
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
    req: IncomingMessage,
    source: string,
    endpoint: "token" | "revoke",
  ): Promise<{ params: Map<string, string>; client: ClientRecord }> {
    const params = await readForm(req);
    const credentials = clientCredentials(req, params);
    try {
      return { params, client: await provider.authenticateClient(credentials.id, credentials.secret) };
    } catch (err) {
      // A state that cannot be reached is not the client's failure: it does not count against it.
      if (err instanceof OAuthFailure && err.status < 500) failed(source, endpoint, err);
      throw err;
    }
  }

  async function token(req: IncomingMessage, res: ServerResponse, source: string): Promise<void> {
    const { params, client } = await authenticatedForm(req, source, "token");
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
      if (err instanceof OAuthFailure && err.error === "invalid_grant") failed(source, "token", err);
      throw err;
    }
    sendJson(res, 200, answer, { Pragma: "no-cache" });
  }

  async function revoke(req: IncomingMessage, res: ServerResponse, source: string): Promise<void> {
    const { params, client } = await authenticatedForm(req, source, "revoke");
    const value = params.get("token");
    if (!value) throw new OAuthFailure("invalid_request", "token is required");
    await provider.revoke(client, value);
    sendJson(res, 200, {});
  }

  type Route = {
    methods: string;
    run: (req: IncomingMessage, res: ServerResponse, source: string) => Promise<void>;
  };
  const metadata = (body: unknown) => async (_req: IncomingMessage, res: ServerResponse) =>
    sendJson(res, 200, body);
  const routes = new Map<string, Route>([
    ["/.well-known/oauth-authorization-server", { methods: "GET", run: metadata(serverMetadata) }],
    ["/.well-known/oauth-protected-resource", { methods: "GET", run: metadata(resourceMetadata) }],
    [resourceMetadataPath, { methods: "GET", run: metadata(resourceMetadata) }],
    ["/register", { methods: "POST", run: register }],
    ["/authorize", { methods: "GET, POST", run: authorize }],
    ["/token", { methods: "POST", run: token }],
    ["/revoke", { methods: "POST", run: revoke }],
  ]);
  const throttled = new Set(["/authorize", "/token", "/revoke"]);

  return {
    async handle(req, res, path) {
      const route = routes.get(path);
      if (!route) return false;
      if (!route.methods.split(", ").includes(req.method ?? "")) {
        methodNotAllowed(res, route.methods);
        return true;
      }
      const source = sourceOf(req);
      if (throttled.has(path) && refused(req, res, source)) return true;
      try {
        await route.run(req, res, source);
      } catch (err) {
        if (err instanceof OAuthFailure) {
          const basic =
            err.error === "invalid_client" && /^basic /i.test(headerValue(req, "authorization") ?? "");
          oauthError(res, err, basic ? { "WWW-Authenticate": 'Basic realm="relay-shell"' } : {});
        } else {
          logger.error({ path, err: String(err) }, "OAuth endpoint failed");
          oauthError(res, new OAuthFailure("server_error", "internal error", 500));
        }
      }
      return true;
    },

    async authenticate(req, res) {
      const challenge = (error: string, description: string) =>
        `Bearer error="${error}", error_description="${description}", scope="${MCP_SCOPE}", resource_metadata="${resourceMetadataUrl}"`;
      const header = headerValue(req, "authorization");
      if (header === undefined) {
        sendJson(
          res,
          401,
          { error: "invalid_token", error_description: "authorization required" },
          { "WWW-Authenticate": `Bearer scope="${MCP_SCOPE}", resource_metadata="${resourceMetadataUrl}"` },
        );
        return null;
      }
      const source = sourceOf(req);
      if (refused(req, res, source)) return null;
      const match = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i.exec(header.trim());
      let verdict: VerifyResult | null = null;
      try {
        verdict = match?.[1] ? await provider.verifyAccessToken(match[1]) : null;
      } catch (err) {
        // Fail closed: nothing is let through, and the client is told to come back, not to sign in again.
        if (!(err instanceof OAuthFailure)) throw err;
        oauthError(res, err);
        return null;
      }
      if (!verdict?.ok) {
        const description = verdict?.reason === "expired" ? "token expired" : "invalid token";
        failed(source, "bearer", { error: "invalid_token", message: description });
        sendJson(
          res,
          401,
          { error: "invalid_token", error_description: description },
          { "WWW-Authenticate": challenge("invalid_token", description) },
        );
        return null;
      }
      if (!verdict.info.scopes.includes(MCP_SCOPE)) {
        sendJson(
          res,
          403,
          { error: "insufficient_scope", error_description: `${MCP_SCOPE} is required` },
          { "WWW-Authenticate": challenge("insufficient_scope", `${MCP_SCOPE} is required`) },
        );
        return null;
      }
      return verdict.info;
    },
  };
}
