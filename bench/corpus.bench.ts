import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createClassifier, readOnlyProgramCount } from "../src/policy/index.js";
import type { CorpusRow, Label } from "./corpus/extract.js";
import type { BenchFigure } from "./types.js";

/** The labelled tldr-pages rows (bench/corpus/README.md), read from the committed file. */
export function readCorpus(): CorpusRow[] {
  return readJsonLines<CorpusRow>("tldr-subcommands.jsonl");
}

/** One JSON object a line, from a committed corpus file. */
function readJsonLines<T>(name: string): T[] {
  const text = readFileSync(join(import.meta.dirname, "corpus", name), "utf8");
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as T);
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
    ...(await proofFigures()),
    {
      name: `tldr destructive subcommands flagged Tier >= 2 (${n("destructive")} rows)`,
      value: pct(rates.get("destructive")),
      unit: "%",
      target: ">= 96",
      met: pct(rates.get("destructive")) >= 96,
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

interface IncidentRow {
  command: string;
}

interface BlindRow {
  command: string;
  accept: number[];
  kind: string;
}

/**
 * The Tier-0 proof (ADR 0033) on three corpora: the tldr-pages read-only and
 * help rows the read-only table proves, the incident responder's diagnostics
 * (bench/corpus/incident-reads.jsonl) and the labelled operations corpora
 * (bench/corpus/blind-ops*.jsonl), all written without sight of the classifier.
 */
export async function proofFigures(): Promise<BenchFigure[]> {
  const classifier = await createClassifier();
  const zero = (command: string) => classifier.classify(command).tier === 0;
  const tldr = readCorpus().filter(
    (r) => r.label === "readonly-verb" || r.label === "readonly" || r.label === "help",
  );
  const tldrZero = tldr.filter((r) => zero(r.command)).length;
  const incident = readJsonLines<IncidentRow>("incident-reads.jsonl");
  const incidentZero = incident.filter((r) => zero(r.command)).length;
  const blind = readJsonLines<BlindRow>("blind-ops.jsonl");
  const second = readJsonLines<BlindRow>("blind-ops-2.jsonl");
  const third = readJsonLines<BlindRow>("blind-ops-3.jsonl");
  const fourth = readJsonLines<BlindRow>("blind-ops-4.jsonl");
  const fifth = readJsonLines<BlindRow>("blind-ops-5.jsonl");
  const sixth = readJsonLines<BlindRow>("blind-ops-6.jsonl");
  const accepted = (rows: BlindRow[]) =>
    rows.filter((r) => r.accept.includes(classifier.classify(r.command).tier)).length;
  const blindOk = accepted(blind);
  const secondOk = accepted(second);
  const thirdOk = accepted(third);
  const blindWritesZero = [...blind, ...second, ...third, ...fourth, ...fifth, ...sixth].filter(
    (r) => !r.accept.includes(0) && zero(r.command),
  ).length;
  const share = (a: number, b: number) => (100 * a) / b;
  return [
    {
      name: "programs in the read-only table",
      value: readOnlyProgramCount(),
      unit: "",
      target: ">= 200",
      met: readOnlyProgramCount() >= 200,
    },
    {
      name: `tldr read-only and help rows proven Tier 0 (${tldr.length} rows)`,
      value: share(tldrZero, tldr.length),
      unit: "%",
      target: "reported",
      met: null,
    },
    {
      name: `incident diagnostics proven Tier 0 (${incident.length} rows)`,
      value: share(incidentZero, incident.length),
      unit: "%",
      target: ">= 90",
      met: share(incidentZero, incident.length) >= 90,
    },
    {
      name: `operations corpus at an accepted tier (${blind.length} rows)`,
      value: share(blindOk, blind.length),
      unit: "%",
      target: ">= 95",
      met: share(blindOk, blind.length) >= 95,
    },
    {
      name: `second operations corpus, another writer, at an accepted tier (${second.length} rows)`,
      value: share(secondOk, second.length),
      unit: "%",
      target: ">= 95",
      met: share(secondOk, second.length) >= 95,
    },
    {
      name: `third operations corpus, another writer, at an accepted tier (${third.length} rows)`,
      value: share(thirdOk, third.length),
      unit: "%",
      target: ">= 95",
      met: share(thirdOk, third.length) >= 95,
    },
    ...[
      { rows: fourth, which: "fourth", floor: 90 },
      { rows: fifth, which: "fifth", floor: 90 },
      { rows: sixth, which: "sixth", floor: 80 },
    ].map(({ rows, which, floor }) => ({
      name: `${which} operations corpus, another writer, at an accepted tier (${rows.length} rows)`,
      value: share(accepted(rows), rows.length),
      unit: "%",
      target: `>= ${floor}`,
      met: share(accepted(rows), rows.length) >= floor,
    })),
    {
      name: "  rows of any of them that change, delete or run code, proven Tier 0",
      value: blindWritesZero,
      unit: "",
      target: "0",
      met: blindWritesZero === 0,
    },
  ];
}
