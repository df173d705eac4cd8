export { policyConfigOf, settingsPolicy, settingsPolicyBook } from "./settings.js";
export type { EffectivePolicy, HostRef, NamedPattern, PolicyBook } from "./types.js";
