export { createPolicyBook, type PolicyBookOptions, type PolicyHost } from "./book.js";
export { policyConfigOf, settingsPolicy, settingsPolicyBook } from "./settings.js";
export type { EffectivePolicy, HostRef, PolicyBook } from "./types.js";
