import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createClassifier } from "../src/policy/index.js";
import type { CorpusRow, Label } from "./corpus/extract.js";
import type { BenchFigure } from "./types.js";

/** The labelled tldr-pages rows (bench/corpus/README.md), read from the committed file. */
export function readCorpus(): CorpusRow[] {
  const text = readFileSync(join(import.meta.dirname, "corpus", "tldr-subcommands.jsonl"), "utf8");
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as CorpusRow);
}

interface Rate {
  flagged: number;
  total: number;
  misses: CorpusRow[];
}

/** Share of each label's rows the classifier puts at Tier 2 or higher. */
export async function corpusRates(rows: readonly CorpusRow[]): Promise<Map<Label, Rate>> {
  const classifier = await createClassifier();
  const rates = new Map<Label, Rate>();
  for (const row of rows) {
    const rate = rates.get(row.label) ?? { flagged: 0, total: 0, misses: [] };
    rates.set(row.label, rate);
    rate.total++;
    const flagged = classifier.classify(row.command).tier >= 2;
    if (flagged) rate.flagged++;
    if (flagged !== row.label.startsWith("destructive")) rate.misses.push(row);
  }
  return rates;
}

const pct = (r: Rate | undefined): number => (r === undefined ? Number.NaN : (100 * r.flagged) / r.total);

/** Recall on destructive subcommands and false alarms on read-only and help forms, with their targets. */
export async function corpusFigures(): Promise<BenchFigure[]> {
  const rates = await corpusRates(readCorpus());
  const n = (l: Label) => rates.get(l)?.total ?? 0;
  const readOnly: Rate = { flagged: 0, total: 0, misses: [] };
  for (const l of ["readonly-verb", "help"] as const) {
    readOnly.flagged += rates.get(l)?.flagged ?? 0;
    readOnly.total += rates.get(l)?.total ?? 0;
  }
  return [
    {
      name: `tldr destructive subcommands flagged Tier >= 2 (${n("destructive")} rows)`,
      value: pct(rates.get("destructive")),
      unit: "%",
      target: ">= 90",
      met: pct(rates.get("destructive")) >= 90,
    },
    {
      name: `tldr read-only subcommands and help flagged Tier >= 2 (${readOnly.total} rows)`,
      value: pct(readOnly),
      unit: "%",
      target: "<= 1",
      met: pct(readOnly) <= 1,
    },
    {
      name: `  of which help and version requests (${n("help")} rows)`,
      value: pct(rates.get("help")),
      unit: "%",
      target: "reported",
      met: null,
    },
    {
      name: `tldr destructive options under a literal subcommand, flagged (${n("destructive-option")} rows)`,
      value: pct(rates.get("destructive-option")),
      unit: "%",
      target: "reported",
      met: null,
    },
    {
      name: `tldr other read-only descriptions under a literal subcommand, flagged (${n("readonly")} rows)`,
      value: pct(rates.get("readonly")),
      unit: "%",
      target: "reported",
      met: null,
    },
  ];
}
