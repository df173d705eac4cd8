import { type AuditAction, type AuditLog, redactArgs } from "../audit/index.js";
import type { Settings } from "../config/index.js";
import { type Logger, type Tier, tierName } from "../core/index.js";
import type { CallMetrics, CallOutcome } from "../metrics/index.js";
import type { Classification } from "../policy/index.js";
import type { StructuredResult } from "./structured.js";
import type { WorkResult } from "./work.js";

/** The call a record is of: the tool, what admission decided, and the redacted arguments. */
export interface CallBase {
  tool: string;
  tier: Tier;
  classification: Classification;
  reason: string;
  /** Redacted audit args. */
  args: Record<string, unknown>;
}

interface FinishedCall extends CallBase {
  /** The final text before notices: its hash and length go into the record. */
  text: string;
  action?: AuditAction;
}

/**
 * Everything one audit record, one counter tick and one structuredContent are made of, keyed on
 * the call's outcome (ADR 0040): only work that returned has an exit status, a timeout and a
 * truncation; a refusal, a challenge and an error have none. `denied` is not a field of its own
 * that could disagree with the outcome: the record and the structuredContent derive it.
 */
export type Finish =
  | (FinishedCall & { outcome: Exclude<CallOutcome, "ok"> })
  | (FinishedCall & {
      outcome: "ok";
      exitCode: number | null;
      timedOut?: boolean;
      truncated?: boolean;
      fields?: Record<string, unknown>;
    });

/** The exit status a finished call records: null unless its work returned one. */
export function exitCodeOf(f: Finish): number | null {
  return f.outcome === "ok" ? f.exitCode : null;
}

export interface RecordContext {
  requestId: string;
  clientId: string;
}

export interface RecorderDeps {
  settings: Settings;
  audit: AuditLog;
  metrics: CallMetrics;
  logger: Logger;
}

export interface Recorder {
  (ctx: RecordContext, f: Finish): StructuredResult;
  /** A record of this call (the call itself or a verify/rollback step) did not reach the audit file. */
  lost(ctx: RecordContext): boolean;
}

/**
 * Append the record, count the call, describe it. The optional identifiers
 * and the action are written only when non-empty, so with the broker off a
 * record has exactly the shape it had before the broker existed.
 */
export function createRecorder(deps: RecorderDeps): Recorder {
  const { settings, audit, metrics, logger } = deps;
  // Keyed by the call's context object, so concurrent calls never see each other's losses.
  const lostFor = new WeakSet<RecordContext>();
  const record = (ctx: RecordContext, f: Finish): StructuredResult => {
    const written = audit.append({
      tool: f.tool,
      tier: f.tier,
      denied: f.outcome === "denied",
      args: f.args,
      output: f.text,
      exitCode: exitCodeOf(f),
      ...(ctx.requestId ? { requestId: ctx.requestId } : {}),
      ...(ctx.clientId ? { clientId: ctx.clientId } : {}),
      ...(f.action ? { action: f.action } : {}),
    });
    if (!written) {
      lostFor.add(ctx);
      logger.warn({ tool: f.tool }, "audit record could not be written");
    }
    metrics.recordCall({ tool: f.tool, tier: f.tier, mode: settings.policyMode, outcome: f.outcome });
    return describeCall(f);
  };
  return Object.assign(record, { lost: (ctx: RecordContext) => lostFor.has(ctx) });
}

/** The structuredContent of a finished call, before its notices. */
export function describeCall(f: Finish): StructuredResult {
  const ran = f.outcome === "ok" ? f : null;
  return {
    tool: f.tool,
    tier: f.tier,
    tier_name: tierName(f.tier),
    basis: f.classification.basis,
    basis_part: f.classification.part,
    denied: f.outcome === "denied",
    reason: f.reason,
    exit_code: ran?.exitCode ?? null,
    timed_out: ran?.timedOut ?? false,
    truncated: ran?.truncated ?? false,
    action: f.action ?? null,
    notices: [],
    ...ran?.fields,
  };
}

/** What a call that was admitted and worked (or threw) is recorded as. */
export function recordOf(base: CallBase, work: WorkResult, action: AuditAction | undefined): Finish {
  const withAction = action ? { action } : {};
  if (work.threw) return { ...base, text: work.text, outcome: "error", ...withAction };
  return {
    ...base,
    ...(work.auditExtra ? { args: { ...base.args, ...redactArgs(work.auditExtra) } } : {}),
    text: work.text,
    exitCode: work.exitCode,
    outcome: "ok",
    timedOut: work.timedOut,
    truncated: work.truncated,
    ...withAction,
    fields: { ...work.fields, terminal_sequences_removed: work.terminalRemoved },
  };
}
