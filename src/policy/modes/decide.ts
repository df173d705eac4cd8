import { isNonAsciiSeparator, tierName } from "../../core/index.js";
import type {
  Classification,
  Classifier,
  PolicyDecision,
  PolicyMode,
  ProgramInput,
  TierSpec,
} from "../types.js";

export interface PolicyConfig {
  mode: PolicyMode;
  /** Searched (unanchored) in the probe first, in every mode; null = no deny list. */
  deny: RegExp | null;
  /** Consulted only in guarded mode for Tier >= 2; null = no allow list. */
  allow: RegExp | null;
  /**
   * Longest probe, in UTF-16 code units, the operator regexes are run on, so
   * that a pathological pattern has a bounded input (docs/wire-contract.md §14.9). The runner
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
    isNonAsciiSeparator(code)
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

/**
 * A place a call acts that its policy text may not show (ADR 0020): the
 * working directory, a host, a user, a transfer path, a listen address, the
 * interpreter. The deny list sees each as its own line `kind=value`.
 */
export interface PolicyTarget {
  kind: TargetKind;
  value: string;
}

export type TargetKind =
  | "cwd"
  | "interpreter"
  | "host"
  | "user"
  | "port"
  | "jump"
  | "local"
  | "remote"
  | "listen"
  | "dest"
  | "profile"
  | "run";

/**
 * The lines the deny list is matched against besides the probe: `kind=value`
 * for each target, in order, each distinct line once. Every line is searched
 * on its own, so `^` and `$` in a pattern mean the start and end of one target.
 */
export function targetLines(targets: readonly PolicyTarget[]): string[] {
  const seen = new Set<string>();
  for (const { kind, value } of targets) seen.add(`${kind}=${value}`);
  return [...seen];
}

function searches(regex: RegExp, probe: string): boolean {
  // A global or sticky regex keeps lastIndex between calls and would skip
  // matches; search with a stateless copy instead of mutating shared settings.
  const stateless =
    regex.global || regex.sticky ? new RegExp(regex.source, regex.flags.replace(/[gy]/g, "")) : regex;
  return stateless.test(probe);
}

function denies(deny: RegExp, probe: string, targets: readonly string[], maxProbe: number): boolean {
  if (searches(deny, probe)) return true;
  // The runner refuses target lines longer than its input bound before this point; the cut only
  // bounds a direct caller.
  return targets.some((line) => searches(deny, line.length > maxProbe ? line.slice(0, maxProbe) : line));
}

function assertMaxProbe(maxProbe: number): void {
  if (!Number.isSafeInteger(maxProbe) || maxProbe < 1) {
    throw new RangeError(`policy maxProbe must be a positive integer, got ${maxProbe}`);
  }
}

/**
 * What a policy mode admits, in one sentence for `--check-config` and the
 * console's posture page. `readonly` admits commands proven to only read
 * (ADR 0033), which the Python relay-shell's `readonly` did not.
 */
export function modeSummary(mode: PolicyMode): string {
  switch (mode) {
    case "open":
      return "every tier is admitted (notices name the risky ones)";
    case "guarded":
      return "Tier 0 and 1 are admitted; Tier 2 and 3 only on an RELAY_SHELL_POLICY_ALLOW match";
    case "readonly":
      return "only Tier 0 is admitted: the read-only tools and commands proven to only read (docs/policy.md, Tier 0); a deny pattern refuses commands altogether";
    default: {
      const unknown: never = mode;
      throw new RangeError(`unknown policy mode: ${String(unknown)}`);
    }
  }
}

/**
 * Admission: the deny list first in every mode, then the mode. The
 * classification is carried into the decision whatever the answer, so a
 * refused call still records its tier.
 *
 * `targets` are the call's target lines (`targetLines`): the deny list is
 * searched in each of them as well as in the probe, but the allow list only in
 * the probe, so a target can refuse a call and never admit one (ADR 0020).
 */
export function decide(
  config: PolicyConfig,
  tool: string,
  policyText: string,
  classification: Classification,
  targets: readonly string[] = [],
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

  if (config.deny !== null && denies(config.deny, probe, targets, config.maxProbe)) {
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
    const basis = spec.tier === 0 ? "read_only_tool" : spec.tier === 2 ? "mutating_tool" : "default";
    return { tier: spec.tier, basis, part: "" };
  }
  const found = classifier.classify(text, {
    windows: spec.windows,
    ...(spec.terminal === true ? { terminal: true } : {}),
    ...(input !== undefined ? { input } : {}),
  });
  if (found.tier >= spec.floor) return found;
  return { tier: spec.floor, basis: spec.floor === 2 ? "mutating_tool" : "default", part: "" };
}
