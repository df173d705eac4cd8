import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  announceSkip,
  createSshFixture,
  SSHD_MISSING,
  type Sshd,
  type SshFixture,
} from "../fixtures/sshd.js";
import { startServer, type TestServer } from "../helpers/server.js";

announceSkip("terminal output over ssh_exec / ssh_fanout");

const ESC = "\u001b";

/**
 * One printf (octal escapes, so any POSIX printf prints the bytes) of every
 * kind of control a host can send a client's terminal: OSC 52 (clipboard,
 * BEL), OSC 0 (title, ST), an OSC 8 link, a DCS request, an 8-bit CSI and an
 * 8-bit OSC in UTF-8 (C2 9B, C2 9D), a lone C1 (NEL), a BEL and a backspace,
 * around a colour that `safe` keeps.
 */
const HOSTILE =
  String.raw`printf 'A\033]52;c;cm0gLXJmIH4K\007B\033]0;owned\033\\C\033]8;;http://evil.example/\033\\D\033]8;;\033\\E` +
  String.raw`\033P1$r0m\033\\F\302\23331mG\302\2350;t\007H\302\205I\007J\010K\033[31mL\033[0m\n'`;
const SAFE_TEXT = `ABCDEFGHI\\x07J\\x08K${ESC}[31mL${ESC}[0m\n`;
const PLAIN_TEXT = "ABCDEFGHI\\x07J\\x08KL\n";
/** OSC 52, OSC 0, two OSC 8, DCS, 8-bit CSI, 8-bit OSC, NEL. */
const REMOVED = 8;

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** The client gets no escape or control it could execute: only the colour `safe` keeps. */
function expectNoLiveControls(text: string): void {
  const stripped = text.replaceAll(`${ESC}[31m`, "").replaceAll(`${ESC}[0m`, "");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what the test looks for
  expect(stripped).not.toMatch(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/);
}

describe("terminal control sequences in host output", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ RELAY_SHELL_UNSAFE_NOTICES: "false" });
  });
  afterAll(async () => {
    await s?.close();
  });

  it("shell_exec removes OSC/DCS/C1, keeps colours, shows other controls, and says how many it removed", async () => {
    const r = await s.call("shell_exec", { command: HOSTILE });
    expect(r.text).toBe(`[exit 0]\n${SAFE_TEXT}`);
    expectNoLiveControls(r.text);
    expect(r.structured.terminal_sequences_removed).toBe(REMOVED);
    // The audit hashes the text the client received.
    const record = s.records().at(-1);
    expect(record).toMatchObject({ tool: "shell_exec", output_sha256: sha256(r.text) });
    expect(record?.output_len).toBe(Buffer.byteLength(r.text));
  });

  it("shell_script gets the same treatment", async () => {
    const r = await s.call("shell_script", { script: `${HOSTILE}\n` });
    expect(r.text).toBe(`[exit 0]\n${SAFE_TEXT}`);
    expect(r.structured.terminal_sequences_removed).toBe(REMOVED);
  });

  it("removes an OSC never terminated, to the end of the output", async () => {
    const r = await s.call("shell_exec", { command: String.raw`printf 'ok\033]52;c;aGVsbG8K'` });
    expect(r.text).toBe("[exit 0]\nok");
    expect(r.structured.terminal_sequences_removed).toBe(1);
  });

  it("neutralizes before the budget, so removed sequences do not use it up", async () => {
    // 4000 clipboard writes (about 64 KB) and then the real output, under a 1 KiB budget.
    const command = String.raw`i=0; while [ $i -lt 4000 ]; do printf '\033]52;c;aGk=\007'; i=$((i+1)); done; echo done`;
    const r = await s.call("shell_exec", { command, max_output: 1024 });
    expect(r.text).toBe("[exit 0]\ndone\n");
    expect(r.structured).toMatchObject({ truncated: false, terminal_sequences_removed: 4000 });
  });

  it("never leaves half a kept colour sequence where the budget cuts", async () => {
    const command = String.raw`i=0; while [ $i -lt 400 ]; do printf '\033[31mx'; i=$((i+1)); done`;
    const r = await s.call("shell_exec", { command, max_output: 1024 });
    expect(r.structured.truncated).toBe(true);
    const body = r.text.slice("[exit 0]\n".length, r.text.indexOf("\n\n[TRUNCATED - "));
    expect(body.replaceAll(`${ESC}[31mx`, "")).toBe("");
  });

  it("session_recv judges a sequence split across reads whole", async () => {
    // The clipboard write and a colour are each cut in two by a pause between two writes.
    const script = String.raw`printf 'A\033]52;c;aGVs'; sleep 1; printf 'bG8=\007B\033[3'; sleep 1; printf '1mC\302\2350;t\007D\n'; sleep 30`;
    const spawned = await s.call("shell_spawn", { command: `sh -c "${script}"` });
    const id = /session (sh-[0-9a-f]{12}) started/.exec(spawned.text)?.[1];
    expect(id, spawned.text).toBeDefined();
    const reads: string[] = [];
    let removed = 0;
    const deadline = Date.now() + 15_000;
    while (!reads.join("").includes("D") && Date.now() < deadline) {
      const r = await s.call("session_recv", { session_id: id, timeout: 1 });
      reads.push(r.text);
      removed += Number(r.structured.terminal_sequences_removed ?? 0);
      expectNoLiveControls(r.text.replace(/\r/g, ""));
    }
    expect(reads.join("")).toBe(`AB${ESC}[31mCD\r\n`);
    expect(removed).toBe(2);
    await s.call("session_kill", { session_id: id });
  });
});

describe("RELAY_SHELL_TERMINAL_OUTPUT=plain and =raw", () => {
  it("plain removes colours and cursor moves too", async () => {
    const s = await startServer({
      RELAY_SHELL_UNSAFE_NOTICES: "false",
      RELAY_SHELL_TERMINAL_OUTPUT: "plain",
    });
    try {
      const r = await s.call("shell_exec", { command: HOSTILE });
      expect(r.text).toBe(`[exit 0]\n${PLAIN_TEXT}`);
      expect(r.structured.terminal_sequences_removed).toBe(REMOVED + 2);
    } finally {
      await s.close();
    }
  });

  it("raw passes the output unchanged", async () => {
    const s = await startServer({ RELAY_SHELL_UNSAFE_NOTICES: "false", RELAY_SHELL_TERMINAL_OUTPUT: "raw" });
    try {
      const r = await s.call("shell_exec", { command: String.raw`printf 'A\033]52;c;aGk=\007B'` });
      expect(r.text).toBe(`[exit 0]\nA${ESC}]52;c;aGk=\u0007B`);
      expect(r.structured.terminal_sequences_removed).toBe(0);
      const info = JSON.parse((await s.call("server_info")).text) as Record<string, unknown>;
      expect(info.terminal_output).toBe("raw");
      expect(info.warnings).toContain(
        "terminal output is raw (RELAY_SHELL_TERMINAL_OUTPUT=raw): host output can drive the client's terminal",
      );
    } finally {
      await s.close();
    }
  });

  it("an unknown mode stops the server with a clear message", async () => {
    await expect(startServer({ RELAY_SHELL_TERMINAL_OUTPUT: "strip" })).rejects.toThrow();
  });
});

describe.skipIf(SSHD_MISSING)("terminal control sequences over SSH", () => {
  let fx: SshFixture;
  let sshd: Sshd;
  let s: TestServer;
  beforeAll(async () => {
    fx = createSshFixture();
    sshd = await fx.start();
    const inventory = join(fx.dir, "inventory.json");
    writeFileSync(
      inventory,
      JSON.stringify({
        box: { hostname: "127.0.0.1", port: sshd.port, user: fx.user, known_hosts: "ignore" },
      }),
    );
    s = await startServer({
      RELAY_SHELL_UNSAFE_NOTICES: "false",
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "relay_known_hosts"),
      RELAY_SHELL_SSH_CONNECT_TIMEOUT: "5",
    });
  });
  afterAll(async () => {
    await s?.close();
    fx?.close();
  });

  it("ssh_exec neutralizes what the remote host prints", async () => {
    const r = await s.call("ssh_exec", { host: "box", command: HOSTILE });
    expect(r.text).toBe(`[exit 0]\n${SAFE_TEXT}`);
    expect(r.structured.terminal_sequences_removed).toBe(REMOVED);
  });

  it("ssh_fanout neutralizes each host's output inside its JSON", async () => {
    const r = await s.call("ssh_fanout", { hosts: "box", command: HOSTILE });
    const parsed = JSON.parse(r.text) as { results: Array<{ output: string }> };
    expect(parsed.results[0]?.output).toBe(SAFE_TEXT);
    expect(r.structured.terminal_sequences_removed).toBe(REMOVED);
  });
});
