import { join } from "node:path";
import { type AuditLog, createAuditLog, redactArgs } from "../audit/index.js";
import { type Clock, compactJson, type Ids, type Tier, truncateUtf8 } from "../core/index.js";
import type { InfraResponse, Operation, OutcomeClass, OutcomeCode } from "../infra-protocol/index.js";
import type { ApprovalRecord, Principal } from "./types.js";

/** The file of receipts in the state directory. */
const RECEIPTS_FILE = "receipts.jsonl";

/** How much of one claimed identity value is kept in a receipt. */
const CLAIM_BYTES = 256;

/** What one receipt says about one request. */
export interface ReceiptFacts {
  receiptId: string;
  op: Operation | null;
  profile: string | null;
  runId: string | null;
  idempotencyKey: string | null;
  /** The caller's own correlation id, when it gave a valid one. */
  requestId: string | null;
  /** Null when the kernel would not say who connected. */
  principal: Principal | null;
  outcome: OutcomeClass;
  code: OutcomeCode;
  /** Identity fields the request carried, as claimed; never used. Null when there were none. */
  claimedIdentity: Record<string, unknown> | null;
  approvalPresent: boolean;
  /** The approval's request id, the relay's and the broker's signer and the key's fingerprint; null without one. */
  approval: ApprovalRecord | null;
  /** The response as sent: its hash and length go into the record. */
  response: InfraResponse;
  /**
   * Set on a summary receipt: the refusals it stands for (its facts are the
   * first one's), counted by code; every one of them was answered with this
   * receipt id.
   */
  burst?: { count: number; codes: Record<string, number> };
}

export interface Receipts {
  /** A fresh receipt id (`r-` and 24 hex digits). */
  newId(): string;
  /**
   * Whether a receipt can be written now (the file is ours and has room);
   * asked before an operation runs, which must not run when it cannot be
   * recorded.
   */
  reserve(): boolean;
  /** Append one receipt. Never throws; false when it did not reach the file. */
  write(facts: ReceiptFacts): boolean;
  /** Why the log is degraded, or "" when it is not. */
  problem(): string;
  path: string;
  close(): void;
}

interface ReceiptsDeps {
  clock: Clock;
  ids: Ids;
  /** Where a receipt goes that could not reach the file (the daemon's stderr). */
  stderr?: (line: string) => void;
}

const TIERS: Record<Operation, Tier> = {
  status: 0,
  probe: 0,
  verify: 0,
  "rsync-dry-run": 1,
  replicate: 2,
};

/** A claimed value as recorded: short, and only ever data. */
function boundedClaim(value: unknown): unknown {
  if (typeof value === "number" || typeof value === "boolean" || value === null) return value;
  const text = typeof value === "string" ? value : compactJson(value);
  return truncateUtf8(text, CLAIM_BYTES).text;
}

/** The claimed identity with every value bounded, for the receipt. */
export function boundClaims(claims: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(claims)) out[key] = boundedClaim(value);
  return out;
}

/**
 * The broker's receipts: one hash-chained audit record per request, written
 * with the audit module's writer, so `relay-shell --verify-audit --audit-path
 * <state>/receipts.jsonl` checks them. The record's request id is the
 * receipt id the response carries.
 */
export function createReceipts(stateDir: string, deps: ReceiptsDeps): Receipts {
  const path = join(stateDir, RECEIPTS_FILE);
  const log: AuditLog = createAuditLog(
    { path, format: "jsonl", chain: true, stderrEcho: false },
    { clock: deps.clock, ...(deps.stderr ? { stderr: deps.stderr } : {}) },
  );

  function write(facts: ReceiptFacts): boolean {
    const principal = facts.principal;
    // The ids, codes and numbers passed the protocol's narrow patterns; only the caller's own
    // request id and an identity claim are free text that could hold a secret worth hiding.
    const free =
      facts.requestId === null && facts.claimedIdentity === null
        ? { request_id: null, claimed_identity: null }
        : redactArgs({ request_id: facts.requestId, claimed_identity: facts.claimedIdentity });
    // The approval's ids and the relay's signer name are the caller's text too; the signature is never kept.
    const approval = facts.approval === null ? null : redactArgs({ ...facts.approval });
    const args = {
      op: facts.op,
      profile: facts.profile,
      run_id: facts.runId,
      idempotency_key: facts.idempotencyKey,
      request_id: free.request_id,
      principal:
        principal === null
          ? null
          : { uid: principal.uid, gid: principal.gid, pid: principal.pid, groups: principal.groups },
      outcome: facts.outcome,
      code: facts.code,
      claimed_identity: free.claimed_identity,
      approval_present: facts.approvalPresent,
      approval,
      receipt_id: facts.receiptId,
      ...(facts.burst !== undefined ? { burst: { count: facts.burst.count, codes: facts.burst.codes } } : {}),
    };
    return log.append({
      tool: facts.op === null ? "infra.invalid" : `infra.${facts.op}`,
      tier: facts.op === null ? 0 : TIERS[facts.op],
      denied: facts.outcome !== "ok",
      args,
      output: JSON.stringify(facts.response),
      exitCode: null,
      requestId: facts.receiptId,
    });
  }

  return {
    newId: () => `r-${deps.ids.hex(12)}`,
    reserve: () => log.reserve(),
    write,
    problem: () => log.status().degradedReason,
    path,
    close: () => log.close(),
  };
}
