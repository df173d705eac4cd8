/** @public The consent gate of the runner uses it beside the store (docs/adr/0024-consent-store-and-approval-lifetime.md). */
export { rememberConsumedNonces } from "./nonce-memory.js";
export { CONSENT_NAMESPACE, consentPayload } from "./payload.js";
export { openSqliteStore } from "./sqlite-store.js";
export type { ConsentLease, ConsentRequest, ConsentSession, ConsentStore } from "./types.js";
