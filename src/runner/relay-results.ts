import { redactArgs } from "../audit/index.js";
import { RelayError, tierName, truncateUtf8 } from "../core/index.js";
import type { Classification } from "../policy/index.js";
import { deniedText, errorText } from "./format.js";
import type { Finish } from "./record.js";
import type { StructuredResult } from "./structured.js";
import type { Tool } from "./tool.js";

/**
 * The records of the calls the runner (relay.ts) answers without running them: an unknown tool,
 * invalid arguments, a message too large to read, a broken invariant. Each is built from values
 * alone, so what a refusal records can be read apart from the pipeline that reaches it.
 */

const MAX_PROBLEMS_TEXT = 1000;

/** A call naming no registered tool: the caller's mistake, shown as a ValueError. */
export function unknownToolFinish(toolName: string, raw: unknown, classification: Classification): Finish {
  return {
    tool: "unknown_tool",
    tier: classification.tier,
    classification,
    reason: "unknown tool",
    args: redactArgs({ name: toolName, arguments: raw }),
    text: errorText(new RelayError("ValueError", `unknown tool: ${truncateUtf8(toolName, 200).text}`)),
    outcome: "denied",
  };
}

/** Arguments the tool's schema refused (ADR 0002): refused and audited, with the problems named. */
export function invalidArgsFinish(
  tool: Tool,
  raw: unknown,
  problems: readonly string[],
  classification: Classification,
): Finish {
  const detail = truncateUtf8(problems.join("; "), MAX_PROBLEMS_TEXT).text;
  const rawArgs = (
    raw !== null && typeof raw === "object" && !Array.isArray(raw) ? raw : { arguments: raw }
  ) as Record<string, unknown>;
  return {
    tool: tool.name,
    tier: classification.tier,
    classification,
    reason: "invalid arguments",
    args: redactArgs(tool.auditInvalid ? safeAuditInvalid(tool, rawArgs) : rawArgs),
    text: deniedText(classification.tier, `invalid arguments: ${detail}`),
    outcome: "denied",
  };
}

function safeAuditInvalid(tool: Tool, raw: Record<string, unknown>): Record<string, unknown> {
  try {
    return tool.auditInvalid?.(raw) ?? {};
  } catch {
    // The mapping exists to hide a credential: when it fails, record nothing rather than the raw input.
    return {};
  }
}

/** A message too large to read at all: unscanned, so Tier 3, and refused like any input over the bound. */
export function oversizedFinish(
  toolName: string | null,
  known: boolean,
  messageBytes: number,
  maxInput: number,
): Finish {
  const reason = `input of ${messageBytes} bytes exceeds RELAY_SHELL_MAX_INPUT (${maxInput})`;
  return {
    tool: known ? (toolName as string) : "unknown_tool",
    tier: 3,
    classification: { tier: 3, basis: "default", part: "" },
    reason: "input too large",
    args: known
      ? { message_bytes: messageBytes }
      : redactArgs({ name: toolName ?? "", message_bytes: messageBytes }),
    text: deniedText(3, reason),
    outcome: "denied",
  };
}

/** A broken invariant inside the pipeline, recorded as an internal error of the call. */
export function internalErrorFinish(toolName: string, known: boolean, err: unknown): Finish {
  return {
    tool: known ? toolName : "unknown_tool",
    tier: 3,
    classification: { tier: 3, basis: "default", part: "" },
    reason: "internal error",
    args: {},
    text: errorText(err),
    outcome: "error",
  };
}

/** The answer when even the record of an internal error failed: the error, described without a record. */
export function unrecordedError(
  toolName: string,
  err: unknown,
): { text: string; structured: StructuredResult } {
  return {
    text: errorText(err),
    structured: {
      tool: toolName,
      tier: 3,
      tier_name: tierName(3),
      basis: "default",
      basis_part: "",
      denied: false,
      reason: "internal error",
      exit_code: null,
      timed_out: false,
      truncated: false,
      action: null,
      notices: [],
    },
  };
}

/** The classifier's basis as a gate shows it to a human: `rule: part`. */
export function basisOf(classification: Classification): string {
  return classification.part === ""
    ? classification.basis
    : `${classification.basis}: ${classification.part}`;
}

/**
 * Base record fields with a gate's facts added to the (redacted) args. The
 * facts are the relay's own (request and lease ids, the approver the
 * allowed-signers file names), never the caller's text, so they are recorded
 * as they are: redacting them would cost every leased read for nothing.
 */
export function withExtra<T extends { args: Record<string, unknown> }>(
  base: T,
  extra: Record<string, unknown>,
): T {
  return { ...base, args: { ...base.args, ...extra } };
}
