export { actSummary, type DescribeInput, describeAct } from "./describe.js";
export { actDigest, CONSENT_NAMESPACE, consentPayload } from "./payload.js";
export type { ConsentAct } from "./types.js";
