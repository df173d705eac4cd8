import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { NativeSpawnError, nativeSpawn, nativeSpawnAvailable, type SpawnedChild } from "./native-spawn.js";

const AVAILABLE = nativeSpawnAvailable();
const dir = mkdtempSync(join(tmpdir(), "native-spawn-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function text(stream: Readable | null): Promise<string> {
  return new Promise((resolve) => {
    let out = "";
    if (stream === null) return resolve(out);
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      out += chunk;
    });
    stream.once("close", () => resolve(out));
  });
}

async function run(
  script: string,
  options: { stdin?: string; cwd?: string; env?: Record<string, string> } = {},
) {
  const child: SpawnedChild = nativeSpawn({
    file: "/bin/sh",
    argv: ["sh", "-c", script],
    env: options.env ?? { PATH: "/usr/bin:/bin" },
    cwd: options.cwd,
    stdinPipe: options.stdin !== undefined,
  });
  const exit = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once("exit", (code, signal) => resolve([code, signal])),
  );
  if (options.stdin !== undefined) child.stdin?.end(options.stdin);
  const [stdout, stderr, [code, signal]] = await Promise.all([text(child.stdout), text(child.stderr), exit]);
  return { pid: child.pid, stdout, stderr, code, signal };
}

describe.skipIf(!AVAILABLE)("posix_spawn children", () => {
  it("run with the given arguments, environment and working directory, stdout and stderr apart", async () => {
    const r = await run('echo "$0 $GREETING"; pwd; echo oops >&2; exit 7', {
      cwd: dir,
      env: { GREETING: "hello", PATH: "/usr/bin:/bin" },
    });
    expect(r).toMatchObject({ stdout: `sh hello\n${dir}\n`, stderr: "oops\n", code: 7, signal: null });
  });

  it("read stdin from a pipe when asked, and from /dev/null otherwise", async () => {
    expect((await run("cat", { stdin: "typed in\n" })).stdout).toBe("typed in\n");
    expect((await run("cat; echo end")).stdout).toBe("end\n");
  });

  it("lead a session of their own and inherit no descriptor but 0, 1 and 2", async () => {
    // Field 6 of /proc/self/stat is the session id; ls lists the descriptors the shell's child holds.
    const r = await run("echo $$ $(cut -d' ' -f6 /proc/$$/stat); ls /proc/$$/fd");
    const [pid, sid, ...fds] = r.stdout.trim().split(/\s+/);
    expect(sid).toBe(pid);
    expect(Number(pid)).toBe(r.pid);
    expect(fds.sort()).toEqual(["0", "1", "2"]);
  });

  it("start with every standard signal at its default and none blocked, though this process ignores SIGPIPE", async () => {
    const r = await run("exec grep -E '^Sig(Ign|Blk):' /proc/self/status");
    const masks = Object.fromEntries(
      r.stdout
        .trim()
        .split("\n")
        .map((line) => line.split(":\t") as [string, string]),
    );
    expect(masks.SigBlk).toBe("0000000000000000");
    // Signals 1..31; 32 and 33 are glibc's own, which it sets up in every program it starts.
    expect(BigInt(`0x${masks.SigIgn}`) & 0x7fffffffn).toBe(0n);
  });

  it("report a death by signal as the signal's name", async () => {
    expect(await run("kill -TERM $$")).toMatchObject({ code: null, signal: "SIGTERM" });
  });

  it("report many children ending at once, each once", async () => {
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => run(`exit ${i}`)));
    expect(results.map((r) => r.code)).toEqual(Array.from({ length: 16 }, (_, i) => i));
  });

  it("fail with the errno of a program or a directory that is not there, leaving nothing open", () => {
    const failure = (file: string, cwd?: string): string => {
      try {
        nativeSpawn({ file, argv: [file], env: {}, cwd, stdinPipe: true });
      } catch (err) {
        expect(err).toBeInstanceOf(NativeSpawnError);
        return (err as NativeSpawnError).code;
      }
      throw new Error("expected a failure");
    };
    const before = fdCount();
    expect(failure("/nonexistent/program")).toBe("ENOENT");
    expect(failure("/bin/sh", join(dir, "missing"))).toBe("ENOENT");
    expect(failure(dir)).toBe("EACCES");
    expect(fdCount()).toBe(before);
  });
});

function fdCount(): number {
  return readdirSync("/proc/self/fd").length;
}
