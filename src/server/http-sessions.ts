import type { IncomingMessage, ServerResponse } from "node:http";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Clock, Ids, Logger } from "../core/index.js";

export interface McpSessionConfig {
  /** MCP sessions held at once; an initialize beyond it is answered 503. */
  maxSessions: number;
  /** A session with no request for this long (and none open) is closed. */
  idleMs: number;
  sweepIntervalMs: number;
}

export const DEFAULT_MCP_SESSIONS: McpSessionConfig = {
  maxSessions: 1024,
  idleMs: 30 * 60_000,
  sweepIntervalMs: 60_000,
};

export interface McpSessionDeps {
  /** One SDK server per session; every one shares the same relay. */
  createServer(): Server;
  clock: Clock;
  ids: Ids;
  logger: Logger;
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

/** What the edge may do with a request that names a session. */
export type SessionLookup = { found: true; handle: SessionHandle } | { found: false };

export interface SessionHandle {
  readonly id: string;
  handle(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void>;
}

export interface McpSessions {
  readonly size: number;
  /** The session with this id, if it exists and belongs to this caller. */
  lookup(id: string, owner: string): SessionLookup;
  /** Whether a new session may be opened now. */
  hasRoom(): boolean;
  /** Open a session with an initialize request; it is kept only if initialization succeeds. */
  initialize(owner: string, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void>;
  /** Close sessions idle past the limit; runs on a timer too. */
  sweep(): number;
  closeAll(): Promise<void>;
}

/**
 * Per-client MCP sessions over streamable HTTP: each session owns one SDK
 * transport and one SDK server, bound to the OAuth client that opened it
 * (another client's token cannot use it: the session is reported unknown).
 * Tool-level state (PTY sessions, forwards) stays server-global, as on stdio.
 */
export function createMcpSessions(config: McpSessionConfig, deps: McpSessionDeps): McpSessions {
  const sessions = new Map<string, Entry>();
  let opening = 0;

  const remove = (entry: Entry) => {
    if (entry.closing) return;
    entry.closing = true;
    sessions.delete(entry.id);
    entry.server.close().catch((err: unknown) => {
      deps.logger.warn({ err: String(err) }, "MCP session close failed");
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

  const handleFor = (entry: Entry): SessionHandle => ({
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
    for (const entry of [...sessions.values()]) {
      if (entry.inFlight === 0 && now - entry.lastActive > config.idleMs) {
        remove(entry);
        closed++;
      }
    }
    return closed;
  }

  return {
    get size() {
      return sessions.size;
    },
    lookup(id, owner) {
      const entry = sessions.get(id);
      if (!entry || entry.closing || entry.owner !== owner) return { found: false };
      return { found: true, handle: handleFor(entry) };
    },
    hasRoom: () => sessions.size + opening < config.maxSessions,
    async initialize(owner, req, res, body) {
      opening++;
      const server = deps.createServer();
      let entry: Entry | undefined;
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => deps.ids.token(24),
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
          sessions.set(id, entry);
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
      const all = [...sessions.values()];
      for (const entry of all) remove(entry);
      await Promise.all(all.map((e) => e.server.close().catch(() => undefined)));
    },
  };
}
