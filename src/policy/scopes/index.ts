export { createPolicyBook, type PolicyBookOptions, type PolicyHost } from "./book.js";
export { policyConfigOf, settingsPolicy, settingsPolicyBook } from "./settings.js";
export type { EffectivePolicy, HostRef, NamedPattern, PolicyBook } from "./types.js";
