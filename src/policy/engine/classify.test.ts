import { beforeAll, describe, expect, it } from "vitest";
import { BASIS_TEXT, type Basis, type Classifier, createClassifier } from "../index.js";
import { MAX_DEPTH, PARSE_LIMIT } from "./classify.js";

let classifier: Classifier;

beforeAll(async () => {
  classifier = await createClassifier();
});

describe("classify: result shape", () => {
  it("gives Tier 1 / default with an empty part for a command nothing recognises", () => {
    expect(classifier.classify("frobnicate --all")).toEqual({ tier: 1, basis: "default", part: "" });
    expect(classifier.classify("/opt/acme/bin/deploy-helper x")).toEqual({
      tier: 1,
      basis: "default",
      part: "",
    });
  });

  it("gives Tier 0 / proven_read to text in which nothing runs", () => {
    expect(classifier.classify("")).toEqual({ tier: 0, basis: "proven_read", part: "" });
    expect(classifier.classify("   \n\t")).toEqual({ tier: 0, basis: "proven_read", part: "" });
    expect(classifier.classify("\0\0\0").tier).toBe(0);
  });

  it("names the part that set the tier, not the first command", () => {
    const r = classifier.classify("ls -la; echo ok && sudo reboot; echo done");
    expect(r).toEqual({ tier: 3, basis: "power_kernel", part: "sudo reboot" });
  });

  it("keeps the first part found on equal tiers", () => {
    expect(classifier.classify("rm -rf /a; reboot").basis).toBe("file_destruction");
    expect(classifier.classify("reboot; rm -rf /a").basis).toBe("power_kernel");
  });

  it("cuts a long part to 120 characters", () => {
    const r = classifier.classify(`rm -rf /${"x".repeat(500)}`);
    expect(r.tier).toBe(3);
    expect(r.part.length).toBe(120);
    expect(r.part.endsWith("…")).toBe(true);
  });
});

describe("classify: limits", () => {
  it("treats script strings nested past the depth limit as unseen", () => {
    let script = "ls";
    for (let i = 0; i <= MAX_DEPTH + 1; i++) script = `bash -c ${JSON.stringify(script)}`;
    expect(classifier.classify(script)).toMatchObject({ tier: 3, basis: "nesting_limit" });
    let shallow = "ls";
    for (let i = 0; i < MAX_DEPTH - 1; i++) shallow = `bash -c ${JSON.stringify(shallow)}`;
    expect(classifier.classify(shallow).tier).toBe(0);
  });

  it("treats a wrapper chain past the unwrap limit as unseen", () => {
    expect(classifier.classify(`${"nice ".repeat(40)}ls`)).toMatchObject({ tier: 3, basis: "nesting_limit" });
    expect(classifier.classify(`${"nice ".repeat(10)}ls`).tier).toBe(0);
  });

  it("sends text over the parse limit to the pattern tables", () => {
    const big = `${"echo hello world\n".repeat(Math.ceil(PARSE_LIMIT / 17))}reboot`;
    expect(big.length).toBeGreaterThan(PARSE_LIMIT);
    expect(classifier.classify(big)).toMatchObject({ tier: 3, basis: "pattern_fallback" });
    expect(classifier.classify("echo 'reboot'\n".repeat(2000))).toMatchObject({ basis: "pattern_fallback" });
  });

  it("uses pattern_fallback only when the tables decided the tier", () => {
    expect(classifier.classify("{rm,-rf,/}")).toMatchObject({ tier: 3, basis: "pattern_fallback" });
    // Parsed parts win over the tables on equal tiers.
    expect(classifier.classify("rm -rf /x; echo 'unterminated")).toMatchObject({
      tier: 3,
      basis: "file_destruction",
    });
  });
});

describe("classify: linear time guards (not benchmarks)", () => {
  const within = (ms: number, text: string, windows: boolean) => {
    const start = performance.now();
    const r = classifier.classify(text, { windows });
    const took = performance.now() - start;
    expect(took, `${took.toFixed(0)} ms`).toBeLessThan(ms);
    return r;
  };

  it("600 KB of `rm rm rm ...`", () => {
    within(3000, "rm ".repeat(200_000), false);
    within(3000, "rm ".repeat(200_000), true);
  });

  it("1.2 MB of `Remove-Item ...` and 0.8 MB of `del ...`", () => {
    within(3000, "Remove-Item ".repeat(100_000), true);
    within(3000, "del ".repeat(200_000), true);
  });

  it("1 MiB of ordinary commands, and dense text just under the parse limit", () => {
    const mib = "ls -la /tmp && echo hello | grep h; ".repeat(30_000).slice(0, 1 << 20);
    expect(within(3000, mib, false).tier).toBe(1);
    within(3000, mib, true);
    for (const unit of ["x|", "a && ", "$(", "'", "sudo ", "eval ", "${a:-", "f(){ f; };", "bash -c '"]) {
      within(3000, unit.repeat(Math.floor((PARSE_LIMIT - 8) / unit.length)), false);
    }
  });
});

describe("classify: the recovery pass over later lines", () => {
  it("stays linear, and within its budget, on many broken scripts nested in a broken text", () => {
    // Two levels of broken scripts, each level with lines after the broken one.
    const leaf = `[\n${"x\n".repeat(20)}`;
    const mid = `[\n${`bash -c "${leaf}"\n`.repeat(6)}`;
    const unit = `bash -c '${mid}'\n`;
    const text = `[\n${unit.repeat(Math.floor((PARSE_LIMIT - 2) / unit.length))}`;
    const start = performance.now();
    const r = classifier.classify(text);
    const took = performance.now() - start;
    expect(took, `${took.toFixed(0)} ms`).toBeLessThan(3000);
    // Running out of the recovery budget is not "unseen": the text as a whole was judged.
    expect(r).toEqual({ tier: 1, basis: "default", part: "" });
  });
});

describe("BASIS_TEXT", () => {
  it("has a short lower-case phrase without a trailing period for every basis", () => {
    const entries = Object.entries(BASIS_TEXT) as [Basis, string][];
    expect(entries.length).toBeGreaterThanOrEqual(35);
    for (const [basis, text] of entries) {
      expect(text, basis).toMatch(/^[a-z][a-z0-9 ,'/-]*[a-z]$/);
      expect(text.length, basis).toBeLessThanOrEqual(60);
    }
  });
});
