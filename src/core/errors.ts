/**
 * The type tokens the relay writes into `[ERROR: <type>: <message>]` (docs/wire-contract.md §1.2,
 * ADR 0040): the error grammar, one closed list. Python's class names where the contract keeps
 * them (the errno family, `ValueError`, `TimeoutError`, `SessionError`, `ForwardError`), the SSH
 * layer's names for what ssh2 reports (see translateDialError in ssh/errors.ts), and the INFRA
 * client's own. `""` is the untyped form, `[ERROR: <message>]` (see {@link RelayError.untyped}).
 * A foreign error (one the relay did not build) keeps its own name; {@link describeError} reads it.
 */
export const ERROR_TYPES = [
  "",
  // Operating-system failures, as Python names their errno values.
  "OSError",
  "FileNotFoundError",
  "FileExistsError",
  "PermissionError",
  "NotADirectoryError",
  "IsADirectoryError",
  "TimeoutError",
  "ConnectionError",
  "ConnectionRefusedError",
  "ConnectionResetError",
  // The caller's input, and the relay's own state.
  "ValueError",
  "RuntimeError",
  "CancelledError",
  "AbortError",
  "ConfigError",
  "InventoryError",
  "TransferLimitError",
  // Terminals, forwards and SSH.
  "SessionError",
  "ForwardError",
  "FanoutError",
  // A host of a fan-out its own policy refused, or holds for a confirmation or consent (docs/policy.md).
  "PolicyDenied",
  "PolicyHeld",
  "HostNotFoundError",
  "HostKeyNotVerifiable",
  "PermissionDenied",
  "ProtocolError",
  "ChannelError",
  "ChannelOpenError",
  "ChannelListenError",
  "SFTPError",
  // The INFRA-1 broker's client.
  "InfraProtocolError",
] as const;

/** A token of the error grammar (docs/wire-contract.md §1.2); "" only for an untyped error. */
export type ErrorType = (typeof ERROR_TYPES)[number];

const KNOWN: ReadonlySet<string> = new Set(ERROR_TYPES);

/** True when `text` is a token of the closed list: how a decoder checks a token that crossed a pipe. */
export function isErrorType(text: string): text is ErrorType {
  return KNOWN.has(text);
}

/**
 * A typed, expected failure. `type` is the token shown to the caller in
 * `[ERROR: <type>: <message>]` (docs/wire-contract.md §1.2); `code` is stable for tests.
 * A failure the contract shows without a type token, `[ERROR: <message>]`, is made
 * with {@link RelayError.untyped}.
 */
export class RelayError extends Error {
  /** The type token; empty only for an untyped error (see {@link RelayError.untyped}). */
  readonly type: ErrorType;
  readonly code: string;

  /**
   * `type` names the failure; an empty `type` is the untyped form, kept so an
   * error rebuilt from its parts (across the launcher's pipe) stays what it was.
   */
  constructor(type: ErrorType, message: string, options?: { code?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "RelayError";
    this.type = type;
    this.code = options?.code ?? type;
  }

  /** A failure shown to the caller as `[ERROR: <message>]`, with no type token. */
  static untyped(message: string, options?: { code?: string; cause?: unknown }): RelayError {
    return new RelayError("", message, options);
  }

  /** True when the caller sees the message alone, without a type token. */
  get isUntyped(): boolean {
    return this.type === "";
  }
}

/** The type token and message of any thrown value, for the error grammar; a foreign error keeps its name. */
export function describeError(err: unknown): { type: string; message: string } {
  if (err instanceof RelayError) return { type: err.type, message: err.message.trim() || err.type };
  if (err instanceof Error) {
    const type = err.name || "Error";
    const errno = (err as NodeJS.ErrnoException).code;
    let message = err.message.trim();
    if (errno && !message.includes(errno)) message = `${errno}: ${message}`;
    return { type, message: message || type };
  }
  const text = String(err).trim();
  return { type: "Error", message: text || "Error" };
}
