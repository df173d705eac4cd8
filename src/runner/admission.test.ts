import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAuditLog } from "../audit/index.js";
import { loadSettings } from "../config/index.js";
import { systemClock } from "../core/index.js";
import { type Classifier, createClassifier, type PolicyTarget } from "../policy/index.js";
import { createAdmission } from "./admission.js";
import { defineTool } from "./tool.js";

describe("admission sees the targets of a call (ADR 0020)", () => {
  let dir: string;
  let classifier: Classifier;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-admission-"));
    classifier = await createClassifier();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function admitWith(env: Record<string, string>, targets: (text: string) => PolicyTarget[]) {
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
      targets: (a) => targets(a.text),
      run: async () => ({ body: "" }),
    });
    const admit = createAdmission({ settings, classifier, audit });
    return (text: string) => admit(tool, { text });
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
