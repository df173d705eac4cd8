import { type AuditAction, type AuditLog, redactArgs } from "../audit/index.js";
import type { Settings } from "../config/index.js";
import { type Logger, silentLogger, type Tier, tierName, truncateUtf8, utf8Length } from "../core/index.js";
import type { CallMetrics, CallOutcome } from "../metrics/index.js";
import { assessTier, type Basis, type Classification, type Classifier, decide } from "../policy/index.js";
import { boundBody, clampOutput, deniedText, errorText, exitPrefixed, timeoutText } from "./format.js";
import type { Gate, Tool, ToolContext, ToolOutcome } from "./tool.js";

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

export interface CallContext {
  requestId: string;
  clientId: string;
  signal: AbortSignal;
  /** Progress sink for long calls; absent when the client sent no progress token. */
  progress?: (done: number, total: number, message?: string) => void;
}

/** The fields every structuredContent carries (Appendix B 15). */
export interface StructuredResult extends Record<string, unknown> {
  tool: string;
  tier: Tier;
  tier_name: string;
  basis: Basis;
  basis_part: string;
  denied: boolean;
  reason: string;
  exit_code: number | null;
  timed_out: boolean;
  truncated: boolean;
  action: string | null;
  notices: string[];
}

export interface RunResult {
  text: string;
  structured: StructuredResult;
}

export interface Relay {
  readonly tools: readonly Tool[];
  /** Run one tool call through the whole pipeline. Never rejects. */
  run(toolName: string, rawArgs: unknown, ctx: CallContext): Promise<RunResult>;
  /**
   * Produce, bound and audit a resource read or prompt fetch (no policy:
   * CONTRACT §3). A failing read becomes the error grammar. Never throws.
   */
  recordRead(label: string, args: Record<string, unknown>, read: () => string): string;
  /**
   * Refuse and audit a call whose message was too large to read at all: it is
   * treated like any input over RELAY_SHELL_MAX_INPUT (unscanned = Tier 3).
   */
  refuseOversized(toolName: string | null, messageBytes: number, ctx: CallContext): RunResult;
}

/** Room for the tool name and a space in the deny probe (Appendix B 9). */
const PROBE_SLACK = 256;
const MAX_PROBLEMS_TEXT = 1000;

interface Finish {
  tool: string;
  tier: Tier;
  classification: Classification;
  denied: boolean;
  reason: string;
  args: Record<string, unknown>;
  text: string;
  exitCode: number | null;
  outcome: CallOutcome;
  action?: AuditAction;
  timedOut?: boolean;
  truncated?: boolean;
  fields?: Record<string, unknown>;
}

/**
 * The one place that decides: validate, bound the input, classify, admit or
 * refuse, consult the gates, run, bound the output, audit, count. A tool only
 * supplies data and its work.
 */
export function createRelay(deps: RelayDeps): Relay {
  const { settings, classifier, audit, metrics } = deps;
  const gates = deps.gates ?? [];
  const logger = deps.logger ?? silentLogger;
  const byName = new Map(deps.tools.map((t) => [t.name, t]));
  const policyConfig = {
    mode: settings.policyMode,
    deny: settings.policyDeny,
    allow: settings.policyAllow,
    maxProbe: settings.maxInput + PROBE_SLACK,
  };

  function finish(ctx: CallContext, f: Finish): RunResult {
    const written = audit.append({
      tool: f.tool,
      tier: f.tier,
      denied: f.denied,
      args: f.args,
      output: f.text,
      exitCode: f.exitCode,
      ...(ctx.requestId ? { requestId: ctx.requestId } : {}),
      ...(ctx.clientId ? { clientId: ctx.clientId } : {}),
      ...(f.action ? { action: f.action } : {}),
    });
    if (!written) logger.warn({ tool: f.tool }, "audit record could not be written");
    metrics.recordCall({ tool: f.tool, tier: f.tier, mode: settings.policyMode, outcome: f.outcome });
    const structured: StructuredResult = {
      tool: f.tool,
      tier: f.tier,
      tier_name: tierName(f.tier),
      basis: f.classification.basis,
      basis_part: f.classification.part,
      denied: f.denied,
      reason: f.reason,
      exit_code: f.exitCode,
      timed_out: f.timedOut ?? false,
      truncated: f.truncated ?? false,
      action: f.action ?? null,
      notices: [],
      ...f.fields,
    };
    return { text: f.text, structured };
  }

  function classifyLoose(tool: Tool | undefined, raw: unknown): Classification {
    // Arguments that failed validation are still classified, from every string
    // they contain, so the record shows what the caller tried to run.
    const parts: string[] = [];
    let budget = settings.maxInput;
    const visit = (value: unknown, depth: number): void => {
      if (budget <= 0 || depth > 8) return;
      if (typeof value === "string") {
        const piece = value.slice(0, budget);
        budget -= piece.length;
        parts.push(piece);
      } else if (Array.isArray(value) && value.every((item) => typeof item === "string")) {
        // An argv sent as a list is still one command line.
        visit(value.join(" "), depth + 1);
      } else if (Array.isArray(value)) {
        for (const item of value) visit(item, depth + 1);
      } else if (value !== null && typeof value === "object") {
        for (const item of Object.values(value)) visit(item, depth + 1);
      }
    };
    visit(raw, 0);
    const spec = tool?.tier ?? { kind: "heuristic", floor: 1, windows: false };
    return assessTier(spec, parts.join("\n"), classifier);
  }

  async function runCall(toolName: string, raw: unknown, ctx: CallContext): Promise<RunResult> {
    const tool = byName.get(toolName);
    if (!tool) {
      const classification = classifyLoose(undefined, raw);
      return finish(ctx, {
        tool: "unknown_tool",
        tier: classification.tier,
        classification,
        denied: true,
        reason: "unknown tool",
        args: redactArgs({ name: toolName, arguments: raw }),
        text: errorText(new UnknownToolError(toolName)),
        exitCode: null,
        outcome: "denied",
      });
    }

    // 1. Validate. Invalid calls are refused and audited (Appendix B 11).
    const parsed = tool.parse(raw);
    if (!parsed.ok) {
      const classification = classifyLoose(tool, raw);
      const detail = truncateUtf8(parsed.problems.join("; "), MAX_PROBLEMS_TEXT).text;
      const reason = `invalid arguments: ${detail}`;
      const rawArgs =
        raw !== null && typeof raw === "object" && !Array.isArray(raw) ? raw : { arguments: raw };
      return finish(ctx, {
        tool: tool.name,
        tier: classification.tier,
        classification,
        denied: true,
        reason: "invalid arguments",
        args: redactArgs(rawArgs as Record<string, unknown>),
        text: deniedText(classification.tier, reason),
        exitCode: null,
        outcome: "denied",
      });
    }
    const args = parsed.args;
    const policyText = tool.policyText(args);
    const rawAuditArgs = tool.auditArgs(args);
    const auditArgs = redactArgs(rawAuditArgs);

    // 2. Bound the input before any scan: unscanned input counts as the highest tier (Appendix B 1).
    const inputBytes = utf8Length(policyText);
    if (inputBytes > settings.maxInput) {
      const reason = `input of ${inputBytes} bytes exceeds RELAY_SHELL_MAX_INPUT (${settings.maxInput})`;
      return finish(ctx, {
        tool: tool.name,
        tier: 3,
        classification: { tier: 3, basis: "default", part: "" },
        denied: true,
        reason: "input too large",
        args: auditArgs,
        text: deniedText(3, reason),
        exitCode: null,
        outcome: "denied",
      });
    }

    // 3. Classify and admit: the deny list first, then the mode.
    const classification = assessTier(tool.tier, policyText, classifier);
    const decision = decide(policyConfig, tool.name, policyText, classification);
    const base = { tool: tool.name, tier: decision.tier, classification, args: auditArgs };
    if (!decision.allowed) {
      return finish(ctx, {
        ...base,
        denied: true,
        reason: decision.reason,
        text: deniedText(decision.tier, decision.reason),
        exitCode: null,
        outcome: "denied",
      });
    }

    // 4. Nothing runs that cannot be recorded (Appendix B 11).
    if (settings.auditFailClosed && decision.tier > 0 && !audit.status().lastWriteOk) {
      const reason =
        "the audit log cannot be written; RELAY_SHELL_AUDIT_FAIL_CLOSED refuses calls above Tier 0 until it can";
      return finish(ctx, {
        ...base,
        denied: true,
        reason,
        text: deniedText(decision.tier, reason),
        exitCode: null,
        outcome: "denied",
      });
    }

    // 5. Gates add friction to what policy admitted; they never widen it.
    const report = ctx.progress;
    const toolCtx: ToolContext = {
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
    let action: AuditAction | undefined;
    for (const gate of gates) {
      const verdict = gate.check(
        { tool: tool.name, policyText, auditArgs: rawAuditArgs, tier: decision.tier },
        toolCtx,
      );
      if (verdict.kind === "challenge") {
        return finish(ctx, {
          ...base,
          denied: false,
          reason: decision.reason,
          text: verdict.text,
          exitCode: null,
          outcome: "confirm_required",
          action: verdict.action,
        });
      }
      if (verdict.action) action = verdict.action;
    }

    // 6. Work. Whatever it throws becomes the error grammar, never an exception.
    let outcome: ToolOutcome;
    try {
      outcome = await tool.run(args, toolCtx);
    } catch (err) {
      return finish(ctx, {
        ...base,
        denied: false,
        reason: decision.reason,
        text: errorText(err),
        exitCode: null,
        outcome: "error",
        ...(action ? { action } : {}),
      });
    }

    // 7. Bound, then prefix the exit status.
    let text: string;
    let truncated = false;
    let exitCode: number | null = null;
    if (outcome.timedOutAfter !== undefined) {
      text = timeoutText(outcome.timedOutAfter, outcome.timeoutSuffix);
    } else {
      const limit = clampOutput(tool.budget(args), settings);
      const bounded = boundBody(outcome.body, limit, outcome.producedBytes);
      truncated = bounded.truncated;
      text = bounded.text;
      if (outcome.exitCode !== undefined && outcome.exitCode !== null) {
        exitCode = outcome.exitCode;
        text = exitPrefixed(text, exitCode);
      }
    }
    return finish(ctx, {
      ...base,
      denied: false,
      reason: decision.reason,
      text,
      exitCode,
      outcome: "ok",
      timedOut: outcome.timedOutAfter !== undefined,
      truncated,
      ...(action ? { action } : {}),
      ...(outcome.fields ? { fields: outcome.fields } : {}),
    });
  }

  return {
    tools: deps.tools,
    async run(toolName, rawArgs, ctx) {
      try {
        return await runCall(toolName, rawArgs, ctx);
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

class UnknownToolError extends Error {
  constructor(name: string) {
    super(`unknown tool: ${truncateUtf8(name, 200).text}`);
    this.name = "ValueError";
  }
}
