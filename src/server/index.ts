export {
  checkOpenRegistrationBind,
  createHttpEdge,
  type HttpEdge,
  type HttpEdgeOptions,
  type HttpEdgeSettings,
} from "./http-edge.js";
export { DEFAULT_MCP_SESSIONS, type McpSessionConfig } from "./http-sessions.js";
export { DEFAULT_THROTTLE, type ThrottleConfig } from "./http-throttle.js";
export {
  answerOversized,
  createMcpServer,
  type McpServerDeps,
  PROMPT_NAME,
  type ResourceDef,
} from "./mcp-server.js";
export { timedRelay } from "./metrics-endpoint.js";
export { MCP_SCOPE } from "./oauth-common.js";
export { LOCKDOWN_MESSAGE } from "./oauth-provider.js";
export { createStdioTransport, type OversizedHandler, type StdioOptions, serveStdio } from "./stdio.js";
