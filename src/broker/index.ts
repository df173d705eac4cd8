export { createConfirmBroker } from "./broker.js";
export { hasFollowUps, tokenFingerprint } from "./op-key.js";
export type {
  ConfirmBroker,
  FollowUpPlan,
} from "./types.js";
