import { createHash } from "node:crypto";
import type { AuditEntry, AuditRecord } from "./types.js";

/** Lowercase hex SHA-256 of the UTF-8 encoding of `text`. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/**
 * The record of docs/wire-contract.md §6.1 for one entry, fields in the contract order.
 * Only the hash and byte length of the output are kept; the optional
 * identifiers appear only when non-empty so that a default configuration
 * writes the same shape as the original v0.1 record.
 */
export function buildRecord(entry: AuditEntry, ts: string, instance = ""): AuditRecord {
  const record: AuditRecord = {
    ts,
    tool: entry.tool,
    tier: entry.tier,
    denied: entry.denied,
    args: entry.args,
    output_sha256: sha256Hex(entry.output),
    output_len: Buffer.byteLength(entry.output, "utf8"),
    exit_code: entry.exitCode,
  };
  if (entry.requestId) record.request_id = entry.requestId;
  if (entry.clientId) record.client_id = entry.clientId;
  if (entry.action) record.action = entry.action;
  if (instance) record.instance = instance;
  return record;
}
