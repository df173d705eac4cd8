import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAlive, LAUNCHER_KINDS, newLaunchers, pidsIn, waitUntil } from "../../test/helpers/processes.js";
import { rejection, shellRequests } from "../../test/helpers/requests.js";
import { buildEnv } from "./env.js";
import { createLauncherRunner } from "./launcher-runner.js";

const { base, sh } = shellRequests(buildEnv(process.env, ""));

describe.each(LAUNCHER_KINDS)("the %s launcher", (kind) => {
  const dir = mkdtempSync(join(tmpdir(), "relay-launcher-"));
  // One launcher for the behaviour tests: starting one under tsx costs a few hundred milliseconds.
  const runner = createLauncherRunner({ kind });
  let sharedLauncher: number | undefined;
  beforeAll(async () => {
    [sharedLauncher] = await newLaunchers(() => runner.run(sh("true")));
  });
  afterAll(() => {
    runner.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe("outcomes through the launcher", () => {
    it.each([
      ["true", 0],
      ["exit 7", 7],
      ["kill -TERM $$", -15],
      ["kill -KILL $$", -9],
    ])("%s -> %d", async (command, code) => {
      const outcome = await runner.run(sh(command));
      expect(outcome.exitCode).toBe(code);
      expect(outcome.timedOut).toBe(false);
    });

    it("reports signal deaths in argv mode without merging", async () => {
      const outcome = await runner.run({
        ...base,
        argv: ["/bin/sh", "-c", "kill -INT $$"],
        mergeStderr: false,
      });
      expect(outcome.exitCode).toBe(-2);
    });

    it("measures durationMs with the injected clock, on this side of the hop", async () => {
      let t = 1000;
      const clocked = createLauncherRunner({ kind, clock: { now: () => 0, monotonic: () => (t += 5) } });
      try {
        expect((await clocked.run(sh("true"))).durationMs).toBe(5);
      } finally {
        clocked.close();
      }
    });

    it("merges stderr in write order, or gives stdout then stderr", async () => {
      const script = "echo one; echo two >&2; echo three; echo four >&2";
      expect(await runner.run(sh(script))).toMatchObject({
        output: "one\ntwo\nthree\nfour\n",
        totalBytes: 19,
        droppedBytes: 0,
      });
      expect((await runner.run({ ...base, argv: ["sh", "-c", script] })).output).toBe(
        "one\ntwo\nthree\nfour\n",
      );
      expect((await runner.run(sh(script, { mergeStderr: false }))).output).toBe("one\nthree\ntwo\nfour\n");
    });

    it("applies one budget to stdout and stderr together", async () => {
      const outcome = await runner.run(
        sh("printf 12345; printf abcde >&2", { mergeStderr: false, maxBufferBytes: 7 }),
      );
      expect(outcome).toMatchObject({ output: "12345ab", totalBytes: 10, droppedBytes: 3 });
    });

    it("decodes with the same rules: U+FFFD, NUL, leading BOM, split characters", async () => {
      expect((await runner.run(sh("printf '\\377\\376'"))).output).toBe("\uFFFD\uFFFD");
      expect((await runner.run(sh("printf 'a\\000b'"))).output).toBe("a\u0000b");
      expect((await runner.run(sh("printf '\\357\\273\\277x'"))).output).toBe("\uFEFFx");
      expect((await runner.run(sh("yes é | head -c 300000"))).output).toBe("é\n".repeat(100_000));
    });

    it("drains 1 GiB in the launcher and sends back only the budget", async () => {
      const launcher = sharedLauncher;
      const rssOf = (pid: number): number =>
        Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) * 1024;
      const before = { self: process.memoryUsage().rss, launcher: rssOf(launcher as number) };
      const peak = { ...before };
      const sampler = setInterval(() => {
        peak.self = Math.max(peak.self, process.memoryUsage().rss);
        peak.launcher = Math.max(peak.launcher, rssOf(launcher as number));
      }, 20);
      const outcome = await runner.run(sh("head -c 1073741824 /dev/zero", { maxBufferBytes: 1 << 20 }));
      clearInterval(sampler);
      expect(outcome).toMatchObject({ exitCode: 0, totalBytes: 2 ** 30, droppedBytes: 2 ** 30 - 2 ** 20 });
      expect(outcome.output.length).toBe(1 << 20);
      expect(peak.self - before.self).toBeLessThan(64 * 2 ** 20);
      expect(peak.launcher - before.launcher).toBeLessThan(64 * 2 ** 20);
    });
  });

  describe("stdin through the launcher", () => {
    it("round-trips text, including NUL and non-ASCII", async () => {
      const text = "héllo\nwörld\u0000end \u{1F600}";
      expect((await runner.run(sh("cat", { stdin: text }))).output).toBe(text);
    });

    it("encodes a lone surrogate exactly as the in-process runner does", async () => {
      const outcome = await runner.run(sh("od -An -tx1", { stdin: "a\uD800b" }));
      expect(outcome.output.trim().split(/\s+/)).toEqual(["61", "ef", "bf", "bd", "62"]);
    });

    it("is /dev/null when empty", async () => {
      const outcome = await runner.run(sh("wc -c; readlink /proc/self/fd/0", { stdin: "" }));
      expect(outcome.output.split(/\s+/).filter(Boolean)).toEqual(["0", "/dev/null"]);
    });

    it("feeds 5 MiB while draining, and survives a child that does not read it", async () => {
      const big = "x".repeat(5 * 2 ** 20);
      expect((await runner.run(sh("wc -c", { stdin: big }))).output.trim()).toBe(String(5 * 2 ** 20));
      expect((await runner.run(sh("exit 3", { stdin: big }))).exitCode).toBe(3);
    });

    it("keeps variables whose names are Object.prototype members", async () => {
      const odd = buildEnv({ PATH: "/usr/bin:/bin" }, '{"__proto__":"p","constructor":"c"}');
      const outcome = await runner.run({
        ...base,
        env: odd,
        command: 'printf %s "$constructor"; env | grep -c ^__proto__=p',
      });
      expect(outcome.output).toBe("c1\n");
    });
  });

  describe("start-up errors keep their type, message and code", () => {
    it("missing cwd, cwd that is a file, missing and non-executable programs, bad requests", async () => {
      const missing = join(dir, "nope");
      for (const request of [sh("true", { cwd: missing }), { ...base, argv: ["true"], cwd: missing }]) {
        const err = await rejection(runner.run(request));
        expect([err.type, err.code, err.message]).toEqual([
          "FileNotFoundError",
          "FileNotFoundError",
          `cwd does not exist: ${missing}`,
        ]);
        expect((err.cause as NodeJS.ErrnoException).code).toBe("ENOENT");
      }
      const file = join(dir, "plain-file");
      writeFileSync(file, "#!/bin/sh\necho hi\n");
      chmodSync(file, 0o644);
      const notDir = await rejection(runner.run(sh("true", { cwd: file })));
      expect([notDir.type, notDir.message]).toEqual([
        "NotADirectoryError",
        `cwd is not a directory: ${file}`,
      ]);
      const notFound = await rejection(runner.run({ ...base, argv: ["relay-no-such-binary", "x"] }));
      expect([notFound.type, notFound.message]).toEqual([
        "FileNotFoundError",
        "command not found: relay-no-such-binary",
      ]);
      const denied = await rejection(runner.run({ ...base, argv: [file] }));
      expect([denied.type, denied.message]).toEqual(["PermissionError", `permission denied: ${file}`]);
      expect((await rejection(runner.run({ ...base, argv: [] }))).type).toBe("ValueError");
      expect((await rejection(runner.run({ ...base }))).type).toBe("ValueError");
      const nul = await rejection(
        runner.run({ ...base, env: { ...base.env, A: "x\u0000y" }, command: "true" }),
      );
      expect([nul.type, nul.message]).toEqual(["ValueError", "an environment variable contains a NUL byte"]);
      expect(runner.active()).toBe(0);
    });
  });

  describe("timeouts through the launcher", () => {
    it("kill the whole group, grandchildren included", async () => {
      const t0 = performance.now();
      const outcome = await runner.run(sh("sleep 30 & echo pid=$!; sleep 30", { timeoutMs: 300 }));
      expect(performance.now() - t0).toBeLessThan(3000);
      expect(outcome).toMatchObject({ timedOut: true, exitCode: null });
      const [pid] = pidsIn(outcome.output);
      expect(pid).toBeGreaterThan(0);
      expect(await waitUntil(() => !isAlive(pid as number))).toBe(true);
    });

    it("escalate to SIGKILL after the grace when SIGTERM is ignored", async () => {
      const t0 = performance.now();
      const outcome = await runner.run(
        sh("trap '' TERM; sleep 30 & echo pid=$!; sleep 30", { timeoutMs: 300, killGraceMs: 200 }),
      );
      const elapsed = performance.now() - t0;
      expect(outcome).toMatchObject({ timedOut: true, exitCode: null });
      expect(elapsed).toBeGreaterThanOrEqual(450);
      expect(elapsed).toBeLessThan(3000);
      const [pid] = pidsIn(outcome.output);
      expect(await waitUntil(() => !isAlive(pid as number))).toBe(true);
    });
  });

  describe("the timings a request gives the launcher (ADR 0039)", () => {
    it("cut a background job holding the pipes after the pipe grace the server sent", async () => {
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
        expect(outcome).toMatchObject({ exitCode: 0, timedOut: false, stoppedProcesses: 1 });
        const [pid] = pidsIn(outcome.output);
        expect(await waitUntil(() => !isAlive(pid as number))).toBe(true);
      }
    });

    it("take an unbounded timeout as no bound, not as none", async () => {
      const outcome = await runner.run(sh("sleep 0.2; echo done", { timeoutMs: Number.POSITIVE_INFINITY }));
      expect(outcome).toMatchObject({ exitCode: 0, timedOut: false, output: "done\n" });
    });
  });

  describe("abort and killAll through the launcher", () => {
    it("abort terminates the group and reports the signal", async () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 150);
      const outcome = await runner.run(sh("sleep 30"), controller.signal);
      expect(outcome).toMatchObject({ timedOut: false, exitCode: -15 });
    });

    it("an already aborted signal starts nothing but still checks the request", async () => {
      const marker = join(dir, "ran");
      const outcome = await runner.run(sh(`touch ${marker}`), AbortSignal.abort());
      expect(outcome).toMatchObject({ exitCode: null, timedOut: false, output: "" });
      expect(existsSync(marker)).toBe(false);
      const err = await rejection(runner.run(sh("true", { cwd: join(dir, "gone") }), AbortSignal.abort()));
      expect(err.type).toBe("FileNotFoundError");
    });

    it("killAll SIGKILLs every live child", async () => {
      const own = createLauncherRunner({ kind });
      try {
        const marks = [join(dir, "k1"), join(dir, "k2")];
        const running = [
          own.run(sh(`touch ${marks[0]}; sleep 30`)),
          own.run(sh(`trap '' TERM; touch ${marks[1]}; sleep 30`)),
        ];
        expect(own.active()).toBe(2);
        expect(await waitUntil(() => marks.every((m) => existsSync(m)), 5000)).toBe(true);
        const t0 = performance.now();
        own.killAll();
        const outcomes = await Promise.all(running);
        expect(performance.now() - t0).toBeLessThan(1000);
        for (const outcome of outcomes) expect(outcome).toMatchObject({ exitCode: -9, timedOut: false });
        expect(own.active()).toBe(0);
      } finally {
        own.close();
      }
    });

    it("killAll also stops requests the launcher has not started yet", async () => {
      const own = createLauncherRunner({ kind });
      try {
        const marker = join(dir, "late");
        const running = [own.run(sh(`touch ${marker}; sleep 30`)), own.run(sh("sleep 30"))];
        own.killAll();
        const outcomes = await Promise.all(running);
        for (const outcome of outcomes) expect([null, -9, -15]).toContain(outcome.exitCode);
        expect(own.active()).toBe(0);
      } finally {
        own.close();
      }
    });
  });
});
