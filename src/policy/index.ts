export { BASIS_TEXT } from "./basis-text.js";
export { createClassifier } from "./classify.js";
export { canonicalIpForms, splitHostList, widenHostTokens } from "./ip-widen.js";
export {
  assessTier,
  decide,
  modeSummary,
  type PolicyTarget,
  type TargetKind,
  targetLines,
} from "./policy.js";
export { readOnlyProgramCount } from "./readonly/table.js";
export type {
  Basis,
  Classification,
  Classifier,
  ProgramInput,
  ProgramLanguage,
  TierSpec,
} from "./types.js";
