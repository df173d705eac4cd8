import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUN, sleepers, until } from "../helpers/processes.js";
import { startServer, type TestServer } from "../helpers/server.js";
import { recvUntil } from "../helpers/sessions.js";

function idOf(text: string): string {
  const match = /^session (sh-[0-9a-f]{12}) started/.exec(text);
  if (!match) throw new Error(`spawn failed: ${text}`);
  return match[1] as string;
}

describe("session limit, recordings and guarded keystrokes", () => {
  let s: TestServer;
  let recordDir: string;
  beforeAll(async () => {
    // Not created beforehand: the server makes the directory itself (0700).
    recordDir = join(tmpdir(), `relay-rec-${RUN}`, "casts");
    s = await startServer({
      RELAY_SHELL_MAX_SESSIONS: "2",
      RELAY_SHELL_POLICY_MODE: "guarded",
      // An interactive shell is Tier 2 (ADR 0034): the operator allows this one by name.
      RELAY_SHELL_POLICY_ALLOW: "^shell_spawn bash --norc --noprofile\n",
      RELAY_SHELL_SESSION_RECORD_DIR: recordDir,
    });
  });
  afterAll(async () => {
    await s.close();
    rmSync(join(recordDir, ".."), { recursive: true, force: true });
  });

  it("refuses a spawn beyond RELAY_SHELL_MAX_SESSIONS and leaves no child behind", async () => {
    const a = idOf((await s.call("shell_spawn", { command: `sleep ${RUN}1` })).text);
    const b = idOf((await s.call("shell_spawn", { command: `sleep ${RUN}2` })).text);
    await until(() => sleepers(RUN).length === 2);
    const refused = await s.call("shell_spawn", { command: `sleep ${RUN}3` });
    expect(refused.text).toBe("[ERROR: SessionError: session limit reached (2); close idle sessions first]");
    expect(s.records().at(-1)).toMatchObject({ tool: "shell_spawn", denied: false, exit_code: null });
    await new Promise((done) => setTimeout(done, 200));
    expect(sleepers(`${RUN}3`)).toEqual([]);
    expect((await s.call("session_kill", { session_id: a })).text).toBe(`killed and closed ${a}`);
    const c = idOf((await s.call("shell_spawn", { command: `sleep ${RUN}3` })).text);
    for (const id of [b, c]) await s.call("session_kill", { session_id: id });
    expect(sleepers(RUN)).toEqual([]);
    expect((await s.call("session_list")).text).toBe("[]");
  });

  it("guarded mode types benign keystrokes but refuses a Tier-3 payload", async () => {
    const canary = join(s.dir, "canary");
    writeFileSync(canary, "keep");
    const spawned = await s.call("shell_spawn", {
      command: "bash --norc --noprofile",
      env_json: JSON.stringify({ PS1: "ready> " }),
    });
    const id = idOf(spawned.text);
    await recvUntil(s, id, "ready> ");
    expect((await s.call("session_send", { session_id: id, data: "ls -la" })).text).toBe(
      `sent 7 bytes to ${id}`,
    );
    const refused = await s.call("session_send", { session_id: id, data: `bash -c 'rm -rf ${canary}'` });
    expect(refused.text).toBe(
      "[DENIED tier 3 (IRREVERSIBLE): guarded mode refuses Tier 3 (IRREVERSIBLE) without an RELAY_SHELL_POLICY_ALLOW match]",
    );
    expect(s.records().at(-1)).toMatchObject({ tool: "session_send", tier: 3, denied: true });
    await s.call("session_send", { session_id: id, data: "echo done-$((3*3))" });
    await recvUntil(s, id, "done-9");
    expect(existsSync(canary)).toBe(true);
    await s.call("session_kill", { session_id: id });
  });

  it("writes an asciicast v2 recording (0600, output and resizes, no keystrokes)", async () => {
    const spawned = await s.call("shell_spawn", {
      command: "bash --norc --noprofile",
      cols: 90,
      rows: 20,
      env_json: JSON.stringify({ PS1: "rec> " }),
    });
    const id = idOf(spawned.text);
    const path = join(recordDir, `${id}.cast`);
    expect(spawned.structured.recording).toBe(path);
    expect(s.records().at(-1)?.args).toMatchObject({
      size: "90x20",
      recording_dir: recordDir,
      recording: path,
    });
    const listed = JSON.parse((await s.call("session_list")).text) as Array<Record<string, unknown>>;
    expect(listed.find((r) => r.id === id)?.recording).toBe(path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(recordDir).mode & 0o777).toBe(0o700);

    await recvUntil(s, id, "rec> ");
    await s.call("session_send", { session_id: id, data: "echo secret-$((6*7))" });
    await recvUntil(s, id, "secret-42\r\n");
    await s.call("session_resize", { session_id: id, cols: 100, rows: 30 });
    await s.call("session_send", { session_id: id, data: "exit 0" });
    await recvUntil(s, id, `[session ${id} ended, exit=0]`);

    const lines = readFileSync(path, "utf8").trimEnd().split("\n");
    const header = JSON.parse(lines[0] ?? "") as Record<string, unknown>;
    expect(header).toMatchObject({ version: 2, width: 90, height: 20, command: "bash --norc --noprofile" });
    expect(Number.isInteger(header.timestamp)).toBe(true);
    expect(Math.abs((header.timestamp as number) - Date.now() / 1000)).toBeLessThan(120);
    const events = lines.slice(1).map((line) => JSON.parse(line) as unknown);
    expect(events.length).toBeGreaterThan(2);
    let last = 0;
    for (const event of events) {
      expect(Array.isArray(event) && event.length === 3).toBe(true);
      const [time, code, data] = event as [unknown, unknown, unknown];
      expect(typeof time).toBe("number");
      expect(time as number).toBeGreaterThanOrEqual(last);
      last = time as number;
      expect(["o", "r"]).toContain(code);
      expect(typeof data).toBe("string");
    }
    const output = events
      .filter((e) => (e as unknown[])[1] === "o")
      .map((e) => (e as string[])[2])
      .join("");
    expect(output).toContain("secret-42\r\n");
    expect(events).toContainEqual([expect.any(Number), "r", "100x30"]);
  });
});

describe("readonly mode", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ RELAY_SHELL_POLICY_MODE: "readonly" });
  });
  afterAll(async () => {
    await s.close();
  });

  it("refuses a destructive session_send as Tier 3 and any spawn, but still lists", async () => {
    const canary = join(s.dir, "canary");
    writeFileSync(canary, "keep");
    const r = await s.call("session_send", {
      session_id: "sh-0123456789ab",
      data: `bash -c 'rm -rf ${canary}'`,
    });
    expect(r.text).toBe("[DENIED tier 3 (IRREVERSIBLE): readonly mode refuses Tier 3 (IRREVERSIBLE)]");
    expect(s.records().at(-1)).toMatchObject({ tool: "session_send", tier: 3, denied: true });
    expect((await s.call("shell_spawn", {})).text).toBe(
      "[DENIED tier 2 (STATEFUL): readonly mode refuses Tier 2 (STATEFUL)]",
    );
    expect(s.records().at(-1)).toMatchObject({ tool: "shell_spawn", tier: 2, denied: true });
    expect((await s.call("session_list")).text).toBe("[]");
    expect(existsSync(canary)).toBe(true);
  });
});

describe("server shutdown", () => {
  it("kills every session's processes when the client goes away", async () => {
    const s = await startServer();
    const shell = idOf(
      (await s.call("shell_spawn", { command: "bash --norc --noprofile", env_json: '{"PS1":"up> "}' })).text,
    );
    await recvUntil(s, shell, "up> ");
    await s.call("session_send", { session_id: shell, data: `sleep ${RUN}7 & sleep ${RUN}8` });
    idOf((await s.call("shell_spawn", { command: `sleep ${RUN}9` })).text);
    await until(
      () => sleepers(`${RUN}7`).length + sleepers(`${RUN}8`).length + sleepers(`${RUN}9`).length === 3,
    );
    await s.close();
    await until(() => [7, 8, 9].every((n) => sleepers(`${RUN}${n}`).length === 0), 5000);
  });
});
