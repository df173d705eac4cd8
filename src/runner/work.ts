import type { Settings } from "../config/index.js";
import {
  markStage,
  neutralizeTerminalOutput,
  openSequenceStart,
  type TerminalOutputMode,
  type Truncated,
} from "../core/index.js";
import { formatFanout } from "./fanout.js";
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
      /** Terminal control sequences removed from the body (ADR 0016). */
      terminalRemoved: number;
      fields?: Record<string, unknown>;
      auditExtra?: Record<string, unknown>;
    };

/**
 * Run a tool's work and put its outcome into the result grammar: whatever it
 * throws becomes `[ERROR …]`; the body is neutralized for a terminal (ADR
 * 0016), bounded, then prefixed with the exit status. Neutralizing comes
 * first so the budget counts the bytes the client receives.
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
    markStage("tool_result");
  } catch (err) {
    // An error message can quote the host (an SSH disconnect reason): it gets the same treatment.
    return { threw: true, text: neutralizeTerminalOutput(errorText(err), settings.terminalOutput).text };
  }
  const limit = clampOutput(tool.budget(args), settings);
  // A fan-out's hosts are neutralized and fitted one by one, inside its JSON object.
  const fanout =
    outcome.fanout === undefined ? null : formatFanout(outcome.fanout, limit, settings.terminalOutput);
  if (fanout !== null) outcome = { ...outcome, body: fanout.body, json: true };
  const base = {
    threw: false as const,
    json: outcome.json === true,
    terminalRemoved: (fanout?.terminalRemoved ?? 0) + (outcome.terminalRemoved ?? 0),
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
  const clean = neutralizeTerminalOutput(outcome.body, settings.terminalOutput);
  const bounded = closeCut(boundBody(clean.text, limit, outcome.producedBytes), settings.terminalOutput);
  const exitCode = outcome.exitCode ?? null;
  markStage("format");
  return {
    ...base,
    terminalRemoved: base.terminalRemoved + clean.removed,
    text: exitCode === null ? bounded.text : exitPrefixed(bounded.text, exitCode),
    body: outcome.body,
    exitCode,
    truncated: bounded.truncated,
    timedOut: false,
  };
}

const MARKER = "\n\n[TRUNCATED - ";

/**
 * The budget may cut through a colour sequence `safe` kept: drop the
 * partial sequence, so the marker after it is not read as its end.
 */
function closeCut(bounded: Truncated, mode: TerminalOutputMode): Truncated {
  if (!bounded.truncated || mode === "raw") return bounded;
  const at = bounded.text.lastIndexOf(MARKER);
  if (at === -1) return bounded;
  const open = openSequenceStart(bounded.text.slice(0, at));
  if (open === -1) return bounded;
  return { ...bounded, text: bounded.text.slice(0, open) + bounded.text.slice(at) };
}
