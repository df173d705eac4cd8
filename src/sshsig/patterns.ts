/**
 * OpenSSH's pattern language (ssh_config(5), "PATTERNS"): `*` matches any
 * run of characters, `?` exactly one, everything else itself, case
 * sensitively. Matched with one backtrack point, so a hostile pattern costs
 * at most |text| × |pattern| steps, never exponential time.
 */
export function matchPattern(text: string, pattern: string): boolean {
  let t = 0;
  let p = 0;
  let starP = -1;
  let starT = 0;
  while (t < text.length) {
    const c = pattern[p];
    if (c === "*") {
      starP = p++;
      starT = t;
    } else if (c !== undefined && (c === "?" || c === text[t])) {
      p++;
      t++;
    } else if (starP >= 0) {
      p = starP + 1;
      t = ++starT;
    } else {
      return false;
    }
  }
  while (pattern[p] === "*") p++;
  return p === pattern.length;
}

/**
 * A comma-separated pattern list: true when some pattern matches and no
 * negated one (`!pattern`) does; a negated match wins over every positive
 * one, as in OpenSSH's match_pattern_list.
 */
export function matchPatternList(text: string, list: string): boolean {
  let positive = false;
  for (const entry of list.split(",")) {
    const negated = entry.startsWith("!");
    if (matchPattern(text, negated ? entry.slice(1) : entry)) {
      if (negated) return false;
      positive = true;
    }
  }
  return positive;
}
