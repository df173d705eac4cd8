import { beforeAll, describe, expect, it } from "vitest";
import type { CorpusRow } from "../../bench/corpus/extract.js";
import { readCorpus } from "../../bench/corpus.bench.js";
import { type Classifier, createClassifier } from "../../src/policy/index.js";

/**
 * A fixed sample of the labelled tldr-pages corpus (bench/corpus/README.md):
 * every fifth row of the destructive-subcommand, read-only-subcommand and
 * help labels, in file order. Destructive rows must reach Tier 2, the others
 * must stay below it. `npm run bench` reports the rates over all rows.
 */

/** Rows whose label the classifier disagrees with on purpose. */
const KNOWN: ReadonlyMap<string, string> = new Map([
  // `toybox` runs its first operand as the program; `toybox rm file` is `rm file`, Tier 1.
  ["toybox rm path/to/file", "multi-call binary"],
  // The kernel tools are Tier 2 as a whole (power_kernel); a read-only verb lowers only the subcommand families.
  ["kernel-install inspect path/to/kernel_image", "kernel tool"],
  // A script named by its file runs its own code to print its help: Tier 2 (script_file), by kind.
  ["mqtt_check.py --help", "script file"],
  ["ntfs-read.py --help", "script file"],
]);

let classifier: Classifier;
let sample: CorpusRow[];

beforeAll(async () => {
  classifier = await createClassifier();
  const byLabel = new Map<string, CorpusRow[]>();
  for (const row of readCorpus()) byLabel.set(row.label, [...(byLabel.get(row.label) ?? []), row]);
  sample = ["destructive", "readonly-verb", "help"].flatMap((l) =>
    (byLabel.get(l) ?? []).filter((_, i) => i % 5 === 0),
  );
});

describe("tldr-pages corpus sample", () => {
  it("holds enough rows of each label", () => {
    for (const label of ["destructive", "readonly-verb", "help"]) {
      expect(sample.filter((r) => r.label === label).length, label).toBeGreaterThan(50);
    }
  });

  it("flags every sampled destructive subcommand and no sampled read-only or help form", () => {
    const wrong: string[] = [];
    for (const row of sample) {
      if (KNOWN.has(row.command)) continue;
      const tier = classifier.classify(row.command).tier;
      const flagged = tier >= 2;
      if (flagged !== (row.label === "destructive")) wrong.push(`${row.label} ${tier} ${row.command}`);
    }
    expect(wrong).toEqual([]);
  });
});
