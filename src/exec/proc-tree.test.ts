import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { descendants, isSameProcess, mainThreadChildren, readProc } from "./proc-tree.js";

describe("proc-tree", () => {
  it("reads pid, parent, session and start time of a process, and nothing for a missing one", () => {
    const self = readProc(process.pid);
    expect(self?.pid).toBe(process.pid);
    expect(self?.ppid).toBe(process.ppid);
    expect(self?.state).toMatch(/^[RS]$/);
    expect(self?.startTime).toBeGreaterThan(0);
    expect(isSameProcess(process.pid, self?.startTime ?? -1)).toBe(true);
    // A different start time is a different process that got the same pid.
    expect(isSameProcess(process.pid, (self?.startTime ?? 0) + 1)).toBe(false);
    expect(readProc(2 ** 22 + 1)).toBeNull();
  });

  it("walks a tree through the children lists, a setsid grandchild and its new session included", async () => {
    const child = spawn("/bin/sh", ["-c", "setsid sleep 30 & sleep 30 & wait"], {
      detached: true,
      stdio: "ignore",
    });
    try {
      const pid = child.pid as number;
      const deadline = Date.now() + 5000;
      let tree = descendants([readProc(pid) ?? fail()], 100);
      // Until both sleeps run and the setsid one has left the shell's session.
      while ((tree.length < 3 || new Set(tree.map((p) => p.sid)).size < 2) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        tree = descendants([readProc(pid) ?? fail()], 100);
      }
      expect(mainThreadChildren(process.pid)).toContain(pid);
      expect(tree.map((p) => p.pid)[0]).toBe(pid);
      expect(tree).toHaveLength(3);
      const sids = new Set(tree.map((p) => p.sid));
      // The shell leads its own session; the setsid child leads another.
      expect(sids.size).toBe(2);
      expect(sids.has(pid)).toBe(true);
      // The walk stops at its limit.
      expect(descendants([readProc(pid) ?? fail()], 1)).toHaveLength(1);
    } finally {
      for (const p of descendants([readProc(child.pid as number) ?? fail()], 100)) {
        try {
          process.kill(p.pid, "SIGKILL");
        } catch {
          // Gone already.
        }
      }
    }
  });
});

function fail(): never {
  throw new Error("process not found");
}
