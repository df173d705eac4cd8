export { actSummary, type DescribeInput, describeAct } from "./describe.js";
export { actDigest, CONSENT_NAMESPACE, consentPayload } from "./payload.js";
export { checkAllowedSigners, createSshsigVerifier, TrustAnchorError } from "./signers.js";
export type {
  ConsentAct,
  ConsentLease,
  ConsentRequest,
  ConsentSession,
  ConsentStore,
  StoredApproval,
  StoreResult,
} from "./types.js";
export { type ApprovalVerifier, channelVerifier, type VerifiedApproval } from "./verifier.js";
