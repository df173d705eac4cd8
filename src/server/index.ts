// The HTTP edge (OAuth, /metrics) is loaded only when it is used: a stdio server never pays for it.

export type { McpConnectionConfig } from "./http-connections.js";
export type { HttpEdge, HttpEdgeOptions, HttpEdgeSettings } from "./http-edge.js";
export { type HttpEdgeModule, loadHttpEdge } from "./http-loader.js";
export type { ThrottleConfig } from "./http-throttle.js";
export {
  answerOversized,
  createMcpServer,
  type McpServerDeps,
  type ResourceDef,
} from "./mcp-server.js";
export { type OversizedHandler, type StdioOptions, serveStdio } from "./stdio.js";
