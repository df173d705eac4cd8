export { createMcpServer, type McpServerDeps, PROMPT_NAME } from "./mcp-server.js";
export { serveStdio } from "./stdio.js";
