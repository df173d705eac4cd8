/**
 * A typed, expected failure. `type` is the token shown to the caller in
 * `[ERROR: <type>: <message>]` (docs/wire-contract.md §1.2); `code` is stable for tests.
 */
export class RelayError extends Error {
  readonly type: string;
  readonly code: string;

  constructor(type: string, message: string, options?: { code?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "RelayError";
    this.type = type;
    this.code = options?.code ?? type;
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
