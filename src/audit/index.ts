export { GENESIS } from "./chain.js";
export { redactArgs, redactString } from "./redact.js";
export { tailAudit } from "./tail.js";
export type {
  AuditAction,
  AuditConfig,
  AuditEntry,
  AuditLog,
  AuditRecord,
  AuditStatus,
  TailQuery,
} from "./types.js";
export { type VerifyReport, verifyAuditChain } from "./verify.js";
export { type AuditLogDeps, createAuditLog } from "./writer.js";
