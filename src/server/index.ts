// The HTTP edge (OAuth, /metrics) is loaded only when it is used: a stdio server never pays for it.

export type { HttpEdge, HttpEdgeOptions } from "./http-edge.js";
export { loadHttpEdge } from "./http-loader.js";
export {
  answerOversized,
  createMcpServer,
  type McpServerDeps,
} from "./mcp-server.js";
export { serveStdio } from "./stdio.js";
