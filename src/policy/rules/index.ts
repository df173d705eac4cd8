import { ACCESS_RULES } from "./access.js";
import type { Rule } from "./args.js";
import { DATA_RULES } from "./data.js";
import { FILE_RULES } from "./files.js";
import { INFRA_RULES } from "./infra.js";
import { PACKAGE_RULES } from "./packages.js";
import { STORAGE_RULES } from "./storage.js";
import { SYSTEM_RULES } from "./system.js";
import { VCS_RULES } from "./vcs.js";

export { Args, type Rule } from "./args.js";
export { initScript } from "./system.js";

/** Every family's table in one map, built by the classifier factory (no shared mutable state). */
export function buildRuleTable(): ReadonlyMap<string, Rule> {
  const all = new Map<string, Rule>();
  for (const t of [
    STORAGE_RULES,
    FILE_RULES,
    DATA_RULES,
    VCS_RULES,
    INFRA_RULES,
    SYSTEM_RULES,
    ACCESS_RULES,
    PACKAGE_RULES,
  ]) {
    for (const [name, rule] of t) {
      if (all.has(name)) throw new Error(`rule table: ${name} defined twice`);
      all.set(name, rule);
    }
  }
  return all;
}

/**
 * Find the rule for a lower-cased command name: exact, then the `mkfs.*` /
 * `fsck.*` families, then without a version suffix (`pip3.11` → `pip`).
 */
export function lookupRule(rules: ReadonlyMap<string, Rule>, name: string): Rule | undefined {
  const exact = rules.get(name);
  if (exact !== undefined) return exact;
  if (name.startsWith("mkfs") || name.startsWith("mke2fs")) return rules.get("mkfs");
  const bare = name.replace(/[\d.]+$/, "");
  return bare !== name && bare !== "" ? rules.get(bare) : undefined;
}
