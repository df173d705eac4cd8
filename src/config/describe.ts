import { SETTING_ENV_NAMES } from "./schema.js";
import type { Settings } from "./types.js";

// No setting is a secret today; a future one whose name says it is gets masked
// here without anyone having to remember this function.
const SECRET_NAME = /SECRET|TOKEN|PASSWORD|KEY$/;

/**
 * The effective settings keyed by variable name, for `--check-config`.
 * Regexes are shown by their source; a `null` regex means no list.
 */
export function describeSettings(settings: Settings): Record<string, string | number | boolean | null> {
  const described: Record<string, string | number | boolean | null> = {};
  for (const [field, name] of Object.entries(SETTING_ENV_NAMES) as [keyof Settings, string][]) {
    const value = settings[field];
    if (SECRET_NAME.test(name)) described[name] = "***";
    else described[name] = value instanceof RegExp ? value.source : value;
  }
  return described;
}
