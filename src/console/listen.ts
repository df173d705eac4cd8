import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { getRequestListener } from "@hono/node-server";
import type { Hono } from "hono";
import type { Logger } from "../core/index.js";

/** A Node request handler for the console's routes (the MCP edge mounts it beside /mcp). */
export type ConsoleHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** A second Host line is refused before Hono sees the request: Node keeps only the first. */
function hostLines(req: IncomingMessage): number {
  let count = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]?.toLowerCase() === "host") count++;
  return count;
}

export function nodeHandler(app: Hono): ConsoleHandler {
  const listener = getRequestListener(app.fetch, { overrideGlobalObjects: false });
  return async (req, res) => {
    if (hostLines(req) > 1) {
      res.writeHead(400, { "Content-Type": "application/json" }).end('{"error":"Multiple Host headers"}');
      return;
    }
    await listener(req, res);
  };
}

export interface LoopbackListener {
  port: number;
  close(): Promise<void>;
}

/** Serve `handler` on 127.0.0.1:`port` (0 picks one); rejects when the port cannot be bound. */
export function listenLoopback(
  handler: ConsoleHandler,
  port: number,
  logger: Logger,
): Promise<LoopbackListener> {
  const server: Server = createServer((req, res) => {
    handler(req, res).catch((err: unknown) => {
      logger.error({ err: String(err) }, "console request failed");
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: "127.0.0.1", port }, () => {
      server.off("error", reject);
      server.on("error", (err) => logger.error({ err: String(err) }, "console listener error"));
      const address = server.address();
      resolve({
        port: typeof address === "object" && address ? address.port : port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
