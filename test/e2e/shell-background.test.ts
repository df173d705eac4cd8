import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUN, sleepers, until, waitUntil } from "../helpers/processes.js";
import { startServer, type TestServer } from "../helpers/server.js";

/**
 * What a one-shot command starts ends with it (docs/adr/0019): background
 * jobs, setsid, double forks and nohup alike are stopped when the command
 * ends or times out, the result says so, and nothing survives the server.
 * Every process here is a `sleep` whose argument starts with this run's
 * unique marker, so the checks (and the clean-up) can only ever see them.
 */
const STOPPED_ONE =
  "[NOTICE 1 background process was stopped: what a one-shot command starts ends with it; use shell_spawn for long-lived work]";

let serial = 0;
/** A fresh sleep duration (in seconds, far beyond any test) that names one case's processes. */
function marker(): string {
  serial += 1;
  return `${RUN}${serial}`;
}

function killLeftovers(): void {
  for (const pid of sleepers(RUN)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

describe("shell_exec stops what a command leaves running", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(async () => {
    await s.close();
    killLeftovers();
  });

  const cases: Array<[string, (m: string) => string]> = [
    ["a background job with its output redirected", (m) => `sleep ${m} >/dev/null 2>&1 & echo bg`],
    ["a setsid child", (m) => `setsid sleep ${m} >/dev/null 2>&1 & echo bg`],
    ["a double fork", (m) => `( sleep ${m} >/dev/null 2>&1 & ) ; echo bg`],
    ["a nohup child", (m) => `nohup sleep ${m} >/dev/null 2>&1 & echo bg`],
    ["a setsid -f daemon", (m) => `setsid -f sleep ${m} >/dev/null 2>&1; echo bg`],
  ];
  for (const [name, command] of cases) {
    it(`stops ${name} when the command ends and says so`, async () => {
      const m = marker();
      const { text, structured } = await s.call("shell_exec", { command: command(m) });
      expect(text).toBe(`[exit 0]\nbg\n\n${STOPPED_ONE}`);
      expect(structured.exit_code).toBe(0);
      expect(structured.stopped_processes).toBe(1);
      expect(structured.notices).toEqual([STOPPED_ONE]);
      // SIGKILL was sent before the result: the process is gone, or a zombie, within moments.
      await until(() => sleepers(m).length === 0, 2000);
    });
  }

  it("reports nothing for a command that leaves nothing behind", async () => {
    const { text, structured } = await s.call("shell_exec", { command: "sleep 0.1; echo done" });
    expect(text).toBe("[exit 0]\ndone\n");
    expect(structured.stopped_processes).toBe(0);
    expect(structured.notices ?? []).toEqual([]);
  });

  it("ends a call whose background job holds stdout open, without waiting for the timeout", async () => {
    const m = marker();
    const started = Date.now();
    // Both hold the output pipe: one in the command's process group, one out of it.
    const { text, structured } = await s.call("shell_exec", {
      command: `sleep ${m} & setsid sleep ${m} & echo held`,
      timeout: 30,
    });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(text).toContain("[exit 0]\nheld\n");
    expect(structured.stopped_processes).toBe(2);
    expect(text).toContain("[NOTICE 2 background processes were stopped:");
    await until(() => sleepers(m).length === 0, 2000);
  });

  it("stops escaped processes at the timeout too, and reports them", async () => {
    const m = marker();
    const { text, structured } = await s.call("shell_exec", {
      command: `setsid sleep ${m} >/dev/null 2>&1 & ( sleep ${m} >/dev/null 2>&1 & ) ; sleep ${m}`,
      // Long enough for the subshell that started the second sleep to have exited even on a loaded
      // machine: at 1 s it was sometimes still alive and counted as a third escaped process.
      timeout: 3,
    });
    expect(text.startsWith("[TIMEOUT after 3s]")).toBe(true);
    // The two escaped sleeps; the foreground one the shell waited for is the timed-out job itself.
    expect(structured.stopped_processes).toBe(2);
    expect(text).toContain("[NOTICE 2 background processes were stopped:");
    await until(() => sleepers(m).length === 0, 3000);
  });

  it("leaves a running command's daemon alone when another command ends", async () => {
    const first = marker();
    const daemon = marker();
    // The quick command starts first, so it may not claim an orphan started after it by the other.
    const quick = s.call("shell_exec", { command: `sleep 1; echo quick` });
    await new Promise((r) => setTimeout(r, 200));
    const slow = s.call("shell_exec", {
      command: `setsid -f sleep ${daemon} >/dev/null 2>&1; sleep 3; echo slow`,
      timeout: 30,
    });
    await until(() => sleepers(daemon).length === 1, 3000);
    expect((await quick).text).toBe("[exit 0]\nquick\n");
    // Still running after the other command ended and was cleaned up after.
    await new Promise((r) => setTimeout(r, 300));
    expect(sleepers(daemon)).toHaveLength(1);
    const done = await slow;
    expect(done.text).toBe(`[exit 0]\nslow\n\n${STOPPED_ONE}`);
    await until(() => sleepers(daemon).length === 0, 2000);
    expect(sleepers(first)).toEqual([]);
  }, 20_000);
});

describe("nothing a command started survives the server", () => {
  afterAll(() => {
    killLeftovers();
  });

  /** Start a command that leaves escaped processes running, and wait until they are. */
  async function busyServer(m: string): Promise<{ s: TestServer; call: Promise<unknown> }> {
    const s = await startServer();
    const call = s
      .call("shell_exec", {
        command: `setsid sleep ${m} >/dev/null 2>&1 & ( sleep ${m} >/dev/null 2>&1 & ) ; sleep ${m}`,
        timeout: 600,
      })
      .catch(() => undefined);
    await until(() => sleepers(m).length === 3, 5000);
    return { s, call };
  }

  it("when its stdin closes", async () => {
    const m = marker();
    const { s, call } = await busyServer(m);
    await s.close();
    await call;
    expect(await waitUntil(() => sleepers(m).length === 0, 5000)).toBe(true);
  }, 20_000);

  it("even an orphan no running command could be sure of, when it is killed with SIGKILL", async () => {
    const first = marker();
    const daemon = marker();
    const s = await startServer();
    // The first command started before the daemon, so neither may claim it while both run.
    const calls = [s.call("shell_exec", { command: `sleep ${first}`, timeout: 600 }).catch(() => undefined)];
    await until(() => sleepers(first).length === 1, 5000);
    calls.push(
      s
        .call("shell_exec", {
          command: `setsid -f sleep ${daemon} >/dev/null 2>&1; sleep ${first}`,
          timeout: 600,
        })
        .catch(() => undefined),
    );
    await until(() => sleepers(daemon).length === 1 && sleepers(first).length === 2, 5000);
    process.kill(s.pid, "SIGKILL");
    await Promise.all(calls);
    expect(await waitUntil(() => sleepers(daemon).length + sleepers(first).length === 0, 5000)).toBe(true);
    await s.close().catch(() => undefined);
  }, 20_000);

  it("when it is killed with SIGKILL", async () => {
    const m = marker();
    const { s, call } = await busyServer(m);
    process.kill(s.pid, "SIGKILL");
    await call;
    expect(await waitUntil(() => sleepers(m).length === 0, 5000)).toBe(true);
    await s.close().catch(() => undefined);
  }, 20_000);
});
