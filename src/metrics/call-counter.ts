/** Fixed outcome labels (docs/wire-contract.md §9.3): never user text. */
export type CallOutcome = "ok" | "denied" | "error" | "confirm_required" | "consent_required";

interface CallLabels {
  tool: string;
  tier: number;
  mode: string;
  outcome: CallOutcome;
}

export interface CallMetrics {
  recordCall(labels: CallLabels): void;
}

export interface CallSeries {
  labels: CallLabels;
  count: number;
}

export interface CallCounter extends CallMetrics {
  /** Counts keyed by `tool|tier|mode|outcome`, for tests. */
  snapshot(): ReadonlyMap<string, number>;
  /** Every label set seen so far with its count, for the /metrics exposition. */
  series(): CallSeries[];
}

function callKey(labels: CallLabels): string {
  return `${labels.tool}|${labels.tier}|${labels.mode}|${labels.outcome}`;
}

/** In-process counter of tool calls; the HTTP edge renders it as Prometheus text. */
export function createCallCounter(): CallCounter {
  const counts = new Map<string, number>();
  const entries = new Map<string, CallSeries>();
  return {
    recordCall(labels) {
      const key = callKey(labels);
      counts.set(key, (counts.get(key) ?? 0) + 1);
      const entry = entries.get(key);
      if (entry) entry.count++;
      else entries.set(key, { labels: { ...labels }, count: 1 });
    },
    snapshot: () => counts,
    series: () => [...entries.values()].map((e) => ({ labels: { ...e.labels }, count: e.count })),
  };
}
