import { type AuditAction, type AuditLog, redactArgs } from "../audit/index.js";
import type { FollowUpPlan } from "../broker/index.js";
import type { Settings } from "../config/index.js";
import {
  type Logger,
  markStage,
  RelayError,
  silentLogger,
  tierName,
  traceCall,
  truncateUtf8,
} from "../core/index.js";
import type { CallMetrics } from "../metrics/index.js";
import type { Classification, Classifier } from "../policy/index.js";
import { admittedBase, classifyLoose, createAdmission, refusalRecord } from "./admission.js";
import { runFollowUps } from "./follow-up.js";
import { clampOutput, deniedText, errorText } from "./format.js";
import { withNotices } from "./notices.js";
import { createRecorder, type Finish, recordOf } from "./record.js";
import { rehearseCall } from "./rehearse.js";
import type { StructuredResult } from "./structured.js";
import type { Gate, Tool, ToolContext } from "./tool.js";
import { performWork } from "./work.js";

export interface RelayDeps {
  settings: Settings;
  classifier: Classifier;
  audit: AuditLog;
  metrics: CallMetrics;
  tools: readonly Tool[];
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
}

const MAX_PROBLEMS_TEXT = 1000;

/**
 * The one place that decides: validate, bound the input, classify, admit or
 * refuse, consult the gates, run, bound the output, audit, count, then the
 * bound verify/rollback steps and the notices. A tool only supplies data and
 * its work.
 */
export function createRelay(deps: RelayDeps): Relay {
  const { settings, classifier, audit, metrics } = deps;
  const gates = deps.gates ?? [];
  const logger = deps.logger ?? silentLogger;
  const byName = new Map(deps.tools.map((t) => [t.name, t]));
  const admit = createAdmission({ settings, classifier, audit });
  const record = createRecorder({ settings, audit, metrics, logger });
  const finish = (ctx: CallContext, f: Finish): RunResult => ({
    text: f.text,
    structured: record(ctx, f),
  });

  async function runCall(toolName: string, raw: unknown, ctx: CallContext): Promise<RunResult> {
    const tool = byName.get(toolName);
    if (!tool) {
      const classification = classifyLoose(undefined, raw, classifier, settings.maxInput);
      return finish(ctx, {
        tool: "unknown_tool",
        tier: classification.tier,
        classification,
        denied: true,
        reason: "unknown tool",
        args: redactArgs({ name: toolName, arguments: raw }),
        text: errorText(unknownToolError(toolName)),
        exitCode: null,
        outcome: "denied",
      });
    }

    // 1. Validate. Invalid calls are refused and audited (ADR 0002).
    const parsed = tool.parse(raw);
    markStage("validate");
    if (!parsed.ok) {
      const classification = classifyLoose(tool, raw, classifier, settings.maxInput);
      const detail = truncateUtf8(parsed.problems.join("; "), MAX_PROBLEMS_TEXT).text;
      const rawArgs = (
        raw !== null && typeof raw === "object" && !Array.isArray(raw) ? raw : { arguments: raw }
      ) as Record<string, unknown>;
      return finish(ctx, {
        tool: tool.name,
        tier: classification.tier,
        classification,
        denied: true,
        reason: "invalid arguments",
        args: redactArgs(tool.auditInvalid ? safeAuditInvalid(tool, rawArgs) : rawArgs),
        text: deniedText(classification.tier, `invalid arguments: ${detail}`),
        exitCode: null,
        outcome: "denied",
      });
    }
    const args = parsed.args;

    // 2-5. Policy text and targets, input bound, classification, deny list, mode, fail-closed audit.
    const admission = admit(tool, args, { clientId: ctx.clientId });
    if (!admission.admitted) return finish(ctx, refusalRecord(tool, admission));
    const base = admittedBase(tool, admission);

    // 6. Gates add friction to what policy admitted; they never widen it.
    const toolCtx: ToolContext = {
      ...toolContextOf(ctx),
      admitted: { policyText: admission.policyText, tier: admission.tier },
    };
    let action: AuditAction | undefined = tool.auditAction;
    let confirmed = false;
    let consented = false;
    let followUps: FollowUpPlan | undefined;
    let gateExtra: Record<string, unknown> | undefined;
    const releases: Array<() => void | Promise<void>> = [];
    for (const gate of gates) {
      const verdict = await gate.check(
        {
          tool: tool.name,
          policyText: admission.policyText,
          auditArgs: admission.rawAuditArgs,
          tier: admission.tier,
          basis: basisOf(admission.classification),
          args,
          session: ctx.session ?? "",
          ...(followUps ? { followUps } : {}),
        },
        toolCtx,
      );
      // A later gate stopped the call: what the earlier ones spent for it is given back.
      // Awaited, so a retry that follows the answer finds what was given back, on any relay.
      if (verdict.kind !== "proceed") for (const release of releases) await release();
      const recorded =
        verdict.kind !== "proceed" && verdict.auditExtra ? withExtra(base, verdict.auditExtra) : base;
      if (verdict.kind === "challenge") {
        // Nothing ran, so no notice: a challenge is not a result.
        return finish(ctx, {
          ...recorded,
          text: verdict.text,
          exitCode: null,
          outcome: verdict.outcome ?? "confirm_required",
          action: verdict.action,
        });
      }
      if (verdict.kind === "refuse") {
        return finish(ctx, {
          ...recorded,
          denied: true,
          reason: verdict.reason,
          text: deniedText(admission.tier, verdict.reason),
          exitCode: null,
          outcome: "denied",
          action: verdict.action,
        });
      }
      if (verdict.action) action = verdict.action;
      if (verdict.action === "confirm_execute") confirmed = true;
      if (verdict.action === "consent_execute") consented = true;
      if (verdict.followUps) followUps = verdict.followUps;
      if (verdict.consent) toolCtx.consent = verdict.consent;
      if (verdict.auditExtra) gateExtra = { ...gateExtra, ...verdict.auditExtra };
      if (verdict.release) releases.push(verdict.release);
    }
    markStage("gates");

    // 7-10. Work, bound, audit, count.
    const work = await performWork(tool, args, toolCtx, settings);
    const result = finish(ctx, recordOf(gateExtra ? withExtra(base, gateExtra) : base, work, action));
    markStage("audit");

    // 11. Verify / rollback bound at arm time, each its own admitted, audited call.
    if (followUps) {
      const report = await runFollowUps(
        { settings, classifier, admit, record, logger },
        { tool, args, plan: followUps, ctx },
      );
      if (report.text !== "") {
        result.text += result.text.endsWith("\n") ? report.text : `\n${report.text}`;
      }
      if (report.verify) result.structured.verify = report.verify;
      if (report.rollback) result.structured.rollback = report.rollback;
    }

    // 12. Notices, after every record was written: they never change a recorded hash.
    const noticed = withNotices(
      result,
      { tier: admission.tier, basis: admission.classification.basis },
      work,
      { confirmed, consented },
      settings,
      record.lost(ctx),
    );
    markStage("notices");
    return noticed;
  }

  function toolContextOf(ctx: CallContext): ToolContext {
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

  function safeAuditInvalid(tool: Tool, raw: Record<string, unknown>): Record<string, unknown> {
    try {
      return tool.auditInvalid?.(raw) ?? {};
    } catch {
      // The mapping exists to hide a credential: when it fails, record nothing rather than the raw input.
      return {};
    }
  }

  return {
    tools: deps.tools,
    rehearse: (toolName, rawArgs) =>
      rehearseCall(byName.get(toolName), rawArgs, { admit, audit, settings, logger }),
    async run(toolName, rawArgs, ctx) {
      try {
        // A context of its own per call: the recorder keys the call's lost records on it.
        // Traced only when the start-up turned stage tracing on (docs/performance.md).
        return await traceCall(toolName, () => runCall(toolName, rawArgs, { ...ctx }));
      } catch (err) {
        // A broken invariant inside the pipeline itself: contain it, record it, keep serving.
        logger.error({ err: String(err), tool: toolName }, "runner invariant broken");
        const classification: Classification = { tier: 3, basis: "default", part: "" };
        try {
          return finish(ctx, {
            tool: byName.has(toolName) ? toolName : "unknown_tool",
            tier: 3,
            classification,
            denied: false,
            reason: "internal error",
            args: {},
            text: errorText(err),
            exitCode: null,
            outcome: "error",
          });
        } catch (inner) {
          logger.error({ err: String(inner) }, "could not record a failed call");
          return {
            text: errorText(err),
            structured: {
              tool: toolName,
              tier: 3,
              tier_name: tierName(3),
              basis: "default",
              basis_part: "",
              denied: false,
              reason: "internal error",
              exit_code: null,
              timed_out: false,
              truncated: false,
              action: null,
              notices: [],
            },
          };
        }
      }
    },
    refuseOversized(toolName, messageBytes, ctx) {
      const known = toolName !== null && byName.has(toolName);
      const reason = `input of ${messageBytes} bytes exceeds RELAY_SHELL_MAX_INPUT (${settings.maxInput})`;
      return finish(ctx, {
        tool: known ? (toolName as string) : "unknown_tool",
        tier: 3,
        classification: { tier: 3, basis: "default", part: "" },
        denied: true,
        reason: "input too large",
        args: known
          ? { message_bytes: messageBytes }
          : redactArgs({ name: toolName ?? "", message_bytes: messageBytes }),
        text: deniedText(3, reason),
        exitCode: null,
        outcome: "denied",
      });
    },
    recordRead(label, args, read) {
      let body: string;
      try {
        body = read();
      } catch (err) {
        body = errorText(err);
      }
      const text = truncateUtf8(body, clampOutput(settings.maxOutput, settings)).text;
      audit.append({
        tool: label,
        tier: 0,
        denied: false,
        args: redactArgs(args),
        output: text,
        exitCode: null,
      });
      metrics.recordCall({ tool: label, tier: 0, mode: settings.policyMode, outcome: "ok" });
      return text;
    },
  };
}

/** The classifier's basis as a gate shows it to a human: `rule: part`. */
function basisOf(classification: Classification): string {
  return classification.part === ""
    ? classification.basis
    : `${classification.basis}: ${classification.part}`;
}

/**
 * Base record fields with a gate's facts added to the (redacted) args. The
 * facts are the relay's own (request and lease ids, the approver the
 * allowed-signers file names), never the caller's text, so they are recorded
 * as they are: redacting them would cost every leased read for nothing.
 */
function withExtra<T extends { args: Record<string, unknown> }>(base: T, extra: Record<string, unknown>): T {
  return { ...base, args: { ...base.args, ...extra } };
}

/** A call naming no registered tool: the caller's mistake, shown as a ValueError. */
function unknownToolError(name: string): RelayError {
  return new RelayError("ValueError", `unknown tool: ${truncateUtf8(name, 200).text}`);
}
