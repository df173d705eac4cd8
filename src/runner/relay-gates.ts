import type { AuditAction } from "../audit/index.js";
import type { FollowUpPlan } from "../broker/index.js";
import type { Admit } from "./admission.js";
import { deniedText } from "./format.js";
import type { CallBase, Finish } from "./record.js";
import { basisOf, withExtra } from "./relay-results.js";
import type { CallIdentity, Gate, GateVerdict, ToolContext } from "./tool.js";

/** A call admission let through. */
type Admitted = Extract<ReturnType<Admit>, { admitted: true }>;

/** What the gates agreed on for a call they all let through. */
export interface Passed {
  /** The audit action the last gate that named one named. */
  action: AuditAction | undefined;
  confirmed: boolean;
  consented: boolean;
  followUps: FollowUpPlan | undefined;
  /** Facts the gates add to the call's record. */
  extra: Record<string, unknown> | undefined;
}

/** The call as the gates see it: what admission decided, and the arguments it decided on. */
interface GatedCall {
  tool: string;
  admission: Admitted;
  args: unknown;
  session: string;
}

/**
 * Step 6 of the pipeline: the gates, in order, add friction to what policy admitted; they never
 * widen it. The first challenge or refusal ends the call with its record; a gate that proceeds may
 * hand the tool an approval (set on `toolCtx`), bind follow-ups for the gates after it, and add
 * facts to the record.
 */
export async function runGates(
  gates: readonly Gate[],
  call: GatedCall,
  toolCtx: ToolContext,
  base: CallBase,
  action: AuditAction | undefined,
): Promise<{ stopped: Finish } | { passed: Passed }> {
  const passed: Passed = {
    action,
    confirmed: false,
    consented: false,
    followUps: undefined,
    extra: undefined,
  };
  const releases: Array<() => void | Promise<void>> = [];
  for (const gate of gates) {
    const verdict = await gate.check(identityOf(call, passed.followUps), toolCtx);
    if (verdict.kind !== "proceed") {
      // A later gate stopped the call: what the earlier ones spent for it is given back.
      // Awaited, so a retry that follows the answer finds what was given back, on any relay.
      for (const release of releases) await release();
      return { stopped: stoppedFinish(verdict, base, call.admission) };
    }
    absorb(passed, verdict, toolCtx);
    if (verdict.release) releases.push(verdict.release);
  }
  return { passed };
}

function identityOf(call: GatedCall, followUps: FollowUpPlan | undefined): CallIdentity {
  const { admission } = call;
  return {
    tool: call.tool,
    policyText: admission.policyText,
    auditArgs: admission.rawAuditArgs,
    tier: admission.tier,
    basis: basisOf(admission.classification),
    args: call.args,
    session: call.session,
    policy: admission.policy,
    ...(followUps ? { followUps } : {}),
  };
}

/** The record of a call a gate challenged or refused: nothing ran, so no exit status and no notice. */
function stoppedFinish(
  verdict: Exclude<GateVerdict, { kind: "proceed" }>,
  base: CallBase,
  admission: Admitted,
): Finish {
  const recorded = verdict.auditExtra ? withExtra(base, verdict.auditExtra) : base;
  if (verdict.kind === "challenge") {
    return {
      ...recorded,
      text: verdict.text,
      outcome: verdict.outcome ?? "confirm_required",
      action: verdict.action,
    };
  }
  return {
    ...recorded,
    reason: verdict.reason,
    text: deniedText(admission.tier, verdict.reason),
    outcome: "denied",
    action: verdict.action,
  };
}

/** What a gate that proceeds adds: an action, an approval for the tool, follow-ups, facts. */
function absorb(
  passed: Passed,
  verdict: Extract<GateVerdict, { kind: "proceed" }>,
  toolCtx: ToolContext,
): void {
  if (verdict.action) passed.action = verdict.action;
  if (verdict.action === "confirm_execute") passed.confirmed = true;
  if (verdict.action === "consent_execute") passed.consented = true;
  if (verdict.followUps) passed.followUps = verdict.followUps;
  if (verdict.consent) toolCtx.consent = verdict.consent;
  if (verdict.auditExtra) passed.extra = { ...passed.extra, ...verdict.auditExtra };
}
