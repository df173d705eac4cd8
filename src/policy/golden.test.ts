import { beforeAll, describe, expect, it } from "vitest";
import { GOLDEN_ROWS as TABLE_ROWS } from "./golden.js";
import { LONGTAIL_ROWS } from "./golden-longtail.js";
import { type Classifier, createClassifier } from "./index.js";

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
