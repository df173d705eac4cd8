/**
 * A typed, expected failure. `type` is the token shown to the caller in
 * `[ERROR: <type>: <message>]` (docs/wire-contract.md §1.2); `code` is stable for tests.
 * A failure the contract shows without a type token, `[ERROR: <message>]`, is made
 * with {@link RelayError.untyped}.
 */
export class RelayError extends Error {
  /** The type token; empty only for an untyped error (see {@link RelayError.untyped}). */
  readonly type: string;
  readonly code: string;

  /**
   * `type` names the failure; an empty `type` is the untyped form, kept so an
   * error rebuilt from its parts (across the launcher's pipe) stays what it was.
   */
  constructor(type: string, message: string, options?: { code?: string; cause?: unknown }) {
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

/** The type token and message of any thrown value, for the error grammar. */
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
