export { createConfirmBroker } from "./broker.js";
export { hasFollowUps, tokenFingerprint } from "./op-key.js";

export { createPgConfirmBroker } from "./pg-broker.js";
export type {
  ConfirmBroker,
  FollowUpPlan,
} from "./types.js";
