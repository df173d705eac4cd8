import { createHash } from "node:crypto";
import { canonicalJson } from "../core/index.js";
import type { ConsentAct, ConsentRequest } from "./types.js";

/** The SSHSIG namespace of every consent signature (`ssh-keygen -Y sign -n relay-shell-consent`). */
export const CONSENT_NAMESPACE = "relay-shell-consent";

/** Version of the signed payload's shape. */
const PAYLOAD_VERSION = 1;

/** Everything a human signs for one act, besides the act itself. */
export interface PayloadFields {
  request: string;
  nonce: string;
  /** Epoch milliseconds after which the approval is void. */
  expiresAt: number;
  /** The store's instance id: an approval for one deployment is void at another. */
  instance: string;
}

/**
 * The exact bytes a signer signs: canonical JSON (sorted keys, no spaces,
 * the same form the audit chain hashes) of the act and its request. The
 * relay rebuilds these bytes from the live call before it trusts a
 * signature, so a payload edited in the store only ever fails to verify.
 */
export function consentPayload(act: ConsentAct, fields: PayloadFields): string {
  return canonicalJson({
    v: PAYLOAD_VERSION,
    request: fields.request,
    nonce: fields.nonce,
    tool: act.tool,
    tier: act.tier,
    bound: act.bound,
    expires: new Date(fields.expiresAt).toISOString(),
    instance: fields.instance,
  });
}

/** sha256 hex of the canonical act: equal digests mean the same act. */
export function actDigest(act: ConsentAct): string {
  return createHash("sha256")
    .update(canonicalJson({ tool: act.tool, tier: act.tier, bound: act.bound }))
    .digest("hex");
}

/**
 * The payload of a stored request rebuilt from `act` (by default the act the request holds): what
 * an operator's channel signs is the act it showed, never the payload stored beside it, and what
 * the gate checks is the live call's act.
 */
export function requestPayload(
  request: Pick<ConsentRequest, "id" | "nonce" | "expiresAt" | "act">,
  instance: string,
  act: ConsentAct = request.act,
): string {
  return consentPayload(act, {
    request: request.id,
    nonce: request.nonce,
    expiresAt: request.expiresAt,
    instance,
  });
}
