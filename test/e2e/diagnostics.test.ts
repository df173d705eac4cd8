import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, startServer, type TestServer } from "../helpers/server.js";

describe("server_info, audit_tail and the prompt over stdio", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ RELAY_SHELL_AUDIT_CHAIN: "true" });
  });
  afterAll(async () => {
    await s.close();
  });

  it("sends instructions that name the registered tools and the cues", async () => {
    const text = s.client.getInstructions() ?? "";
    for (const cue of ["choosing a tool", "runs and exits", "tty", "one workflow"]) {
      expect(text.toLowerCase()).toContain(cue);
    }
    // Every registered tool is named, and nothing that looks like a tool name but is not one.
    const { tools } = await s.client.listTools();
    expect(tools).toHaveLength(24);
    for (const tool of tools) expect(text).toContain(tool.name);
    const named = new Set(
      text.match(/\b(?:shell|ssh|session|server|audit|operation|policy)_[a-z_]+\b/g) ?? [],
    );
    expect([...named].sort()).toEqual(tools.map((t) => t.name).sort());
    expect(text).toMatch(/irreversible command returns \[CONFIRM REQUIRED/);
  });

  it("server_info reports posture from the live settings", async () => {
    const r = await s.call("server_info");
    const info = JSON.parse(r.text) as Record<string, Record<string, unknown>>;
    expect(info.name).toBe("relay-shell");
    expect(info.policy_mode).toBe("open");
    expect(info.transport).toBe("stdio");
    expect(info.audit).toMatchObject({ path: s.auditPath, degraded: false, chain: true, format: "jsonl" });
    expect(info.limits).toMatchObject({ max_output_hard: 1048576, max_input: 1048576, max_timeout: 900 });
    expect(info.seccomp).toMatchObject({ supported: false, reason: "not implemented" });
    expect(info.confirm).toMatchObject({ tier3: false, ttl: 120, pending: 0 });
    expect(info.runtime?.is_root).toBe(process.geteuid?.() === 0);
    // The test set-up builds the native launcher wherever a C compiler is (test/global-setup.ts).
    expect(info.runtime?.launcher).toBe(
      existsSync(join(REPO_ROOT, "dist/exec/relay-launcher")) ? "native" : "node",
    );
    expect(info.warnings).toContain(
      "policy is open with no deny list and no Tier-3 confirmation: nothing is refused",
    );
    expect(r.structured.tier).toBe(0);
  });

  it("audit_tail returns recent records, filters within the window and records only set filters", async () => {
    await s.call("shell_exec", { command: "echo one" });
    await s.call("shell_exec", { command: "rm -rf /nonexistent-relay-shell-test-dir" });
    const all = await s.call("audit_tail", { lines: 3 });
    const lines = all.text.split("\n");
    expect(lines).toHaveLength(3);
    expect(JSON.parse(lines[2] ?? "{}")).toMatchObject({ tool: "shell_exec", tier: 3 });
    const tier3 = await s.call("audit_tail", { lines: 100, tier: 3 });
    for (const line of tier3.text.split("\n")) expect(JSON.parse(line)).toMatchObject({ tier: 3 });
    expect(s.records().at(-1)?.args).toEqual({ lines: 100, tier_filter: 3 });
    const none = await s.call("audit_tail", { tool: "no_such_tool" });
    expect(none.text).toBe("");
    await s.call("audit_tail", { lines: 5000 });
    expect(s.records().at(-1)?.args).toEqual({ lines: 1000 });
  });

  it("the operating guide prompt is audited by hash only", async () => {
    const { prompts } = await s.client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(["operating_guide"]);
    const before = s.records().length;
    const prompt = await s.client.getPrompt({ name: "operating_guide" });
    const content = prompt.messages[0]?.content;
    const text = content && content.type === "text" ? content.text : "";
    expect(text).toContain("shell_exec");
    expect(text).toMatch(/one-shot|runs and exits/i);
    const records = s.records();
    expect(records.length).toBe(before + 1);
    expect(records.at(-1)).toMatchObject({
      tool: "prompt:operating_guide",
      tier: 0,
      args: {},
      exit_code: null,
    });
    expect(s.auditText()).not.toContain("operating guide");
  });

  it("writes a hash chain that every record joins", async () => {
    const records = s.records();
    records.forEach((rec, i) => {
      expect(rec.seq).toBe(i);
    });
    expect(records[0]?.prev).toBe("0".repeat(64));
  });
});
