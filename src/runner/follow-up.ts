import type { FollowUpPlan } from "../broker/index.js";
import type { Settings } from "../config/index.js";
import { type Logger, RelayError } from "../core/index.js";
import type { Classifier } from "../policy/index.js";
import { type Admit, classifyLoose, refusalRecord } from "./admission.js";
import { deniedText, errorText, stepText } from "./format.js";
import type { RecordContext, Recorder } from "./record.js";
import type { StepSummary } from "./structured.js";
import type { Tool, ToolContext } from "./tool.js";
import { performWork } from "./work.js";

export interface FollowUpDeps {
  settings: Settings;
  classifier: Classifier;
  admit: Admit;
  record: Recorder;
  logger: Logger;
}

export interface FollowUpRequest {
  tool: Tool;
  /** The validated arguments of the confirmed call that just ran: the target the steps inherit. */
  args: unknown;
  plan: FollowUpPlan;
  ctx: RecordContext;
}

export interface FollowUpReport {
  /** Step blocks to put after the confirmed call's own text ("" when nothing ran). */
  text: string;
  verify?: StepSummary;
  rollback?: StepSummary;
}

type StepKind = "verify" | "rollback";

interface StepResult {
  summary: StepSummary;
  text: string;
  /** Why the step counts as failed, or null when it passed. */
  failure: string | null;
}

/** Blocks on their own lines, without doubling a newline a block already ends with. */
function joinBlocks(blocks: readonly string[]): string {
  let out = "";
  for (const block of blocks) out += out === "" || out.endsWith("\n") ? block : `\n${block}`;
  return out;
}

/**
 * The verify/rollback loop of ADR 0010, run after a confirmed call's own
 * record is written. Each step is the same tool against the same target with
 * the bound command in place of the original, admitted again from scratch
 * (input bound, deny list, mode, fail-closed audit), but never sent back to
 * the confirmation gate: a rollback waiting for a second token would
 * deadlock the remediation. At most one verify and one rollback; a failed
 * rollback is reported and left alone. Nothing is persisted: if the process
 * dies in here, the audit trail holds the arm and the execute, and the
 * system is in whatever state the execute left.
 */
export async function runFollowUps(deps: FollowUpDeps, request: FollowUpRequest): Promise<FollowUpReport> {
  const { tool, plan } = request;
  if (plan.verifyCommand === "") return { text: "" };

  const verify = await runStep(deps, request, "verify", plan.verifyCommand);
  const blocks = [stepText("verify", verify.text)];
  const report: FollowUpReport = { text: "", verify: verify.summary };
  if (verify.failure !== null) {
    if (plan.autoRollback && plan.rollbackCommand !== "") {
      blocks.push(`[verify failed: ${verify.failure}; running the bound rollback once]`);
      deps.logger.warn(
        { tool: tool.name, reason: verify.failure },
        "verify failed: running the bound rollback",
      );
      const rollback = await runStep(deps, request, "rollback", plan.rollbackCommand);
      blocks.push(stepText("rollback", rollback.text));
      report.rollback = rollback.summary;
      if (rollback.failure !== null) {
        blocks.push(
          `[ROLLBACK FAILED: ${rollback.failure}. It is not retried; the target may be in a partial state, check it by hand]`,
        );
        deps.logger.error({ tool: tool.name, reason: rollback.failure }, "rollback failed; not retried");
      }
    } else {
      const why = plan.rollbackCommand === "" ? "no rollback command was bound" : "auto_rollback is off";
      blocks.push(`[verify failed: ${verify.failure}; no rollback ran (${why})]`);
    }
  }
  report.text = joinBlocks(blocks);
  return report;
}

type StepAction = "confirm_verify" | "confirm_rollback";

/** A step's summary: what is not given did not happen (not run, not refused, no exit status). */
function stepSummary(action: StepAction, fields: Partial<StepSummary>, failed: boolean): StepSummary {
  return {
    action,
    ran: false,
    tier: 3,
    denied: false,
    exit_code: null,
    timed_out: false,
    ...fields,
    failed,
  };
}

async function runStep(
  deps: FollowUpDeps,
  request: FollowUpRequest,
  kind: StepKind,
  command: string,
): Promise<StepResult> {
  const { settings, record } = deps;
  const { tool, ctx } = request;
  const action: StepAction = kind === "verify" ? "confirm_verify" : "confirm_rollback";
  const prepared = prepareStep(deps, request, action, command);
  if ("failure" in prepared) return prepared;

  // The same admission as any call: the deny list first, then the mode; no gate.
  const admission = deps.admit(tool, prepared.args, { clientId: ctx.clientId });
  if (!admission.admitted) {
    record(ctx, { ...refusalRecord(tool, admission), action });
    return {
      summary: stepSummary(action, { tier: admission.tier, denied: true }, true),
      text: admission.text,
      failure: "it was refused by policy",
    };
  }

  // Its own signal: a cancelled request must not cut a remediation short (the step's own timeout bounds it).
  const toolCtx: ToolContext = {
    signal: new AbortController().signal,
    requestId: ctx.requestId,
    clientId: ctx.clientId,
    admitted: { policyText: admission.policyText, tier: admission.tier },
    progress: () => undefined,
  };
  const work = await performWork(tool, prepared.args, toolCtx, settings);
  const base = {
    tool: tool.name,
    tier: admission.tier,
    classification: admission.classification,
    reason: admission.reason,
    args: admission.auditArgs,
    action,
  } as const;
  if (work.threw) {
    record(ctx, { ...base, text: work.text, outcome: "error" });
    return {
      summary: stepSummary(action, { ran: true, tier: admission.tier }, true),
      text: work.text,
      failure: "it failed to run",
    };
  }
  record(ctx, {
    ...base,
    text: work.text,
    exitCode: work.exitCode,
    outcome: "ok",
    timedOut: work.timedOut,
    truncated: work.truncated,
  });
  const failure = stepFailure(work, kind === "verify" ? request.plan.verifyExpect : "");
  return {
    summary: stepSummary(
      action,
      { ran: true, tier: admission.tier, exit_code: work.exitCode, timed_out: work.timedOut },
      failure !== null,
    ),
    text: work.text,
    failure,
  };
}

/**
 * The step's arguments, derived from the confirmed call's and validated like any call's; a step
 * that cannot be prepared, or whose arguments are invalid, is recorded and failed here.
 */
function prepareStep(
  deps: FollowUpDeps,
  request: FollowUpRequest,
  action: StepAction,
  command: string,
): { args: unknown } | StepResult {
  const { settings, record } = deps;
  const { tool, ctx } = request;
  let raw: unknown;
  try {
    if (!tool.followUp) throw RelayError.untyped(`${tool.name} cannot run verify or rollback commands`);
    raw = tool.followUp(request.args, command);
  } catch (err) {
    const text = errorText(err);
    const classification = classifyLoose(tool, command, deps.classifier, settings.maxInput);
    record(ctx, {
      tool: tool.name,
      tier: classification.tier,
      classification,
      reason: "internal error",
      args: {},
      text,
      outcome: "error",
      action,
    });
    return {
      summary: stepSummary(action, { tier: classification.tier }, true),
      text,
      failure: "it could not be prepared",
    };
  }
  const parsed = tool.parse(raw);
  if (parsed.ok) return { args: parsed.value };
  const classification = classifyLoose(tool, raw, deps.classifier, settings.maxInput);
  const text = deniedText(classification.tier, `invalid arguments: ${parsed.error.join("; ")}`);
  record(ctx, {
    tool: tool.name,
    tier: classification.tier,
    classification,
    reason: "invalid arguments",
    args: {},
    text,
    outcome: "denied",
    action,
  });
  return {
    summary: stepSummary(action, { tier: classification.tier, denied: true }, true),
    text,
    failure: "its arguments were invalid",
  };
}

/** Why a step that ran counts as failed, or null: `expect` is text a verify's output must hold ("" for none). */
function stepFailure(
  work: { timedOut: boolean; exitCode: number | null; body: string },
  expect: string,
): string | null {
  if (work.timedOut) return "it timed out";
  if (work.exitCode === null) return "it reported no exit status";
  if (work.exitCode !== 0) return `exit status ${work.exitCode}`;
  if (expect !== "" && !work.body.includes(expect)) return "the expected text is not in its output";
  return null;
}
