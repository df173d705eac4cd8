import { mkdirSync, mkdtempSync, rmdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAuditLog } from "../audit/index.js";
import { loadSettings } from "../config/index.js";
import { systemClock } from "../core/index.js";
import { createCallCounter } from "../metrics/index.js";
import { type Classifier, createClassifier, type TierSpec } from "../policy/index.js";
import { createRelay } from "./relay.js";
import { defineTool } from "./tool.js";

const ctx = { requestId: "1", clientId: "", signal: new AbortController().signal };
const ZERO: TierSpec = { kind: "fixed", tier: 0 };
const annotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};

/** A Tier-0 tool; `introspection` says whether it only reads the relay's own state. */
function zeroTool(name: string, runs: string[], introspection: boolean) {
  return defineTool({
    name,
    title: name,
    description: "test tool",
    params: { text: { type: "string", description: "text", default: "" } },
    tier: ZERO,
    ...(introspection ? { introspection: true } : {}),
    annotations,
    budget: () => 1024,
    policyText: (a) => a.text,
    auditArgs: (a) => ({ text: a.text }),
    async run(a) {
      runs.push(`${name}:${a.text}`);
      return { body: "ok" };
    },
  });
}

describe("fail closed: every call that acts is refused while its record cannot be written", () => {
  let dir: string;
  let classifier: Classifier;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-fail-closed-"));
    classifier = await createClassifier();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function setup(env: Record<string, string>, runs: string[]) {
    const auditPath = join(dir, `audit-${Math.random().toString(16).slice(2)}.jsonl`);
    // A directory where the file should be: nothing can be reserved or written.
    mkdirSync(auditPath);
    const settings = loadSettings({ RELAY_SHELL_AUDIT_PATH: auditPath, ...env }, { cwd: dir });
    const audit = createAuditLog(
      { path: auditPath, format: "jsonl", chain: false, stderrEcho: false },
      { clock: systemClock },
    );
    const relay = createRelay({
      settings,
      classifier,
      audit,
      metrics: createCallCounter(),
      tools: [zeroTool("acting", runs, false), zeroTool("looking", runs, true)],
    });
    return { relay, auditPath };
  }

  it("refuses a Tier-0 tool that acts, answers a Tier-0 introspection tool, and admits again once the file is back", async () => {
    const runs: string[] = [];
    const { relay, auditPath } = setup({}, runs);
    const refused = await relay.run("acting", { text: "ls /" }, ctx);
    expect(refused.text).toMatch(
      /^\[DENIED tier 0 \(\w+\): the audit log cannot be written; RELAY_SHELL_AUDIT_FAIL_CLOSED refuses every call that acts until it can\]$/,
    );
    expect(refused.structured).toMatchObject({ tier: 0, denied: true });
    expect(runs).toEqual([]);

    const looked = await relay.run("looking", {}, ctx);
    expect(looked.text.startsWith("ok")).toBe(true);
    expect(runs).toEqual(["looking:"]);

    rmdirSync(auditPath);
    const after = await relay.run("acting", { text: "ls /" }, ctx);
    expect(after.text).toBe("ok");
    expect(runs).toEqual(["looking:", "acting:ls /"]);
  });

  it("runs the acting tool anyway when RELAY_SHELL_AUDIT_FAIL_CLOSED is off", async () => {
    const runs: string[] = [];
    const { relay } = setup({ RELAY_SHELL_AUDIT_FAIL_CLOSED: "false" }, runs);
    const ran = await relay.run("acting", { text: "ls /" }, ctx);
    expect(ran.text.startsWith("ok")).toBe(true);
    expect(runs).toEqual(["acting:ls /"]);
  });

  it("a tool that does not say it only introspects acts (the default fails closed)", () => {
    expect(zeroTool("x", [], false).introspection).toBe(false);
    expect(zeroTool("x", [], true).introspection).toBe(true);
  });
});
