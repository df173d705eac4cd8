// Baseline for start-up time: the smallest MCP server the SDK can make, one no-op tool.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const server = new McpServer({ name: "minimal", version: "1.0.0" });
server.registerTool("noop", { description: "does nothing" }, async () => ({
  content: [{ type: "text", text: "" }],
}));
await server.connect(new StdioServerTransport());
