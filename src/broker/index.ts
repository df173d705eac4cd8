export { createConfirmBroker } from "./broker.js";
export { hasFollowUps, tokenFingerprint } from "./op-key.js";
/** @public cli/ wires it when several relays share one database (src/state/shared-schema.ts). */
export { createPgConfirmBroker } from "./pg-broker.js";
export type {
  ConfirmBroker,
  FollowUpPlan,
} from "./types.js";
