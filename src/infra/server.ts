import { createServer, type Server, type Socket } from "node:net";
import type { Logger } from "../core/index.js";
import type { Admission } from "./admission.js";
import type { Dispatcher } from "./dispatch.js";
import type { Receipts } from "./receipts.js";
import { createRefusalSummaries } from "./refusal-summaries.js";
import { answerFrame } from "./server-answer.js";
import { type Serving, serve } from "./server-connection.js";
import type { Principal } from "./types.js";

interface InfraServerDeps {
  dispatcher: Dispatcher;
  receipts: Receipts;
  logger: Logger;
  /** The principal of a new connection, before any byte is read; null when the kernel would not say. */
  identify(socket: Socket): Principal | null;
  /** Connections served at once; more are closed as they arrive. */
  maxConnections: number;
  /** Connections one uid may hold at once, so one local account cannot take every slot. */
  maxPerUid: number;
  /**
   * A connection with no request in progress is closed after this long
   * without a whole request; one that does not read its answers, after this
   * long without taking them.
   */
  idleMs: number;
  /** What a caller may cost: frames per second per uid, and which refusals get a receipt of their own. */
  admission: Admission;
  /** Whether some profile lists this principal; the others are strangers, served from a smaller budget. */
  isKnown(principal: Principal): boolean;
  /** Receipts one connection may cause; after that many its connection is ended once the answer is sent. */
  maxReceiptsPerConnection: number;
  /** A summary receipt is written at most this long after the first refusal it covers. */
  summaryWindowMs: number;
}

export interface InfraServer {
  /** Listen on the Unix socket at `path` (the caller cleared the way and sets its mode). */
  listen(path: string): Promise<void>;
  /** Stop accepting, close every connection, and wait for the requests in progress to finish. */
  close(): Promise<void>;
}

/** Resolve once what was written to `socket` reached the kernel (or `ms` passed), and destroy it. */
function flushed(socket: Socket, ms: number): Promise<void> {
  if (socket.destroyed) return Promise.resolve();
  if (!socket.writableEnded || socket.writableFinished) {
    socket.destroy();
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    };
    const timer = setTimeout(done, ms);
    socket.once("finish", done);
    socket.once("close", done);
  });
}

/**
 * The broker's socket server. Requests on one connection are answered one
 * at a time, in order, no faster than the caller's budget allows; each gets
 * its receipt written before its response is sent, except a refusal past
 * the caller's budget of receipts, which is counted into its uid's summary
 * receipt, written within `summaryWindowMs` (ADR 0036). No byte is read
 * from a connection before its principal is known.
 */
export function createInfraServer(deps: InfraServerDeps): InfraServer {
  const { dispatcher, receipts, logger, admission } = deps;
  const sockets = new Set<Socket>();
  const summaries = createRefusalSummaries({ receipts, logger, windowMs: deps.summaryWindowMs });
  const answering = { dispatcher, receipts, logger, admission, summaries };
  const serving: Serving = {
    logger,
    admission,
    isKnown: deps.isKnown,
    idleMs: deps.idleMs,
    maxReceiptsPerConnection: deps.maxReceiptsPerConnection,
    inFlight: new Set(),
    answering: new Set(),
    closing: false,
    answer: (principal, known, reading) => answerFrame(answering, principal, known, reading),
  };
  const perUid = new Map<number, number>();
  const server: Server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (socket) => {
    socket.on("error", () => undefined);
    if (serving.closing || sockets.size >= deps.maxConnections) {
      logger.warn({ connections: sockets.size }, "connection refused: the broker is at its connection limit");
      socket.destroy();
      return;
    }
    // Read before any byte of the connection is: who connected is what the kernel recorded then.
    const principal = deps.identify(socket);
    if (!holdSlot(perUid, principal?.uid ?? -1, socket, deps)) return;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    serve(serving, socket, principal);
  });
  return {
    listen: (path) => listen(server, path, logger),
    close: () => closeServer(server, serving, sockets, () => summaries.flushAll(), deps.idleMs),
  };
}

/**
 * Counts the connection against its uid, refusing it when the uid holds its bound already; the
 * slot is given back when the connection closes.
 */
function holdSlot(
  perUid: Map<number, number>,
  uid: number,
  socket: Socket,
  deps: Pick<InfraServerDeps, "maxPerUid" | "logger">,
): boolean {
  const held = perUid.get(uid) ?? 0;
  if (held >= deps.maxPerUid) {
    deps.logger.warn({ uid, connections: held }, "connection refused: this uid is at its connection limit");
    socket.destroy();
    return false;
  }
  perUid.set(uid, held + 1);
  socket.on("close", () => {
    const left = (perUid.get(uid) ?? 1) - 1;
    if (left > 0) perUid.set(uid, left);
    else perUid.delete(uid);
  });
  return true;
}

function listen(server: Server, path: string, logger: Logger): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ path, exclusive: true }, () => {
      server.off("error", reject);
      server.on("error", (err) => logger.error({ err: String(err) }, "the socket server failed"));
      resolve();
    });
  });
}

async function closeServer(
  server: Server,
  serving: Serving,
  sockets: Set<Socket>,
  flushSummaries: () => void,
  idleMs: number,
): Promise<void> {
  serving.closing = true;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // A connection waiting for an answer gets it (its pump ends the connection after sending);
  // the others have nothing owed and are closed now.
  for (const socket of sockets) if (!serving.inFlight.has(socket)) socket.destroy();
  while (serving.answering.size > 0) await Promise.allSettled([...serving.answering]);
  // An answer just written may still sit in the socket's own buffer: let it reach the kernel first.
  await Promise.all([...sockets].map((socket) => flushed(socket, idleMs)));
  flushSummaries();
  await closed;
}
