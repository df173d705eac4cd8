export { followAudit } from "./follow.js";
export {
  type AuditFilter,
  type AuditOutcome,
  type MinuteCounts,
  matchesFilter,
  outcomeOf,
  perMinuteByTier,
} from "./follow-filter.js";
export type {
  AuditFollower,
  FollowChain,
  FollowedLine,
  FollowOptions,
  FollowPosition,
  FollowReset,
} from "./follow-types.js";
export { redactArgs, redactString } from "./redact.js";
export type {
  AuditAction,
  AuditLog,
} from "./types.js";
export { verifyAuditChain } from "./verify.js";
export { createAuditLog } from "./writer.js";
