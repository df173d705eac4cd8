import { isNonAsciiSeparator, type Tier, tierName } from "../../core/index.js";
import type { NamedPattern } from "../scopes/types.js";
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
  /** Searched (unanchored) in the probe first, in every mode; empty = no deny list. */
  deny: readonly NamedPattern[];
  /** Consulted only in guarded mode for Tier >= 2; empty = no allow list. */
  allow: readonly NamedPattern[];
  /** The highest tier admitted at all (3 = no bound beyond the mode). */
  maxTier: Tier;
  /**
   * The policy named in refusal reasons (`tag:prod`); null for the default
   * policy of the settings alone, whose reasons are the contract's, byte for byte.
   */
  name: string | null;
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

/** The first deny pattern found in the probe or in a target line, or null. */
function denying(
  deny: readonly NamedPattern[],
  probe: string,
  targets: readonly string[],
  maxProbe: number,
): NamedPattern | null {
  // The runner refuses target lines longer than its input bound before this point; the cut only
  // bounds a direct caller.
  const lines = targets.map((line) => (line.length > maxProbe ? line.slice(0, maxProbe) : line));
  for (const pattern of deny) {
    if (searches(pattern.regex, probe) || lines.some((line) => searches(pattern.regex, line))) return pattern;
  }
  return null;
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
 * Admission: the deny list first in every mode, then the policy's max_tier, then the mode. The
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
  // Another policy than the settings' default says whose rule refused.
  const named = (reason: string) => (config.name === null ? reason : `policy ${config.name}: ${reason}`);
  const verdict = (allowed: boolean, reason: string, matched: string | null = null): PolicyDecision => ({
    allowed,
    tier,
    basis,
    part,
    reason: allowed ? reason : named(reason),
    matched,
  });
  const label = `Tier ${tier} (${tierName(tier)})`;

  const denied = denying(config.deny, probe, targets, config.maxProbe);
  if (denied !== null) return verdict(false, `matched ${denied.label}`, denied.label);
  if (tier > config.maxTier) return verdict(false, `${label} is above its max_tier ${config.maxTier}`);
  switch (config.mode) {
    case "readonly":
      return tier === 0 ? verdict(true, "permitted") : verdict(false, `readonly mode refuses ${label}`);
    case "guarded": {
      if (tier < 2) return verdict(true, "permitted");
      const allowed = config.allow.find((pattern) => searches(pattern.regex, probe));
      if (allowed !== undefined) return verdict(true, `guarded: allowed by ${allowed.label}`, allowed.label);
      // "an RELAY_SHELL_..." is the Python wording, kept byte for byte for the settings' default.
      return verdict(
        false,
        config.name === null
          ? `guarded mode refuses ${label} without an RELAY_SHELL_POLICY_ALLOW match`
          : `guarded mode refuses ${label} without a match in its allow list`,
      );
    }
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
