export { type ConfirmBrokerDeps, createConfirmBroker, DEFAULT_MAX_TOKENS } from "./broker.js";
export { foldFollowUps, hasFollowUps, opHash, opKey, tokenFingerprint } from "./op-key.js";
export type {
  ArmOutcome,
  Confirmation,
  ConfirmBroker,
  ConfirmBrokerConfig,
  FollowUpPlan,
  OperationIdentity,
  PlannedOperation,
  TokenView,
} from "./types.js";
