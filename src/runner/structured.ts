import type { Tier } from "../core/index.js";
import type { Basis } from "../policy/index.js";
import type { Tool } from "./tool.js";

/** What the structuredContent says about one verify or rollback step (ADR 0010). */
export interface StepSummary {
  action: "confirm_verify" | "confirm_rollback";
  /** The command was admitted and its work invoked. */
  ran: boolean;
  tier: Tier;
  denied: boolean;
  exit_code: number | null;
  timed_out: boolean;
  /** For verify: the failure predicate held. For rollback: it did not complete with exit 0. */
  failed: boolean;
}

/** The fields every structuredContent carries (docs/wire-contract.md §14.15). */
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
  verify?: StepSummary;
  rollback?: StepSummary;
}

const COMMON_FIELDS: Record<string, Record<string, unknown>> = {
  tool: { type: "string", description: "tool name" },
  tier: { type: "integer", minimum: 0, maximum: 3, description: "risk tier 0..3" },
  tier_name: { type: "string", enum: ["READ_ONLY", "REVERSIBLE", "STATEFUL", "IRREVERSIBLE"] },
  basis: { type: "string", description: "the rule family that set the tier" },
  basis_part: { type: "string", description: "the part of the input that set the tier" },
  denied: { type: "boolean", description: "true when policy refused the call" },
  reason: { type: "string", description: "the policy decision's reason" },
  exit_code: { type: ["integer", "null"], description: "exit status; negative = killed by that signal" },
  timed_out: { type: "boolean" },
  truncated: { type: "boolean", description: "the text was cut to the output budget" },
  action: { type: ["string", "null"], description: "confirmation step recorded for this call" },
  notices: { type: "array", items: { type: "string" }, description: "risk notices appended to the text" },
};

const STEP_FIELD = {
  type: "object",
  description:
    "a verify or rollback command bound at arm time: {action, ran, tier, denied, exit_code, timed_out, failed}",
};

/** Present only on a confirmed call that carried verify/rollback commands. */
const OPTIONAL_FIELDS: Record<string, Record<string, unknown>> = {
  verify: STEP_FIELD,
  rollback: STEP_FIELD,
};

/** Present on every result whose work ran (ADR 0016). */
const TERMINAL_FIELD: Record<string, Record<string, unknown>> = {
  terminal_sequences_removed: {
    type: "integer",
    minimum: 0,
    description: "terminal control sequences removed from the output (RELAY_SHELL_TERMINAL_OUTPUT)",
  },
};

/** The outputSchema announced for a tool: the common fields plus its own. */
export function outputSchemaFor(tool: Tool): {
  type: "object";
  properties: Record<string, Record<string, unknown>>;
  required: string[];
} {
  return {
    type: "object",
    properties: {
      ...COMMON_FIELDS,
      ...TERMINAL_FIELD,
      ...(tool.followUp ? OPTIONAL_FIELDS : {}),
      ...tool.resultFields,
    },
    required: Object.keys(COMMON_FIELDS),
  };
}
