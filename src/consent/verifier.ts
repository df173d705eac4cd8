import { fail, type Result } from "../core/index.js";
import type { StoredApproval } from "./types.js";

/** Who approved, once the relay checked the proof itself. */
export interface Approver {
  signer: string;
  key: string;
  channel: StoredApproval["channel"];
}

/** The approver, or why the proof does not hold. */
type VerifiedApproval = Result<Approver, string>;

/**
 * Checks an approval's proof over the payload the relay rebuilt from the
 * live call. One per channel (an OpenSSH signature, a passkey assertion);
 * a channel without one is refused, never trusted. A channel that keeps
 * state (the passkeys' sign counters, maybe in a database) answers later.
 */
export interface ApprovalVerifier {
  verify(
    approval: StoredApproval,
    payload: string,
    now: number,
  ): VerifiedApproval | Promise<VerifiedApproval>;
}

/** Route each approval to its channel's verifier; an unknown channel is refused. */
export function channelVerifier(
  byChannel: Partial<Record<StoredApproval["channel"], ApprovalVerifier>>,
): ApprovalVerifier {
  return {
    verify(approval, payload, now) {
      const verifier = byChannel[approval.channel];
      if (!verifier) {
        return fail(`no verifier for approvals given by ${approval.channel} on this relay`);
      }
      return verifier.verify(approval, payload, now);
    },
  };
}
