import { createHash } from "node:crypto";
import { canonicalJson } from "../core/index.js";
import type { FollowUpPlan, OperationIdentity } from "./types.js";

function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/**
 * What runs (policy text) and against what (the raw audit args). The args are
 * taken before redaction so that two operations differing only in a redacted
 * value never share a key; the key is hashed, never stored or logged.
 */
export function opKey(policyText: string, auditArgs: Record<string, unknown>): string {
  return `${policyText}\0${canonicalJson(auditArgs)}`;
}

/** The identity a token is bound to: sha256(tool \0 op_key), lowercase hex. */
export function opHash(operation: OperationIdentity): string {
  return sha256Hex(`${operation.tool}\0${opKey(operation.policyText, operation.auditArgs)}`);
}

/**
 * The identity of an armed token: the operation hash with the bound
 * verify/rollback commands folded in, so that the pair (operation,
 * follow-ups) is what the token authorizes.
 */
export function foldFollowUps(operationHash: string, followUps: FollowUpPlan | null): string {
  const plan = followUps
    ? {
        auto_rollback: followUps.autoRollback,
        rollback_command: followUps.rollbackCommand,
        verify_command: followUps.verifyCommand,
        verify_expect: followUps.verifyExpect,
      }
    : null;
  return sha256Hex(`${operationHash}\0${canonicalJson(plan)}`);
}

export const FINGERPRINT_HEX = 12;

/** First 12 hex of sha256(token), "" for an empty token: one-way, safe to audit. */
export function tokenFingerprint(token: string): string {
  return token === "" ? "" : sha256Hex(token).slice(0, FINGERPRINT_HEX);
}

/** Store key of a token: the full digest, so the store never holds a usable token. */
export function tokenKey(token: string): string {
  return sha256Hex(token);
}

/** True when the plan binds anything at all. */
export function hasFollowUps(plan: FollowUpPlan | null): plan is FollowUpPlan {
  return (
    plan !== null &&
    (plan.verifyCommand !== "" ||
      plan.rollbackCommand !== "" ||
      plan.verifyExpect !== "" ||
      plan.autoRollback)
  );
}
