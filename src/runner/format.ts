import {
  clamp,
  describeError,
  RelayError,
  type Tier,
  type Truncated,
  tierName,
  truncateUtf8,
  utf8Length,
} from "../core/index.js";

/**
 * The result grammar of docs/wire-contract.md §1.2. This module and the relay are the only
 * places that write these bracketed forms.
 */
export function deniedText(tier: Tier, reason: string): string {
  return `[DENIED tier ${tier} (${tierName(tier)}): ${reason}]`;
}

export function errorText(err: unknown): string {
  if (err instanceof RelayError && err.isUntyped) return `[ERROR: ${err.message}]`;
  const { type, message } = describeError(err);
  return `[ERROR: ${pythonicType(type, err)}: ${message}]`;
}

/** A host of a fan-out that could not be reached, and why. */
function unreachableText(err: unknown): string {
  const { type, message } = describeError(err);
  return `[UNREACHABLE: ${type}: ${message}]`;
}

/**
 * Why a host of a fan-out has no output: its own policy refused the command
 * or holds it for a gate (docs/policy.md), or it could not be reached.
 */
export function hostFailureText(err: unknown): string {
  if (err instanceof RelayError && err.type === "PolicyDenied") return `[DENIED: ${err.message}]`;
  if (err instanceof RelayError && err.type === "PolicyHeld") return `[HELD: ${err.message}]`;
  return unreachableText(err);
}

export function timeoutText(seconds: number, suffix?: string): string {
  return suffix ? `[TIMEOUT after ${seconds}s] ${suffix}` : `[TIMEOUT after ${seconds}s]`;
}

export function exitPrefixed(body: string, exitCode: number): string {
  return `[exit ${exitCode}]\n${body}`;
}

/** Callers grep for Python's OS error class names; keep them for the common errno values. */
function pythonicType(type: string, err: unknown): string {
  if (type !== "Error" && type !== "SystemError") return type;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case "ENOENT":
      return "FileNotFoundError";
    case "EACCES":
    case "EPERM":
      return "PermissionError";
    case "ENOTDIR":
      return "NotADirectoryError";
    case "EISDIR":
      return "IsADirectoryError";
    case "EEXIST":
      return "FileExistsError";
    case "ETIMEDOUT":
      return "TimeoutError";
    default:
      return type;
  }
}

export interface OutputLimits {
  maxOutputHard: number;
}

/** clamp_output of docs/wire-contract.md §1.3. */
export function clampOutput(budget: number, limits: OutputLimits): number {
  return clamp(budget, 1024, limits.maxOutputHard);
}

/**
 * Byte-budget truncation that also reports what the work really produced:
 * a body already cut while draining still says how much there was.
 */
export function boundBody(body: string, limit: number, producedBytes?: number): Truncated {
  const cut = truncateUtf8(body, limit);
  if (producedBytes === undefined) return cut;
  const bodyBytes = cut.truncated ? cut.totalBytes : utf8Length(body);
  if (producedBytes <= bodyBytes) return cut;
  if (cut.truncated) {
    const marker = `[TRUNCATED - ${cut.totalBytes} bytes total, ${limit} shown]`;
    const real = `[TRUNCATED - ${producedBytes} bytes total, ${limit} shown]`;
    return {
      text: cut.text.slice(0, cut.text.length - marker.length) + real,
      truncated: true,
      totalBytes: producedBytes,
    };
  }
  return {
    text: `${body}\n\n[TRUNCATED - ${producedBytes} bytes total, ${bodyBytes} shown]`,
    truncated: true,
    totalBytes: producedBytes,
  };
}

/** The broker's challenge (docs/wire-contract.md §7.2): the token, and how long it stays valid. */
export function confirmRequiredText(token: string, ttlSeconds: number): string {
  return (
    "[CONFIRM REQUIRED tier 3 (IRREVERSIBLE): this irreversible operation needs a second step. " +
    `Call operation_confirm(token="${token}") then re-issue this exact call within ${ttlSeconds}s.]`
  );
}

/**
 * The text of a verify or rollback step inside the confirmed call's result:
 * its own result with the step named in the bracket, `[exit 1]` becoming
 * `[verify exit 1]` and `[DENIED …]` becoming `[rollback DENIED …]`.
 */
export function stepText(step: "verify" | "rollback", text: string): string {
  return text.startsWith("[") ? `[${step} ${text.slice(1)}` : `[${step}]\n${text}`;
}
