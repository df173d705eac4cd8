export {
  type AuditFollower,
  type FollowChain,
  type FollowedLine,
  type FollowOptions,
  type FollowPosition,
  type FollowReset,
  followAudit,
} from "./follow.js";
export {
  type AuditFilter,
  type AuditOutcome,
  type MinuteCounts,
  matchesFilter,
  outcomeOf,
  perMinuteByTier,
} from "./follow-filter.js";
export { redactArgs, redactString } from "./redact.js";
export type {
  AuditAction,
  AuditLog,
} from "./types.js";
export { verifyAuditChain } from "./verify.js";
export { createAuditLog } from "./writer.js";
