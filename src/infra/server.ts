import { createServer, type Server, type Socket } from "node:net";
import type { Logger } from "../core/index.js";
import {
  type InfraResponse,
  MAX_FRAME_BYTES,
  OUTCOME_CODES,
  outcomeClass,
  PROTOCOL_VERSION,
} from "../infra-protocol/index.js";
import type { Admission } from "./admission.js";
import type { Dispatcher } from "./dispatch.js";
import { createFrameReader, type Frame } from "./frames.js";
import type { ReceiptFacts, Receipts } from "./receipts.js";
import { createRefusalSummaries, isSummarised } from "./refusal-summaries.js";
import { boundedMessage, type Reading, readFrame } from "./request-read.js";
import type { OpResult, Principal } from "./types.js";

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

/**
 * What an operation answered, if it is a result the protocol can carry: a
 * known code, a sentence, data that serialises. Anything else is the
 * broker's own fault and is answered as INTERNAL_ERROR, so the caller still
 * gets a valid line and the receipt is still written.
 */
function checkedResult(result: OpResult, logger: Logger): OpResult {
  const problem = !Object.hasOwn(OUTCOME_CODES, result.code)
    ? `unknown outcome code ${JSON.stringify(String(result.code))}`
    : typeof result.message !== "string"
      ? "a message that is not text"
      : null;
  let serialisable = true;
  try {
    JSON.stringify(result.data ?? null);
  } catch {
    serialisable = false;
  }
  if (problem === null && serialisable) return result;
  logger.error(
    { problem: problem ?? "data that does not serialise" },
    "an operation answered outside the protocol",
  );
  return {
    code: "INTERNAL_ERROR",
    message: "the broker produced an answer it cannot send; its log has the detail",
  };
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
  const { dispatcher, receipts, logger } = deps;
  const sockets = new Set<Socket>();
  /** Connections with an answer in progress: on close they get it before they are ended. */
  const inFlight = new Set<Socket>();
  const answering = new Set<Promise<unknown>>();
  const summaries = createRefusalSummaries({ receipts, logger, windowMs: deps.summaryWindowMs });
  let closing = false;

  /** Every answer is tracked, so closing waits for its receipt to be written and its line sent. */
  function track<T>(work: Promise<T>): Promise<T> {
    answering.add(work);
    const forget = (): void => void answering.delete(work);
    work.then(forget, forget);
    return work;
  }

  async function resultOf(principal: Principal | null, reading: Reading): Promise<OpResult> {
    if (reading.refusal !== null) return reading.refusal;
    if (principal === null || reading.request === null) {
      return { code: "PRINCIPAL_NOT_ALLOWED", message: "the kernel did not say who is connecting" };
    }
    return checkedResult(await dispatcher.dispatch(principal, reading.request), logger);
  }

  /** The answer to one frame, and whether it caused a receipt of its own. */
  async function answer(
    principal: Principal | null,
    known: boolean,
    reading: Reading,
  ): Promise<{ response: InfraResponse; receipt: boolean }> {
    const request = reading.request;
    const result = await resultOf(principal, reading);
    const uid = principal?.uid ?? -1;
    const summarised =
      principal !== null && isSummarised(result.code, known) && !deps.admission.ownRefusalReceipt(uid);
    if (!summarised) summaries.flush(uid);
    const receiptId = summarised ? summaries.receiptId(uid) : receipts.newId();
    const response: InfraResponse = {
      v: PROTOCOL_VERSION,
      receipt_id: receiptId,
      op: request?.op ?? null,
      profile: request?.profile ?? null,
      run_id: request?.run_id ?? null,
      outcome: outcomeClass(result.code),
      code: result.code,
      message: boundedMessage(result.message),
      ...(result.data !== undefined ? { data: result.data } : {}),
      ...(result.replayed !== undefined ? { replayed: result.replayed } : {}),
    };
    const facts: ReceiptFacts = {
      receiptId,
      op: request?.op ?? null,
      profile: response.profile,
      runId: response.run_id,
      idempotencyKey: request?.idempotency_key ?? null,
      requestId: request?.request_id ?? null,
      principal,
      outcome: response.outcome,
      code: response.code,
      claimedIdentity: reading.claims,
      approvalPresent: request?.approval !== undefined,
      approval: result.approval ?? null,
      response,
    };
    if (!summarised) {
      summaries.record(facts);
      return { response, receipt: true };
    }
    summaries.add(uid, facts);
    return { response, receipt: false };
  }

  function serve(socket: Socket, principal: Principal | null): void {
    const reader = createFrameReader(MAX_FRAME_BYTES);
    const queue: Frame[] = [];
    const known = principal !== null && deps.isKnown(principal);
    let busy = false;
    let ended = false;
    let receiptsHere = 0;
    let idle: NodeJS.Timeout | null = null;

    const disarm = (): void => {
      if (idle !== null) clearTimeout(idle);
      idle = null;
    };
    // Counted from the last answer, not from the last byte: a request trickled in slowly
    // still has to be whole within the bound.
    const arm = (): void => {
      disarm();
      idle = setTimeout(() => socket.destroy(), deps.idleMs);
      idle.unref();
    };

    const send = (line: string): Promise<void> =>
      new Promise((resolve) => {
        if (socket.destroyed || socket.writableEnded) return resolve();
        if (socket.write(line)) return resolve();
        // A peer that stops reading its answers does not keep the connection forever.
        const stalled = setTimeout(() => socket.destroy(), deps.idleMs);
        const done = (): void => {
          clearTimeout(stalled);
          socket.off("drain", done);
          socket.off("close", done);
          resolve();
        };
        socket.on("drain", done);
        socket.on("close", done);
      });

    /** Wait for the caller's budget; nothing more is read from the connection meanwhile. */
    const budget = (ms: number): Promise<void> =>
      new Promise((resolve) => {
        const timer = setTimeout(done, ms);
        function done(): void {
          clearTimeout(timer);
          socket.off("close", done);
          resolve();
        }
        socket.on("close", done);
      });

    async function answerAndSend(frame: Frame): Promise<void> {
      const { response, receipt } = await answer(principal, known, readFrame(frame));
      if (receipt) receiptsHere += 1;
      await send(`${JSON.stringify(response)}\n`);
    }

    async function pump(): Promise<void> {
      if (busy) return;
      busy = true;
      disarm();
      socket.pause();
      try {
        while (queue.length > 0 && !socket.destroyed && !closing) {
          const wait = deps.admission.frame(principal?.uid ?? -1, known);
          if (wait > 0) {
            await budget(wait);
            continue;
          }
          const frame = queue.shift() as Frame;
          inFlight.add(socket);
          try {
            await track(answerAndSend(frame));
          } finally {
            inFlight.delete(socket);
          }
          if (receiptsHere >= deps.maxReceiptsPerConnection) {
            logger.warn({ uid: principal?.uid }, "a connection reached its bound of receipts and was ended");
            queue.length = 0;
            ended = true;
          }
        }
      } catch (err) {
        logger.error({ err: String(err) }, "a connection failed");
        socket.destroy();
      } finally {
        busy = false;
      }
      if (socket.destroyed) return;
      if (ended || closing) {
        socket.end();
        return;
      }
      socket.resume();
      arm();
    }

    socket.on("error", () => undefined);
    socket.on("close", disarm);

    if (principal === null) {
      // Nothing from this peer is read: one typed refusal, then the connection ends.
      logger.warn({}, "a connection whose peer credentials cannot be read was refused");
      busy = true;
      track(answer(null, false, { request: null, claims: null, refusal: null }))
        .then(({ response }) => send(`${JSON.stringify(response)}\n`))
        .catch((err: unknown) => logger.error({ err: String(err) }, "a connection failed"))
        .finally(() => socket.end(() => socket.destroy()));
      return;
    }

    socket.on("data", (chunk: Buffer) => {
      queue.push(...reader.push(chunk));
      if (queue.length > 0) void pump();
    });
    socket.on("end", () => {
      ended = true;
      queue.push(...reader.end());
      if (queue.length > 0) void pump();
      else if (!busy) socket.end();
    });
    arm();
    socket.resume();
  }

  const perUid = new Map<number, number>();

  const server: Server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (socket) => {
    socket.on("error", () => undefined);
    if (closing || sockets.size >= deps.maxConnections) {
      logger.warn({ connections: sockets.size }, "connection refused: the broker is at its connection limit");
      socket.destroy();
      return;
    }
    // Read before any byte of the connection is: who connected is what the kernel recorded then.
    const principal = deps.identify(socket);
    const uid = principal?.uid ?? -1;
    const held = perUid.get(uid) ?? 0;
    if (held >= deps.maxPerUid) {
      logger.warn({ uid, connections: held }, "connection refused: this uid is at its connection limit");
      socket.destroy();
      return;
    }
    perUid.set(uid, held + 1);
    sockets.add(socket);
    socket.on("close", () => {
      sockets.delete(socket);
      const left = (perUid.get(uid) ?? 1) - 1;
      if (left > 0) perUid.set(uid, left);
      else perUid.delete(uid);
    });
    serve(socket, principal);
  });

  return {
    listen: (path) =>
      new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen({ path, exclusive: true }, () => {
          server.off("error", reject);
          server.on("error", (err) => logger.error({ err: String(err) }, "the socket server failed"));
          resolve();
        });
      }),
    async close() {
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // A connection waiting for an answer gets it (its pump ends the connection after sending);
      // the others have nothing owed and are closed now.
      for (const socket of sockets) if (!inFlight.has(socket)) socket.destroy();
      while (answering.size > 0) await Promise.allSettled([...answering]);
      // An answer just written may still sit in the socket's own buffer: let it reach the kernel first.
      await Promise.all([...sockets].map((socket) => flushed(socket, deps.idleMs)));
      summaries.flushAll();
      await closed;
    },
  };
}
