import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { rejection, shellRequests } from "../../test/helpers/requests.js";
import { buildEnv } from "./env.js";
import { createProcessRunner } from "./process-runner.js";

const { base, sh } = shellRequests(buildEnv(process.env, ""));

const dir = mkdtempSync(join(tmpdir(), "relay-exec-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Each case on both ways of starting a child: posix_spawn, and Node's spawn where it cannot load. */
describe.each([
  ["posix_spawn", true],
  ["Node's spawn", false],
])("children started with %s", (_, posixSpawn) => {
  const runnerOf = (deps: Parameters<typeof createProcessRunner>[0] = {}) =>
    createProcessRunner({ ...deps, posixSpawn });

  describe("exit codes", () => {
    const runner = runnerOf();
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

    it("reports signal deaths in argv mode and without merging too", async () => {
      const outcome = await runner.run({
        ...base,
        argv: ["/bin/sh", "-c", "kill -INT $$"],
        mergeStderr: false,
      });
      expect(outcome.exitCode).toBe(-2);
    });

    it("uses the injected clock for durationMs", async () => {
      let t = 1000;
      const clocked = runnerOf({ clock: { now: () => 0, monotonic: () => (t += 5) } });
      expect((await clocked.run(sh("true"))).durationMs).toBe(5);
    });
  });

  describe("output", () => {
    const runner = runnerOf();
    const script = "echo one; echo two >&2; echo three; echo four >&2";

    it("merges stderr into stdout in the order the child wrote it", async () => {
      const outcome = await runner.run(sh(script));
      expect(outcome.output).toBe("one\ntwo\nthree\nfour\n");
      expect(outcome.totalBytes).toBe(19);
      expect(outcome.droppedBytes).toBe(0);
    });

    it("merges in order in argv mode as well", async () => {
      const outcome = await runner.run({ ...base, argv: ["sh", "-c", script] });
      expect(outcome.output).toBe("one\ntwo\nthree\nfour\n");
    });

    it("without merging gives stdout text then stderr text", async () => {
      const outcome = await runner.run(sh(script, { mergeStderr: false }));
      expect(outcome.output).toBe("one\nthree\ntwo\nfour\n");
    });

    it("shares one budget between stdout and stderr", async () => {
      const outcome = await runner.run(
        sh("printf 12345; printf abcde >&2", { mergeStderr: false, maxBufferBytes: 7 }),
      );
      expect(outcome.output).toBe("12345ab");
      expect(outcome.totalBytes).toBe(10);
      expect(outcome.droppedBytes).toBe(3);
    });

    it("decodes invalid UTF-8 as U+FFFD, keeps NUL bytes and a leading BOM", async () => {
      expect((await runner.run(sh("printf '\\377\\376'"))).output).toBe("\uFFFD\uFFFD");
      expect((await runner.run(sh("printf 'a\\000b'"))).output).toBe("a\u0000b");
      expect((await runner.run(sh("printf '\\357\\273\\277x'"))).output).toBe("\uFEFFx");
    });

    it("never garbles multi-byte characters split across reads", async () => {
      // 300 000 bytes of two-byte characters arrive in many chunks with arbitrary boundaries.
      const outcome = await runner.run(sh("yes é | head -c 300000", { maxBufferBytes: 1 << 20 }));
      expect(outcome.output).toBe("é\n".repeat(100_000));
    });

    it("drains 1 GiB to EOF with memory bounded by the budget", async () => {
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().rss);
      }, 20);
      const outcome = await runner.run(sh("head -c 1073741824 /dev/zero", { maxBufferBytes: 1 << 20 }));
      clearInterval(sampler);
      peak = Math.max(peak, process.memoryUsage().rss);
      expect(outcome.exitCode).toBe(0);
      expect(outcome.output.length).toBe(1 << 20);
      expect(outcome.totalBytes).toBe(2 ** 30);
      expect(outcome.droppedBytes).toBe(2 ** 30 - 2 ** 20);
      expect(peak - before).toBeLessThan(64 * 2 ** 20);
    });
  });

  describe("stdin", () => {
    const runner = runnerOf();

    it("round-trips text through cat", async () => {
      const text = "héllo\nwörld\u0000end";
      expect((await runner.run(sh("cat", { stdin: text }))).output).toBe(text);
    });

    it("is /dev/null when empty", async () => {
      const outcome = await runner.run(sh("wc -c; readlink /proc/self/fd/0", { stdin: "" }));
      expect(outcome.output.split(/\s+/).filter(Boolean)).toEqual(["0", "/dev/null"]);
    });

    it("feeds 5 MiB while draining", async () => {
      const outcome = await runner.run(sh("wc -c", { stdin: "x".repeat(5 * 2 ** 20) }));
      expect(outcome.output.trim()).toBe(String(5 * 2 ** 20));
    });

    it("does not deadlock when the child prints a lot before reading", async () => {
      const outcome = await runner.run(
        sh("head -c 2000000 /dev/zero; wc -c", { stdin: "y".repeat(2_000_000), maxBufferBytes: 4 << 20 }),
      );
      expect(outcome.exitCode).toBe(0);
      expect(outcome.output.slice(2_000_000).trim()).toBe("2000000");
    });

    it("survives a child that exits without reading a large stdin", async () => {
      const outcome = await runner.run(sh("exit 3", { stdin: "z".repeat(8 * 2 ** 20) }));
      expect(outcome.exitCode).toBe(3);
    });
  });

  describe("argv mode", () => {
    const runner = runnerOf();

    it("passes words through without a shell", async () => {
      const outcome = await runner.run({ ...base, argv: ["printf", "%s|", "a b", "$HOME", "*"] });
      expect(outcome.output).toBe("a b|$HOME|*|");
    });

    it("resolves the program through the PATH of the request's env", async () => {
      const tool = join(dir, "relay-test-tool");
      writeFileSync(tool, "#!/bin/sh\necho tool:$1\n");
      chmodSync(tool, 0o755);
      const requestEnv = { ...base.env, PATH: `${dir}:/usr/bin:/bin` };
      for (const mergeStderr of [true, false]) {
        const outcome = await runner.run({
          ...base,
          env: requestEnv,
          mergeStderr,
          argv: ["relay-test-tool", "x"],
        });
        expect(outcome.output).toBe("tool:x\n");
      }
      await expect(runner.run({ ...base, argv: ["relay-test-tool"] })).rejects.toThrow(
        "command not found: relay-test-tool",
      );
    });

    it("rejects a missing program with FileNotFoundError", async () => {
      for (const mergeStderr of [true, false]) {
        const err = await rejection(
          runner.run({ ...base, mergeStderr, argv: ["relay-no-such-binary", "x"] }),
        );
        expect(err.type).toBe("FileNotFoundError");
        expect(err.message).toBe("command not found: relay-no-such-binary");
      }
    });

    it("rejects a program that is not executable with PermissionError", async () => {
      const file = join(dir, "not-executable");
      writeFileSync(file, "#!/bin/sh\necho hi\n");
      chmodSync(file, 0o644);
      const err = await rejection(runner.run({ ...base, argv: [file] }));
      expect(err.type).toBe("PermissionError");
      expect(err.message).toBe(`permission denied: ${file}`);
    });

    it("refuses a NUL byte in the environment, which a C string would cut, before anything starts", async () => {
      for (const env of [
        { ...base.env, A: "x\u0000y" },
        { ...base.env, "B\u0000": "z" },
      ]) {
        const err = await rejection(runner.run({ ...base, env, command: `touch '${join(dir, "nul")}'` }));
        expect([err.type, err.message]).toEqual([
          "ValueError",
          "an environment variable contains a NUL byte",
        ]);
      }
      expect(existsSync(join(dir, "nul"))).toBe(false);
    });

    it("rejects an empty argv and requests with both or neither of command/argv", async () => {
      expect((await rejection(runner.run({ ...base, argv: [] }))).type).toBe("ValueError");
      expect((await rejection(runner.run({ ...base, argv: ["true"], command: "true" }))).type).toBe(
        "ValueError",
      );
      expect((await rejection(runner.run({ ...base }))).type).toBe("ValueError");
    });
  });

  describe("cwd", () => {
    const runner = runnerOf();

    it("runs in the given directory, or inherits on empty", async () => {
      expect((await runner.run(sh("pwd", { cwd: dir }))).output).toBe(`${dir}\n`);
      expect((await runner.run(sh("pwd", { cwd: "" }))).output).toBe(`${process.cwd()}\n`);
    });

    it("rejects a missing cwd naming the cwd, not the program", async () => {
      const missing = join(dir, "nope");
      for (const request of [sh("true", { cwd: missing }), { ...base, argv: ["true"], cwd: missing }]) {
        const err = await rejection(runner.run(request));
        expect(err.type).toBe("FileNotFoundError");
        expect(err.message).toBe(`cwd does not exist: ${missing}`);
      }
    });

    it("rejects a cwd that is a file", async () => {
      const file = join(dir, "plain-file");
      writeFileSync(file, "");
      const err = await rejection(runner.run(sh("true", { cwd: file })));
      expect(err.type).toBe("NotADirectoryError");
      expect(err.message).toBe(`cwd is not a directory: ${file}`);
      expect(runner.active()).toBe(0);
    });
  });
});
