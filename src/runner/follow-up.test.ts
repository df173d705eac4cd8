import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAuditLog } from "../audit/index.js";
import { type ConfirmBroker, createConfirmBroker, type FollowUpPlan } from "../broker/index.js";
import { loadSettings } from "../config/index.js";
import { cryptoIds, systemClock } from "../core/index.js";
import { createCallCounter } from "../metrics/index.js";
import { type Classifier, createClassifier } from "../policy/index.js";
import { createFollowUpVetter } from "./admission.js";
import { createConfirmGate } from "./confirm-gate.js";
import { createRelay } from "./relay.js";
import { defineTool, type Tool } from "./tool.js";

const ctx = { requestId: "", clientId: "", signal: new AbortController().signal };

/**
 * The verify/rollback loop through the real relay, broker, gate, classifier
 * and audit file. The tool is a scripted stand-in (a seam we own) that
 * records every command it was asked to run: `fail` in a command exits 1,
 * `hang` times out, `say:X` prints X.
 */
describe("verify / rollback follow-ups", () => {
  let dir: string;
  let classifier: Classifier;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-followup-"));
    classifier = await createClassifier();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function scriptedTool(runs: string[], withFollowUp = true): Tool {
    return defineTool({
      name: "cmd",
      title: "cmd",
      description: "scripted command tool",
      params: {
        command: { type: "string", description: "command" },
        target: { type: "string", description: "target", default: "t1" },
      },
      tier: { kind: "heuristic", floor: 1, windows: false },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      budget: () => 1024,
      policyText: (a) => a.command,
      auditArgs: (a) => ({ command: a.command, target: a.target }),
      ...(withFollowUp
        ? { followUp: (a: { command: string; target: string }, command: string) => ({ ...a, command }) }
        : {}),
      async run(a) {
        runs.push(`${a.target}:${a.command}`);
        if (a.command.includes("hang")) return { body: "", timedOutAfter: 5 };
        const said = /say:(\S+)/.exec(a.command)?.[1] ?? "";
        return { body: said, exitCode: a.command.includes("fail") ? 1 : 0 };
      },
    });
  }

  function setup(env: Record<string, string> = {}, withFollowUp = true) {
    const auditPath = join(dir, `audit-${Math.random().toString(16).slice(2)}.jsonl`);
    const settings = loadSettings(
      {
        RELAY_SHELL_AUDIT_PATH: auditPath,
        RELAY_SHELL_CONFIRM_TIER3: "true",
        RELAY_SHELL_CONFIRM_ROLLBACK: "true",
        ...env,
      },
      { cwd: dir },
    );
    const audit = createAuditLog(
      { path: auditPath, format: "jsonl", chain: false, stderrEcho: false },
      { clock: systemClock },
    );
    const broker: ConfirmBroker = createConfirmBroker(
      { ttlSeconds: 60, rollback: true },
      { clock: systemClock, ids: cryptoIds },
    );
    const runs: string[] = [];
    const tools = [scriptedTool(runs, withFollowUp)];
    const relay = createRelay({
      settings,
      classifier,
      audit,
      metrics: createCallCounter(),
      tools,
      gates: [createConfirmGate(broker)],
    });
    const vet = createFollowUpVetter({ settings, classifier, audit, tools });
    const records = () =>
      readFileSync(auditPath, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    /** Plan, arm directly at the broker (no arm-time vetting), execute. */
    async function confirmed(args: Record<string, unknown>, plan: FollowUpPlan) {
      const challenge = await relay.run("cmd", args, ctx);
      const token = /token="([^"]+)"/.exec(challenge.text)?.[1] ?? "";
      expect((await broker.arm(token, plan)).kind).toBe("armed");
      return relay.run("cmd", args, ctx);
    }
    return { relay, broker, runs, records, vet, confirmed };
  }

  const plan = (p: Partial<FollowUpPlan>): FollowUpPlan => ({
    verifyCommand: "",
    rollbackCommand: "",
    verifyExpect: "",
    autoRollback: false,
    ...p,
  });

  it("a failing verify triggers exactly one rollback, on the same target, each step its own record", async () => {
    const s = setup();
    const r = await s.confirmed(
      { command: "rm -rf /srv/app", target: "web1" },
      plan({ verifyCommand: "check fail", rollbackCommand: "restore say:back", autoRollback: true }),
    );
    expect(s.runs).toEqual(["web1:rm -rf /srv/app", "web1:check fail", "web1:restore say:back"]);
    expect(r.text).toBe(
      "[exit 0]\n[verify exit 1]\n[verify failed: exit status 1; running the bound rollback once]\n" +
        "[rollback exit 0]\nback\n" +
        r.structured.notices.join("\n"),
    );
    expect(r.structured.verify).toMatchObject({ ran: true, exit_code: 1, failed: true, tier: 1 });
    expect(r.structured.rollback).toMatchObject({ ran: true, exit_code: 0, failed: false });
    const actions = s
      .records()
      .map((rec) => [rec.action, rec.tier, rec.exit_code, (rec.args as { target: string }).target]);
    expect(actions).toEqual([
      ["confirm_plan", 3, null, "web1"],
      ["confirm_execute", 3, 0, "web1"],
      ["confirm_verify", 1, 1, "web1"],
      ["confirm_rollback", 1, 0, "web1"],
    ]);
  });

  it("a passing verify runs no rollback; verify_expect, a timeout and no rollback flag are precise", async () => {
    const s = setup();
    await s.confirmed(
      { command: "rm -rf /a" },
      plan({
        verifyCommand: "check say:ok",
        rollbackCommand: "undo",
        autoRollback: true,
        verifyExpect: "ok",
      }),
    );
    expect(s.runs).toEqual(["t1:rm -rf /a", "t1:check say:ok"]);

    s.runs.length = 0;
    const missing = await s.confirmed(
      { command: "rm -rf /b" },
      plan({
        verifyCommand: "check say:nope",
        rollbackCommand: "undo",
        autoRollback: true,
        verifyExpect: "ok",
      }),
    );
    expect(missing.text).toContain(
      "[verify failed: the expected text is not in its output; running the bound rollback once]",
    );
    expect(s.runs).toEqual(["t1:rm -rf /b", "t1:check say:nope", "t1:undo"]);

    s.runs.length = 0;
    const hung = await s.confirmed(
      { command: "rm -rf /c" },
      plan({ verifyCommand: "hang", rollbackCommand: "undo", autoRollback: true }),
    );
    expect(hung.text).toContain("[verify TIMEOUT after 5s]\n[verify failed: it timed out;");
    expect(s.runs).toEqual(["t1:rm -rf /c", "t1:hang", "t1:undo"]);

    s.runs.length = 0;
    const off = await s.confirmed(
      { command: "rm -rf /d" },
      plan({ verifyCommand: "check fail", rollbackCommand: "undo" }),
    );
    expect(off.text).toContain("[verify failed: exit status 1; no rollback ran (auto_rollback is off)]");
    expect(off.structured.rollback).toBeUndefined();
    expect(s.runs).toEqual(["t1:rm -rf /d", "t1:check fail"]);
  });

  it("a failing rollback is reported loudly and never retried", async () => {
    const s = setup();
    const r = await s.confirmed(
      { command: "rm -rf /srv" },
      plan({ verifyCommand: "check fail", rollbackCommand: "restore fail", autoRollback: true }),
    );
    expect(r.text).toContain("[rollback exit 1]\n[ROLLBACK FAILED: exit status 1. It is not retried;");
    expect(s.runs.filter((c) => c.includes("restore"))).toHaveLength(1);
    expect(s.records().filter((rec) => rec.action === "confirm_rollback")).toHaveLength(1);
  });

  it("a Tier-3 rollback is still Tier 3, needs no second token, and goes through the deny list at run time", async () => {
    const s = setup();
    const r = await s.confirmed(
      { command: "rm -rf /srv" },
      plan({ verifyCommand: "check fail", rollbackCommand: "rm -rf /srv/new", autoRollback: true }),
    );
    expect(r.text).not.toContain("CONFIRM REQUIRED");
    expect(s.runs).toContain("t1:rm -rf /srv/new");
    expect(s.records().at(-1)).toMatchObject({ action: "confirm_rollback", tier: 3, exit_code: 0 });
    expect(await s.broker.pending()).toBe(0);

    // Armed behind the vetting's back, a rollback the deny list matches is still refused when it would run.
    const denied = setup({ RELAY_SHELL_POLICY_DENY: "mkfs" });
    const d = await denied.confirmed(
      { command: "rm -rf /srv" },
      plan({ verifyCommand: "check fail", rollbackCommand: "mkfs.ext4 /dev/sdz", autoRollback: true }),
    );
    expect(d.text).toContain(
      "[rollback DENIED tier 3 (IRREVERSIBLE): matched RELAY_SHELL_POLICY_DENY]\n[ROLLBACK FAILED: it was refused by policy.",
    );
    expect(denied.runs).toEqual(["t1:rm -rf /srv", "t1:check fail"]);
    expect(denied.records().at(-1)).toMatchObject({
      action: "confirm_rollback",
      denied: true,
      exit_code: null,
    });
    expect(d.structured.rollback).toMatchObject({ ran: false, denied: true, failed: true });
  });

  it("a verify the mode refuses at run time counts as failed and runs nothing", async () => {
    const s = setup({ RELAY_SHELL_POLICY_MODE: "guarded", RELAY_SHELL_POLICY_ALLOW: "rm -rf /srv$" });
    const r = await s.confirmed(
      { command: "rm -rf /srv" },
      plan({ verifyCommand: "sudo check", rollbackCommand: "restore", autoRollback: true }),
    );
    expect(r.text).toContain("[verify DENIED tier 2 (STATEFUL): guarded mode refuses Tier 2");
    expect(s.runs).toEqual(["t1:rm -rf /srv", "t1:restore"]);
  });

  it("vets follow-ups as the planned call: deny list first, then the mode, and only for tools that can", () => {
    const s = setup({
      RELAY_SHELL_POLICY_DENY: "mkfs",
      RELAY_SHELL_POLICY_MODE: "guarded",
      RELAY_SHELL_POLICY_ALLOW: "^cmd rm",
    });
    const args = { command: "rm -rf /srv", target: "web1" };
    expect(s.vet("cmd", args, "test -e /srv")).toBeNull();
    expect(s.vet("cmd", args, "mkfs.ext4 /dev/sdz")).toBe(
      "cmd would refuse it as tier 3 (IRREVERSIBLE): matched RELAY_SHELL_POLICY_DENY",
    );
    expect(s.vet("cmd", args, "shutdown -h now")).toMatch(
      /^cmd would refuse it as tier 3 \(IRREVERSIBLE\): guarded mode/,
    );
    expect(s.vet("cmd", args, "rm -rf /srv/old")).toBeNull(); // the allow list admits it, as it would the call
    expect(s.vet("nope", args, "ls")).toBe("nope is not a registered tool");
    const plain = setup({}, false);
    expect(plain.vet("cmd", args, "ls")).toBe("cmd cannot run verify or rollback commands");
  });
});
