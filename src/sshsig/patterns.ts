import { wildcardMatch } from "../core/index.js";

/**
 * A comma-separated pattern list: true when some pattern matches and no
 * negated one (`!pattern`) does; a negated match wins over every positive
 * one, as in OpenSSH's match_pattern_list.
 */
export function matchPatternList(text: string, list: string): boolean {
  let positive = false;
  for (const entry of list.split(",")) {
    const negated = entry.startsWith("!");
    if (wildcardMatch(negated ? entry.slice(1) : entry, text)) {
      if (negated) return false;
      positive = true;
    }
  }
  return positive;
}
