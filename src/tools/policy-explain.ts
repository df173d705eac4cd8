import type { Settings } from "../config/index.js";
import type { TierSpec } from "../policy/index.js";
import { annotationsFor, type CallScope, clampOutput, defineTool, type Tool } from "../runner/index.js";

/** The runner's answer for a call it was not asked to run (Relay.explain). */
export type ExplainCall = (tool: string, args: unknown, scope: CallScope) => Record<string, unknown>;

const READ_ONLY: TierSpec = { kind: "fixed", tier: 0 };

/**
 * policy_explain (docs/tools.md#policy_explain): what a call would get from
 * the runner, decided the way the call itself would be, with nothing run.
 * The tool only forwards the question; the runner decides (`explain`, late
 * bound since the runner is built from the tools).
 */
export function createPolicyExplainTool(deps: { settings: Settings; explain: ExplainCall }): Tool {
  const { settings } = deps;
  return defineTool({
    name: "policy_explain",
    title: "Explain what a call would get",
    description:
      "Say what a tool call would get without making it: its tier and why, the policy that governs it (name " +
      "and source), the verdict (admitted, refused and why, needs a Tier-3 confirmation, or held for signed " +
      "consent), the notices it would carry and the deny or allow pattern that decided, named by where it is " +
      "written. Nothing runs and no host is dialled. Read-only.",
    params: {
      tool: { type: "string", description: "the tool the call would be made to, e.g. ssh_fanout" },
      arguments: {
        type: "object",
        description: "the arguments of that call, as they would be sent",
        default: {},
      },
    },
    tier: READ_ONLY,
    introspection: true,
    annotations: annotationsFor(READ_ONLY, { openWorld: false }),
    resultFields: {
      verdict: { type: "string", description: "admitted, refused, needs_confirmation or held_for_consent" },
    },
    budget: () => clampOutput(settings.maxOutput, settings),
    policyText: () => "",
    auditArgs: (a) => ({ tool: a.tool, arguments: a.arguments }),
    async run(a, ctx) {
      const answer = deps.explain(a.tool, a.arguments, { clientId: ctx.clientId });
      return { body: JSON.stringify(answer, null, 2), json: true, fields: { verdict: answer.verdict } };
    },
  });
}
