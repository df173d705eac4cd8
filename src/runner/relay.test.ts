import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAuditLog } from "../audit/index.js";
import { loadSettings, type Settings } from "../config/index.js";
import { systemClock } from "../core/index.js";
import { createCallCounter } from "../metrics/index.js";
import { type Classifier, createClassifier } from "../policy/index.js";
import { createRelay } from "./relay.js";
import { defineTool, type Gate, type Tool, type ToolOutcome } from "./tool.js";

const ctx = { requestId: "7", clientId: "", signal: new AbortController().signal };

describe("Relay.run", () => {
  let dir: string;
  let classifier: Classifier;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-runner-"));
    classifier = await createClassifier();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function setup(env: Record<string, string> = {}, tools: Tool[] = [], gates: Gate[] = []) {
    const auditPath =
      env.RELAY_SHELL_AUDIT_PATH ?? join(dir, `audit-${Math.random().toString(16).slice(2)}.jsonl`);
    const settings: Settings = loadSettings({ RELAY_SHELL_AUDIT_PATH: auditPath, ...env }, { cwd: dir });
    const audit = createAuditLog(
      { path: auditPath, format: "jsonl", chain: false, stderrEcho: false },
      { clock: systemClock },
    );
    const metrics = createCallCounter();
    const relay = createRelay({ settings, classifier, audit, metrics, tools, gates });
    const records = () =>
      readFileSync(auditPath, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    return { relay, metrics, records };
  }

  function echoTool(runs: string[], behaviour: (text: string) => Promise<ToolOutcome>) {
    return defineTool({
      name: "echo_tool",
      title: "echo",
      description: "test tool that echoes",
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
      async run(a) {
        runs.push(a.text);
        return behaviour(a.text);
      },
    });
  }

  it("a rehearsal runs nothing, records nothing and counts nothing, whatever it is given", async () => {
    const runs: string[] = [];
    const { relay, metrics, records } = setup({}, [echoTool(runs, async (t) => ({ body: t, exitCode: 0 }))]);
    relay.rehearse("echo_tool", { text: "rm -rf /tmp/rehearsal-canary" });
    relay.rehearse("echo_tool", { text: 7 });
    relay.rehearse("no_such_tool", {});
    expect(runs).toEqual([]);
    expect([...metrics.snapshot().keys()]).toEqual([]);
    // The first record written after it is the first call's.
    await relay.run("echo_tool", { text: "ls" }, ctx);
    expect(runs).toEqual(["ls"]);
    expect(records().map((r) => r.args)).toEqual([{ text: "ls" }]);
  });

  it("a rehearsal goes on past the work to the record and the notices, and only warns when that path fails", () => {
    const settings = loadSettings({ RELAY_SHELL_AUDIT_PATH: join(dir, "rehearsal.jsonl") }, { cwd: dir });
    const audit = createAuditLog(
      { path: settings.auditPath, format: "jsonl", chain: false, stderrEcho: false },
      { clock: systemClock },
    );
    const warnings: string[] = [];
    const logger = {
      info: () => undefined,
      error: () => undefined,
      warn: (_o: object, m: string) => warnings.push(m),
    };
    const runs: string[] = [];
    const fine = echoTool(runs, async (t) => ({ body: t, exitCode: 0 }));
    // The output bound is read after the work: a tool whose bound throws fails only there.
    const broken = { ...echoTool(runs, async (t) => ({ body: t, exitCode: 0 })), name: "broken_tool" };
    broken.budget = () => {
      throw new Error("no budget");
    };
    const relay = createRelay({
      settings,
      classifier,
      audit,
      metrics: createCallCounter(),
      tools: [fine, broken],
      logger,
    });
    relay.rehearse("echo_tool", { text: "ls" });
    expect(warnings).toEqual([]);
    relay.rehearse("broken_tool", { text: "ls" });
    expect(warnings).toEqual(["rehearsal of a call failed"]);
    expect(runs).toEqual([]);
  });

  it("a gate challenge stops the work and is audited with its action", async () => {
    const runs: string[] = [];
    const gate: Gate = {
      name: "test-gate",
      check: (call) =>
        call.tier === 3
          ? { kind: "challenge", text: "[CHALLENGED]", action: "confirm_plan" }
          : { kind: "proceed" },
    };
    const { relay, records, metrics } = setup(
      {},
      [echoTool(runs, async (t) => ({ body: t, exitCode: 0 }))],
      [gate],
    );
    const r = await relay.run("echo_tool", { text: "rm -rf /x" }, ctx);
    expect(r.text).toBe("[CHALLENGED]");
    expect(runs).toEqual([]);
    expect(records().at(-1)).toMatchObject({
      tool: "echo_tool",
      tier: 3,
      action: "confirm_plan",
      request_id: "7",
    });
    const ok = await relay.run("echo_tool", { text: "ls" }, ctx);
    expect(ok.text).toBe("[exit 0]\nls");
    expect(runs).toEqual(["ls"]);
    expect(records().at(-1)).not.toHaveProperty("action");
    expect([...metrics.snapshot().keys()]).toContain("echo_tool|3|open|confirm_required");
  });

  it("an exception in the work becomes the error grammar and is audited", async () => {
    const { relay, records } = setup({}, [
      echoTool([], async () => {
        throw new TypeError("boom");
      }),
    ]);
    const r = await relay.run("echo_tool", { text: "x" }, ctx);
    expect(r.text).toBe("[ERROR: TypeError: boom]");
    expect(records().at(-1)).toMatchObject({ exit_code: null, denied: false });
  });

  it("bounds the output before prefixing the exit status", async () => {
    const { relay } = setup({}, [echoTool([], async () => ({ body: "é".repeat(2000), exitCode: 3 }))]);
    const r = await relay.run("echo_tool", { text: "x" }, ctx);
    expect(r.text.startsWith("[exit 3]\né")).toBe(true);
    expect(r.text.endsWith("[TRUNCATED - 4000 bytes total, 1024 shown]")).toBe(true);
    expect(r.structured.truncated).toBe(true);
  });

  it("fail closed: a lost record is told in a notice, later calls are refused, the first after recovery runs", async () => {
    const runs: string[] = [];
    const auditPath = join(dir, `audit-${Math.random().toString(16).slice(2)}.jsonl`);
    const { relay, records } = setup(
      { RELAY_SHELL_AUDIT_PATH: auditPath, RELAY_SHELL_UNSAFE_NOTICES: "false" },
      [
        echoTool(runs, async (t) => {
          // The work takes the audit file away: its own record can no longer be written.
          if (t === "break") {
            rmSync(auditPath);
            mkdirSync(auditPath);
          }
          return { body: t, exitCode: 0 };
        }),
      ],
    );
    const broken = await relay.run("echo_tool", { text: "break" }, ctx);
    expect(runs).toEqual(["break"]);
    expect(broken.text).toMatch(
      /^\[exit 0\]\nbreak\n\[NOTICE audit this call ran, but its audit record could not be written to the audit file .*refused until the file takes records again\]$/,
    );
    expect(broken.structured.notices).toHaveLength(1);

    const refused = await relay.run("echo_tool", { text: "second" }, ctx);
    expect(refused.text).toMatch(/^\[DENIED tier 1 \(REVERSIBLE\): the audit log cannot be written/);
    expect(refused.structured.notices).toEqual([]);
    expect(runs).toEqual(["break"]);

    rmdirSync(auditPath);
    const recovered = await relay.run("echo_tool", { text: "third" }, ctx);
    expect(recovered.text).toBe("[exit 0]\nthird");
    expect(runs).toEqual(["break", "third"]);
    expect(records().map((r) => (r.args as { text: string }).text)).toEqual(["third"]);
  });

  it("consults gates only for calls the deny list and the mode admitted", async () => {
    const seen: string[] = [];
    const spy: Gate = {
      name: "spy",
      check: (call) => {
        seen.push(`${call.tier}:${call.policyText}`);
        return { kind: "proceed" };
      },
    };
    const cases: Array<[Record<string, string>, string]> = [
      [{ RELAY_SHELL_POLICY_MODE: "readonly" }, "readonly mode refuses Tier 3"],
      [{ RELAY_SHELL_POLICY_MODE: "guarded" }, "guarded mode refuses Tier 3"],
      [
        { RELAY_SHELL_POLICY_MODE: "guarded", RELAY_SHELL_POLICY_ALLOW: "rm -rf /other" },
        "guarded mode refuses",
      ],
      [{ RELAY_SHELL_POLICY_DENY: "rm\\s+-rf" }, "matched RELAY_SHELL_POLICY_DENY"],
    ];
    for (const [env, reason] of cases) {
      const runs: string[] = [];
      const { relay, records } = setup(env, [echoTool(runs, async (t) => ({ body: t, exitCode: 0 }))], [spy]);
      const r = await relay.run("echo_tool", { text: "rm -rf /x" }, ctx);
      expect(r.text).toContain(reason);
      expect(r.structured.notices).toEqual([]);
      expect(runs).toEqual([]);
      expect(records().at(-1)).not.toHaveProperty("action");
    }
    expect(seen).toEqual([]);
    const { relay } = setup({}, [echoTool([], async (t) => ({ body: t, exitCode: 0 }))], [spy]);
    await relay.run("echo_tool", { text: "rm -rf /x" }, ctx);
    expect(seen).toEqual(["3:rm -rf /x"]);
  });

  it("waits for an asynchronous gate, records its refusal, and gives back what earlier gates spent", async () => {
    const released: string[] = [];
    const spender: Gate = {
      name: "spender",
      check: () => ({
        kind: "proceed",
        action: "confirm_execute",
        release: () => void released.push("token"),
      }),
    };
    let verdict: "refuse" | "challenge" | "proceed" = "refuse";
    const later: Gate = {
      name: "later",
      async check(call) {
        await new Promise((r) => setTimeout(r, 5));
        if (verdict === "refuse") {
          return {
            kind: "refuse",
            reason: "consent: no",
            action: "consent_refuse",
            auditExtra: { consent: { request: "r1" } },
          };
        }
        if (verdict === "challenge") {
          return {
            kind: "challenge",
            text: "[CONSENT REQUIRED id=r2 expires_in=5s]",
            action: "consent_request",
            outcome: "consent_required",
          };
        }
        expect(call.session).toBe("s-1");
        return {
          kind: "proceed",
          action: "consent_execute",
          consent: { request: "r3", nonce: "n", payload: "p", signature: "sig", signer: "op" },
          auditExtra: { consent: { request: "r3", approver: "op" } },
        };
      },
    };
    const runs: string[] = [];
    const seenConsent: unknown[] = [];
    const tool = defineTool({
      name: "echo_tool",
      title: "echo",
      description: "test tool that echoes",
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
      async run(a, toolCtx) {
        runs.push(a.text);
        seenConsent.push(toolCtx.consent);
        return { body: a.text, exitCode: 0 };
      },
    });
    const { relay, records, metrics } = setup({}, [tool], [spender, later]);
    const call = { ...ctx, session: "s-1" };

    const refused = await relay.run("echo_tool", { text: "touch x" }, call);
    expect(refused.text).toBe("[DENIED tier 1 (REVERSIBLE): consent: no]");
    expect(refused.structured.denied).toBe(true);
    expect(records().at(-1)).toMatchObject({
      action: "consent_refuse",
      denied: true,
      args: { consent: { request: "r1" } },
    });
    expect(released).toEqual(["token"]);

    verdict = "challenge";
    const challenged = await relay.run("echo_tool", { text: "touch x" }, call);
    expect(challenged.text).toBe("[CONSENT REQUIRED id=r2 expires_in=5s]");
    expect(records().at(-1)).toMatchObject({ action: "consent_request", denied: false });
    expect(released).toEqual(["token", "token"]);
    expect(runs).toEqual([]);

    verdict = "proceed";
    const ran = await relay.run("echo_tool", { text: "touch x" }, call);
    expect(ran.text).toBe("[exit 0]\ntouch x");
    expect(runs).toEqual(["touch x"]);
    expect(seenConsent).toEqual([
      { request: "r3", nonce: "n", payload: "p", signature: "sig", signer: "op" },
    ]);
    expect(records().at(-1)).toMatchObject({
      action: "consent_execute",
      args: { text: "touch x", consent: { approver: "op" } },
    });
    expect(released).toEqual(["token", "token"]);
    const outcomes = metrics.series().map((series) => series.labels.outcome);
    expect(outcomes).toContain("consent_required");
  });

  it("appends notices after the record: the recorded hash and length are of the text without them", async () => {
    const { relay, records } = setup({}, [echoTool([], async (t) => ({ body: `ran ${t}`, exitCode: 0 }))]);
    const r = await relay.run("echo_tool", { text: "rm -rf /x" }, ctx);
    expect(r.structured.notices).toHaveLength(1);
    const suffix = `\n${r.structured.notices.join("\n")}`;
    expect(r.text.endsWith(suffix)).toBe(true);
    const audited = r.text.slice(0, -suffix.length);
    expect(audited).toBe("[exit 0]\nran rm -rf /x");
    const rec = records().at(-1);
    expect(rec?.output_sha256).toBe(createHash("sha256").update(audited).digest("hex"));
    expect(rec?.output_len).toBe(Buffer.byteLength(audited));
    // Tier 1: nothing to say.
    const quiet = await relay.run("echo_tool", { text: "ls" }, ctx);
    expect(quiet.text).toBe("[exit 0]\nran ls");
    expect(quiet.structured.notices).toEqual([]);
  });

  it("attaches a notice to an admitted call whose work failed, but not to a challenge", async () => {
    const gate: Gate = {
      name: "challenge-rm",
      check: (call) =>
        call.policyText.includes("/challenge")
          ? { kind: "challenge", text: "[CHALLENGED]", action: "confirm_plan" }
          : { kind: "proceed" },
    };
    const { relay } = setup(
      {},
      [
        echoTool([], async () => {
          throw new Error("nope");
        }),
      ],
      [gate],
    );
    const failed = await relay.run("echo_tool", { text: "rm -rf /x" }, ctx);
    expect(failed.text).toMatch(/^\[ERROR: Error: nope\]\n\[NOTICE tier 3/);
    const challenged = await relay.run("echo_tool", { text: "rm -rf /challenge" }, ctx);
    expect(challenged.text).toBe("[CHALLENGED]");
    expect(challenged.structured.notices).toEqual([]);
  });

  it("a tool's malformed host-key fields cannot make a call fail (SC-4)", async () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error("boom");
        },
      },
    );
    const { relay, records } = setup({}, [
      echoTool([], async (t) => ({ body: t, exitCode: 0, fields: { host_key: hostile } })),
    ]);
    const r = await relay.run("echo_tool", { text: "rm -rf /x" }, ctx);
    expect(r.text.startsWith("[exit 0]\nrm -rf /x")).toBe(true);
    expect(r.structured.exit_code).toBe(0);
    expect(records().at(-1)).toMatchObject({ exit_code: 0, tier: 3 });
  });

  it("keeps a JSON-object result parseable by putting notices inside it", async () => {
    const body = JSON.stringify({ results: [{ host: "a", output: "x" }] });
    const { relay, records } = setup({}, [echoTool([], async () => ({ body, json: true }))]);
    const r = await relay.run("echo_tool", { text: "rm -rf /x" }, ctx);
    const parsed = JSON.parse(r.text) as { notices: string[]; results: unknown[] };
    expect(parsed.notices).toEqual(r.structured.notices);
    expect(parsed.results).toHaveLength(1);
    expect(records().at(-1)?.output_sha256).toBe(createHash("sha256").update(body).digest("hex"));
  });

  it("RELAY_SHELL_UNSAFE_NOTICES=false removes every notice", async () => {
    const { relay } = setup({ RELAY_SHELL_UNSAFE_NOTICES: "false" }, [
      echoTool([], async (t) => ({
        body: t,
        exitCode: 0,
        fields: { host_key: { host: "h", port: 22, status: "unchecked" } },
      })),
    ]);
    const r = await relay.run("echo_tool", { text: "rm -rf /x" }, ctx);
    expect(r.text).toBe("[exit 0]\nrm -rf /x");
    expect(r.structured.notices).toEqual([]);
  });
});
