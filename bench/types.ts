/** One figure a benchmark reports, with the target it is held to. */
export interface BenchFigure {
  name: string;
  value: number;
  unit: string;
  /** Human-readable target, e.g. "<= 1.2x bare spawn". */
  target: string;
  /** null when the figure is reported without a target. */
  met: boolean | null;
}

export interface Bench {
  name: string;
  run(): Promise<BenchFigure[]>;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? Number.NaN)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}
