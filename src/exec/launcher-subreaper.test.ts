import { afterAll, describe, expect, it } from "vitest";
import { LAUNCHER_KINDS, RUN, sleepers, until } from "../../test/helpers/processes.js";
import { buildEnv } from "./env.js";
import { createLauncherRunner } from "./launcher-runner.js";
import { createProcessRunner } from "./process-runner.js";
import type { ProcessRequest } from "./types.js";

const env = buildEnv(process.env, "");
const sh = (command: string, timeoutMs = 10_000): ProcessRequest => ({
  env,
  command,
  timeoutMs,
  maxBufferBytes: 1 << 16,
  mergeStderr: true,
  killGraceMs: 200,
});

/** Only `sleep` processes whose argument starts with this marker are started or looked for. */
const MARK = `${RUN}9`;
describe.each(LAUNCHER_KINDS)("the %s launcher", (kind) => {
  const runner = createLauncherRunner({ kind });

  afterAll(() => {
    runner.close();
    for (const pid of sleepers(MARK)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone already.
      }
    }
  });

  describe("the launcher as a subreaper (ADR 0019)", () => {
    it("stops and counts an orphaned setsid daemon when the command ends", async () => {
      const m = `${MARK}1`;
      const outcome = await runner.run(sh(`setsid -f sleep ${m} >/dev/null 2>&1; echo ok`));
      expect(outcome.exitCode).toBe(0);
      expect(outcome.output).toBe("ok\n");
      expect(outcome.stoppedProcesses).toBe(1);
      await until(() => sleepers(m).length === 0, 2000);
    });

    it("counts nothing for a command that leaves nothing", async () => {
      const outcome = await runner.run(sh("echo ok"));
      expect(outcome.stoppedProcesses).toBeUndefined();
    });

    it("keeps a concurrent command's daemon until that command ends", async () => {
      const m = `${MARK}2`;
      const slow = runner.run(sh(`setsid -f sleep ${m} >/dev/null 2>&1; sleep 1.5; echo slow`));
      await until(() => sleepers(m).length === 1, 3000);
      const quick = await runner.run(sh("echo quick"));
      expect(quick.stoppedProcesses).toBeUndefined();
      expect(sleepers(m)).toHaveLength(1);
      expect((await slow).stoppedProcesses).toBe(1);
      await until(() => sleepers(m).length === 0, 2000);
    });
  });
});

describe("the in-process runner, which does not adopt", () => {
  it("still stops an escaped child below a live leader at the timeout", async () => {
    const m = `${MARK}3`;
    const inProcess = createProcessRunner();
    const outcome = await inProcess.run(sh(`setsid sleep ${m} >/dev/null 2>&1 & wait`, 500));
    expect(outcome.timedOut).toBe(true);
    expect(outcome.stoppedProcesses).toBe(1);
    await until(() => sleepers(m).length === 0, 2000);
  });
});
