import { tierName } from "../core/index.js";
import type {
  Classification,
  Classifier,
  PolicyDecision,
  PolicyMode,
  ProgramInput,
  TierSpec,
} from "./types.js";

export interface PolicyConfig {
  mode: PolicyMode;
  /** Searched (unanchored) in the probe first, in every mode; null = no deny list. */
  deny: RegExp | null;
  /** Consulted only in guarded mode for Tier >= 2; null = no allow list. */
  allow: RegExp | null;
  /**
   * Longest probe, in UTF-16 code units, the operator regexes are run on, so
   * that a pathological pattern has a bounded input (Appendix B 9). The runner
   * refuses inputs over RELAY_SHELL_MAX_INPUT bytes before this point and
   * passes that limit plus room for the tool name, so no admitted byte is cut.
   */
  maxProbe: number;
}

// Python's str.isspace() set: what `.strip()` removes. It differs from
// String.prototype.trim (U+001C..U+001F and U+0085 in, U+FEFF out), and the
// probe must match what an operator's anchored pattern was written against.
function isPythonSpace(code: number): boolean {
  return (
    (code >= 0x09 && code <= 0x0d) ||
    (code >= 0x1c && code <= 0x20) ||
    code === 0x85 ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000
  );
}

/** Python `.strip()`, with index loops (a `\s+$` regex is quadratic on long blank runs). */
function pythonStrip(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isPythonSpace(text.charCodeAt(start))) start++;
  while (end > start && isPythonSpace(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end);
}

/** The text the deny and allow lists see: the tool name, a space, the policy text, stripped. */
export function policyProbe(tool: string, policyText: string): string {
  return pythonStrip(`${tool} ${policyText}`);
}

function searches(regex: RegExp, probe: string): boolean {
  // A global or sticky regex keeps lastIndex between calls and would skip
  // matches; search with a stateless copy instead of mutating shared settings.
  const stateless =
    regex.global || regex.sticky ? new RegExp(regex.source, regex.flags.replace(/[gy]/g, "")) : regex;
  return stateless.test(probe);
}

function assertMaxProbe(maxProbe: number): void {
  if (!Number.isSafeInteger(maxProbe) || maxProbe < 1) {
    throw new RangeError(`policy maxProbe must be a positive integer, got ${maxProbe}`);
  }
}

/**
 * Admission (CONTRACT §5.2): the deny list first in every mode, then the
 * mode. The classification is carried into the decision whatever the answer,
 * so a refused call still records its tier.
 */
export function decide(
  config: PolicyConfig,
  tool: string,
  policyText: string,
  classification: Classification,
): PolicyDecision {
  assertMaxProbe(config.maxProbe);
  const full = policyProbe(tool, policyText);
  const probe = full.length > config.maxProbe ? full.slice(0, config.maxProbe) : full;
  const { tier, basis, part } = classification;
  const verdict = (allowed: boolean, reason: string): PolicyDecision => ({
    allowed,
    tier,
    basis,
    part,
    reason,
  });
  const label = `Tier ${tier} (${tierName(tier)})`;

  if (config.deny !== null && searches(config.deny, probe)) {
    return verdict(false, "matched RELAY_SHELL_POLICY_DENY");
  }
  switch (config.mode) {
    case "readonly":
      return tier === 0 ? verdict(true, "permitted") : verdict(false, `readonly mode refuses ${label}`);
    case "guarded":
      if (tier < 2) return verdict(true, "permitted");
      if (config.allow !== null && searches(config.allow, probe)) {
        return verdict(true, "guarded: allowed by RELAY_SHELL_POLICY_ALLOW");
      }
      // "an RELAY_SHELL_..." is the Python wording, kept byte for byte.
      return verdict(false, `guarded mode refuses ${label} without an RELAY_SHELL_POLICY_ALLOW match`);
    case "open":
      return verdict(true, "permitted");
    default: {
      const unknown: never = config.mode;
      throw new RangeError(`unknown policy mode: ${String(unknown)}`);
    }
  }
}

/**
 * The tier of a call from its tool's spec. A fixed tier ignores the text; a
 * heuristic tool classifies the text (or, when the tool gives it, the
 * program in its own language with its stdin and environment) and is raised
 * to its floor, and the basis says so when the floor (not the text) decided.
 */
export function assessTier(
  spec: TierSpec,
  text: string,
  classifier: Classifier,
  input?: ProgramInput,
): Classification {
  if (spec.kind === "fixed") {
    return { tier: spec.tier, basis: spec.tier === 0 ? "read_only_tool" : "default", part: "" };
  }
  const found = classifier.classify(text, {
    windows: spec.windows,
    ...(input !== undefined ? { input } : {}),
  });
  if (found.tier >= spec.floor) return found;
  return { tier: spec.floor, basis: spec.floor === 2 ? "mutating_tool" : "default", part: "" };
}
