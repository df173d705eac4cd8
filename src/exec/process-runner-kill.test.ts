import { describe, expect, it } from "vitest";
import { isAlive, pidsIn, waitUntil } from "../../test/helpers/processes.js";
import { shellRequests } from "../../test/helpers/requests.js";
import { buildEnv } from "./env.js";
import { createProcessRunner } from "./process-runner.js";

const { sh } = shellRequests(buildEnv(process.env, ""));

/**
 * Both ways the in-process runner starts a child: posix_spawn where its binding loads (here), and
 * Node's spawn, the only one on a C library without it (ADR 0029, ADR 0039).
 */
describe.each([
  ["posix_spawn", true],
  ["Node's spawn", false],
])("children started with %s", (_, posixSpawn) => {
  const runnerOf = () => createProcessRunner({ posixSpawn });

  describe("timeout", () => {
    const runner = runnerOf();

    it("kills the whole group, grandchildren included", async () => {
      const t0 = performance.now();
      const outcome = await runner.run(sh("sleep 30 & echo pid=$!; sleep 30", { timeoutMs: 300 }));
      expect(performance.now() - t0).toBeLessThan(3000);
      expect(outcome.timedOut).toBe(true);
      expect(outcome.exitCode).toBeNull();
      const [pid] = pidsIn(outcome.output);
      expect(pid).toBeGreaterThan(0);
      expect(await waitUntil(() => !isAlive(pid as number))).toBe(true);
      expect(runner.active()).toBe(0);
    });

    it("escalates to SIGKILL after the grace when SIGTERM is ignored", async () => {
      const t0 = performance.now();
      const outcome = await runner.run(
        sh("trap '' TERM; sleep 30 & echo pid=$!; sleep 30", { timeoutMs: 300, killGraceMs: 200 }),
      );
      const elapsed = performance.now() - t0;
      expect(outcome.timedOut).toBe(true);
      expect(outcome.exitCode).toBeNull();
      expect(elapsed).toBeGreaterThanOrEqual(450);
      expect(elapsed).toBeLessThan(3000);
      const [pid] = pidsIn(outcome.output);
      expect(await waitUntil(() => !isAlive(pid as number))).toBe(true);
    });

    it("does not report a timeout for a child that finished in time", async () => {
      const outcome = await runner.run(sh("sleep 0.05; echo done", { timeoutMs: 2000 }));
      expect(outcome).toMatchObject({ timedOut: false, exitCode: 0, output: "done\n" });
    });
  });

  describe("children that outlive the shell", () => {
    const runner = runnerOf();

    it("does not hang on a backgrounded grandchild holding stdout, and kills it", async () => {
      const t0 = performance.now();
      const outcome = await runner.run(sh("sleep 30 & echo pid=$!", { timeoutMs: 20_000 }));
      expect(performance.now() - t0).toBeLessThan(2000);
      expect(outcome.timedOut).toBe(false);
      expect(outcome.exitCode).toBe(0);
      const [pid] = pidsIn(outcome.output);
      expect(await waitUntil(() => !isAlive(pid as number))).toBe(true);
    });

    it("cuts it after the pipe grace the request gives, the limits' own otherwise", async () => {
      const timed = async (extra: { pipeGraceMs?: number }) => {
        const t0 = performance.now();
        const outcome = await runner.run(sh("sleep 30 & echo pid=$!", extra));
        return { outcome, ms: performance.now() - t0 };
      };
      const quick = await timed({});
      const told = await timed({ pipeGraceMs: 900 });
      expect(quick.ms).toBeLessThan(800);
      expect(told.ms).toBeGreaterThanOrEqual(900);
      expect(told.ms).toBeLessThan(3000);
      for (const { outcome } of [quick, told]) {
        expect(outcome).toMatchObject({ exitCode: 0, timedOut: false });
        const [pid] = pidsIn(outcome.output);
        expect(await waitUntil(() => !isAlive(pid as number))).toBe(true);
      }
    });

    it("leaves alone a background job that detached from our pipes", async () => {
      const outcome = await runner.run(sh("sleep 30 >/dev/null 2>&1 </dev/null & echo pid=$!"));
      expect(outcome.exitCode).toBe(0);
      const [pid] = pidsIn(outcome.output);
      try {
        expect(isAlive(pid as number)).toBe(true);
      } finally {
        process.kill(pid as number, "SIGKILL");
      }
    });
  });

  describe("abort and killAll", () => {
    it("abort terminates the group and reports the signal, not a timeout", async () => {
      const runner = runnerOf();
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 150);
      const outcome = await runner.run(sh("sleep 30"), controller.signal);
      expect(outcome.timedOut).toBe(false);
      expect(outcome.exitCode).toBe(-15);
    });

    it("an already aborted signal starts nothing", async () => {
      const runner = runnerOf();
      const outcome = await runner.run(sh("echo ran"), AbortSignal.abort());
      expect(outcome).toMatchObject({ exitCode: null, timedOut: false, output: "" });
    });

    it("killAll SIGKILLs every live child", async () => {
      const runner = runnerOf();
      const running = [runner.run(sh("sleep 30")), runner.run(sh("trap '' TERM; sleep 30"))];
      expect(await waitUntil(() => runner.active() === 2)).toBe(true);
      await new Promise((r) => setTimeout(r, 50));
      const t0 = performance.now();
      runner.killAll();
      const outcomes = await Promise.all(running);
      expect(performance.now() - t0).toBeLessThan(1000);
      for (const outcome of outcomes) expect(outcome).toMatchObject({ exitCode: -9, timedOut: false });
      expect(runner.active()).toBe(0);
    });

    it("keeps live children of separate runners apart", async () => {
      const a = runnerOf();
      const b = runnerOf();
      const running = a.run(sh("sleep 0.3; echo survived"));
      expect(await waitUntil(() => a.active() === 1)).toBe(true);
      b.killAll();
      expect(b.active()).toBe(0);
      expect((await running).output).toBe("survived\n");
    });
  });
});
