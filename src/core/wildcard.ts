/**
 * OpenSSH-style wildcard match (known_hosts and ssh_config patterns, allowed-signers
 * principals and namespaces). Shell-style wildcard match (`*`, `?`) without regular expressions, so a
 * hostile pattern cannot make matching exponential: the classic
 * single-backtrack-point algorithm is O(pattern × text) at worst.
 */
export function wildcardMatch(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
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
    } else if (starP !== -1) {
      p = starP + 1;
      t = ++starT;
    } else {
      return false;
    }
  }
  while (pattern[p] === "*") p++;
  return p === pattern.length;
}
