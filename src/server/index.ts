// The HTTP edge (OAuth, /metrics) is loaded only when it is used: a stdio server never pays for it.

export type { HttpEdge, HttpEdgeOptions } from "./http-edge.js";
export { loadHttpEdge } from "./http-loader.js";
export {
  answerOversized,
  createMcpServer,
  type McpServerDeps,
} from "./mcp-server.js";
// The OAuth state on the shared PostgreSQL database, for several relays (HttpEdgeOptions.oauthStore);
// it loads no driver of its own: the pool comes with the PgState it is given.
export { openPgOAuthStore } from "./oauth-pg-store.js";
export type { OAuthStore } from "./oauth-state.js";
export { serveStdio } from "./stdio.js";
