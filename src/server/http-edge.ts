import {
  createServer,
  type IncomingMessage,
  type Server as NodeHttpServer,
  type ServerResponse,
} from "node:http";
import type { Settings } from "../config/index.js";
import {
  type Clock,
  cryptoIds,
  fail,
  type Ids,
  isLoopbackHost,
  type Logger,
  ok,
  type Result,
  systemClock,
} from "../core/index.js";
import { type CallSeries, createMetricsRegistry, type GaugeProviders } from "../metrics/index.js";
import {
  createMcpConnections,
  DEFAULT_MCP_CONNECTIONS,
  type McpConnectionConfig,
} from "./http-connections.js";
import { allowedHostnames, checkHostAndOrigin } from "./http-guard.js";
import { RPC_INTERNAL_ERROR, RPC_SERVER_ERROR, sendRpcError } from "./http-io.js";
import { mcpEndpoint } from "./http-mcp-endpoint.js";
import { createFailureThrottle, DEFAULT_THROTTLE, type ThrottleConfig } from "./http-throttle.js";
import { createMcpServer, type McpServerDeps } from "./mcp-server.js";
import { serveMetrics, timedRelay } from "./metrics-endpoint.js";
import { createOAuthProvider } from "./oauth-provider.js";
import { createOAuthRoutes, type OAuthRoutes } from "./oauth-routes.js";
import type { OAuthStore } from "./oauth-state.js";
import { openOAuthStore } from "./oauth-store.js";

export type HttpEdgeSettings = Pick<
  Settings,
  | "httpHost"
  | "httpPort"
  | "httpPath"
  | "allowUnauthNetwork"
  | "authEnabled"
  | "authIssuer"
  | "authStateDir"
  | "authSingleClient"
  | "authAccessTtl"
  | "authRefreshTtl"
  | "authCodeTtl"
>;

export interface HttpEdgeOptions {
  settings: HttpEdgeSettings;
  /** What every per-connection MCP server is built from (the relay is shared). */
  mcp: McpServerDeps;
  /** The relay's call counter, rendered on /metrics. */
  calls: { series(): CallSeries[] };
  gauges: GaugeProviders;
  /** Largest request body read whole; see the stdio bound in cli/main.ts. */
  maxBodyBytes: number;
  logger: Logger;
  clock?: Clock;
  ids?: Ids;
  throttle?: ThrottleConfig;
  connections?: McpConnectionConfig;
  /**
   * The operator console's routes, served under /console behind the same
   * Host and Origin checks (docs/console.md). It has its own login: an MCP
   * bearer token is never passed to it, and its cookie never opens /mcp.
   */
  console?: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /**
   * Where the OAuth state lives when OAuth is on: for several relays, the shared database's
   * (`openPgOAuthStore`). Absent, the files in RELAY_SHELL_AUTH_STATE_DIR, for one relay.
   */
  oauthStore?: OAuthStore;
  /**
   * Whether this relay can take calls now, for a load balancer's health check on /healthz
   * (docs/scaling.md): a relay that would refuse every call says so, and new MCP sessions go
   * to the others, with the reason under `error`. Absent, /healthz answers ok while the
   * listener is up.
   */
  health?: () => Result<void, string>;
  /** This relay's name among several, in the /healthz answer; "" for one relay. */
  instance?: string;
}

export interface HttpEdge {
  /** Bind and serve; rejects if the address cannot be bound. */
  listen(): Promise<{ host: string; port: number }>;
  /** Live MCP connections (what the protocol calls sessions; not PTY sessions). */
  readonly mcpConnections: number;
  close(): Promise<void>;
}

/**
 * With lockdown off, /authorize approves any client that registers, so OAuth
 * alone no longer decides who gets in: the listener is as open as one
 * without OAuth and gets the same non-loopback refusal.
 */
export function checkOpenRegistrationBind(settings: HttpEdgeSettings): string | null {
  if (!settings.authEnabled || settings.authSingleClient) return null;
  if (isLoopbackHost(settings.httpHost) || settings.allowUnauthNetwork) return null;
  return (
    `refusing to serve HTTP on ${settings.httpHost}:${settings.httpPort} with RELAY_SHELL_AUTH_SINGLE_CLIENT=false: ` +
    "any client that can register is approved, so the address must be loopback. Keep single-client lockdown on, " +
    "bind a loopback address, or set RELAY_SHELL_ALLOW_UNAUTH_NETWORK=true to accept it"
  );
}

/**
 * Say so when lockdown waits for its first client. The state is asked in the background: a
 * database that cannot answer now is named here, and the requests that need it fail closed.
 */
function warnWithoutClient(store: OAuthStore, logger: Logger): void {
  store.clientCount().then(
    (count) => {
      if (count === 0)
        logger.warn({}, "no OAuth client yet: the first client to register becomes the only one");
    },
    (err: unknown) =>
      logger.error(
        { where: store.where, err: err instanceof Error ? err.message : String(err) },
        "OAuth state unavailable",
      ),
  );
}

/** The load balancer's health check (deploy/haproxy.cfg). */
const HEALTH_PATH = "/healthz";

function pathOf(url: string | undefined): string {
  const text = url ?? "/";
  const query = text.indexOf("?");
  return query < 0 ? text : text.slice(0, query);
}

/**
 * The streamable-HTTP edge (docs/wire-contract.md §9): Host and Origin validation on
 * every request, /metrics, the OAuth endpoints when enabled, and the MCP
 * endpoint with per-client connections and bounded bodies. Building it opens
 * the OAuth state (so `--check-config` fails on a bad state dir) without
 * binding anything.
 */
export function createHttpEdge(options: HttpEdgeOptions): HttpEdge {
  const { settings, logger } = options;
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? cryptoIds;
  const unsafe = checkOpenRegistrationBind(settings);
  if (unsafe) throw new Error(unsafe);

  const oauth = settings.authEnabled ? oauthRoutes(options, clock, ids) : null;

  const relay = options.mcp.relay;
  const metrics = createMetricsRegistry({
    calls: options.calls,
    gauges: options.gauges,
    tools: relay.tools.map((t) => t.name),
    onGaugeError: (name, err) => logger.warn({ gauge: name, err: String(err) }, "gauge skipped"),
  });
  const connectionRelay = timedRelay(relay, metrics, clock);
  const connections = createMcpConnections(options.connections ?? DEFAULT_MCP_CONNECTIONS, {
    createServer: () => createMcpServer({ ...options.mcp, relay: connectionRelay }),
    clock,
    ids,
    logger,
    instance: options.instance ?? "",
  });
  const allowed = allowedHostnames({ bindHost: settings.httpHost, issuer: settings.authIssuer });
  const endpoint = { oauth, connections, relay, maxBodyBytes: options.maxBodyBytes };
  let http: NodeHttpServer | null = null;
  let closing = false;

  async function onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const guard = checkHostAndOrigin(req, allowed);
    if (!guard.ok) {
      sendRpcError(res, guard.error.status, RPC_SERVER_ERROR, guard.error.message);
      return;
    }
    const path = pathOf(req.url);
    if (path === HEALTH_PATH) {
      const state = () => (closing ? fail("shutting down") : (options.health?.() ?? ok(undefined)));
      serveHealth(req, res, state, options.instance);
      return;
    }
    if (path === "/metrics") {
      await serveMetrics(req, res, metrics, logger);
      return;
    }
    if (options.console && (path === "/console" || path.startsWith("/console/"))) {
      await options.console(req, res);
      return;
    }
    if (oauth && (await oauth.handle(req, res, path))) return;
    if (path === settings.httpPath) {
      await mcpEndpoint(endpoint, req, res);
      return;
    }
    sendRpcError(res, 404, RPC_SERVER_ERROR, "Not found");
  }

  return {
    get mcpConnections() {
      return connections.size;
    },
    listen() {
      const listening = listenOn(settings, logger, onRequest);
      http = listening.server;
      return listening.address;
    },
    async close() {
      // From now on the balancer's check fails, so no new session is sent here while the old end.
      closing = true;
      await connections.closeAll();
      metrics.close();
      const server = http;
      http = null;
      if (!server) return;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** The OAuth endpoints and bearer check, over the state the options name (files by default). */
function oauthRoutes(options: HttpEdgeOptions, clock: Clock, ids: Ids): OAuthRoutes {
  const { settings, logger } = options;
  const store = options.oauthStore ?? openOAuthStore(settings.authStateDir, logger);
  const provider = createOAuthProvider(
    {
      issuer: settings.authIssuer,
      singleClient: settings.authSingleClient,
      accessTtl: settings.authAccessTtl,
      refreshTtl: settings.authRefreshTtl,
      codeTtl: settings.authCodeTtl,
    },
    { store, clock, ids, logger },
  );
  if (!settings.authSingleClient) {
    logger.warn({}, "single-client lockdown is off: every client that registers is approved");
  } else {
    warnWithoutClient(store, logger);
  }
  const throttle = createFailureThrottle(options.throttle ?? DEFAULT_THROTTLE, clock);
  return createOAuthRoutes({ provider, throttle, clock, ids, logger, mcpPath: settings.httpPath });
}

/** The load balancer's check: not behind OAuth, nothing but whether calls can be taken here. */
function serveHealth(
  req: IncomingMessage,
  res: ServerResponse,
  health: () => Result<void, string>,
  instance: string | undefined,
): void {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405, { Allow: "GET, HEAD" }).end();
    return;
  }
  const state = health();
  const body = JSON.stringify({
    status: state.ok ? "ok" : "unavailable",
    ...(instance ? { instance } : {}),
    ...(state.ok ? {} : { reason: state.error }),
  });
  res
    .writeHead(state.ok ? 200 : 503, { "Content-Type": "application/json", "Cache-Control": "no-store" })
    .end(req.method === "HEAD" ? undefined : body);
}

/**
 * The listener, binding; `address` settles once it is bound. A request that fails is logged and
 * answered 500 (or cut when its answer had begun).
 */
function listenOn(
  settings: HttpEdgeSettings,
  logger: Logger,
  onRequest: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): { server: NodeHttpServer; address: Promise<{ host: string; port: number }> } {
  const server = createServer((req, res) => {
    onRequest(req, res).catch((err: unknown) => {
      logger.error({ err: String(err), path: pathOf(req.url).slice(0, 100) }, "HTTP request failed");
      if (!res.headersSent) sendRpcError(res, 500, RPC_INTERNAL_ERROR, "Internal error");
      else res.destroy();
    });
  });
  const host = settings.httpHost.replace(/^\[(.*)\]$/, "$1");
  const address = new Promise<{ host: string; port: number }>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host, port: settings.httpPort }, () => {
      server.off("error", reject);
      server.on("error", (err) => logger.error({ err: String(err) }, "HTTP server error"));
      const bound = server.address();
      const port = typeof bound === "object" && bound ? bound.port : settings.httpPort;
      resolve({ host, port });
    });
  });
  return { server, address };
}
