import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUN, sleepers, until, waitUntil } from "../helpers/processes.js";
import { startServer, type TestServer } from "../helpers/server.js";

/**
 * What a terminal session's processes detach from it (setsid, a double fork)
 * dies with the session, like the session's own members (docs/adr/0019).
 * Only `sleep` processes named by this run's marker are started or looked for.
 */
let serial = 0;
function marker(): string {
  serial += 1;
  return `${RUN}7${serial}`;
}

function idOf(text: string): string {
  const match = /^session (sh-[0-9a-f]{12}) started/.exec(text);
  if (!match) throw new Error(`spawn failed: ${text}`);
  return match[1] as string;
}

describe("a PTY session's escaped processes", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ RELAY_SHELL_UNSAFE_NOTICES: "false" });
  });
  afterAll(async () => {
    await s.close();
    for (const pid of sleepers(RUN)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
  });

  async function sessionStarting(lines: string[]): Promise<string> {
    const id = idOf((await s.call("shell_spawn", { command: "/bin/bash --norc --noprofile -i" })).text);
    for (const line of lines) await s.call("session_send", { session_id: id, data: `${line}\n` });
    return id;
  }

  it("dies with the session when the shell ran setsid sleep", async () => {
    const m = marker();
    // An interactive shell runs each job as a group leader, so setsid forks and the parent returns at
    // once: the sleep leads a session of its own and its parent is gone.
    const id = await sessionStarting([`setsid sleep ${m} >/dev/null 2>&1`]);
    await until(() => sleepers(m).length === 1, 5000);
    const [pid] = sleepers(m);
    // Reparented to the server, not to init: the server knows it.
    await until(() => readPpid(pid as number) === s.pid, 2000);
    expect((await s.call("session_kill", { session_id: id })).text).toBe(`killed and closed ${id}`);
    expect(await waitUntil(() => sleepers(m).length === 0, 5000)).toBe(true);
  }, 20_000);

  it("dies with the session when the shell ran a double fork and a setsid -f daemon", async () => {
    const m = marker();
    const id = await sessionStarting([
      `( sleep ${m} >/dev/null 2>&1 & )`,
      `setsid -f sleep ${m} >/dev/null 2>&1`,
    ]);
    await until(() => sleepers(m).length === 2, 5000);
    await s.call("session_kill", { session_id: id });
    expect(await waitUntil(() => sleepers(m).length === 0, 5000)).toBe(true);
  }, 20_000);

  it("is left alone while its session lives, and dies when the server's stdin closes", async () => {
    const m = marker();
    const other = await startServer({ RELAY_SHELL_UNSAFE_NOTICES: "false" });
    const id = idOf((await other.call("shell_spawn", { command: "/bin/bash --norc --noprofile -i" })).text);
    await other.call("session_send", { session_id: id, data: `setsid sleep ${m} >/dev/null 2>&1\n` });
    await until(() => sleepers(m).length === 1, 5000);
    // Another session's end is not this one's.
    const second = idOf((await other.call("shell_spawn", { command: "sleep 30" })).text);
    await other.call("session_kill", { session_id: second });
    await new Promise((r) => setTimeout(r, 300));
    expect(sleepers(m)).toHaveLength(1);
    await other.close();
    expect(await waitUntil(() => sleepers(m).length === 0, 5000)).toBe(true);
  }, 30_000);
});

function readPpid(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return -1;
  }
}
