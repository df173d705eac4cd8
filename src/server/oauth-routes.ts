import type { IncomingMessage, ServerResponse } from "node:http";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { headerValue, sendJson } from "./http-io.js";
import { sourceOf } from "./http-throttle.js";
import { MCP_SCOPE, OAuthFailure } from "./oauth-common.js";
import { authorize, type EndpointDeps, failed, register, revoke, token } from "./oauth-endpoints.js";
import type { VerifyResult } from "./oauth-provider.js";

/** Seconds a client is asked to wait while the authorization state is unreachable. */
const UNAVAILABLE_RETRY_AFTER = "5";

export interface OAuthRoutesDeps extends EndpointDeps {
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

type Route = {
  methods: string;
  run: (req: IncomingMessage, res: ServerResponse, source: string) => Promise<void>;
};

/** The endpoints whose failures count against the source, and that a throttled source is refused. */
const THROTTLED = new Set(["/authorize", "/token", "/revoke"]);

/**
 * The authorization server's HTTP endpoints (docs/wire-contract.md §9.2) and the bearer
 * check for the MCP endpoint. The server has no login page: /authorize
 * approves at once for a registered client (see ADR 0012), which is why
 * single-client lockdown is the default.
 */
export function createOAuthRoutes(deps: OAuthRoutesDeps): OAuthRoutes {
  const issuer = new URL(deps.provider.config.issuer);
  const resourceMetadataPath = `/.well-known/oauth-protected-resource${deps.mcpPath}`;
  const resourceMetadataUrl = new URL(resourceMetadataPath, issuer).href;
  const { serverMetadata, resourceMetadata } = metadataDocuments(issuer);
  const metadata = (body: unknown) => async (_req: IncomingMessage, res: ServerResponse) =>
    sendJson(res, 200, body);
  const routes = new Map<string, Route>([
    ["/.well-known/oauth-authorization-server", { methods: "GET", run: metadata(serverMetadata) }],
    ["/.well-known/oauth-protected-resource", { methods: "GET", run: metadata(resourceMetadata) }],
    [resourceMetadataPath, { methods: "GET", run: metadata(resourceMetadata) }],
    ["/register", { methods: "POST", run: (req, res) => register(deps, req, res) }],
    ["/authorize", { methods: "GET, POST", run: (req, res, source) => authorize(deps, req, res, source) }],
    ["/token", { methods: "POST", run: (req, res, source) => token(deps, req, res, source) }],
    ["/revoke", { methods: "POST", run: (req, res, source) => revoke(deps, req, res, source) }],
  ]);
  return {
    handle: (req, res, path) => handle(deps, routes, req, res, path),
    authenticate: (req, res) => authenticate(deps, resourceMetadataUrl, req, res),
  };
}

/** The authorization server's metadata (RFC 8414) and the protected resource's (RFC 9728). */
function metadataDocuments(issuer: URL) {
  const endpoint = (path: string) => new URL(path, issuer).href;
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
  return { serverMetadata, resourceMetadata };
}

/** A source over its failure budget is answered 429 here; true when it was. */
function refused(deps: OAuthRoutesDeps, req: IncomingMessage, res: ServerResponse, source: string): boolean {
  const wait = deps.throttle.blockedFor(source);
  if (wait === 0) return false;
  deps.logger.warn({ source, path: req.url?.slice(0, 100) ?? "" }, "authentication throttled");
  sendJson(
    res,
    429,
    { error: "too_many_requests", error_description: "too many failed attempts; retry later" },
    { "Retry-After": String(Math.ceil(wait / 1000)) },
  );
  return true;
}

async function handle(
  deps: OAuthRoutesDeps,
  routes: Map<string, Route>,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
): Promise<boolean> {
  const route = routes.get(path);
  if (!route) return false;
  if (!route.methods.split(", ").includes(req.method ?? "")) {
    methodNotAllowed(res, route.methods);
    return true;
  }
  const source = sourceOf(req);
  if (THROTTLED.has(path) && refused(deps, req, res, source)) return true;
  try {
    await route.run(req, res, source);
  } catch (err) {
    if (err instanceof OAuthFailure) {
      const basic =
        err.error === "invalid_client" && /^basic /i.test(headerValue(req, "authorization") ?? "");
      oauthError(res, err, basic ? { "WWW-Authenticate": 'Basic realm="relay-shell"' } : {});
    } else {
      deps.logger.error({ path, err: String(err) }, "OAuth endpoint failed");
      oauthError(res, new OAuthFailure("server_error", "internal error", 500));
    }
  }
  return true;
}

async function authenticate(
  deps: OAuthRoutesDeps,
  resourceMetadataUrl: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<AuthInfo | null> {
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
  if (refused(deps, req, res, source)) return null;
  const match = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i.exec(header.trim());
  let verdict: VerifyResult | null = null;
  try {
    verdict = match?.[1] ? await deps.provider.verifyAccessToken(match[1]) : null;
  } catch (err) {
    // Fail closed: nothing is let through, and the client is told to come back, not to sign in again.
    if (!(err instanceof OAuthFailure)) throw err;
    oauthError(res, err);
    return null;
  }
  if (!verdict?.ok) {
    const description = verdict?.error === "expired" ? "token expired" : "invalid token";
    failed(deps, source, "bearer", { error: "invalid_token", message: description });
    sendJson(
      res,
      401,
      { error: "invalid_token", error_description: description },
      { "WWW-Authenticate": challenge("invalid_token", description) },
    );
    return null;
  }
  if (!verdict.value.scopes.includes(MCP_SCOPE)) {
    sendJson(
      res,
      403,
      { error: "insufficient_scope", error_description: `${MCP_SCOPE} is required` },
      { "WWW-Authenticate": challenge("insufficient_scope", `${MCP_SCOPE} is required`) },
    );
    return null;
  }
  return verdict.value;
}
