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
 * One request to the INFRA-1 broker: connect to its Unix socket, write one
 * request line, read one response line, close (docs/tools.md#infra-tools).
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
    let connected = false;
    let settled = false;
    const chunks: Buffer[] = [];
    let held = 0;
    let timer: NodeJS.Timeout | undefined;
    const socket: Socket = createConnection({ path: socketPath });

    const finish = (outcome: { value: InfraExchange } | { error: RelayError }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      // Stop reading now; the close itself waits until the caller has had the answer, so the
      // system call (and waking the broker to see it) is not on the path of every result.
      socket.pause();
      setImmediate(() => socket.destroy());
      if ("value" in outcome) resolve(outcome.value);
      else reject(outcome.error);
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

    socket.once("connect", () => {
      connected = true;
      socket.write(line);
    });
    socket.on("data", (chunk: Buffer) => {
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
      finish({ value: { kind: "answered", response } });
    });
    socket.once("end", () => {
      finish({
        error: failure(
          "InfraProtocolError",
          "INFRA_NO_RESPONSE",
          `${where} closed the connection without a complete answer; the request had been sent`,
        ),
      });
    });
    socket.once("error", (err: NodeJS.ErrnoException) => {
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
    });
  });
}
