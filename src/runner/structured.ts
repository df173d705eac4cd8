import type { Tool } from "./tool.js";

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

/** The outputSchema announced for a tool: the common fields plus its own. */
export function outputSchemaFor(tool: Tool): {
  type: "object";
  properties: Record<string, Record<string, unknown>>;
  required: string[];
} {
  return {
    type: "object",
    properties: { ...COMMON_FIELDS, ...tool.resultFields },
    required: Object.keys(COMMON_FIELDS),
  };
}
