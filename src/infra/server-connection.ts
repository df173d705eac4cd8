import type { Socket } from "node:net";
import type { Logger } from "../core/index.js";
import { type InfraResponse, MAX_FRAME_BYTES } from "../infra-protocol/index.js";
import type { Admission } from "./admission.js";
import { createFrameReader, type Frame } from "./frames.js";
import { type Reading, readFrame } from "./request-read.js";
import type { Principal } from "./types.js";

/** What serving one connection shares with the broker's socket server (server.ts). */
export interface Serving {
  logger: Logger;
  admission: Admission;
  isKnown(principal: Principal): boolean;
  idleMs: number;
  maxReceiptsPerConnection: number;
  /** Connections with an answer in progress: on close they get it before they are ended. */
  inFlight: Set<Socket>;
  /** Every answer in progress, so closing waits for its receipt to be written and its line sent. */
  answering: Set<Promise<unknown>>;
  /** The server is closing: no further frame is answered. */
  closing: boolean;
  answer(
    principal: Principal | null,
    known: boolean,
    reading: Reading,
  ): Promise<{ response: InfraResponse; receipt: boolean }>;
}

/** One connection: its frames waiting, and where it stands. */
interface Connection {
  s: Serving;
  socket: Socket;
  principal: Principal | null;
  known: boolean;
  queue: Frame[];
  busy: boolean;
  ended: boolean;
  receiptsHere: number;
  idle: NodeJS.Timeout | null;
}

/** Every answer is tracked, so closing waits for its receipt to be written and its line sent. */
function track<T>(s: Serving, work: Promise<T>): Promise<T> {
  s.answering.add(work);
  const forget = (): void => void s.answering.delete(work);
  work.then(forget, forget);
  return work;
}

/**
 * Serves one connection whose principal is known (or known to be unknowable): its frames are
 * answered one at a time, in order, no faster than the caller's budget allows.
 */
export function serve(s: Serving, socket: Socket, principal: Principal | null): void {
  const reader = createFrameReader(MAX_FRAME_BYTES);
  const conn: Connection = {
    s,
    socket,
    principal,
    known: principal !== null && s.isKnown(principal),
    queue: [],
    busy: false,
    ended: false,
    receiptsHere: 0,
    idle: null,
  };
  socket.on("error", () => undefined);
  socket.on("close", () => disarm(conn));

  if (principal === null) {
    refuseUnidentified(conn);
    return;
  }

  socket.on("data", (chunk: Buffer) => {
    conn.queue.push(...reader.push(chunk));
    if (conn.queue.length > 0) void pump(conn);
  });
  socket.on("end", () => {
    conn.ended = true;
    conn.queue.push(...reader.end());
    if (conn.queue.length > 0) void pump(conn);
    else if (!conn.busy) socket.end();
  });
  arm(conn);
  socket.resume();
}

/** Nothing from this peer is read: one typed refusal, then the connection ends. */
function refuseUnidentified(conn: Connection): void {
  const { s, socket } = conn;
  s.logger.warn({}, "a connection whose peer credentials cannot be read was refused");
  conn.busy = true;
  track(s, s.answer(null, false, { request: null, claims: null, refusal: null }))
    .then(({ response }) => send(conn, `${JSON.stringify(response)}\n`))
    .catch((err: unknown) => s.logger.error({ err: String(err) }, "a connection failed"))
    .finally(() => socket.end(() => socket.destroy()));
}

function disarm(conn: Connection): void {
  if (conn.idle !== null) clearTimeout(conn.idle);
  conn.idle = null;
}

/**
 * Counted from the last answer, not from the last byte: a request trickled in slowly still has
 * to be whole within the bound.
 */
function arm(conn: Connection): void {
  disarm(conn);
  conn.idle = setTimeout(() => conn.socket.destroy(), conn.s.idleMs);
  conn.idle.unref();
}

function send(conn: Connection, line: string): Promise<void> {
  const { socket } = conn;
  return new Promise((resolve) => {
    if (socket.destroyed || socket.writableEnded) return resolve();
    if (socket.write(line)) return resolve();
    // A peer that stops reading its answers does not keep the connection forever.
    const stalled = setTimeout(() => socket.destroy(), conn.s.idleMs);
    const done = (): void => {
      clearTimeout(stalled);
      socket.off("drain", done);
      socket.off("close", done);
      resolve();
    };
    socket.on("drain", done);
    socket.on("close", done);
  });
}

/** Wait for the caller's budget; nothing more is read from the connection meanwhile. */
function budget(socket: Socket, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      socket.off("close", done);
      resolve();
    }
    socket.on("close", done);
  });
}

async function answerAndSend(conn: Connection, frame: Frame): Promise<void> {
  const { response, receipt } = await conn.s.answer(conn.principal, conn.known, readFrame(frame));
  if (receipt) conn.receiptsHere += 1;
  await send(conn, `${JSON.stringify(response)}\n`);
}

/** Answers the frames queued, reading nothing more meanwhile; then reads on, or ends the connection. */
async function pump(conn: Connection): Promise<void> {
  const { s, socket } = conn;
  if (conn.busy) return;
  conn.busy = true;
  disarm(conn);
  socket.pause();
  try {
    await answerQueued(conn);
  } catch (err) {
    s.logger.error({ err: String(err) }, "a connection failed");
    socket.destroy();
  } finally {
    conn.busy = false;
  }
  if (socket.destroyed) return;
  if (conn.ended || s.closing) {
    socket.end();
    return;
  }
  socket.resume();
  arm(conn);
}

async function answerQueued(conn: Connection): Promise<void> {
  const { s, socket, queue } = conn;
  while (queue.length > 0 && !socket.destroyed && !s.closing) {
    const wait = s.admission.frame(conn.principal?.uid ?? -1, conn.known);
    if (wait > 0) {
      await budget(socket, wait);
      continue;
    }
    const frame = queue.shift() as Frame;
    s.inFlight.add(socket);
    try {
      await track(s, answerAndSend(conn, frame));
    } finally {
      s.inFlight.delete(socket);
    }
    if (conn.receiptsHere >= s.maxReceiptsPerConnection) {
      s.logger.warn({ uid: conn.principal?.uid }, "a connection reached its bound of receipts and was ended");
      queue.length = 0;
      conn.ended = true;
    }
  }
}
