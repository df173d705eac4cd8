export { createPolicyBook, type PolicyBookOptions, type PolicyHost } from "./book.js";
export type { EffectivePolicy, PolicyBook } from "./types.js";
