import type { AuditFormat } from "../config/index.js";
import type { Tier } from "../core/index.js";

/**
 * Contract audit actions (docs/wire-contract.md §6.1, ADR 0010), the consent
 * gate's (docs/consent.md) and the operator's kill from the console
 * (docs/console.md#sessions).
 */
export type AuditAction =
  | "confirm_plan"
  | "confirm_arm"
  | "confirm_execute"
  | "confirm_verify"
  | "confirm_rollback"
  | "consent_request"
  | "consent_execute"
  | "consent_lease"
  | "consent_refuse"
  | "operator_kill";

/** What the runner hands to the log for one event. */
export interface AuditEntry {
  tool: string;
  tier: Tier;
  denied: boolean;
  /** Already redacted and length-bounded by the caller (redactArgs). */
  args: Record<string, unknown>;
  /** The final text returned to the caller, before notices; only its hash and length are written. */
  output: string;
  exitCode: number | null;
  requestId?: string;
  clientId?: string;
  action?: AuditAction;
}

/** The record as written (docs/wire-contract.md §6.1), in this field order. */
export interface AuditRecord {
  ts: string;
  tool: string;
  tier: number;
  denied: boolean;
  args: Record<string, unknown>;
  output_sha256: string;
  output_len: number;
  exit_code: number | null;
  request_id?: string;
  client_id?: string;
  action?: string;
  /** The relay that wrote it, when several share one state (docs/scaling.md). */
  instance?: string;
  seq?: number;
  prev?: string;
  chain?: string;
}

export interface AuditConfig {
  path: string;
  format: AuditFormat;
  chain: boolean;
  stderrEcho: boolean;
  /** This relay's name among several, written into every record; "" or absent = one relay, no field. */
  instance?: string;
}

export interface AuditStatus {
  path: string;
  format: AuditFormat;
  chain: boolean;
  /**
   * Start-up degradation (the path could not be opened or is not a regular
   * file of ours), a runtime write failure (sticky), or a failed reserve
   * (until one succeeds).
   */
  degraded: boolean;
  degradedReason: string;
  /** Runtime write failures since start. */
  writeFailures: number;
  /** false after a record did not reach the file, until a later one does. */
  lastWriteOk: boolean;
}

export interface TailQuery {
  lines: number;
  tool?: string;
  tier?: number;
  denied?: boolean;
}

export interface AuditLog {
  /** Append one record. Never throws; returns whether it reached the audit file. */
  append(entry: AuditEntry): boolean;
  /**
   * Called before work above Tier 0 runs: whether its record can be written
   * now. Re-checks the path (reopening it after a rotation, refusing what is
   * not a regular file of ours), probes a file whose last write failed, and
   * keeps room allocated past the end of the file so the record cannot fail
   * for space. Never throws.
   */
  reserve(): boolean;
  /**
   * Build, seal and format the record of `entry` and write its line to
   * /dev/null: nothing reaches the audit file and the chain does not move.
   * Run once after start-up so the first real record does not pay for
   * compiling that path. Never throws.
   */
  rehearse(entry: AuditEntry): void;
  status(): AuditStatus;
  /** docs/wire-contract.md §2.7 audit_tail semantics; never throws. */
  tail(query: TailQuery): string;
  close(): void;
}
