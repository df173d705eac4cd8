import { type AuditLog, redactArgs } from "../audit/index.js";
import type { Settings } from "../config/index.js";
import { describeError, markStage, type Tier, tierName, utf8Length } from "../core/index.js";
import {
  assessTier,
  type Classification,
  type Classifier,
  decide,
  type EffectivePolicy,
  type PolicyBook,
  policyConfigOf,
  settingsPolicyBook,
  targetLines,
} from "../policy/index.js";
import { deniedText } from "./format.js";
import { decideByPolicy } from "./host-policies.js";
import type { CallBase, Finish } from "./record.js";
import type { CallScope, TierFloor, Tool } from "./tool.js";

/** Room for the tool name and a space in the deny probe (docs/wire-contract.md §14.9). */
const PROBE_SLACK = 256;

export interface AdmissionDeps {
  settings: Settings;
  classifier: Classifier;
  audit: AuditLog;
  /** The policies in force (default: the settings' one policy for every call). */
  policies?: PolicyBook;
}

interface Admitted {
  admitted: true;
  policyText: string;
  /** Unredacted: the target, for the gates and the op-key only. */
  rawAuditArgs: Record<string, unknown>;
  auditArgs: Record<string, unknown>;
  classification: Classification;
  tier: Tier;
  reason: string;
  /** The policy that admitted it (for a split fan-out, the policy of the hosts that run). */
  policy: EffectivePolicy;
  /** Hosts of a split fan-out their policy refused or holds, by the name the call gave. */
  hostRefusals?: ReadonlyMap<string, Error>;
  /** The label of the allow pattern that admitted it, if one did (policy_explain). */
  matched: string | null;
}

interface Refused {
  admitted: false;
  auditArgs: Record<string, unknown>;
  classification: Classification;
  tier: Tier;
  /** The reason recorded in structuredContent. */
  reason: string;
  /** The `[DENIED …]` text returned to the caller. */
  text: string;
  /** The label of the deny pattern that refused it, if one did (policy_explain). */
  matched?: string | null;
  /** The policy that refused it; absent when no policy was reached (unscanned input). */
  policy?: EffectivePolicy;
}

export type Admit = (tool: Tool, args: unknown, scope: CallScope) => Admitted | Refused;
export type { Admitted, Refused };

/** What the record of an admitted call starts from: the decision and the redacted arguments. */
export function admittedBase(tool: Tool, admission: Admitted): CallBase {
  return {
    tool: tool.name,
    tier: admission.tier,
    classification: admission.classification,
    args: admission.auditArgs,
    reason: admission.reason,
  };
}

/** What is recorded of a call admission refused: it did not run, so it has no exit status. */
export function refusalRecord(tool: Tool, refused: Refused): Finish {
  return {
    tool: tool.name,
    tier: refused.tier,
    classification: refused.classification,
    reason: refused.reason,
    args: refused.auditArgs,
    text: refused.text,
    outcome: "denied",
  };
}

/**
 * Admission of one validated call, shared by the call itself and by the
 * verify/rollback commands bound to a confirmation, so that no command ever
 * reaches a tool by a path that skips it: the input bound before any scan,
 * then classification, the deny list, the mode, and the fail-closed audit
 * check. Gates are not part of it; they run after, on the main call only.
 */
export function createAdmission(deps: AdmissionDeps): Admit {
  const { settings, classifier, audit } = deps;
  const policies = deps.policies ?? settingsPolicyBook(settings);
  const maxProbe = settings.maxInput + PROBE_SLACK;
  return (tool, args, scope) => {
    const policyText = tool.policyText(args, scope);
    const rawAuditArgs = tool.auditArgs(args, scope);
    const auditArgs = redactArgs(rawAuditArgs);

    // Unscanned input counts as the highest tier (ADR 0003).
    const inputBytes = utf8Length(policyText);
    // What cannot be scanned or bounded is refused as Tier 3 before any classification.
    const unscanned = (reason: string, text: string): Refused => ({
      admitted: false,
      auditArgs,
      classification: { tier: 3, basis: "default", part: "" },
      tier: 3,
      reason,
      text: deniedText(3, text),
    });
    if (inputBytes > settings.maxInput) {
      return unscanned(
        "input too large",
        `input of ${inputBytes} bytes exceeds RELAY_SHELL_MAX_INPUT (${settings.maxInput})`,
      );
    }

    // Targets the deny list sees besides the probe (ADR 0020): unscanned text refuses here too.
    const targets = callTargets(tool, args);
    const targetBytes = targets === null ? 0 : targets.reduce((sum, line) => sum + utf8Length(line), 0);
    if (targets === null) {
      return unscanned(
        "targets unknown",
        "the targets of the call could not be determined for the deny list",
      );
    }
    if (targetBytes > settings.maxInput) {
      return unscanned(
        "targets too large",
        `targets of ${targetBytes} bytes exceed RELAY_SHELL_MAX_INPUT (${settings.maxInput})`,
      );
    }

    markStage("prepare");
    // The tool's floor (an interactive program, an edited terminal line); one it cannot compute refuses.
    const floor = callFloor(tool, args, scope);
    if (floor === undefined)
      return unscanned("floor unknown", "the least tier of the call could not be determined");
    const classification = raised(
      assessTier(tool.tier, policyText, classifier, tool.programInput?.(args)),
      floor,
    );
    markStage("classify");
    // The policy of the call's hosts (the default for a local call), or of each group of them;
    // each decides the deny list first, then max_tier, then the mode.
    const ruled = decideByPolicy(policies, tool, args, classification, (policy) =>
      decide(policyConfigOf(policy, maxProbe), tool.name, policyText, classification, targets),
    );
    if (ruled.kind === "unknown")
      return unscanned("hosts unknown", "the hosts of the call could not be resolved to their policies");
    if (ruled.kind === "none") {
      const tier = classification.tier;
      return {
        admitted: false,
        auditArgs,
        classification,
        tier,
        reason: ruled.reason,
        text: deniedText(tier, ruled.reason),
      };
    }
    const { policy, decision, hostRefusals } = ruled;
    markStage("policy");
    // The record names the policy that decided, unless it is the settings' own (records as before).
    const recorded =
      policyConfigOf(policy, maxProbe).name === null ? auditArgs : { ...auditArgs, policy: policy.name };
    const refuse = (reason: string): Refused => ({
      admitted: false,
      auditArgs: recorded,
      classification,
      tier: decision.tier,
      reason,
      text: deniedText(decision.tier, reason),
      matched: decision.matched,
      policy,
    });
    if (!decision.allowed) return refuse(decision.reason);

    // Nothing runs that cannot be recorded (ADR 0002): a call that acts (runs a
    // process, writes to a terminal, dials a host) whatever its tier; only the
    // relay's own introspection keeps answering. reserve is also the probe that
    // admits the first call once the file takes records again (ADR 0014).
    const acts = decision.tier > 0 || !tool.introspection;
    if (settings.auditFailClosed && acts && !audit.reserve()) {
      return refuse(
        decision.tier > 0
          ? "the audit log cannot be written; RELAY_SHELL_AUDIT_FAIL_CLOSED refuses calls above Tier 0 until it can"
          : "the audit log cannot be written; RELAY_SHELL_AUDIT_FAIL_CLOSED refuses every call that acts until it can",
      );
    }
    markStage("audit_reserve");
    return {
      admitted: true,
      policyText,
      rawAuditArgs,
      auditArgs: recorded,
      classification,
      tier: decision.tier,
      reason: decision.reason,
      policy,
      ...(hostRefusals ? { hostRefusals } : {}),
      matched: decision.matched,
    };
  };
}

/** The tool's floor for this call: null when it has none, undefined when it failed to say (fail closed). */
function callFloor(tool: Tool, args: unknown, scope: CallScope): TierFloor | null | undefined {
  if (!tool.tierFloor) return null;
  try {
    return tool.tierFloor(args, scope);
  } catch {
    return undefined;
  }
}

/** The classification raised to the floor when the floor is higher; the classifier's verdict wins ties. */
function raised(found: Classification, floor: TierFloor | null): Classification {
  return floor !== null && floor.tier > found.tier ? floor : found;
}

/** The call's target lines, or null when the tool failed to name them (fail closed). */
function callTargets(tool: Tool, args: unknown): string[] | null {
  if (!tool.targets) return [];
  try {
    return targetLines(tool.targets(args));
  } catch {
    return null;
  }
}

/**
 * The tier of a call whose arguments failed validation, from every string it
 * contains, so the record shows what the caller tried to run.
 */
export function classifyLoose(
  tool: Tool | undefined,
  raw: unknown,
  classifier: Classifier,
  maxInput: number,
): Classification {
  const parts: string[] = [];
  let budget = maxInput;
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
  const found = assessTier(spec, parts.join("\n"), classifier);
  // Strings pulled out of arguments that did not validate are not the program a tool would run:
  // they can raise a tier, never prove a read (ADR 0033).
  return found.tier === 0 && spec.kind === "heuristic" ? { tier: 1, basis: "default", part: "" } : found;
}

export type FollowUpVetter = (toolName: string, args: unknown, command: string) => string | null;

/**
 * Would `command`, run as a verify or rollback step of the call
 * `toolName(args)`, be admitted right now? null when yes, otherwise why not.
 * The arm step of the confirmation broker asks before it binds a command to
 * a token. It uses the same admission as every call and decides only: it
 * runs and records nothing.
 */
export function createFollowUpVetter(deps: AdmissionDeps & { tools: readonly Tool[] }): FollowUpVetter {
  const admit = createAdmission(deps);
  const byName = new Map(deps.tools.map((t) => [t.name, t]));
  return (toolName, args, command) => {
    try {
      const tool = byName.get(toolName);
      if (!tool) return `${toolName} is not a registered tool`;
      if (!tool.followUp) return `${toolName} cannot run verify or rollback commands`;
      const parsed = tool.parse(tool.followUp(args, command));
      if (!parsed.ok) return `invalid arguments: ${parsed.error.join("; ")}`;
      // The vetter runs on the arm step's behalf, with no client: only tools without per-client state can be armed.
      const admission = admit(tool, parsed.value, { clientId: "" });
      if (admission.admitted) return null;
      return `${toolName} would refuse it as tier ${admission.tier} (${tierName(admission.tier)}): ${admission.reason}`;
    } catch (err) {
      // Fail closed: a command that cannot be vetted is not bound.
      const { type, message } = describeError(err);
      return `it could not be checked (${type}: ${message})`;
    }
  };
}
