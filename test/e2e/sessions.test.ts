import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUN, sleepers, until } from "../helpers/processes.js";
import { startServer, type TestServer } from "../helpers/server.js";

describe("PTY sessions over stdio", () => {
  let s: TestServer;

  /** Call a tool, optionally as a named client (`_meta.client_id`). */
  const call = (name: string, args: Record<string, unknown>, clientId?: string) =>
    s.call(name, args, clientId);

  async function spawn(args: Record<string, unknown>, clientId?: string): Promise<string> {
    const r = await call("shell_spawn", args, clientId);
    const match =
      /^session (sh-[0-9a-f]{12}) started \((.*)\); use session_recv\/session_send with this id$/.exec(
        r.text,
      );
    if (!match) throw new Error(`spawn failed: ${r.text}`);
    return match[1] as string;
  }

  /** Read until `pattern` matches what was read so far (or the session ends); returns everything read. */
  async function recvUntil(
    id: string,
    pattern: RegExp | string,
    clientId?: string,
    ms = 10_000,
  ): Promise<string> {
    let text = "";
    const deadline = Date.now() + ms;
    const done = () => (typeof pattern === "string" ? text.includes(pattern) : pattern.test(text));
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`no ${String(pattern)} in ${JSON.stringify(text)}`);
      const r = await call("session_recv", { session_id: id, timeout: 1 }, clientId);
      if (r.text.startsWith("[ERROR")) throw new Error(r.text);
      text += r.text;
      if (r.structured.ended === true && !done()) throw new Error(`ended early: ${JSON.stringify(text)}`);
    }
    return text;
  }

  const send = (id: string, data: string, clientId?: string) =>
    call("session_send", { session_id: id, data }, clientId);

  beforeAll(async () => {
    s = await startServer({ RELAY_SHELL_UNSAFE_NOTICES: "false" });
  });
  afterAll(async () => {
    await s.close();
  });

  it("announces the six session tools with tiers, annotations and cross-references", async () => {
    const { tools } = await s.client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get("shell_spawn")?.description).toContain("shell_exec");
    expect(byName.get("shell_exec")?.description).toContain("shell_spawn");
    expect(byName.get("session_send")?.inputSchema.required).toEqual(["session_id", "data"]);
    expect(byName.get("session_resize")?.inputSchema.required).toEqual(["session_id", "cols", "rows"]);
    expect(byName.get("session_recv")?.annotations?.readOnlyHint).toBe(true);
    expect(byName.get("session_list")?.annotations?.readOnlyHint).toBe(true);
    expect(byName.get("session_kill")?.annotations?.readOnlyHint).toBe(false);
    expect(byName.get("shell_spawn")?.annotations?.readOnlyHint).toBe(false);
    expect(byName.get("shell_spawn")?.outputSchema?.properties).toHaveProperty("session_id");
  });

  it("keeps a bash session's state between sends and reflects a resize in stty size", async () => {
    mkdirSync(join(s.dir, "sub"));
    const id = await spawn({ command: "bash --norc --noprofile", cwd: s.dir });
    const spawned = s.records().at(-1);
    // An interactive shell: its later input runs commands (ADR 0034).
    expect(spawned).toMatchObject({
      tool: "shell_spawn",
      tier: 2,
      args: { command: "bash --norc --noprofile", size: "120x40", cwd: s.dir, env_json: "" },
    });
    expect(spawned?.args).not.toHaveProperty("recording_dir");
    const sent = await send(id, "cd sub");
    expect(sent.text).toBe(`sent 7 bytes to ${id}`);
    expect(sent.structured).toMatchObject({ tool: "session_send", bytes: 7 });
    // `cd` is proven to only read: Tier 0.
    expect(sent.structured.tier).toBe(0);
    await send(id, 'echo "cwd=$(pwd) term=$TERM"; stty size');
    const out = await recvUntil(id, /^40 120\r$/m);
    expect(out).toContain(`cwd=${join(s.dir, "sub")} term=xterm-256color`);

    const resized = await call("session_resize", { session_id: id, cols: 100, rows: 30 });
    expect(resized.text).toBe(`resized ${id} to 100x30`);
    expect(resized.structured.tier).toBe(1);
    await send(id, "stty size");
    await recvUntil(id, /^30 100\r$/m);
    expect(s.records().at(-1)).toMatchObject({
      tool: "session_recv",
      tier: 0,
      args: { session_id: id, timeout: 1 },
    });

    const listed = JSON.parse((await call("session_list", {})).text) as Array<Record<string, unknown>>;
    const row = listed.find((r) => r.id === id);
    expect(row).toMatchObject({
      kind: "local",
      title: "bash --norc --noprofile",
      size: "100x30",
      closed: false,
    });
    expect(row?.exit_code).toBeNull();
    expect(row?.bytes_in).toBeGreaterThan(0);
    expect(row?.produced).toBeGreaterThan(0);
    expect(Object.keys(row ?? {})).toEqual(
      expect.arrayContaining(["age_s", "idle_s", "buffered", "dropped", "owner", "recording"]),
    );
    expect((await call("session_kill", { session_id: id })).text).toBe(`killed and closed ${id}`);
  });

  it("drives a python3 REPL to its exit and reports the exact ended sentinel", async () => {
    const id = await spawn({ command: "python3 -q" });
    await recvUntil(id, ">>> ");
    await send(id, "print(6*7)");
    await recvUntil(id, /^42\r$/m);
    await send(id, "exit(4)");
    const tail = await recvUntil(id, `[session ${id} ended, exit=4]`);
    expect(tail.endsWith(`\n[session ${id} ended, exit=4]`)).toBe(true);
    const again = await call("session_recv", { session_id: id, timeout: 0 });
    expect(again.text).toBe(`\n[session ${id} ended, exit=4]`);
    expect(again.structured).toMatchObject({ ended: true, session_exit_code: 4, exit_code: null });
    const late = await send(id, "print(1)");
    expect(late.text).toBe(`[ERROR: SessionError: session ${id} has ended]`);
    expect(s.records().at(-1)).toMatchObject({ tool: "session_send", denied: false, exit_code: null });
  });

  it("answers a program that asks for input", async () => {
    const id = await spawn({ command: `bash -c 'read -r -p "name? " n; echo "hello $n"; exit 3'` });
    await recvUntil(id, "name? ");
    await send(id, "world");
    const out = await recvUntil(id, `\n[session ${id} ended, exit=3]`);
    expect(out).toContain("hello world");
  });

  it("never garbles a character split across chunks or cut by max_bytes", async () => {
    const split = await spawn({ command: `bash -c "printf 'a\\xe2\\x82'; sleep 0.3; printf '\\xac b'"` });
    const text = await recvUntil(split, `\n[session ${split} ended, exit=0]`);
    expect(text).toBe(`a€ b\n[session ${split} ended, exit=0]`);

    const euros = "€".repeat(400);
    const id = await spawn({ command: `python3 -c "import sys; sys.stdout.write('€'*400)"` });
    let joined = "";
    for (let i = 0; i < 40 && !joined.includes("[session"); i++) {
      const r = await call("session_recv", { session_id: id, timeout: 1, max_bytes: 256 });
      expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(256);
      expect(r.structured.truncated).toBe(false);
      joined += r.text;
    }
    expect(joined).toBe(`${euros}\n[session ${id} ended, exit=0]`);
  });

  it("session_kill closes the whole process tree and reports the signal actually sent", async () => {
    const id = await spawn({ command: "bash --norc --noprofile" });
    await send(id, `sleep ${RUN}01 & sleep ${RUN}02`);
    await until(() => sleepers(`${RUN}0`).length === 2);
    const killed = await call("session_kill", { session_id: id });
    expect(killed.text).toBe(`killed and closed ${id}`);
    expect(killed.structured).toMatchObject({ tier: 1, signal: "SIGTERM" });
    expect(s.records().at(-1)).toMatchObject({
      tool: "session_kill",
      tier: 1,
      args: { session_id: id, signal_name: "TERM", close: true },
    });
    expect(sleepers(`${RUN}0`)).toEqual([]);
    expect((await call("session_recv", { session_id: id })).text).toBe(
      `[ERROR: SessionError: unknown session: ${id}]`,
    );

    const shell = await spawn({ command: "bash --norc --noprofile" });
    await send(shell, `sleep ${RUN}03`);
    await until(() => sleepers(`${RUN}03`).length === 1);
    const interrupted = await call("session_kill", { session_id: shell, signal_name: "int", close: false });
    expect(interrupted.text).toBe(`sent SIGINT to ${shell}`);
    await until(() => sleepers(`${RUN}03`).length === 0);
    await send(shell, "echo alive-$((1+1))");
    await recvUntil(shell, /^alive-2\r$/m);
    // An unknown name falls back to TERM, and the reply says so (an interactive bash ignores TERM).
    const fallback = await call("session_kill", { session_id: shell, signal_name: "bogus", close: false });
    expect(fallback.text).toBe(`sent SIGTERM to ${shell}`);
    expect(
      (await call("session_kill", { session_id: shell, signal_name: "SIGKILL", close: false })).text,
    ).toBe(`sent SIGKILL to ${shell}`);
    await recvUntil(shell, `\n[session ${shell} ended, exit=-9]`);
    expect((await call("session_kill", { session_id: shell, close: false })).text).toBe(
      `[ERROR: SessionError: session ${shell} has ended]`,
    );
    expect((await call("session_kill", { session_id: shell })).text).toBe(`killed and closed ${shell}`);
  });

  it("binds a session to the client that created it", async () => {
    const id = await spawn({ command: "bash --norc --noprofile" }, "client-A");
    const shared = await spawn({ command: "cat" });
    const refused = `[ERROR: SessionError: session ${id} belongs to another client]`;
    const before = s.records().length;
    expect((await send(id, "echo intruder", "client-B")).text).toBe(refused);
    expect((await call("session_recv", { session_id: id, timeout: 0 }, "client-B")).text).toBe(refused);
    expect((await call("session_resize", { session_id: id, cols: 10, rows: 10 }, "client-B")).text).toBe(
      refused,
    );
    expect((await call("session_kill", { session_id: id }, "client-B")).text).toBe(refused);
    expect((await send(id, "echo anonymous")).text).toBe(refused);
    const records = s.records().slice(before);
    expect(records.map((r) => [r.tool, r.client_id ?? ""])).toEqual([
      ["session_send", "client-B"],
      ["session_recv", "client-B"],
      ["session_resize", "client-B"],
      ["session_kill", "client-B"],
      ["session_send", ""],
    ]);

    const listB = JSON.parse((await call("session_list", {}, "client-B")).text) as Array<{ id: string }>;
    expect(listB.map((r) => r.id)).not.toContain(id);
    expect(listB.map((r) => r.id)).toContain(shared);
    const listA = JSON.parse((await call("session_list", {}, "client-A")).text) as Array<
      Record<string, unknown>
    >;
    expect(listA.find((r) => r.id === id)).toMatchObject({ owner: "client-A" });

    await send(id, "echo owner-$((2*3))", "client-A");
    const out = await recvUntil(id, /^owner-6\r$/m, "client-A");
    expect(out).not.toContain("intruder");
    expect((await call("session_kill", { session_id: id }, "client-A")).text).toBe(`killed and closed ${id}`);
    expect((await call("session_kill", { session_id: shared }, "client-B")).text).toBe(
      `killed and closed ${shared}`,
    );
  });

  it("answers bad input in the contract grammar and keeps serving", async () => {
    const ghost = "sh-000000000000";
    for (const [tool, args] of [
      ["session_send", { session_id: ghost, data: "x" }],
      ["session_recv", { session_id: ghost, timeout: 0 }],
      ["session_resize", { session_id: ghost, cols: 80, rows: 24 }],
      ["session_kill", { session_id: ghost }],
    ] as const) {
      expect((await call(tool, args)).text).toBe(`[ERROR: SessionError: unknown session: ${ghost}]`);
      expect(s.records().at(-1)).toMatchObject({ tool, args: { session_id: ghost } });
    }

    const big = await call("session_send", { session_id: ghost, data: "x".repeat(3 * 1024 * 1024) });
    expect(big.text).toBe(
      "[DENIED tier 3 (IRREVERSIBLE): input of 3145728 bytes exceeds RELAY_SHELL_MAX_INPUT (1048576)]",
    );
    expect(s.records().at(-1)).toMatchObject({ tool: "session_send", denied: true });

    expect((await call("shell_spawn", { command: "no-such-program-relay-xyz" })).text).toBe(
      "[ERROR: FileNotFoundError: command not found: no-such-program-relay-xyz]",
    );
    expect((await call("shell_spawn", { command: "bash", cwd: join(s.dir, "missing") })).text).toBe(
      `[ERROR: FileNotFoundError: cwd does not exist: ${join(s.dir, "missing")}]`,
    );
    expect((await call("shell_spawn", { command: "echo 'unclosed" })).text).toMatch(/^\[ERROR: ValueError: /);
    expect((await call("session_resize", { session_id: ghost, cols: "wide", rows: 1 })).text).toMatch(
      /^\[DENIED tier 1 \(REVERSIBLE\): invalid arguments: cols: /,
    );

    // Out-of-range sizes are clamped to 1..1000, and the reply says what was applied.
    const id = await spawn({
      command: "bash --norc --noprofile",
      cols: 100_000,
      rows: -5,
      env_json: JSON.stringify({ PS1: "ready> " }),
    });
    expect(s.records().at(-1)?.args).toMatchObject({ size: "1000x1" });
    expect((await call("session_resize", { session_id: id, cols: 5000, rows: 0 })).text).toBe(
      `resized ${id} to 1000x1`,
    );
    expect((await call("session_resize", { session_id: id, cols: 80, rows: 24 })).text).toBe(
      `resized ${id} to 80x24`,
    );

    // Ctrl-C below must not reach bash before it has installed its own handlers.
    await recvUntil(id, "ready> ");
    // Binary keystrokes: counted in UTF-8 bytes (a lone surrogate becomes the 3 bytes of U+FFFD).
    const binary = await call("session_send", {
      session_id: id,
      data: "\u0000\u0001\u00ff\ud800",
      enter: false,
    });
    expect(binary.text).toBe(`sent 7 bytes to ${id}`);
    await send(id, "\u0003");
    await send(id, "echo ok-$((2+3))");
    await recvUntil(id, /^ok-5\r$/m);
    expect((await call("session_kill", { session_id: id })).text).toBe(`killed and closed ${id}`);
    expect((await call("shell_exec", { command: "echo alive" })).text).toBe("[exit 0]\nalive\n");
  });
});
