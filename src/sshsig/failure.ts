/**
 * Why a signature was refused, as a stable token for the caller's audit
 * record; the verdict's `reason` says it in words for the human.
 */
export type SshsigFailure =
  | "bad-armor" // not an armored SSH signature, or not base64 inside
  | "too-large"
  | "malformed" // the decoded structure does not parse (truncated, trailing bytes, bad field)
  | "unsupported-version"
  | "unsupported-type" // a key or signature algorithm this verifier does not accept
  | "unsupported-hash"
  | "wrong-namespace"
  | "unknown-key"
  | "principal-not-allowed"
  | "namespace-not-allowed"
  | "not-yet-valid"
  | "expired"
  | "bad-signature"
  | "no-user-presence"
  | "bad-policy"; // the caller's policy is unusable (its time is not a number)

/** Thrown inside the module only; the verifiers turn it into a failed verdict. */
export class SshsigError extends Error {
  override readonly name = "SshsigError";

  constructor(
    readonly code: SshsigFailure,
    message: string,
  ) {
    super(message);
  }
}
