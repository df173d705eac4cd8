export { actDigest, CONSENT_NAMESPACE, consentPayload, type PayloadFields } from "./payload.js";
export type {
  ActKind,
  ConsentAct,
  ConsentLease,
  ConsentRequest,
  ConsentSession,
  ConsentStore,
  NewRequest,
  RequestStatus,
  StoredApproval,
  StoreFailure,
  StoreResult,
} from "./types.js";
