import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUN, sleepers } from "../helpers/processes.js";
import { startServer, type TestServer } from "../helpers/server.js";

function idOf(text: string): string {
  const match = /^session (sh-[0-9a-f]{12}) started/.exec(text);
  if (!match) throw new Error(`spawn failed: ${text}`);
  return match[1] as string;
}

/**
 * The idle timeout is enforced by the server's own sweep, without any call
 * arriving, and a session with a waiting read is never reaped under it.
 * (Reaping decisions are tested exhaustively with an injected clock in
 * src/sessions/registry.test.ts; this proves the timer is wired.)
 */
describe("idle reaping through the background sweep", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ RELAY_SHELL_SESSION_IDLE_TIMEOUT: "10" });
  });
  afterAll(async () => {
    await s.close();
  });

  it("kills an idle session's process with no further call, but spares one with a waiting read", async () => {
    const idle = idOf((await s.call("shell_spawn", { command: `sleep ${RUN}1` })).text);
    const watched = idOf((await s.call("shell_spawn", { command: "cat" })).text);
    const started = Date.now();
    // The only call in flight for the next 12.5 s: a read on the watched session that outlasts the idle timeout.
    const wait = await s.call("session_recv", { session_id: watched, timeout: 12.5 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(12_000);
    // A waiter is not told the session ended: it simply times out empty (docs/wire-contract.md §2.6).
    expect(wait.text).toBe("");
    expect(wait.structured.ended).toBe(false);
    // Checked from outside the server, before any call that could sweep: the timer already did it.
    expect(sleepers(`${RUN}1`)).toEqual([]);
    expect((await s.call("session_recv", { session_id: idle, timeout: 0 })).text).toBe(
      `[ERROR: SessionError: unknown session: ${idle}]`,
    );
    expect((await s.call("session_send", { session_id: watched, data: "hi" })).text).toBe(
      `sent 3 bytes to ${watched}`,
    );
    expect((await s.call("session_kill", { session_id: watched })).text).toBe(`killed and closed ${watched}`);
  }, 40_000);
});
