import type { ProfileSet } from "./types.js";

/**
 * Read every `<id>.json` profile of the operator's profile directory. Placeholder
 * signature only: the loader (schema, ownership and mode checks) replaces it.
 */
export function loadProfiles(dir: string, options: { daemonUid: number }): ProfileSet {
  throw new Error(`profile loading is not built yet (${dir}, ${options.daemonUid})`);
}
