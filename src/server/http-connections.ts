import type { IncomingMessage, ServerResponse } from "node:http";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Clock, Ids, Logger } from "../core/index.js";

export interface McpConnectionConfig {
  /** MCP connections held at once; an initialize beyond it is answered 503. */
  maxConnections: number;
  /** A connection with no request for this long (and none open) is closed. */
  idleMs: number;
  sweepIntervalMs: number;
}

export const DEFAULT_MCP_CONNECTIONS: McpConnectionConfig = {
  maxConnections: 1024,
  idleMs: 30 * 60_000,
  sweepIntervalMs: 60_000,
};

export interface McpConnectionDeps {
  /** One SDK server per connection; every one shares the same relay. */
  createServer(): Server;
  clock: Clock;
  ids: Ids;
  logger: Logger;
  /**
   * This relay's name among several: the end of every Mcp-Session-Id it gives out (`<token>.<name>`),
   * so a balancer sends each request to the relay that holds its connection without a table of its
   * own (deploy/haproxy.cfg, docs/scaling.md). "" or absent for one relay: the token alone.
   */
  instance?: string;
}

interface Entry {
  id: string;
  owner: string;
  transport: StreamableHTTPServerTransport;
  server: Server;
  lastActive: number;
  inFlight: number;
  closing: boolean;
}

/** What the edge may do with a request that names a connection (by its `Mcp-Session-Id`). */
type ConnectionLookup = { found: true; handle: ConnectionHandle } | { found: false };

export interface ConnectionHandle {
  readonly id: string;
  handle(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void>;
}

export interface McpConnections {
  readonly size: number;
  /** The connection with this id, if it exists and belongs to this caller. */
  lookup(id: string, owner: string): ConnectionLookup;
  /** Whether a new connection may be opened now. */
  hasRoom(): boolean;
  /** Open a connection with an initialize request; it is kept only if initialization succeeds. */
  initialize(owner: string, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void>;
  /** Close connections idle past the limit; runs on a timer too. */
  sweep(): number;
  closeAll(): Promise<void>;
}

/**
 * Per-client MCP connections over streamable HTTP: each owns one SDK
 * transport and one SDK server, bound to the OAuth client that opened it
 * (another client's token cannot use it: the connection is reported
 * unknown). The MCP protocol calls such a connection a session and names it
 * in the `Mcp-Session-Id` header; that name, and the SDK's, stay where they
 * are the protocol's (the header, `sessionIdGenerator`, "Session not found").
 * Here "session" is kept for PTY sessions, which, like forwards, stay
 * server-global, as on stdio.
 */
export function createMcpConnections(config: McpConnectionConfig, deps: McpConnectionDeps): McpConnections {
  const connections = new Map<string, Entry>();
  let opening = 0;

  const remove = (entry: Entry) => {
    if (entry.closing) return;
    entry.closing = true;
    connections.delete(entry.id);
    entry.server.close().catch((err: unknown) => {
      deps.logger.warn({ err: String(err) }, "MCP connection close failed");
    });
  };

  const track = (entry: Entry, res: ServerResponse) => {
    entry.inFlight++;
    entry.lastActive = deps.clock.monotonic();
    res.once("close", () => {
      entry.inFlight--;
      entry.lastActive = deps.clock.monotonic();
    });
  };

  const handleFor = (entry: Entry): ConnectionHandle => ({
    id: entry.id,
    async handle(req, res, body) {
      track(entry, res);
      await entry.transport.handleRequest(req, res, body);
    },
  });

  const timer = setInterval(() => sweep(), config.sweepIntervalMs);
  timer.unref();

  function sweep(): number {
    const now = deps.clock.monotonic();
    let closed = 0;
    for (const entry of [...connections.values()]) {
      if (entry.inFlight === 0 && now - entry.lastActive > config.idleMs) {
        remove(entry);
        closed++;
      }
    }
    return closed;
  }

  return {
    get size() {
      return connections.size;
    },
    lookup(id, owner) {
      const entry = connections.get(id);
      if (!entry || entry.closing || entry.owner !== owner) return { found: false };
      return { found: true, handle: handleFor(entry) };
    },
    hasRoom: () => connections.size + opening < config.maxConnections,
    async initialize(owner, req, res, body) {
      opening++;
      const server = deps.createServer();
      let entry: Entry | undefined;
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => `${deps.ids.token(24)}${deps.instance ? `.${deps.instance}` : ""}`,
        onsessioninitialized: (id) => {
          entry = {
            id,
            owner,
            transport,
            server,
            lastActive: deps.clock.monotonic(),
            inFlight: 0,
            closing: false,
          };
          connections.set(id, entry);
          track(entry, res);
        },
        onsessionclosed: () => {
          if (entry) remove(entry);
        },
      });
      // Set before connect: the SDK chains its own close handler after this one.
      transport.onclose = () => {
        if (entry) remove(entry);
      };
      try {
        await server.connect(transport);
        await transport.handleRequest(req, res, body);
      } finally {
        opening--;
        if (!entry) {
          await server.close().catch(() => undefined); // never initialized: nothing else refers to it
        }
      }
    },
    sweep,
    async closeAll() {
      clearInterval(timer);
      const all = [...connections.values()];
      for (const entry of all) remove(entry);
      await Promise.all(all.map((e) => e.server.close().catch(() => undefined)));
    },
  };
}
