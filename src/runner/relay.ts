import { type AuditLog, redactArgs } from "../audit/index.js";
import type { Settings } from "../config/index.js";
import { type Logger, markStage, silentLogger, traceCall, truncateUtf8 } from "../core/index.js";
import type { CallMetrics } from "../metrics/index.js";
import type { Classifier, EffectivePolicy, PolicyBook } from "../policy/index.js";
import { type Admit, admittedBase, classifyLoose, createAdmission, refusalRecord } from "./admission.js";
import { explainCall } from "./explain.js";
import { type FollowUpReport, runFollowUps } from "./follow-up.js";
import { clampOutput, errorText } from "./format.js";
import { withNotices } from "./notices.js";
import { createRecorder, type Finish, type Recorder, recordOf } from "./record.js";
import { rehearseCall } from "./rehearse.js";
import { type Passed, runGates } from "./relay-gates.js";
import {
  internalErrorFinish,
  invalidArgsFinish,
  oversizedFinish,
  unknownToolFinish,
  unrecordedError,
  withExtra,
} from "./relay-results.js";
import type { StructuredResult } from "./structured.js";
import type { CallScope, Gate, Tool, ToolContext } from "./tool.js";
import { performWork } from "./work.js";

export interface RelayDeps {
  settings: Settings;
  classifier: Classifier;
  audit: AuditLog;
  metrics: CallMetrics;
  tools: readonly Tool[];
  /** The policies in force (default: the settings' one policy for every call; docs/policy.md). */
  policies?: PolicyBook;
  /** Controls consulted, in order, after policy admitted a call. */
  gates?: readonly Gate[];
  logger?: Logger;
}

interface CallContext {
  requestId: string;
  clientId: string;
  /** The MCP session of the call (the consent session); "" when the edge has none. */
  session?: string;
  signal: AbortSignal;
  /** Progress sink for long calls; absent when the client sent no progress token. */
  progress?: (done: number, total: number, message?: string) => void;
}

interface RunResult {
  text: string;
  structured: StructuredResult;
}

export interface Relay {
  readonly tools: readonly Tool[];
  /** Run one tool call through the whole pipeline. Never rejects. */
  run(toolName: string, rawArgs: unknown, ctx: CallContext): Promise<RunResult>;
  /**
   * Produce, bound and audit a resource read or prompt fetch (no policy:
   * docs/wire-contract.md §3). A failing read becomes the error grammar. Never throws.
   */
  recordRead(label: string, args: Record<string, unknown>, read: () => string): string;
  /**
   * Refuse and audit a call whose message was too large to read at all: it is
   * treated like any input over RELAY_SHELL_MAX_INPUT (unscanned = Tier 3).
   */
  refuseOversized(toolName: string | null, messageBytes: number, ctx: CallContext): RunResult;
  /** Warm the path of a call without running or recording it (rehearse.ts). Never throws. */
  rehearse(toolName: string, rawArgs: unknown): void;
  /**
   * What a call would get, decided exactly as run() decides it, with nothing
   * run, dialled, planned or recorded (explain.ts; policy_explain records its own call).
   */
  explain(toolName: string, rawArgs: unknown, scope: CallScope): Record<string, unknown>;
}

/** What every call of one relay shares: its dependencies, its tools by name, admission and the recorder. */
interface Pipeline {
  settings: Settings;
  classifier: Classifier;
  audit: AuditLog;
  metrics: CallMetrics;
  gates: readonly Gate[];
  logger: Logger;
  byName: Map<string, Tool>;
  admit: Admit;
  record: Recorder;
}

/**
 * The one place that decides: validate, bound the input, classify, admit or
 * refuse, consult the gates, run, bound the output, audit, count, then the
 * bound verify/rollback steps and the notices. A tool only supplies data and
 * its work.
 */
export function createRelay(deps: RelayDeps): Relay {
  const { settings, classifier, audit, metrics } = deps;
  const logger = deps.logger ?? silentLogger;
  const p: Pipeline = {
    settings,
    classifier,
    audit,
    metrics,
    gates: deps.gates ?? [],
    logger,
    byName: new Map(deps.tools.map((t) => [t.name, t])),
    admit: createAdmission({
      settings,
      classifier,
      audit,
      ...(deps.policies ? { policies: deps.policies } : {}),
    }),
    record: createRecorder({ settings, audit, metrics, logger }),
  };
  return {
    tools: deps.tools,
    rehearse: (toolName, rawArgs) =>
      rehearseCall(p.byName.get(toolName), rawArgs, { admit: p.admit, audit, settings, logger }),
    run: (toolName, rawArgs, ctx) => runContained(p, toolName, rawArgs, ctx),
    refuseOversized: (toolName, messageBytes, ctx) =>
      finish(
        p,
        ctx,
        oversizedFinish(
          toolName,
          toolName !== null && p.byName.has(toolName),
          messageBytes,
          settings.maxInput,
        ),
      ),
    recordRead: (label, args, read) => recordRead(p, label, args, read),
    explain: (toolName, rawArgs, scope) =>
      explainCall(
        {
          settings,
          classifier,
          admit: p.admit,
          byName: p.byName,
          showPatterns: settings.policyExplainPatterns,
        },
        toolName,
        rawArgs,
        scope,
      ),
  };
}

function finish(p: Pipeline, ctx: CallContext, f: Finish): RunResult {
  return { text: f.text, structured: p.record(ctx, f) };
}

/** One call through the pipeline; never rejects: a broken invariant is contained and recorded. */
async function runContained(
  p: Pipeline,
  toolName: string,
  rawArgs: unknown,
  ctx: CallContext,
): Promise<RunResult> {
  try {
    // A context of its own per call: the recorder keys the call's lost records on it.
    // Traced only when the start-up turned stage tracing on (docs/performance.md).
    return await traceCall(toolName, () => runCall(p, toolName, rawArgs, { ...ctx }));
  } catch (err) {
    // A broken invariant inside the pipeline itself: contain it, record it, keep serving.
    p.logger.error({ err: String(err), tool: toolName }, "runner invariant broken");
    try {
      return finish(p, ctx, internalErrorFinish(toolName, p.byName.has(toolName), err));
    } catch (inner) {
      p.logger.error({ err: String(inner) }, "could not record a failed call");
      return unrecordedError(toolName, err);
    }
  }
}

async function runCall(p: Pipeline, toolName: string, raw: unknown, ctx: CallContext): Promise<RunResult> {
  const { settings, classifier } = p;
  const tool = p.byName.get(toolName);
  if (!tool) {
    const classification = classifyLoose(undefined, raw, classifier, settings.maxInput);
    return finish(p, ctx, unknownToolFinish(toolName, raw, classification));
  }

  // 1. Validate. Invalid calls are refused and audited (ADR 0002).
  const parsed = tool.parse(raw);
  markStage("validate");
  if (!parsed.ok) {
    const classification = classifyLoose(tool, raw, classifier, settings.maxInput);
    return finish(p, ctx, invalidArgsFinish(tool, raw, parsed.error, classification));
  }
  const args = parsed.value;

  // 2-5. Policy text and targets, input bound, classification, deny list, mode, fail-closed audit.
  const admission = p.admit(tool, args, { clientId: ctx.clientId });
  if (!admission.admitted) return finish(p, ctx, refusalRecord(tool, admission));
  const base = admittedBase(tool, admission);

  // 6. Gates add friction to what policy admitted; they never widen it.
  const toolCtx: ToolContext = {
    ...toolContextOf(p.logger, ctx),
    admitted: { policyText: admission.policyText, tier: admission.tier },
    ...(admission.hostRefusals ? { hostRefusals: admission.hostRefusals } : {}),
  };
  const call = { tool: tool.name, admission, args, session: ctx.session ?? "" };
  const gated = await runGates(p.gates, call, toolCtx, base, tool.auditAction);
  // Nothing ran, so no notice: a challenge or a refusal is not a result.
  if ("stopped" in gated) return finish(p, ctx, gated.stopped);
  markStage("gates");
  return runAdmitted(p, { tool, args, ctx, toolCtx, base, passed: gated.passed, policy: admission.policy });
}

/** An admitted call the gates let through: its work and record, its follow-ups, its notices. */
async function runAdmitted(
  p: Pipeline,
  call: {
    tool: Tool;
    args: unknown;
    ctx: CallContext;
    toolCtx: ToolContext;
    base: ReturnType<typeof admittedBase>;
    passed: Passed;
    policy: EffectivePolicy;
  },
): Promise<RunResult> {
  const { tool, args, ctx, base, passed } = call;
  const { settings } = p;
  // 7-10. Work, bound, audit, count.
  const work = await performWork(tool, args, call.toolCtx, settings);
  const recorded = passed.extra ? withExtra(base, passed.extra) : base;
  const result = finish(p, ctx, recordOf(recorded, work, passed.action));
  markStage("audit");

  // 11. Verify / rollback bound at arm time, each its own admitted, audited call.
  if (passed.followUps) {
    const report = await runFollowUps(
      { settings, classifier: p.classifier, admit: p.admit, record: p.record, logger: p.logger },
      { tool, args, plan: passed.followUps, ctx },
    );
    addFollowUps(result, report);
  }

  // 12. Notices, after every record was written: they never change a recorded hash.
  const noticed = withNotices(
    result,
    { tier: base.tier, basis: base.classification.basis },
    work,
    { confirmed: passed.confirmed, consented: passed.consented },
    { settings, policy: call.policy },
    p.record.lost(ctx),
  );
  markStage("notices");
  return noticed;
}

/** The follow-ups' report after the call's own text, and their outcomes in its structured result. */
function addFollowUps(result: RunResult, report: FollowUpReport): void {
  if (report.text !== "") {
    result.text += result.text.endsWith("\n") ? report.text : `\n${report.text}`;
  }
  if (report.verify) result.structured.verify = report.verify;
  if (report.rollback) result.structured.rollback = report.rollback;
}

function toolContextOf(logger: Logger, ctx: CallContext): ToolContext {
  const report = ctx.progress;
  return {
    signal: ctx.signal,
    requestId: ctx.requestId,
    clientId: ctx.clientId,
    progress(done, total, message) {
      try {
        report?.(done, total, message);
      } catch (err) {
        logger.warn({ err: String(err) }, "progress notification failed");
      }
    },
  };
}

/** A resource read or prompt fetch: produced, bounded, audited and counted, never policy-gated. */
function recordRead(p: Pipeline, label: string, args: Record<string, unknown>, read: () => string): string {
  const { settings } = p;
  let body: string;
  try {
    body = read();
  } catch (err) {
    body = errorText(err);
  }
  const text = truncateUtf8(body, clampOutput(settings.maxOutput, settings)).text;
  p.audit.append({
    tool: label,
    tier: 0,
    denied: false,
    args: redactArgs(args),
    output: text,
    exitCode: null,
  });
  p.metrics.recordCall({ tool: label, tier: 0, mode: settings.policyMode, outcome: "ok" });
  return text;
}
