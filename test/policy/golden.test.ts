import { beforeAll, describe, expect, it } from "vitest";
import { type Classifier, createClassifier } from "../../src/policy/index.js";
import { BACKUP_ROWS } from "./golden/backup.js";
import { BSD_ROWS } from "./golden/bsd.js";
import { DATA_SECRETS_ROWS } from "./golden/data-secrets.js";
import { DELIVERY_ROWS } from "./golden/delivery.js";
import { GOLDEN_ROWS as TABLE_ROWS } from "./golden/index.js";
import { KIND_LOW_ROWS, KIND_ROWS } from "./golden/kinds.js";
import { LONGTAIL_ROWS } from "./golden/longtail.js";
import { PLATFORM_ROWS } from "./golden/platform.js";
import { PROGRAM_ROWS } from "./golden/python.js";

const GOLDEN_ROWS = [
  ...TABLE_ROWS,
  ...LONGTAIL_ROWS,
  ...PLATFORM_ROWS,
  ...BACKUP_ROWS,
  ...BSD_ROWS,
  ...DELIVERY_ROWS,
  ...DATA_SECRETS_ROWS,
];
let classifier: Classifier;

beforeAll(async () => {
  classifier = await createClassifier();
});

describe("golden table", () => {
  it("has at least 250 rows and no duplicate (text, windows) pair", () => {
    expect(GOLDEN_ROWS.length).toBeGreaterThanOrEqual(250);
    const keys = GOLDEN_ROWS.map((r) => `${r.windows === true ? "W" : "-"}${r.text}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it.each(GOLDEN_ROWS.map((r, i) => ({ ...r, i })))("#$i $text → $tier $basis", (row) => {
    const got = classifier.classify(row.text, { windows: row.windows === true });
    expect({ tier: got.tier, basis: got.basis }).toEqual({ tier: row.tier, basis: row.basis });
    expect(got.part.length).toBeLessThanOrEqual(120);
    if (row.tier <= 1) expect(got.part).toBe("");
    else expect(got.part).not.toBe("");
  });
});

describe("golden table: rule families by kind", () => {
  it("has at least 150 rows and no duplicate text", () => {
    const texts = [...KIND_ROWS.map((r) => r.text), ...KIND_LOW_ROWS];
    expect(texts.length).toBeGreaterThanOrEqual(150);
    expect(new Set(texts).size).toBe(texts.length);
    expect(KIND_ROWS.every((r) => r.tier >= 2)).toBe(true);
  });

  it.each(KIND_ROWS.map((r, i) => ({ ...r, i })))("#$i $text → $tier $basis", (row) => {
    const got = classifier.classify(row.text);
    expect({ tier: got.tier, basis: got.basis }).toEqual({ tier: row.tier, basis: row.basis });
    expect(got.part).not.toBe("");
  });

  // Dry runs, help requests and listings: Tier 1 at most (the proven read-only table may make them 0).
  it.each(KIND_LOW_ROWS.map((text, i) => ({ text, i })))("#$i $text stays at most Tier 1", ({ text }) => {
    expect(classifier.classify(text).tier).toBeLessThanOrEqual(1);
  });
});

describe("golden table: help requests", () => {
  it("a trailing --help never lowers a Tier-3 golden row that passes options", () => {
    // Through `watch` or `ssh` the --help goes to the inner command, which then only prints help.
    const rows = TABLE_ROWS.filter(
      (r) =>
        r.tier === 3 &&
        r.windows !== true &&
        !r.text.includes("\n") &&
        / -/.test(r.text) &&
        !/^(?:watch|ssh) /.test(r.text),
    );
    expect(rows.length).toBeGreaterThan(50);
    for (const row of rows) expect(classifier.classify(`${row.text} --help`).tier, row.text).toBe(3);
  });
});

describe("golden table: programs with their interpreter, stdin and env", () => {
  it.each(PROGRAM_ROWS.map((r, i) => ({ ...r, i, text: r.input.program })))(
    "#$i $input.language $text → $tier $basis",
    (row) => {
      const { program, stdin, env } = row.input;
      // The joined text is what the deny list sees; the parts decide the tier.
      const joined = [program, stdin, env].filter((p) => p !== "").join("\n");
      const got = classifier.classify(joined, { input: row.input });
      expect({ tier: got.tier, basis: got.basis }).toEqual({ tier: row.tier, basis: row.basis });
      if (row.tier <= 1) expect(got.part).toBe("");
      else expect(got.part).not.toBe("");
    },
  );
});
