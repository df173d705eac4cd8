/**
 * The policy: the classifier that gives a call its tier, and the decision on
 * it. One folder per concern, each importing only the ones listed before it:
 *
 * - the root: the vocabulary every part speaks (`types.ts`, the phrase per
 *   basis in `basis-text.ts`, the verdict being built in `best.ts`);
 * - `shell/`: the parser front-end (words, the tree-sitter parse and its walk
 *   into simple commands, the plain-words fast path, the env overlay line);
 * - `rules/`: the rule tables per program family, with the path, redirect
 *   and subcommand rules; `opaque/`: code the call does not show (shells and
 *   interpreters, decoders, inline programs, environment hooks, consoles);
 * - `wrappers/`: commands that carry a command (sudo, xargs, ssh, containers,
 *   fan-out); `patterns/`: text matched by pattern families, the fallback
 *   tables and the Windows/PowerShell rules; `python/`: Python programs;
 * - `readonly/`: the read-only table and the Tier-0 proof (ADR 0033);
 * - `engine/`: `createClassifier` and the engine that runs all of the above
 *   over each command, within the depth and byte budgets;
 * - `modes/`: modes, the deny and allow lists, target lines, IP widening;
 * - `scopes/`: the policy per host and per tag, its layers' precedence and
 *   which one governs a host (it matches addresses with `modes/`' forms).
 *
 * No module imports itself through others (test/import-cycles.test.ts).
 */
export { BASIS_TEXT } from "./basis-text.js";
export { createClassifier } from "./engine/classify.js";
export {
  assessTier,
  decide,
  modeSummary,
  type PolicyTarget,
  type TargetKind,
  targetLines,
} from "./modes/decide.js";
export { canonicalIpForms, splitHostList, widenHostTokens } from "./modes/ip-widen.js";
export { readOnlyProgramCount } from "./readonly/table.js";
export {
  createPolicyBook,
  type EffectivePolicy,
  type HostRef,
  type PolicyBook,
  policyConfigOf,
  settingsPolicy,
  settingsPolicyBook,
} from "./scopes/index.js";
export type {
  Basis,
  Classification,
  Classifier,
  PolicyDecision,
  ProgramInput,
  ProgramLanguage,
  TierSpec,
} from "./types.js";
