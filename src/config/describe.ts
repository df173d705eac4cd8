import { SETTING_ENV_NAMES } from "./schema.js";
import type { Settings } from "./types.js";
import { maskedStateUrl } from "./values.js";

// A setting whose name says it is a secret is masked here without anyone having to remember
// this function; the state URL shows everything but its password.
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
    else if (field === "stateUrl") described[name] = maskedStateUrl(String(value));
    else described[name] = value instanceof RegExp ? value.source : value;
  }
  return described;
}
