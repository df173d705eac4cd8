import type { Settings } from "../config/index.js";
import { foldHosts, tierName } from "../core/index.js";
import { BASIS_TEXT, type Classifier, type EffectivePolicy } from "../policy/index.js";
import { type Admit, type Admitted, classifyLoose, type Refused } from "./admission.js";
import { gateOf, HostHeld, type PolicyGate } from "./host-policies.js";
import { computeNotices } from "./notices.js";
import type { CallScope, Tool } from "./tool.js";

/** What a call would get, as policy_explain answers it (docs/tools.md#policy_explain). */
type Verdict = "admitted" | "refused" | "needs_confirmation" | "held_for_consent";

export interface ExplainDeps {
  settings: Settings;
  classifier: Classifier;
  admit: Admit;
  byName: ReadonlyMap<string, Tool>;
  /** RELAY_SHELL_POLICY_EXPLAIN_PATTERNS: the matched pattern's text may be shown, not only its name. */
  showPatterns: boolean;
}

/**
 * The same validation and admission a call gets, and what the gates after
 * them would ask, without running the call, dialling a host, planning a
 * token or opening a consent request. The answer names a deny or allow
 * pattern by where it was written (`deny[1] of tag:prod`), never by its text,
 * unless the operator allowed it.
 */
export function explainCall(
  deps: ExplainDeps,
  toolName: string,
  rawArgs: unknown,
  scope: CallScope,
): Record<string, unknown> {
  const tool = deps.byName.get(toolName);
  if (!tool) {
    const loose = classifyLoose(undefined, rawArgs, deps.classifier, deps.settings.maxInput);
    return refusedWithout(toolName, loose, `unknown tool ${JSON.stringify(toolName.slice(0, 200))}`);
  }
  const parsed = tool.parse(rawArgs);
  if (!parsed.ok) {
    const loose = classifyLoose(tool, rawArgs, deps.classifier, deps.settings.maxInput);
    return refusedWithout(toolName, loose, `invalid arguments: ${parsed.error.join("; ")}`);
  }
  const admission = deps.admit(tool, parsed.value, scope);
  return admission.admitted ? admitted(deps, toolName, admission) : refused(deps, toolName, admission);
}

function tierFields(c: { tier: Admitted["tier"]; classification: Admitted["classification"] }) {
  return {
    tier: c.tier,
    tier_name: tierName(c.tier),
    basis: c.classification.basis,
    basis_text: BASIS_TEXT[c.classification.basis],
  };
}

function refusedWithout(tool: string, classification: Admitted["classification"], reason: string) {
  return {
    tool,
    verdict: "refused" satisfies Verdict,
    reason,
    ...tierFields({ tier: classification.tier, classification }),
    policy: null,
    matched: null,
    notices: [],
  };
}

function policyFields(policy: EffectivePolicy | undefined) {
  return policy ? { name: policy.name, source: policy.source, mode: policy.mode } : null;
}

/** The matched pattern's name, and its text only when the operator allowed that. */
function matchedFields(
  deps: ExplainDeps,
  policy: EffectivePolicy | undefined,
  label: string | null | undefined,
) {
  if (!label) return { matched: null };
  const pattern = policy ? [...policy.deny, ...policy.allow].find((p) => p.label === label) : undefined;
  return deps.showPatterns && pattern
    ? { matched: label, matched_pattern: pattern.regex.source }
    : { matched: label };
}

function refused(deps: ExplainDeps, tool: string, admission: Refused) {
  return {
    tool,
    verdict: "refused" satisfies Verdict,
    reason: admission.reason,
    ...tierFields(admission),
    policy: policyFields(admission.policy),
    ...matchedFields(deps, admission.policy, admission.matched),
    notices: [],
  };
}

const GATE_VERDICT: Record<PolicyGate, Verdict> = {
  confirmation: "needs_confirmation",
  consent: "held_for_consent",
};

/** The gate that would stop an admitted call, in the runner's order: the confirmation, then consent. */
function gateVerdict(admission: Admitted): { verdict: Verdict; reason: string } {
  const { policy } = admission;
  const gate = gateOf(policy, admission.classification);
  if (gate === "confirmation")
    return { verdict: GATE_VERDICT[gate], reason: `policy ${policy.name} asks for a Tier-3 confirmation` };
  if (gate === "consent")
    return {
      verdict: GATE_VERDICT[gate],
      reason: `policy ${policy.name} asks for signed consent (a read may run on an open lease of this session)`,
    };
  return { verdict: "admitted", reason: admission.reason };
}

/** Hosts of a split fan-out that would not run, folded into ranges, by the policy that stops them. */
function heldBack(refusals: ReadonlyMap<string, Error> | undefined) {
  if (!refusals) return undefined;
  const byReason = new Map<string, { verdict: Verdict; hosts: string[] }>();
  for (const [host, err] of refusals) {
    const verdict = err instanceof HostHeld ? GATE_VERDICT[err.gate] : "refused";
    const known = byReason.get(err.message);
    if (known) known.hosts.push(host);
    else byReason.set(err.message, { verdict, hosts: [host] });
  }
  return [...byReason].map(([reason, { verdict, hosts }]) => ({
    hosts: foldHosts(hosts),
    host_count: hosts.length,
    verdict,
    reason,
  }));
}

function admitted(deps: ExplainDeps, tool: string, admission: Admitted) {
  const { policy } = admission;
  const gate = gateVerdict(admission);
  const notices =
    gate.verdict === "admitted"
      ? computeNotices({
          enabled: deps.settings.unsafeNotices,
          tier: admission.tier,
          basis: admission.classification.basis,
          mode: policy.mode,
          brokerOn: policy.confirmTier3,
          confirmed: false,
        })
      : [];
  const others = heldBack(admission.hostRefusals);
  return {
    tool,
    verdict: gate.verdict,
    reason: gate.reason,
    ...tierFields(admission),
    policy: policyFields(policy),
    ...matchedFields(deps, policy, admission.matched),
    ...(others ? { hosts_not_run: others } : {}),
    notices,
  };
}
