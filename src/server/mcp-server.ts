import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { UriTemplate } from "@modelcontextprotocol/sdk/shared/uriTemplate.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  CallToolResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  type JSONRPCMessage,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { cryptoIds } from "../core/index.js";
import { outputSchemaFor, type Relay, type ResourceDef } from "../runner/index.js";

/**
 * One sample tools/call request and result through the SDK's schemas, shaped
 * like a real call's (a progress token, every kind of field a result
 * carries); the answers are not used.
 */
function warmCallSchemas(): void {
  CallToolRequestSchema.safeParse({
    method: "tools/call",
    params: { name: "shell_exec", arguments: { command: "true" }, _meta: { progressToken: 1 } },
  });
  CallToolResultSchema.safeParse({
    content: [{ type: "text", text: "[exit 0]\n" }],
    structuredContent: { tool: "shell_exec", tier: 1, denied: false, action: null, notices: [] },
  });
}

export interface McpServerDeps {
  relay: Relay;
  /** Settles when the relay can serve calls (the classifier loads while the transport starts). */
  ready?: Promise<void>;
  version: string;
  instructions: string;
  operatingGuide: string;
  resources?: readonly ResourceDef[];
  /**
   * Called once the client has sent `initialized`: work the first call would
   * otherwise wait for starts here, after the handshake, not during it.
   */
  onInitialized?: () => void;
  /** Called when this MCP session ends (its transport closed): consent leases end with it. */
  onSessionEnd?: (session: string) => void;
}

const PROMPT_NAME = "operating_guide";

/** What could be recovered of a message too large to parse, and its size. */
export interface OversizedRequest {
  id: string | number | null;
  method: string | null;
  toolName: string | null;
  bytes: number;
}

/**
 * The relay's audited refusal of a tool call too large to parse (its input
 * was never scanned, so it is treated as Tier 3), as a tools/call result.
 */
export function refuseOversizedCall(relay: Relay, info: OversizedRequest, clientId: string): CallToolResult {
  const result = relay.refuseOversized(info.toolName, info.bytes, {
    requestId: info.id === null ? "" : String(info.id),
    clientId,
    signal: new AbortController().signal,
  });
  return { content: [{ type: "text", text: result.text }], structuredContent: result.structured };
}

/** The JSON-RPC error for any other message too large to parse. */
export function oversizedError(bytes: number): { code: number; message: string } {
  return { code: ErrorCode.InvalidRequest, message: `message of ${bytes} bytes exceeds the size limit` };
}

/**
 * The stdio answer to a message too large to parse (see createStdioTransport):
 * a tool call gets the relay's audited refusal, anything else a JSON-RPC error.
 */
export function answerOversized(relay: Relay): (info: OversizedRequest) => Promise<JSONRPCMessage | null> {
  return async (info) => {
    if (info.method === "tools/call") {
      const result = refuseOversizedCall(relay, info, "");
      return info.id === null ? null : { jsonrpc: "2.0", id: info.id, result };
    }
    return { jsonrpc: "2.0", id: info.id, error: oversizedError(info.bytes) } as JSONRPCMessage;
  };
}

const MAX_CLIENT_ID = 200;

/**
 * The caller's identity: the OAuth client of the bearer token when there is
 * one (it cannot be forged); otherwise the `client_id` a client states in the
 * request metadata, as the Python server reads it. Over stdio there is one
 * client per process, so a stated id only labels records and sessions.
 */
function clientIdOf(tokenClient: string | undefined, meta: Record<string, unknown> | undefined): string {
  if (tokenClient) return tokenClient.slice(0, MAX_CLIENT_ID);
  const stated = meta?.client_id;
  return typeof stated === "string" ? stated.slice(0, MAX_CLIENT_ID) : "";
}

/**
 * The MCP edge: it maps protocol requests onto the relay and nothing else.
 * Tool arguments are passed through untouched so that the runner validates
 * (and audits) every call, including malformed ones.
 */
export function createMcpServer(deps: McpServerDeps): Server {
  const { relay } = deps;
  const resources = deps.resources ?? [];
  const server = new Server(
    { name: "relay-shell", version: deps.version },
    {
      capabilities: { tools: {}, prompts: {}, ...(resources.length > 0 ? { resources: {} } : {}) },
      instructions: deps.instructions,
    },
  );
  server.oninitialized = () => {
    deps.onInitialized?.();
    // The SDK checks every tools/call request and result against its schemas, which are compiled
    // on first use: compile them now, after the handshake, rather than in the first call.
    setImmediate(warmCallSchemas);
  };
  // One MCP server per session (the HTTP edge builds one per Mcp-Session-Id): its consent session.
  const session = `mcp-${cryptoIds.hex(8)}`;
  const onSessionEnd = deps.onSessionEnd;
  if (onSessionEnd) server.onclose = () => onSessionEnd(session);

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
    await deps.ready;
    const progressToken = request.params._meta?.progressToken;
    const result = await relay.run(request.params.name, request.params.arguments, {
      requestId: String(extra.requestId),
      clientId: clientIdOf(extra.authInfo?.clientId, request.params._meta),
      session,
      signal: extra.signal,
      ...(progressToken === undefined
        ? {}
        : {
            progress: (progress: number, total: number, message?: string) => {
              extra
                .sendNotification({
                  method: "notifications/progress",
                  params: { progressToken, progress, total, ...(message ? { message } : {}) },
                })
                .catch(() => undefined); // a client that went away cannot be told; the call still completes
            },
          }),
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
    await deps.ready;
    if (request.params.name !== PROMPT_NAME) {
      throw new McpError(ErrorCode.InvalidParams, `unknown prompt: ${request.params.name.slice(0, 200)}`);
    }
    const text = relay.recordRead(`prompt:${PROMPT_NAME}`, {}, () => deps.operatingGuide);
    return {
      description: "relay-shell operating guide",
      messages: [{ role: "user", content: { type: "text", text } }],
    };
  });

  if (resources.length > 0) registerResources(server, relay, resources, deps.ready);
  return server;
}

function registerResources(
  server: Server,
  relay: Relay,
  resources: readonly ResourceDef[],
  ready: Promise<void> | undefined,
): void {
  const fixed = resources.filter((r) => !r.template);
  const templated = resources
    .filter((r) => r.template)
    .map((r) => ({ def: r, matcher: new UriTemplate(r.uri) }));

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: fixed.map((r) => ({
      uri: r.uri,
      name: r.name,
      description: r.description,
      mimeType: r.mimeType,
    })),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: templated.map(({ def }) => ({
      uriTemplate: def.uri,
      name: def.name,
      description: def.description,
      mimeType: def.mimeType,
    })),
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    await ready;
    const uri = request.params.uri;
    let def = fixed.find((r) => r.uri === uri);
    let vars: Record<string, string> = {};
    if (!def) {
      for (const entry of templated) {
        const match = entry.matcher.match(uri);
        if (match) {
          def = entry.def;
          vars = Object.fromEntries(
            Object.entries(match).map(([k, v]) => [
              k,
              decodeURIComponent(Array.isArray(v) ? v.join(",") : v),
            ]),
          );
          break;
        }
      }
    }
    if (!def) throw new McpError(ErrorCode.InvalidParams, `unknown resource: ${uri.slice(0, 200)}`);
    const resource = def;
    const text = relay.recordRead(resource.auditLabel, resource.auditArgs(vars), () => resource.read(vars));
    return { contents: [{ uri, mimeType: resource.mimeType, text }] };
  });
}
