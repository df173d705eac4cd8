import { beforeAll, describe, expect, it } from "vitest";
import { type Classifier, createClassifier } from "../../src/policy/index.js";
import { GOLDEN_ROWS as TABLE_ROWS } from "./golden/index.js";
import { LONGTAIL_ROWS } from "./golden/longtail.js";
import { PROGRAM_ROWS } from "./golden/python.js";

const GOLDEN_ROWS = [...TABLE_ROWS, ...LONGTAIL_ROWS];
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
    if (row.tier === 1) expect(got.part).toBe("");
    else expect(got.part).not.toBe("");
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
      if (row.tier === 1) expect(got.part).toBe("");
      else expect(got.part).not.toBe("");
    },
  );
});
