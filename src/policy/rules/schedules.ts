import { type Hit, hit, type RuleInput, table } from "./args.js";

/* Scheduled work: jobs that run later, as whoever installed them. */

/**
 * crontab: `-r` removes every job with no backup and no prompt (Tier 3);
 * `-l` only lists; installing a file or editing is Tier 2.
 */
function crontab({ args }: RuleInput): Hit | null {
  const clusters = args.clusters();
  if (clusters.some((c) => c.includes("r")) && !clusters.some((c) => c.includes("i")))
    return hit(3, "schedule_change");
  if (clusters.length > 0 && clusters.every((c) => /^[lu]$/.test(c)) && !args.has("-e")) {
    return args.operands().length > (args.has("-u") ? 1 : 0) ? hit(2, "schedule_change") : null;
  }
  return hit(2, "schedule_change");
}

function at({ name, args }: RuleInput): Hit | null {
  if (name === "atq" || args.short("lc")) return null;
  return hit(2, "schedule_change");
}

export const SCHEDULE_RULES = table([
  ["crontab", crontab],
  [["at", "batch", "atq", "atrm"], at],
]);
