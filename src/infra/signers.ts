import { describeError, fail, ok, type Result } from "../core/index.js";
import { readBoundedFile } from "../files/index.js";
import { parseAllowedSigners, verifySshsig } from "../sshsig/index.js";
import type { SignatureCheck } from "./approvals.js";
import { type TrustRule, trustedFileProblems } from "./file-trust.js";

/** An allowed-signers file larger than this is refused before it is read. */
const MAX_ALLOWED_SIGNERS_BYTES = 1024 * 1024;

/** The broker's own allowed signers, ready to verify with; or every problem that stops it. */
export type LoadedSigners = Result<{ count: number; verify: SignatureCheck }, string[]>;

/**
 * Read the operator's allowed-signers file (OpenSSH format) under the same
 * rules as the profiles: a regular file, not a link, owned by root or the
 * profile directory's owner, never by the daemon's own account, writable by
 * nobody else, in a directory nobody else may write. A broker that could
 * rewrite this file could approve its own acts. Every line must parse and at
 * least one signer must remain; anything less refuses the start.
 */
export function loadAllowedSigners(path: string, rule: TrustRule): LoadedSigners {
  const problems = trustedFileProblems(path, rule);
  if (problems.length > 0) return fail(problems);
  let text: string;
  try {
    const bytes = readBoundedFile(path, {
      maxBytes: MAX_ALLOWED_SIGNERS_BYTES,
      what: "allowed-signers file",
    });
    if (bytes === null) return fail([`${path} does not exist`]);
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (err) {
    const reason = err instanceof TypeError ? "it is not UTF-8 text" : describeError(err).message;
    return fail([`${path} cannot be read: ${reason}`]);
  }
  const parsed = parseAllowedSigners(text);
  if (parsed.problems.length > 0) return fail(parsed.problems.map((p) => `${path} ${p}`));
  if (parsed.signers.length === 0) return fail([`${path} names no signer`]);
  const signers = parsed.signers;
  const verify: SignatureCheck = (armored, message, options) => {
    const verdict = verifySshsig(armored, message, { ...options, signers });
    return verdict.ok
      ? ok({ principal: verdict.value.principal, fingerprint: verdict.value.key.fingerprint })
      : fail(verdict.error.reason);
  };
  return ok({ count: signers.length, verify });
}
