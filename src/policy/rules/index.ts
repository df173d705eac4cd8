import { ACCESS_RULES } from "./access.js";
import type { Rule } from "./args.js";
import { BACKUP_RULES } from "./backup.js";
import { BSD_RULES } from "./bsd.js";
import { BUILD_RULES } from "./build.js";
import { CLUSTER_STORAGE_RULES } from "./cluster-storage.js";
import { DATA_RULES } from "./data.js";
import { DATA_IMPORT_RULES } from "./data-import.js";
import { DELIVERY_RULES } from "./delivery.js";
import { FILE_RULES } from "./files.js";
import { HTTP_RULES } from "./http.js";
import { INFRA_RULES } from "./infra.js";
import { NETWORK_RULES } from "./network.js";
import { PACKAGE_RULES } from "./packages.js";
import { PLATFORM_RULES } from "./platform.js";
import { PROCESS_RULES } from "./processes.js";
import { SCHEDULE_RULES } from "./schedules.js";
import { SECRET_RULES } from "./secrets.js";
import { STORAGE_RULES } from "./storage.js";
import { SYSTEM_RULES } from "./system.js";
import { VCS_RULES } from "./vcs.js";

export { Args, type Rule } from "./args.js";
export { initScript, isInitScriptPath } from "./system.js";

const TABLES: readonly ReadonlyMap<string, Rule>[] = [
  STORAGE_RULES,
  CLUSTER_STORAGE_RULES,
  FILE_RULES,
  DATA_RULES,
  DATA_IMPORT_RULES,
  VCS_RULES,
  INFRA_RULES,
  SYSTEM_RULES,
  BSD_RULES,
  PROCESS_RULES,
  ACCESS_RULES,
  NETWORK_RULES,
  PACKAGE_RULES,
  SCHEDULE_RULES,
  BUILD_RULES,
  HTTP_RULES,
  DELIVERY_RULES,
  SECRET_RULES,
  PLATFORM_RULES,
  BACKUP_RULES,
];

/** Every family's table in one map, built by the classifier factory (no shared mutable state). */
export function buildRuleTable(): ReadonlyMap<string, Rule> {
  const all = new Map<string, Rule>();
  for (const t of TABLES) {
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
  if (name.startsWith("fsck.")) return rules.get("fsck");
  const bare = name.replace(/[\d.]+$/, "");
  return bare !== name && bare !== "" ? rules.get(bare) : undefined;
}

/** Every name some table knows (a constant: the tables are fixed at build time). */
const KNOWN: ReadonlyMap<string, Rule> = new Map(TABLES.flatMap((t) => [...t]));

/**
 * Does a family table name this program? The generic destructive-subcommand
 * rule gives its strongest verdict only to programs no table knows: a table
 * that knows a tool has already judged which of its verbs destroy.
 */
export function hasTableRule(name: string): boolean {
  return lookupRule(KNOWN, name) !== undefined;
}
