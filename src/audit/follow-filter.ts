/**
 * What a record says about how its call ended, as far as the record can tell:
 * `denied` (refused before its work, including a consent refusal),
 * `challenge` (nothing ran; a confirmation or a human's consent was asked
 * for), `error` (it ran and exited with a non-zero status), `ok` otherwise.
 */
export type AuditOutcome = "ok" | "denied" | "error" | "challenge";

/** Every field optional; a record matches when it matches all that are given. */
export interface AuditFilter {
  tool?: string;
  tier?: number;
  outcome?: AuditOutcome;
  denied?: boolean;
  /** The record's `client_id`. */
  client?: string;
  /** `args.host`, or one of the hosts listed in `args.hosts`. */
  host?: string;
  /** Epoch milliseconds: the record's `ts` is at or after this. */
  since?: number;
  /** Epoch milliseconds: the record's `ts` is before this. */
  until?: number;
}

/** Calls in one UTC minute, by tier 0..3. */
export interface MinuteCounts {
  /** Start of the minute, epoch milliseconds. */
  minute: number;
  tiers: [number, number, number, number];
}

const CHALLENGES: ReadonlySet<unknown> = new Set(["confirm_plan", "consent_request"]);
const MINUTE_MS = 60_000;

/** See {@link AuditOutcome}. */
export function outcomeOf(record: Record<string, unknown>): AuditOutcome {
  if (record.denied === true || record.action === "consent_refuse") return "denied";
  if (CHALLENGES.has(record.action)) return "challenge";
  // A tool that raised returns `[ERROR: …]` with no exit status, which the record keeps only as a
  // hash: it cannot be told from a tool that has no exit status, so only a failed exit counts here.
  if (typeof record.exit_code === "number" && record.exit_code !== 0) return "error";
  return "ok";
}

/** The record's `ts` as epoch milliseconds, or null when it has none that parses. */
function recordTime(record: Record<string, unknown>): number | null {
  if (typeof record.ts !== "string") return null;
  const ms = Date.parse(record.ts);
  return Number.isNaN(ms) ? null : ms;
}

/** The hosts a record names: `args.host` and the entries of `args.hosts` (a list, or text split as the tools split it). */
function hostsOf(record: Record<string, unknown>): string[] {
  const args = record.args;
  if (typeof args !== "object" || args === null || Array.isArray(args)) return [];
  const { host, hosts } = args as Record<string, unknown>;
  const out: string[] = [];
  if (typeof host === "string" && host !== "") out.push(host);
  if (typeof hosts === "string") out.push(...hosts.split(/[\s,]+/).filter((h) => h !== ""));
  else if (Array.isArray(hosts)) out.push(...hosts.filter((h): h is string => typeof h === "string"));
  return out;
}

/** True when the record matches every field the filter gives. Pure. */
export function matchesFilter(record: Record<string, unknown>, filter: AuditFilter): boolean {
  if (filter.tool !== undefined && record.tool !== filter.tool) return false;
  if (filter.tier !== undefined && record.tier !== filter.tier) return false;
  if (filter.denied !== undefined && record.denied !== filter.denied) return false;
  if (filter.client !== undefined && record.client_id !== filter.client) return false;
  if (filter.outcome !== undefined && outcomeOf(record) !== filter.outcome) return false;
  if (filter.host !== undefined && !hostsOf(record).includes(filter.host)) return false;
  if (filter.since !== undefined || filter.until !== undefined) {
    const at = recordTime(record);
    if (at === null) return false;
    if (filter.since !== undefined && at < filter.since) return false;
    if (filter.until !== undefined && at >= filter.until) return false;
  }
  return true;
}

/**
 * Calls per UTC minute by tier, oldest minute first, for the console's
 * chart. Only minutes that have records appear; a record without a parsable
 * `ts` or a tier in 0..3 is left out. Pure.
 */
export function perMinuteByTier(records: Iterable<Record<string, unknown>>): MinuteCounts[] {
  const byMinute = new Map<number, MinuteCounts>();
  for (const record of records) {
    const at = recordTime(record);
    const tier = record.tier;
    if (at === null || typeof tier !== "number" || !Number.isInteger(tier) || tier < 0 || tier > 3) continue;
    const minute = Math.floor(at / MINUTE_MS) * MINUTE_MS;
    let counts = byMinute.get(minute);
    if (counts === undefined) {
      counts = { minute, tiers: [0, 0, 0, 0] };
      byMinute.set(minute, counts);
    }
    counts.tiers[tier as 0 | 1 | 2 | 3] += 1;
  }
  return [...byMinute.values()].sort((a, b) => a.minute - b.minute);
}
