export { actSummary, describeAct } from "./describe.js";
export { type ConsentLedger, ledgerPath, openLedger } from "./ledger.js";
export { withLedger } from "./ledger-store.js";
/** The consent gate of the runner uses it beside the store (docs/adr/0024-consent-store-and-approval-lifetime.md). */
export { rememberConsumedNonces } from "./nonce-memory.js";
/**
 * The one store of passkey sign counters, shared by the console's login and consent's passkey
 * verifier (docs/adr/0038-several-relays-share-one-postgresql-state.md): a file in the console's
 * state directory for one relay (openCountersDir), PostgreSQL for several (createPgCounters),
 * memoryCounters for tests (also of the built bundle).
 */
export { memoryCounters, openCountersDir, type PasskeyCounters } from "./passkey-counters.js";
/** The console asks the browser for an assertion over passkeyChallenge(payload) (docs/consent.md). */
export { createPasskeyVerifier, passkeyChallenge } from "./passkey-verifier.js";
/** The console's passkey login reads the same operator file with the same checks. */
export { loadPasskeys, type Passkey, parsePasskeys } from "./passkeys.js";
export { actDigest, CONSENT_NAMESPACE, consentPayload, requestPayload } from "./payload.js";
export { createPgCounters } from "./pg-counters.js";
export { openPgStore } from "./pg-store.js";
export { createSshsigVerifier, verifyConsentSignature } from "./signers.js";
export { openSqliteStore } from "./sqlite-store.js";
export type {
  ConsentAct,
  ConsentLease,
  ConsentRequest,
  ConsentSession,
  ConsentStore,
  StoreError,
  StoreResult,
} from "./types.js";
export { type ApprovalVerifier, type Approver, channelVerifier } from "./verifier.js";
