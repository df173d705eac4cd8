export { CONSENT_NAMESPACE, consentPayload } from "./payload.js";
