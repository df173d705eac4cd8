import type { IncomingMessage, ServerResponse } from "node:http";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { ConnectionHandle, McpConnections } from "./http-connections.js";
import {
  headerValue,
  mediaType,
  RPC_PARSE_ERROR,
  RPC_SERVER_ERROR,
  RPC_SESSION_NOT_FOUND,
  readBody,
  sendJson,
  sendRpcError,
} from "./http-io.js";
import { describeOversized } from "./line-reader.js";
import { type McpServerDeps, oversizedError, refuseOversizedCall } from "./mcp-server.js";
import type { OAuthRoutes } from "./oauth-routes.js";

/** What the MCP endpoint of the HTTP edge (http-edge.ts) answers with. */
export interface McpEndpointDeps {
  /** The bearer check, when OAuth is on. */
  oauth: OAuthRoutes | null;
  connections: McpConnections;
  relay: McpServerDeps["relay"];
  /** Largest request body read whole. */
  maxBodyBytes: number;
}

function isInitialize(body: unknown): boolean {
  return Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);
}

/**
 * The MCP endpoint: the bearer check, then the request routed to the MCP session its
 * Mcp-Session-Id names, or a new one opened by an initialize request. A body is read whole up to
 * the bound; a larger one is refused (a tools/call of a live session with the audited refusal).
 */
export async function mcpEndpoint(
  e: McpEndpointDeps,
  req: IncomingMessage & { auth?: AuthInfo },
  res: ServerResponse,
): Promise<void> {
  let owner = "";
  if (e.oauth) {
    const info = await e.oauth.authenticate(req, res);
    if (!info) return;
    req.auth = info;
    owner = info.clientId;
  }
  const method = req.method ?? "";
  if (method !== "POST" && method !== "GET" && method !== "DELETE") {
    sendRpcError(res, 405, RPC_SERVER_ERROR, "Method not allowed", { Allow: "GET, POST, DELETE" });
    return;
  }
  const connection = connectionOf(e, req, res, owner);
  if (connection === null) return;
  if (method !== "POST") {
    if (!connection) {
      sendRpcError(res, 400, RPC_SERVER_ERROR, "Bad Request: Mcp-Session-Id header is required");
      return;
    }
    await connection.handle(req, res);
    return;
  }
  await post(e, req, res, connection, owner);
}

/**
 * The MCP session the request names: undefined when it names none, null once a request naming
 * one that is not there (or not the caller's) has been answered 404.
 */
function connectionOf(
  e: McpEndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  owner: string,
): ConnectionHandle | undefined | null {
  // The wire keeps the protocol's word: the Mcp-Session-Id header, "Session not found", "Too many MCP sessions".
  const connectionId = headerValue(req, "mcp-session-id");
  if (connectionId === undefined) return undefined;
  const found = e.connections.lookup(connectionId, owner);
  if (!found.found) {
    sendRpcError(res, 404, RPC_SESSION_NOT_FOUND, "Session not found");
    return null;
  }
  return found.handle;
}

/** A POST: one JSON-RPC message (or batch) for the session, or the initialize that opens one. */
async function post(
  e: McpEndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  connection: ConnectionHandle | undefined,
  owner: string,
): Promise<void> {
  if (mediaType(req) !== "application/json") {
    sendRpcError(res, 415, RPC_SERVER_ERROR, "Unsupported Media Type: Content-Type must be application/json");
    return;
  }
  const body = await readBody(req, e.maxBodyBytes);
  if (body.kind === "aborted") return;
  if (body.kind === "too_large") {
    oversized(e, res, body, connection, owner);
    return;
  }
  let message: unknown;
  try {
    message = JSON.parse(body.body.toString("utf8"));
  } catch {
    sendRpcError(res, 400, RPC_PARSE_ERROR, "Parse error: Invalid JSON");
    return;
  }
  if (connection) {
    await connection.handle(req, res, message);
    return;
  }
  if (!isInitialize(message)) {
    sendRpcError(res, 400, RPC_SERVER_ERROR, "Bad Request: Mcp-Session-Id header is required");
    return;
  }
  if (!e.connections.hasRoom()) {
    sendRpcError(res, 503, RPC_SERVER_ERROR, "Too many MCP sessions; retry later", { "Retry-After": "30" });
    return;
  }
  await e.connections.initialize(owner, req, res, message);
}

function oversized(
  e: McpEndpointDeps,
  res: ServerResponse,
  body: { bytes: number; head: Buffer; tail: Buffer },
  connection: ConnectionHandle | undefined,
  owner: string,
): void {
  const info = { ...describeOversized(body), bytes: body.bytes };
  if (connection && info.method === "tools/call" && info.id !== null) {
    // The same audited refusal stdio gives.
    sendJson(res, 200, { jsonrpc: "2.0", id: info.id, result: refuseOversizedCall(e.relay, info, owner) });
    return;
  }
  const error = oversizedError(body.bytes);
  sendRpcError(res, 413, error.code, error.message);
}
