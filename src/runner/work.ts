import type { Settings } from "../config/index.js";
import { boundBody, clampOutput, errorText, exitPrefixed, timeoutText } from "./format.js";
import type { Tool, ToolContext, ToolOutcome } from "./tool.js";

export type WorkResult =
  | { threw: true; text: string }
  | {
      threw: false;
      /** Bounded text with the `[exit N]` prefix: what is audited and returned. */
      text: string;
      /** The work's own body before the runner's bound (the verify predicate reads it). */
      body: string;
      exitCode: number | null;
      truncated: boolean;
      timedOut: boolean;
      json: boolean;
      fields?: Record<string, unknown>;
      auditExtra?: Record<string, unknown>;
    };

/**
 * Run a tool's work and put its outcome into the result grammar: whatever it
 * throws becomes `[ERROR …]`; the body is bounded, then prefixed with the
 * exit status.
 */
export async function performWork(
  tool: Tool,
  args: unknown,
  ctx: ToolContext,
  settings: Settings,
): Promise<WorkResult> {
  let outcome: ToolOutcome;
  try {
    outcome = await tool.run(args, ctx);
  } catch (err) {
    return { threw: true, text: errorText(err) };
  }
  const base = {
    threw: false as const,
    json: outcome.json === true,
    ...(outcome.fields ? { fields: outcome.fields } : {}),
    ...(outcome.auditExtra ? { auditExtra: outcome.auditExtra } : {}),
  };
  if (outcome.timedOutAfter !== undefined) {
    return {
      ...base,
      text: timeoutText(outcome.timedOutAfter, outcome.timeoutSuffix),
      body: "",
      exitCode: null,
      truncated: false,
      timedOut: true,
    };
  }
  const limit = clampOutput(tool.budget(args), settings);
  const bounded = boundBody(outcome.body, limit, outcome.producedBytes);
  const exitCode = outcome.exitCode ?? null;
  return {
    ...base,
    text: exitCode === null ? bounded.text : exitPrefixed(bounded.text, exitCode),
    body: outcome.body,
    exitCode,
    truncated: bounded.truncated,
    timedOut: false,
  };
}
