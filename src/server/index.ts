export {
  answerOversized,
  createMcpServer,
  type McpServerDeps,
  PROMPT_NAME,
  type ResourceDef,
} from "./mcp-server.js";
export { createStdioTransport, type OversizedHandler, type StdioOptions, serveStdio } from "./stdio.js";
