import { createConnection, type Socket } from "node:net";
import { RelayError } from "../core/index.js";
import {
  type InfraRequest,
  type InfraResponse,
  MAX_FRAME_BYTES,
  PROTOCOL_VERSION,
  parseResponse,
  requestSchema,
} from "./protocol.js";

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

/** Stable codes of the failures {@link requestInfra} throws, as `RelayError.code`. */
type InfraClientErrorCode =
  | "INFRA_TIMEOUT"
  | "INFRA_ABORTED"
  | "INFRA_NO_RESPONSE"
  | "INFRA_RESPONSE_TOO_LARGE"
  | "INFRA_BAD_RESPONSE"
  | "INFRA_BAD_REQUEST"
  | "INFRA_SOCKET_ERROR";

export interface InfraRequestOptions {
  socketPath: string;
  /** How long to wait from connecting to the end of the answer line. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Test seam; {@link MAX_RESPONSE_BYTES} by default. */
  maxResponseBytes?: number;
}

function failure(type: string, code: InfraClientErrorCode, message: string, cause?: unknown): RelayError {
  return new RelayError(type, message, cause === undefined ? { code } : { code, cause });
}

/**
 * A response names the request it answers (null where the broker could not
 * read it): an answer about another operation, profile or run is not this
 * request's answer.
 */
function echoMismatch(request: InfraRequest, response: InfraResponse): string | null {
  const pairs = [
    ["operation", request.op, response.op],
    ["profile", request.profile ?? null, response.profile],
    ["run id", request.run_id ?? null, response.run_id],
  ] as const;
  for (const [what, asked, echoed] of pairs) {
    if (echoed !== null && echoed !== asked) {
      return `about ${what} ${JSON.stringify(echoed)} to a request for ${JSON.stringify(asked)}`;
    }
  }
  return null;
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
 * {@link InfraClientErrorCode}: no answer in time (`TimeoutError`), the call
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
  const checked = requestSchema.safeParse(request);
  if (!checked.success) {
    const fields = checked.error.issues.map((i) => i.path.join(".") || "request").join(", ");
    return Promise.reject(
      failure("InfraProtocolError", "INFRA_BAD_REQUEST", `not a valid broker request (${fields})`),
    );
  }
  const line = `${JSON.stringify({ v: PROTOCOL_VERSION, ...checked.data })}\n`;
  if (Buffer.byteLength(line) > MAX_FRAME_BYTES) {
    return Promise.reject(
      failure("InfraProtocolError", "INFRA_BAD_REQUEST", `request over ${MAX_FRAME_BYTES} bytes`),
    );
  }
  const { socketPath, timeoutMs, signal } = options;
  const maxBytes = options.maxResponseBytes ?? MAX_RESPONSE_BYTES;
  const where = `the broker at ${socketPath}`;

  return new Promise<InfraExchange>((resolve, reject) => {
    if (signal?.aborted) {
      reject(failure("AbortError", "INFRA_ABORTED", "the call was cancelled before it reached the broker"));
      return;
    }
    const kept = mayReuse ? takeIdle(socketPath) : null;
    let connected = kept !== null;
    let settled = false;
    const chunks: Buffer[] = [];
    let held = 0;
    let timer: NodeJS.Timeout | undefined;
    const socket: Socket = kept ?? createConnection({ path: socketPath });

    const detach = () => {
      socket.off("connect", onConnect);
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.off("error", onError);
    };
    const finish = (outcome: { value: InfraExchange } | { error: RelayError }, reusable = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      detach();
      if (reusable) {
        keepIdle(socketPath, socket);
      } else {
        // Stop reading now; the close itself waits until the caller has had the answer, so the
        // system call (and waking the broker to see it) is not on the path of every result.
        socket.pause();
        socket.on("error", () => undefined);
        setImmediate(() => socket.destroy());
      }
      if ("value" in outcome) resolve(outcome.value);
      else reject(outcome.error);
    };
    /** A kept connection the broker had closed before it answered anything: ask again on a new one. */
    const retryFresh = (): boolean => {
      if (kept === null || held > 0 || settled || request.op === "replicate") return false;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      detach();
      socket.on("error", () => undefined);
      socket.destroy();
      exchange(request, options, false).then(resolve, reject);
      return true;
    };
    const onAbort = () =>
      finish({
        error: failure(
          "AbortError",
          "INFRA_ABORTED",
          connected
            ? `the call was cancelled while waiting for ${where}; the request had been sent`
            : "the call was cancelled before it reached the broker",
        ),
      });
    signal?.addEventListener("abort", onAbort, { once: true });
    timer = setTimeout(() => {
      const seconds = Math.round(timeoutMs / 100) / 10;
      finish({
        error: failure(
          "TimeoutError",
          "INFRA_TIMEOUT",
          connected
            ? `no answer from ${where} within ${seconds}s; the request had been sent`
            : `could not connect to ${where} within ${seconds}s`,
        ),
      });
    }, timeoutMs);

    const onConnect = () => {
      connected = true;
      socket.write(line);
    };
    const onData = (chunk: Buffer) => {
      const end = chunk.indexOf(0x0a);
      const take = end === -1 ? chunk : chunk.subarray(0, end);
      held += take.length;
      if (held > maxBytes) {
        finish({
          error: failure(
            "InfraProtocolError",
            "INFRA_RESPONSE_TOO_LARGE",
            `${where} sent a response line over ${maxBytes} bytes`,
          ),
        });
        return;
      }
      chunks.push(take);
      if (end === -1) return;
      const text = Buffer.concat(chunks).toString("utf8");
      const response = parseResponse(text);
      if (response === null) {
        finish({
          error: failure(
            "InfraProtocolError",
            "INFRA_BAD_RESPONSE",
            `${where} answered with a line that is not a response of protocol version ${PROTOCOL_VERSION}`,
          ),
        });
        return;
      }
      const mismatch = echoMismatch(checked.data, response);
      if (mismatch !== null) {
        finish({
          error: failure("InfraProtocolError", "INFRA_BAD_RESPONSE", `${where} answered ${mismatch}`),
        });
        return;
      }
      // Reusable only when the line ended this chunk: no stray bytes are left to misread later.
      finish({ value: { kind: "answered", response } }, end === chunk.length - 1);
    };
    const onEnd = () => {
      if (retryFresh()) return;
      finish({
        error: failure(
          "InfraProtocolError",
          "INFRA_NO_RESPONSE",
          `${where} closed the connection without a complete answer; the request had been sent`,
        ),
      });
    };
    const onError = (err: NodeJS.ErrnoException) => {
      if (retryFresh()) return;
      const code = err.code ?? "";
      if (!connected && UNREACHABLE.has(code)) {
        finish({ value: { kind: "unreachable", reason: code as UnreachableReason, socketPath } });
        return;
      }
      const sent = connected ? "; the request had been sent" : "";
      finish({
        error: failure(
          "InfraProtocolError",
          connected ? "INFRA_NO_RESPONSE" : "INFRA_SOCKET_ERROR",
          `connection to ${where} failed: ${code || err.message}${sent}`,
          err,
        ),
      });
    };
    socket.on("data", onData);
    socket.once("end", onEnd);
    socket.once("error", onError);
    if (kept !== null) socket.write(line);
    else socket.once("connect", onConnect);
  });
}
