import { createConnection, type Socket } from "node:net";
import { fail, ok, type RelayError, type Result } from "../core/index.js";
import { failure, frameRequest, readAnswer } from "./client-lines.js";
import type { InfraRequest, InfraResponse } from "./protocol.js";

/**
 * The most a response line may hold. The broker's answers are a sentence and
 * bounded facts (manifest counts, a bounded list of differences); anything
 * longer is not an answer this client reads.
 */
const MAX_RESPONSE_BYTES = 1024 * 1024;

/**
 * Why the broker could not be reached at all: no socket at the path (ENOENT,
 * ENOTDIR), nothing listening on it (ECONNREFUSED), or this process may not
 * connect to it (EACCES, EPERM). Nothing was sent, so nothing ran.
 */
export type UnreachableReason = "ENOENT" | "ENOTDIR" | "ECONNREFUSED" | "EACCES" | "EPERM";

const UNREACHABLE: ReadonlySet<string> = new Set<UnreachableReason>([
  "ENOENT",
  "ENOTDIR",
  "ECONNREFUSED",
  "EACCES",
  "EPERM",
]);

/** Connections kept open per socket path between requests. */
const IDLE_PER_PATH = 2;
/**
 * A kept connection unused this long is closed instead of reused: the broker
 * drops a peer idle for 30 s, and a request written as it does so would be
 * lost in between.
 */
const IDLE_REUSE_MS = 10_000;

interface IdleConnection {
  socket: Socket;
  release(): void;
}

/**
 * Connections that answered cleanly, kept for the next request to the same
 * path: a connection carries one principal (this process) and the broker
 * answers its requests in order, so reusing it changes nothing the broker
 * decides, and saves the connect, the kernel's credential lookup and the
 * broker's reading of our groups on every call. Idle ones hold no reference
 * on the event loop.
 */
const idle = new Map<string, IdleConnection[]>();

function takeIdle(path: string): Socket | null {
  const list = idle.get(path);
  for (let entry = list?.pop(); entry !== undefined; entry = list?.pop()) {
    entry.release();
    if (!entry.socket.destroyed && entry.socket.readyState === "open") {
      entry.socket.ref();
      return entry.socket;
    }
    entry.socket.destroy();
  }
  return null;
}

function keepIdle(path: string, socket: Socket): void {
  const list = idle.get(path) ?? [];
  if (list.length >= IDLE_PER_PATH) {
    socket.destroy();
    return;
  }
  // Anything from the broker while nobody asked (its idle close, a stray line) ends the connection.
  const drop = () => {
    const at = list.indexOf(entry);
    if (at !== -1) list.splice(at, 1);
    entry.release();
    socket.destroy();
  };
  const timer = setTimeout(drop, IDLE_REUSE_MS);
  timer.unref();
  const entry: IdleConnection = {
    socket,
    release() {
      clearTimeout(timer);
      socket.off("data", drop);
      socket.off("end", drop);
      socket.off("error", drop);
      socket.off("close", drop);
    },
  };
  socket.on("data", drop);
  socket.on("end", drop);
  socket.on("error", drop);
  socket.on("close", drop);
  socket.unref();
  list.push(entry);
  idle.set(path, list);
}

export type InfraExchange =
  | { kind: "answered"; response: InfraResponse }
  | { kind: "unreachable"; reason: UnreachableReason; socketPath: string };

export interface InfraRequestOptions {
  socketPath: string;
  /** How long to wait from connecting to the end of the answer line. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Test seam; {@link MAX_RESPONSE_BYTES} by default. */
  maxResponseBytes?: number;
}

/**
 * One request to the INFRA-1 broker: write one request line on its Unix
 * socket, read one response line (docs/tools.md#infra-tools). The connection
 * is one kept from an earlier request when there is one, else a new one; it
 * is kept afterwards only when the answer ended it cleanly. A request other
 * than `replicate` that finds its kept connection closed before any answer
 * byte is sent again on a new one; a `replicate` never is (its idempotency
 * key makes sending it again the caller's safe choice, not ours).
 *
 * A broker that cannot be reached is an answer, not an error: the caller
 * turns it into `blocked: MISSING_EXECUTION_CAPABILITY`. Everything else that
 * keeps a valid answer from arriving throws a `RelayError` with an
 * InfraClientErrorCode (client-lines.ts): no answer in time (`TimeoutError`), the call
 * was cancelled, the connection closed or failed before a full line, or the
 * line is too long or not a response of this protocol (`InfraProtocolError`).
 * The request is checked against the protocol's own schema before it is
 * sent, so a request the broker would refuse as malformed never leaves here.
 */
export function requestInfra(request: InfraRequest, options: InfraRequestOptions): Promise<InfraExchange> {
  return exchange(request, options, true);
}

function exchange(
  request: InfraRequest,
  options: InfraRequestOptions,
  mayReuse: boolean,
): Promise<InfraExchange> {
  const framed = frameRequest(request);
  if (!framed.ok) return Promise.reject(framed.error);
  return new Promise<InfraExchange>((resolve, reject) => {
    if (options.signal?.aborted) {
      reject(failure("AbortError", "INFRA_ABORTED", "the call was cancelled before it reached the broker"));
      return;
    }
    const kept = mayReuse ? takeIdle(options.socketPath) : null;
    const x = newExchange({
      request,
      checked: framed.value.checked,
      line: framed.value.line,
      options,
      kept,
      resolve,
      reject,
    });
    const { socket, on } = x;
    options.signal?.addEventListener("abort", on.abort, { once: true });
    x.timer = setTimeout(() => finish(x, fail(timeoutError(x))), options.timeoutMs);
    socket.on("data", on.data);
    socket.once("end", on.end);
    socket.once("error", on.error);
    if (kept !== null) socket.write(x.line);
    else socket.once("connect", on.connect);
  });
}

/** One request on one connection, from the line written to the answer read (or the failure). */
interface Exchange {
  request: InfraRequest;
  /** The request as the schema read it: what the answer must echo. */
  checked: InfraRequest;
  line: string;
  options: InfraRequestOptions;
  where: string;
  maxBytes: number;
  /** The kept connection this exchange reuses; null on a new one. */
  kept: Socket | null;
  socket: Socket;
  connected: boolean;
  settled: boolean;
  chunks: Buffer[];
  /** Bytes of the answer line read so far. */
  held: number;
  timer: NodeJS.Timeout | undefined;
  resolve(value: InfraExchange): void;
  reject(err: unknown): void;
  /** The listeners, one function each, so they can be taken off again. */
  on: {
    connect(): void;
    data(chunk: Buffer): void;
    end(): void;
    error(err: NodeJS.ErrnoException): void;
    abort(): void;
  };
}

function newExchange(
  start: Pick<Exchange, "request" | "checked" | "line" | "options" | "kept" | "resolve" | "reject">,
): Exchange {
  const { options, kept } = start;
  const x: Exchange = {
    ...start,
    where: `the broker at ${options.socketPath}`,
    maxBytes: options.maxResponseBytes ?? MAX_RESPONSE_BYTES,
    socket: kept ?? createConnection({ path: options.socketPath }),
    connected: kept !== null,
    settled: false,
    chunks: [],
    held: 0,
    timer: undefined,
    on: {
      connect: () => {
        x.connected = true;
        x.socket.write(x.line);
      },
      data: (chunk) => onData(x, chunk),
      end: () => onEnd(x),
      error: (err) => onError(x, err),
      abort: () => finish(x, fail(abortError(x))),
    },
  };
  return x;
}

function detach(x: Exchange): void {
  x.socket.off("connect", x.on.connect);
  x.socket.off("data", x.on.data);
  x.socket.off("end", x.on.end);
  x.socket.off("error", x.on.error);
}

function finish(x: Exchange, outcome: Result<InfraExchange, RelayError>, reusable = false): void {
  if (x.settled) return;
  x.settled = true;
  clearTimeout(x.timer);
  x.options.signal?.removeEventListener("abort", x.on.abort);
  detach(x);
  const { socket } = x;
  if (reusable) {
    keepIdle(x.options.socketPath, socket);
  } else {
    // Stop reading now; the close itself waits until the caller has had the answer, so the
    // system call (and waking the broker to see it) is not on the path of every result.
    socket.pause();
    socket.on("error", () => undefined);
    setImmediate(() => socket.destroy());
  }
  if (outcome.ok) x.resolve(outcome.value);
  else x.reject(outcome.error);
}

/** A kept connection the broker had closed before it answered anything: ask again on a new one. */
function retryFresh(x: Exchange): boolean {
  if (x.kept === null || x.held > 0 || x.settled || x.request.op === "replicate") return false;
  x.settled = true;
  clearTimeout(x.timer);
  x.options.signal?.removeEventListener("abort", x.on.abort);
  detach(x);
  x.socket.on("error", () => undefined);
  x.socket.destroy();
  exchange(x.request, x.options, false).then(x.resolve, x.reject);
  return true;
}

function abortError(x: Exchange): RelayError {
  return failure(
    "AbortError",
    "INFRA_ABORTED",
    x.connected
      ? `the call was cancelled while waiting for ${x.where}; the request had been sent`
      : "the call was cancelled before it reached the broker",
  );
}

function timeoutError(x: Exchange): RelayError {
  const seconds = Math.round(x.options.timeoutMs / 100) / 10;
  return failure(
    "TimeoutError",
    "INFRA_TIMEOUT",
    x.connected
      ? `no answer from ${x.where} within ${seconds}s; the request had been sent`
      : `could not connect to ${x.where} within ${seconds}s`,
  );
}

function onData(x: Exchange, chunk: Buffer): void {
  const end = chunk.indexOf(0x0a);
  const take = end === -1 ? chunk : chunk.subarray(0, end);
  x.held += take.length;
  if (x.held > x.maxBytes) {
    finish(
      x,
      fail(
        failure(
          "InfraProtocolError",
          "INFRA_RESPONSE_TOO_LARGE",
          `${x.where} sent a response line over ${x.maxBytes} bytes`,
        ),
      ),
    );
    return;
  }
  x.chunks.push(take);
  if (end === -1) return;
  const answer = readAnswer(x.where, x.checked, Buffer.concat(x.chunks).toString("utf8"));
  if (!answer.ok) {
    finish(x, answer);
    return;
  }
  // Reusable only when the line ended this chunk: no stray bytes are left to misread later.
  finish(x, ok({ kind: "answered", response: answer.value }), end === chunk.length - 1);
}

function onEnd(x: Exchange): void {
  if (retryFresh(x)) return;
  finish(
    x,
    fail(
      failure(
        "InfraProtocolError",
        "INFRA_NO_RESPONSE",
        `${x.where} closed the connection without a complete answer; the request had been sent`,
      ),
    ),
  );
}

function onError(x: Exchange, err: NodeJS.ErrnoException): void {
  if (retryFresh(x)) return;
  const code = err.code ?? "";
  if (!x.connected && UNREACHABLE.has(code)) {
    finish(
      x,
      ok({ kind: "unreachable", reason: code as UnreachableReason, socketPath: x.options.socketPath }),
    );
    return;
  }
  const sent = x.connected ? "; the request had been sent" : "";
  finish(
    x,
    fail(
      failure(
        "InfraProtocolError",
        x.connected ? "INFRA_NO_RESPONSE" : "INFRA_SOCKET_ERROR",
        `connection to ${x.where} failed: ${code || err.message}${sent}`,
        err,
      ),
    ),
  );
}
