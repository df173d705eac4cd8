import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import {
  isAlive,
  LAUNCHER_KINDS,
  launcherPids,
  newLaunchers,
  waitUntil,
} from "../../test/helpers/processes.js";
import { rejection, shellRequests } from "../../test/helpers/requests.js";
import { buildEnv } from "./env.js";
import { createLauncherRunner, defaultLauncherKind, launcherEntry } from "./launcher-runner.js";

const { sh } = shellRequests(buildEnv(process.env, ""));

const parentDir = mkdtempSync(join(tmpdir(), "relay-launcher-life-"));
afterAll(() => rmSync(parentDir, { recursive: true, force: true }));

describe.each(LAUNCHER_KINDS)("the %s launcher", (kind) => {
  // Files of their own per launcher: a pid file the other run left must not answer for this one.
  const dir = mkdtempSync(join(parentDir, `${kind}-`));

  describe("launcher lifecycle", () => {
    it("keeps the launcher's stdout off ours", async () => {
      const own = createLauncherRunner({ kind });
      try {
        const pids = await newLaunchers(() => own.run(sh("true")));
        expect(pids).toHaveLength(1);
        // The Node launcher writes nowhere; the native one answers on a pipe of its own.
        for (const pid of pids) {
          const out = readlinkSync(`/proc/${pid}/fd/1`);
          expect(out).not.toBe(readlinkSync("/proc/self/fd/1"));
          expect(out).toMatch(kind === "node" ? /^\/dev\/null$/ : /^(pipe|socket):/);
        }
      } finally {
        own.close();
      }
    });

    it("rejects open requests when the launcher dies, and starts a new one next time", async () => {
      const own = createLauncherRunner({ kind });
      try {
        const [mine, ...others] = await newLaunchers(() => own.run(sh("true")));
        expect(others).toEqual([]);
        const pidFile = join(dir, "orphan.pid");
        const running = own.run(sh(`echo $$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; exec sleep 30`));
        expect(await waitUntil(() => existsSync(pidFile), 5000)).toBe(true);
        process.kill(mine as number, "SIGKILL");
        const err = await rejection(running);
        expect(err.type).toBe("OSError");
        expect(err.message).toMatch(/^process launcher exited \(signal SIGKILL\)/);
        expect(own.active()).toBe(0);
        // A launcher killed outright cannot kill its children; clean up the orphan here.
        const orphan = Number(readFileSync(pidFile, "utf8"));
        if (isAlive(orphan)) process.kill(orphan, "SIGKILL");

        const next = await newLaunchers(async () => {
          expect((await own.run(sh("echo again"))).output).toBe("again\n");
        });
        expect(next).toHaveLength(1);
        expect(next).not.toContain(mine);
      } finally {
        own.close();
      }
    });

    it("prestart() forks the launcher before the first run, once, and the first run uses it", async () => {
      const own = createLauncherRunner({ kind });
      const before = new Set(launcherPids());
      const fresh = () => launcherPids().filter((pid) => !before.has(pid));
      try {
        own.prestart();
        own.prestart();
        expect(await waitUntil(() => fresh().length > 0, 5000)).toBe(true);
        const [mine, ...others] = fresh();
        expect(others).toEqual([]);
        expect((await own.run(sh("echo first"))).output).toBe("first\n");
        expect(fresh()).toEqual([mine]);
      } finally {
        own.close();
      }
    });

    it("prestart() after close() starts nothing", async () => {
      const own = createLauncherRunner({ kind });
      own.close();
      const started = await newLaunchers(async () => {
        own.prestart();
        await new Promise((r) => setTimeout(r, 300));
      });
      expect(started).toEqual([]);
    });

    it("close() kills the children, answers open requests, exits, and refuses later runs", async () => {
      const own = createLauncherRunner({ kind });
      const [mine] = await newLaunchers(() => own.run(sh("true")));
      const marker = join(dir, "closing");
      const running = own.run(sh(`trap '' TERM; touch ${marker}; sleep 30`));
      expect(await waitUntil(() => existsSync(marker), 5000)).toBe(true);
      const t0 = performance.now();
      own.close();
      expect(await running).toMatchObject({ exitCode: -9, timedOut: false });
      expect(performance.now() - t0).toBeLessThan(1000);
      expect(await waitUntil(() => !isAlive(mine as number))).toBe(true);
      const err = await rejection(own.run(sh("true")));
      expect(err).toMatchObject({ type: "OSError", message: "process launcher is closed" });
    });
  });

  describe("when the server goes away", () => {
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    const runnerUrl = new URL("./launcher-runner.ts", import.meta.url).href;

    /** A server-like parent: runs `command` through its own launcher, says "started" on stdout. */
    function startParent(command: string, awaitIt: boolean) {
      const script = join(dir, `parent-${awaitIt ? "await" : "hold"}.mjs`);
      const request = {
        env: { PATH: "/usr/bin:/bin" },
        command,
        timeoutMs: 120_000,
        maxBufferBytes: 1024,
        mergeStderr: true,
      };
      writeFileSync(
        script,
        [
          `import { createLauncherRunner } from ${JSON.stringify(runnerUrl)};`,
          `const runner = createLauncherRunner({ kind: ${JSON.stringify(kind)} });`,
          `const running = runner.run(${JSON.stringify(request)});`,
          awaitIt
            ? "process.stdout.write(`output=${JSON.stringify((await running).output)}\\n`);"
            : 'process.stdout.write("started\\n");',
        ].join("\n"),
      );
      return spawn(process.execPath, ["--import", tsx, script], { stdio: ["ignore", "pipe", "inherit"] });
    }

    it("kills every child within moments when the parent is SIGKILLed", async () => {
      const pidFile = join(dir, "sleep.pid");
      const parent = startParent(
        `echo $$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; exec sleep 60`,
        false,
      );
      const exited = new Promise((r) => parent.once("exit", r));
      let leftovers: number[] = [];
      try {
        expect(await waitUntil(() => existsSync(pidFile), 15_000)).toBe(true);
        const sleep = Number(readFileSync(pidFile, "utf8"));
        const launchers = launcherPids(parent.pid);
        leftovers = [sleep, ...launchers];
        expect(launchers).toHaveLength(1);
        expect(isAlive(sleep)).toBe(true);
        parent.kill("SIGKILL");
        await exited;
        expect(await waitUntil(() => !isAlive(sleep), 2000)).toBe(true);
        expect(await waitUntil(() => !isAlive(launchers[0] as number), 2000)).toBe(true);
      } finally {
        parent.kill("SIGKILL");
        for (const pid of leftovers) if (isAlive(pid)) process.kill(pid, "SIGKILL");
      }
    });

    it("a launcher started ahead of any request does not keep its parent alive either", async () => {
      const script = join(dir, "parent-prestart.mjs");
      writeFileSync(
        script,
        [
          `import { createLauncherRunner } from ${JSON.stringify(runnerUrl)};`,
          `createLauncherRunner({ kind: ${JSON.stringify(kind)} }).prestart();`,
          'process.stdout.write("prestarted\\n");',
        ].join("\n"),
      );
      const parent = spawn(process.execPath, ["--import", tsx, script], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      let launchers: number[] = [];
      const sampler = setInterval(() => {
        if (launchers.length === 0) launchers = launcherPids(parent.pid);
      }, 5);
      const exited = new Promise((r) => parent.once("exit", r));
      try {
        const code = await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000, "still running"))]);
        expect(code).toBe(0);
        for (const pid of launchers) expect(await waitUntil(() => !isAlive(pid))).toBe(true);
      } finally {
        clearInterval(sampler);
        parent.kill("SIGKILL");
        for (const pid of launchers) if (isAlive(pid)) process.kill(pid, "SIGKILL");
      }
    });

    it("does not keep an idle parent alive: it exits by itself, and its launcher with it", async () => {
      const parent = startParent("echo done", true);
      let stdout = "";
      parent.stdout?.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      let launchers: number[] = [];
      const sampler = setInterval(() => {
        if (launchers.length === 0) launchers = launcherPids(parent.pid);
      }, 5);
      const exited = new Promise((r) => parent.once("exit", r));
      try {
        const code = await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000, "still running"))]);
        expect(code).toBe(0);
        expect(stdout).toBe('output="done\\n"\n');
        expect(launchers).toHaveLength(1);
        for (const pid of launchers) expect(await waitUntil(() => !isAlive(pid))).toBe(true);
      } finally {
        clearInterval(sampler);
        parent.kill("SIGKILL");
        for (const pid of launchers) if (isAlive(pid)) process.kill(pid, "SIGKILL");
      }
    });
  });
});

describe("the native launcher's build (ADR 0031)", () => {
  it("is built wherever a C compiler is, and is then the launcher a runner starts by default", () => {
    const compiler = spawnSync(process.env.CC || "cc", ["--version"], { stdio: "ignore" });
    const built = existsSync(new URL("../../dist/exec/relay-launcher", import.meta.url));
    if (compiler.status === 0) expect(built).toBe(true);
    expect(defaultLauncherKind()).toBe(built ? "native" : "node");
    expect(LAUNCHER_KINDS).toEqual(built ? ["native", "node"] : ["node"]);
  });
});

describe("launcherEntry", () => {
  it("runs the built script with the launcher's flags only, and the source through tsx", () => {
    expect(launcherEntry("file:///opt/relay/dist/exec/launcher-runner.js")).toEqual({
      script: "/opt/relay/dist/exec/launcher.js",
      execArgv: ["--max-semi-space-size=1"],
    });
    const fromSource = launcherEntry(import.meta.url);
    expect(fromSource.script).toBe(new URL("./launcher.ts", import.meta.url).pathname);
    expect(fromSource.execArgv).toEqual([
      "--import",
      expect.stringMatching(/tsx/),
      "--max-semi-space-size=1",
    ]);
  });
});
