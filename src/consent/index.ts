export { actSummary, describeAct } from "./describe.js";
/** @public The consent gate of the runner uses it beside the store (docs/adr/0024-consent-store-and-approval-lifetime.md). */
export { rememberConsumedNonces } from "./nonce-memory.js";
export { fileCounters, memoryCounters, type PasskeyCounters } from "./passkey-counters.js";
export { createPasskeyVerifier, passkeyChallenge } from "./passkey-verifier.js";
export { loadPasskeys, type Passkey, PasskeysFileError } from "./passkeys.js";
export { actDigest, CONSENT_NAMESPACE, consentPayload } from "./payload.js";
export { createSshsigVerifier } from "./signers.js";
export { openSqliteStore } from "./sqlite-store.js";
export type {
  ConsentAct,
  ConsentLease,
  ConsentRequest,
  ConsentSession,
  ConsentStore,
  StoreResult,
} from "./types.js";
export { type ApprovalVerifier, channelVerifier } from "./verifier.js";
