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
import type { ForeignFields, Tool, ToolContext, ToolOutcome } from "./tool.js";

/**
 * Every string of foreign fields (and every key: a name from a receiver can
 * be one) neutralized for a terminal, the body written from the result, and
 * the count of what was removed (the body restates the same text, so its
 * sequences are these and are not counted twice).
 */
function neutralizeFields(
  foreign: ForeignFields,
  mode: TerminalOutputMode,
): { fields: Record<string, unknown>; body: string; removed: number } {
  let removed = 0;
  const clean = (text: string): string => {
    const out = neutralizeTerminalOutput(text, mode);
    removed += out.removed;
    return out.text;
  };
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") return clean(value);
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [clean(k), walk(v)]));
    }
    return value;
  };
  const fields = walk(foreign.fields) as Record<string, unknown>;
  return { fields, body: foreign.body(fields), removed };
}

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
  return shapeWork(tool, args, outcome, settings);
}

/** What a tool's work came back with, in the result grammar: performWork's second half. */
export function shapeWork(tool: Tool, args: unknown, returned: ToolOutcome, settings: Settings): WorkResult {
  let outcome = returned;
  const limit = clampOutput(tool.budget(args), settings);
  // A fan-out's hosts are neutralized and fitted one by one, inside its JSON object.
  const fanout =
    outcome.fanout === undefined ? null : formatFanout(outcome.fanout, limit, settings.terminalOutput);
  if (fanout !== null) outcome = { ...outcome, body: fanout.body, json: true };
  // Fields from elsewhere are neutralized here, and the body that restates them is written from the result.
  const foreign =
    outcome.foreign === undefined ? null : neutralizeFields(outcome.foreign, settings.terminalOutput);
  if (foreign !== null) outcome = { ...outcome, body: foreign.body, fields: foreign.fields };
  const base = {
    threw: false as const,
    json: outcome.json === true,
    terminalRemoved: (fanout?.terminalRemoved ?? 0) + (foreign?.removed ?? 0),
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
