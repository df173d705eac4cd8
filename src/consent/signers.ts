import { readFileSync, statSync } from "node:fs";
import { fail, ok, type Result } from "../core/index.js";
import { trustAnchorProblems } from "../files/index.js";
import {
  type AllowedSigner,
  parseAllowedSigners,
  signerAllowsNamespace,
  verifySshsig,
} from "../sshsig/index.js";
import { CONSENT_NAMESPACE } from "./payload.js";
import type { ApprovalVerifier } from "./verifier.js";

/** Why the allowed-signers file cannot be trusted or used; thrown at start-up. */
class TrustAnchorError extends Error {}

interface Loaded {
  signers: AllowedSigner[];
  /** Identity of the file the signers came from: a change is read again. */
  stamp: string;
}

function stampOf(path: string): string {
  const st = statSync(path);
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

/**
 * Read the operator's allowed-signers file, after checking the relay could
 * not have written it (docs/consent.md, "trust anchors"). Throws a
 * TrustAnchorError naming every problem.
 */
function loadSigners(path: string, selfUid: number): Loaded {
  const problems = trustAnchorProblems(path, { selfUid });
  if (problems.length > 0) throw new TrustAnchorError(problems.join("; "));
  const stamp = stampOf(path);
  const parsed = parseAllowedSigners(readFileSync(path, "utf8"));
  if (parsed.problems.length > 0) throw new TrustAnchorError(`${path}: ${parsed.problems.join("; ")}`);
  const usable = parsed.signers.filter((s) => signerAllowsNamespace(s, CONSENT_NAMESPACE));
  if (usable.length === 0) {
    throw new TrustAnchorError(`${path} names no signer allowed to sign in namespace ${CONSENT_NAMESPACE}`);
  }
  return { signers: parsed.signers, stamp };
}

/**
 * The verifier of approvals signed with `ssh-keygen -Y sign -n
 * relay-shell-consent`. The file is checked and read at start-up (a
 * problem stops the relay) and read again, with the same checks, whenever
 * it changes, so removing a key takes effect on the next approval; a file
 * that became unsafe refuses every approval until it is fixed.
 */
export function createSshsigVerifier(path: string, selfUid: number): ApprovalVerifier {
  let loaded = loadSigners(path, selfUid);
  return {
    verify(approval, payload, now) {
      try {
        if (stampOf(path) !== loaded.stamp) loaded = loadSigners(path, selfUid);
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        return fail(`the allowed-signers file cannot be trusted now: ${why}`);
      }
      const result = verifyConsentSignature(loaded.signers, approval.proof, payload, now);
      if (!result.ok) return result;
      return ok({ signer: result.value.principal, key: result.value.key, channel: "sshsig" });
    },
  };
}

/**
 * An armored SSHSIG over `payload` checked against allowed signers, in the consent namespace, as
 * the relay checks an approval: the principal and key fingerprint, or why it would be refused.
 * The operator's CLI checks a signature it made the same way before it stores it.
 */
export function verifyConsentSignature(
  signers: readonly AllowedSigner[],
  signature: string,
  payload: string,
  now: number,
): Result<{ principal: string; key: string }, string> {
  const result = verifySshsig(signature, Buffer.from(payload, "utf8"), {
    namespace: CONSENT_NAMESPACE,
    signers: [...signers],
    now,
  });
  return result.ok
    ? ok({ principal: result.value.principal, key: result.value.key.fingerprint })
    : fail(result.error.reason);
}
