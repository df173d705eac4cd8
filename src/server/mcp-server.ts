import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { outputSchemaFor, type Relay } from "../runner/index.js";

export interface McpServerDeps {
  relay: Relay;
  version: string;
  instructions: string;
  operatingGuide: string;
}

export const PROMPT_NAME = "operating_guide";

/**
 * The MCP edge: it maps protocol requests onto the relay and nothing else.
 * Tool arguments are passed through untouched so that the runner validates
 * (and audits) every call, including malformed ones.
 */
export function createMcpServer(deps: McpServerDeps): Server {
  const { relay } = deps;
  const server = new Server(
    { name: "relay-shell", version: deps.version },
    { capabilities: { tools: {}, prompts: {} }, instructions: deps.instructions },
  );

  const listing = relay.tools.map((tool) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: tool.inputSchema,
    outputSchema: outputSchemaFor(tool),
    annotations: { title: tool.title, ...tool.annotations },
  }));

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listing }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const result = await relay.run(request.params.name, request.params.arguments, {
      requestId: String(extra.requestId),
      clientId: extra.authInfo?.clientId ?? "",
      signal: extra.signal,
    });
    return {
      content: [{ type: "text", text: result.text }],
      structuredContent: result.structured,
    };
  });

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({
    prompts: [
      {
        name: PROMPT_NAME,
        title: "relay-shell operating guide",
        description: "How to choose a tool, read results and work safely with relay-shell.",
      },
    ],
  }));

  server.setRequestHandler(GetPromptRequestSchema, async (request) => {
    if (request.params.name !== PROMPT_NAME) {
      throw new McpError(ErrorCode.InvalidParams, `unknown prompt: ${request.params.name.slice(0, 200)}`);
    }
    const text = relay.recordRead(`prompt:${PROMPT_NAME}`, {}, deps.operatingGuide);
    return {
      description: "relay-shell operating guide",
      messages: [{ role: "user", content: { type: "text", text } }],
    };
  });

  return server;
}
