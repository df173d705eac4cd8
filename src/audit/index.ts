export { redactArgs, redactString } from "./redact.js";
export type {
  AuditAction,
  AuditLog,
} from "./types.js";
export { verifyAuditChain } from "./verify.js";
export { createAuditLog } from "./writer.js";
