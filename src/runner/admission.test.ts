import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAuditLog } from "../audit/index.js";
import { loadSettings } from "../config/index.js";
import { systemClock } from "../core/index.js";
import { type Classifier, createClassifier, type PolicyTarget } from "../policy/index.js";
import { createAdmission } from "./admission.js";
import { defineTool, type TierFloor } from "./tool.js";

type TextTool = { text: string };

/** Admission of a one-parameter test tool (`text` is its policy text), with the hooks a test gives it. */
function testAdmission(
  dir: string,
  classifier: Classifier,
  env: Record<string, string>,
  hooks: {
    targets?: (a: TextTool) => PolicyTarget[];
    tierFloor?: (a: TextTool, scope: { clientId: string }) => TierFloor | null;
  },
) {
  const auditPath = join(dir, "audit.jsonl");
  const settings = loadSettings({ RELAY_SHELL_AUDIT_PATH: auditPath, ...env }, { cwd: dir });
  const audit = createAuditLog(
    { path: auditPath, format: "jsonl", chain: false, stderrEcho: false },
    { clock: systemClock },
  );
  const tool = defineTool({
    name: "t",
    title: "t",
    description: "test tool",
    params: { text: { type: "string", description: "text" } },
    tier: { kind: "heuristic", floor: 1, windows: false },
    annotations: {
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: false,
    },
    budget: () => 1024,
    policyText: (a) => a.text,
    auditArgs: (a) => ({ text: a.text }),
    ...(hooks.targets ? { targets: hooks.targets } : {}),
    ...(hooks.tierFloor ? { tierFloor: hooks.tierFloor } : {}),
    run: async () => ({ body: "" }),
  });
  const admit = createAdmission({ settings, classifier, audit });
  return (text: string, clientId = "") => admit(tool, { text }, { clientId });
}

describe("admission sees the targets of a call (ADR 0020)", () => {
  let dir: string;
  let classifier: Classifier;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-admission-"));
    classifier = await createClassifier();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function admitWith(env: Record<string, string>, targets: (text: string) => PolicyTarget[]) {
    const admit = testAdmission(dir, classifier, env, { targets: (a) => targets(a.text) });
    return (text: string) => admit(text);
  }

  it("refuses on a target line and admits when none matches", () => {
    const admit = admitWith({ RELAY_SHELL_POLICY_DENY: "^cwd=/srv/prod" }, (text) => [
      { kind: "cwd", value: text },
    ]);
    expect(admit("/srv/prod/app")).toMatchObject({
      admitted: false,
      reason: "matched RELAY_SHELL_POLICY_DENY",
    });
    expect(admit("/srv/test/app")).toMatchObject({ admitted: true });
  });

  it("fails closed when a tool cannot name its targets", () => {
    const admit = admitWith({}, () => {
      throw new Error("boom");
    });
    const r = admit("ls");
    expect(r).toMatchObject({ admitted: false, tier: 3 });
    expect(r.admitted ? "" : r.text).toBe(
      "[DENIED tier 3 (IRREVERSIBLE): the targets of the call could not be determined for the deny list]",
    );
  });

  it("refuses targets larger than the input bound before any regex runs on them", () => {
    const admit = admitWith({ RELAY_SHELL_MAX_INPUT: "1024" }, () => [
      { kind: "cwd", value: "x".repeat(2000) },
    ]);
    const r = admit("ls");
    expect(r).toMatchObject({ admitted: false, tier: 3 });
    expect(r.admitted ? "" : r.text).toMatch(/targets of 2004 bytes exceed RELAY_SHELL_MAX_INPUT \(1024\)/);
  });
});

describe("admission raises a call to its tool's floor", () => {
  let dir: string;
  let classifier: Classifier;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-floor-"));
    classifier = await createClassifier();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function admitWith(
    env: Record<string, string>,
    floor: (text: string, clientId: string) => TierFloor | null,
  ) {
    return testAdmission(dir, classifier, env, { tierFloor: (a, scope) => floor(a.text, scope.clientId) });
  }

  const interactive: TierFloor = { tier: 2, basis: "interactive_program", part: "bash" };

  it("a floor above the classifier's verdict decides the tier and the basis, and guarded mode refuses it", () => {
    const admit = admitWith({ RELAY_SHELL_POLICY_MODE: "guarded" }, (text) =>
      text === "bash" ? interactive : null,
    );
    const r = admit("bash");
    expect(r).toMatchObject({ admitted: false, tier: 2, classification: interactive });
    expect(admit("echo hi")).toMatchObject({ admitted: true, tier: 1 });
  });

  it("the classifier's verdict wins when it is as high or higher", () => {
    const admit = admitWith({}, () => interactive);
    expect(admit("rm -rf /srv/x")).toMatchObject({
      admitted: true,
      tier: 3,
      classification: { basis: "file_destruction" },
    });
  });

  it("the floor sees the calling client, and a floor that cannot be computed refuses the call", () => {
    const seen: string[] = [];
    const admit = admitWith({}, (_text, clientId) => {
      seen.push(clientId);
      throw new Error("boom");
    });
    const r = admit("ls", "client-a");
    expect(r).toMatchObject({ admitted: false, tier: 3 });
    expect(r.admitted ? "" : r.text).toBe(
      "[DENIED tier 3 (IRREVERSIBLE): the least tier of the call could not be determined]",
    );
    expect(seen).toEqual(["client-a"]);
  });
});
