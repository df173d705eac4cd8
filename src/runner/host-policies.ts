import { RelayError } from "../core/index.js";
import type { Classification, EffectivePolicy, PolicyBook, PolicyDecision } from "../policy/index.js";
import type { Tool } from "./tool.js";

/**
 * Which policies govern a call (docs/policy.md): one for a local call or a
 * call to one host, or one per group of hosts when a fan-out spans hosts
 * under different policies. `unknown` when the tool could not name its hosts.
 */
type CallPolicies =
  | { kind: "one"; policy: EffectivePolicy }
  | { kind: "split"; groups: Array<{ policy: EffectivePolicy; hosts: string[] }> }
  | { kind: "unknown" };

function callPolicies(book: PolicyBook, tool: Tool, args: unknown): CallPolicies {
  // With one policy in force nothing needs resolving: today's configurations take no new path.
  if (!tool.hosts || book.all().length === 1) return { kind: "one", policy: book.default };
  let hosts: ReturnType<NonNullable<Tool["hosts"]>>;
  try {
    hosts = tool.hosts(args);
  } catch {
    return { kind: "unknown" };
  }
  const groups = new Map<string, { policy: EffectivePolicy; hosts: string[] }>();
  for (const { name, ref } of hosts) {
    const policy = book.forHost(ref);
    const group = groups.get(policy.name);
    if (group) group.hosts.push(name);
    else groups.set(policy.name, { policy, hosts: [name] });
  }
  const all = [...groups.values()];
  if (all.length === 0) return { kind: "one", policy: book.default };
  if (all.length === 1 && all[0]) return { kind: "one", policy: all[0].policy };
  return { kind: "split", groups: all };
}

/** A gate a policy may put in front of a call. */
export type PolicyGate = "confirmation" | "consent";

/**
 * The gate the call's policy puts in front of it, if any, as the gates
 * themselves decide: the Tier-3 confirmation first, then consent for all but
 * a fixed read-only tool (a command proven to only read is a read, and needs it).
 */
export function gateOf(policy: EffectivePolicy, classification: Classification): PolicyGate | null {
  if (policy.confirmTier3 && classification.tier === 3) return "confirmation";
  if (policy.consent && (classification.tier > 0 || classification.basis === "proven_read")) return "consent";
  return null;
}

const GATE_TEXT: Record<PolicyGate, string> = {
  confirmation: "a Tier-3 confirmation",
  consent: "signed consent",
};

/** A host of a split fan-out its policy holds for a gate one fan-out cannot carry for some hosts only. */
export class HostHeld extends RelayError {
  constructor(
    readonly gate: PolicyGate,
    policy: EffectivePolicy,
  ) {
    super(
      "PolicyHeld",
      `policy ${policy.name} holds it for ${GATE_TEXT[gate]}: run it on these hosts in a call of their own`,
      { code: policy.name },
    );
  }
}

/** A reason that names its policy: in a split fan-out every group's does, the default's too. */
function named(policy: EffectivePolicy, reason: string): string {
  return reason.startsWith("policy ") ? reason : `policy ${policy.name}: ${reason}`;
}

/** A split fan-out after each group's policy decided: the hosts that run and what the others get. */
interface SplitVerdict {
  /** The policy of the hosts that run (the first such group's), or null when none may run. */
  runnable: { policy: EffectivePolicy; decision: PolicyDecision } | null;
  /** Each host that does not run, by the name the call gave, and why (a PolicyDenied or PolicyHeld error). */
  refusals: Map<string, RelayError>;
  /** One line per group that does not run, for the refusal of a call none of whose hosts may run. */
  summary: string;
}

/**
 * Each group decided by its own policy: refused hosts are never dialled, and
 * hosts their policy would hold for a confirmation or consent are held back,
 * since one fan-out cannot carry a gate's answer for only some of its hosts;
 * they run in a fan-out of their own, where the gate applies to the call.
 */
function splitHosts(
  groups: ReadonlyArray<{ policy: EffectivePolicy; hosts: string[] }>,
  decideFor: (policy: EffectivePolicy) => PolicyDecision,
  classification: Classification,
): SplitVerdict {
  const refusals = new Map<string, RelayError>();
  const lines: string[] = [];
  let runnable: SplitVerdict["runnable"] = null;
  for (const { policy, hosts } of groups) {
    const decision = decideFor(policy);
    const hold = decision.allowed ? gateOf(policy, classification) : null;
    if (decision.allowed && hold === null) {
      runnable ??= { policy, decision };
      continue;
    }
    const error = hold
      ? new HostHeld(hold, policy)
      : new RelayError("PolicyDenied", named(policy, decision.reason), { code: policy.name });
    for (const host of hosts) refusals.set(host, error);
    lines.push(`${hosts.length} host(s) under ${error.message}`);
  }
  return { runnable, refusals, summary: lines.join("; ") };
}

/** What the policies in force decide for one call. */
export type PolicyRuling =
  | { kind: "unknown" }
  | { kind: "none"; reason: string }
  | {
      kind: "decided";
      policy: EffectivePolicy;
      decision: PolicyDecision;
      hostRefusals: ReadonlyMap<string, Error> | undefined;
    };

/**
 * The decision for a call: by its one policy, or, for a fan-out over hosts
 * under several, by each group's, running the hosts whose policy admits it
 * without a gate. `none` when no host of a split call may run it.
 */
export function decideByPolicy(
  book: PolicyBook,
  tool: Tool,
  args: unknown,
  classification: Classification,
  decideFor: (policy: EffectivePolicy) => PolicyDecision,
): PolicyRuling {
  const governing = callPolicies(book, tool, args);
  if (governing.kind === "unknown") return governing;
  if (governing.kind === "one") {
    const { policy } = governing;
    return { kind: "decided", policy, decision: decideFor(policy), hostRefusals: undefined };
  }
  const split = splitHosts(governing.groups, decideFor, classification);
  if (split.runnable === null)
    return { kind: "none", reason: `no host of the call may run it here: ${split.summary}` };
  return { kind: "decided", ...split.runnable, hostRefusals: split.refusals };
}
