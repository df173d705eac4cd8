import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../helpers/server.js";
import { recvUntil } from "../helpers/sessions.js";

/**
 * session_send is judged as the line the terminal will run (ADR 0034). Guarded
 * mode, and every destructive command aims at a canary in a temporary
 * directory: should the gate fail, only the canary is lost.
 */
describe("terminal lines assembled across sends, in guarded mode", () => {
  let s: TestServer;
  let canaryDir: string;
  let canary: string;

  beforeAll(async () => {
    canaryDir = mkdtempSync(join(tmpdir(), "relay-lines-canary-"));
    canary = join(canaryDir, "keep");
    writeFileSync(canary, "keep");
    s = await startServer({
      RELAY_SHELL_POLICY_MODE: "guarded",
      RELAY_SHELL_UNSAFE_NOTICES: "false",
      // The operator allows this shell (Tier 2) and one lone cursor key (an edited line is Tier 2).
      RELAY_SHELL_POLICY_ALLOW: "^shell_spawn bash --norc --noprofile\\n|^session_send \\x1b\\[D$",
    });
  });
  afterAll(async () => {
    await s?.close();
    rmSync(canaryDir, { recursive: true, force: true });
  });

  async function spawnBash(): Promise<string> {
    const r = await s.call("shell_spawn", {
      command: "bash --norc --noprofile",
      env_json: JSON.stringify({ PS1: "lines> " }),
    });
    const id = /^session (sh-[0-9a-f]{12}) started/.exec(r.text)?.[1];
    if (id === undefined) throw new Error(`spawn failed: ${r.text}`);
    await recvUntil(s, id, "lines> ");
    return id;
  }

  const send = (id: string, data: string, enter = true) =>
    s.call("session_send", { session_id: id, data, enter });
  const GUARDED_3 =
    "[DENIED tier 3 (IRREVERSIBLE): guarded mode refuses Tier 3 (IRREVERSIBLE) without an RELAY_SHELL_POLICY_ALLOW match]";
  const GUARDED_2 =
    "[DENIED tier 2 (STATEFUL): guarded mode refuses Tier 2 (STATEFUL) without an RELAY_SHELL_POLICY_ALLOW match]";

  it("starting an interactive shell is Tier 2 and needs the allow list", async () => {
    const refused = await s.call("shell_spawn", {});
    expect(refused.text).toBe(GUARDED_2);
    expect(refused.structured).toMatchObject({
      tier: 2,
      basis: "interactive_program",
      basis_part: "a shell (no command given)",
    });
    const python = await s.call("shell_spawn", { command: "python3 -q" });
    expect(python.text).toBe(GUARDED_2);
    expect(python.structured.basis).toBe("interactive_program");
  });

  it("refuses a destructive command typed in pieces, and the refused piece changes nothing", async () => {
    const id = await spawnBash();
    // One line entered, the start of the next one left pending.
    const first = await send(id, "echo one\nr", false);
    expect(first.text).toBe(`sent 10 bytes to ${id}`);
    await recvUntil(s, id, "one");

    const refused = await send(id, `m -rf ${canaryDir}`);
    expect(refused.text).toBe(GUARDED_3);
    expect(refused.structured).toMatchObject({ tier: 3, basis: "file_destruction" });
    expect(s.records().at(-1)).toMatchObject({
      tool: "session_send",
      tier: 3,
      denied: true,
      args: { session_id: id, data: `m -rf ${canaryDir}`, enter: true, line: `rm -rf ${canaryDir}` },
    });
    expect(existsSync(canary)).toBe(true);

    // The terminal still holds `r`: the next piece completes that line, not a new one.
    const completed = await send(id, `ealpath ${canaryDir}`);
    expect(completed.text).toBe(`sent ${`ealpath ${canaryDir}`.length + 1} bytes to ${id}`);
    expect(s.records().at(-1)).toMatchObject({
      tool: "session_send",
      denied: false,
      args: { line: `realpath ${canaryDir}` },
    });
    await recvUntil(s, id, `${canaryDir}\r\n`);

    // A harmless line still runs, and is recorded without a separate line.
    await send(id, "echo done-$((3*3))");
    await recvUntil(s, id, "done-9");
    const sends = s.records().filter((r) => r.tool === "session_send");
    expect(sends.at(-1)?.args).toEqual({ session_id: id, data: "echo done-$((3*3))", enter: true });
    expect(existsSync(canary)).toBe(true);
    await s.call("session_kill", { session_id: id });
  });

  it("an escape sequence makes the line opaque: at least Tier 2 until the next Enter", async () => {
    const id = await spawnBash();
    // Not allowed: the key alone is already an edited line.
    const up = await send(id, "\x1b[A", false);
    expect(up.text).toBe(GUARDED_2);
    expect(up.structured).toMatchObject({ tier: 2, basis: "opaque_program" });
    // Allowed by the operator's pattern: the cursor moves, nothing runs.
    const left = await send(id, "\x1b[D", false);
    expect(left.text).toBe(`sent 3 bytes to ${id}`);
    expect(left.structured).toMatchObject({ tier: 2, basis: "opaque_program" });

    const line = await send(id, "echo hi");
    expect(line.text).toBe(GUARDED_2);
    expect(line.structured).toMatchObject({ tier: 2, basis: "opaque_program" });
    expect(s.records().at(-1)).toMatchObject({
      tool: "session_send",
      tier: 2,
      denied: true,
      args: { data: "echo hi", line: "\x1b[Decho hi" },
    });
    // A destructive line after the edit is judged by its text too: Tier 3.
    const destructive = await send(id, `rm -rf ${canaryDir}`);
    expect(destructive.text).toBe(GUARDED_3);
    expect(existsSync(canary)).toBe(true);
    await s.call("session_kill", { session_id: id });
  });
});
