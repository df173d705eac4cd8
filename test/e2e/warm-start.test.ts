import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { mainThreadChildren } from "../../src/proc/index.js";
import { LAUNCHER_KINDS, waitUntil } from "../helpers/processes.js";
import { startServer } from "../helpers/server.js";

function launchersOf(pid: number): number[] {
  return (mainThreadChildren(pid) ?? []).filter((child) => {
    try {
      const argv = readFileSync(`/proc/${child}/cmdline`, "utf8");
      return argv.includes("launcher.js") || argv.includes("relay-launcher");
    } catch {
      return false;
    }
  });
}

/** The first command does not wait for the launcher: it starts once the client is initialized. */
describe("warm start through the built server", () => {
  it("forks the process launcher after initialized, before any call, and the first call uses it", async () => {
    const s = await startServer();
    try {
      expect(await waitUntil(() => launchersOf(s.pid).length === 1, 10_000)).toBe(true);
      const [launcher] = launchersOf(s.pid);
      expect((await s.call("shell_exec", { command: "echo warm" })).text).toBe("[exit 0]\nwarm\n");
      expect(launchersOf(s.pid)).toEqual([launcher]);
      // Where the build made the native launcher, that is the one the server starts (ADR 0031).
      const program = readFileSync(`/proc/${launcher}/cmdline`, "utf8").split("\0")[0] ?? "";
      if (LAUNCHER_KINDS.includes("native")) expect(program).toMatch(/\/dist\/exec\/relay-launcher$/);
      else expect(program).toBe(process.execPath);
    } finally {
      await s.close();
    }
  });
});
