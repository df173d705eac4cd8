import { type ErrorType, fail, ok, RelayError, type Result } from "../core/index.js";
import {
  type InfraRequest,
  type InfraResponse,
  MAX_FRAME_BYTES,
  PROTOCOL_VERSION,
  parseResponse,
  requestSchema,
} from "./protocol.js";

/**
 * The lines of one exchange with the INFRA-1 broker (client.ts), read and written without the
 * socket: the request checked and framed, the answer parsed and matched to the request, and the
 * typed failures a client throws.
 */

/** Stable codes of the failures requestInfra (client.ts) throws, as `RelayError.code`. */
type InfraClientErrorCode =
  | "INFRA_TIMEOUT"
  | "INFRA_ABORTED"
  | "INFRA_NO_RESPONSE"
  | "INFRA_RESPONSE_TOO_LARGE"
  | "INFRA_BAD_RESPONSE"
  | "INFRA_BAD_REQUEST"
  | "INFRA_SOCKET_ERROR";

export function failure(
  type: ErrorType,
  code: InfraClientErrorCode,
  message: string,
  cause?: unknown,
): RelayError {
  return new RelayError(type, message, cause === undefined ? { code } : { code, cause });
}

/** The request checked against the protocol's schema and framed as its line, or why it cannot be sent. */
export function frameRequest(
  request: InfraRequest,
): Result<{ checked: InfraRequest; line: string }, RelayError> {
  const checked = requestSchema.safeParse(request);
  if (!checked.success) {
    const fields = checked.error.issues.map((i) => i.path.join(".") || "request").join(", ");
    return fail(failure("InfraProtocolError", "INFRA_BAD_REQUEST", `not a valid broker request (${fields})`));
  }
  const line = `${JSON.stringify({ v: PROTOCOL_VERSION, ...checked.data })}\n`;
  if (Buffer.byteLength(line) > MAX_FRAME_BYTES) {
    return fail(failure("InfraProtocolError", "INFRA_BAD_REQUEST", `request over ${MAX_FRAME_BYTES} bytes`));
  }
  return ok({ checked: checked.data, line });
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

/** The answer line as a response of this protocol to this request, or why it is not one. */
export function readAnswer(
  where: string,
  request: InfraRequest,
  text: string,
): Result<InfraResponse, RelayError> {
  const response = parseResponse(text);
  if (response === null) {
    return fail(
      failure(
        "InfraProtocolError",
        "INFRA_BAD_RESPONSE",
        `${where} answered with a line that is not a response of protocol version ${PROTOCOL_VERSION}`,
      ),
    );
  }
  const mismatch = echoMismatch(request, response);
  if (mismatch !== null) {
    return fail(failure("InfraProtocolError", "INFRA_BAD_RESPONSE", `${where} answered ${mismatch}`));
  }
  return ok(response);
}
