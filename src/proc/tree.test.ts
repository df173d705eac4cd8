import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { readProc } from "./stat.js";
import { descendants, mainThreadChildren, sessionMembers } from "./tree.js";

describe("proc/tree", () => {
  it("finds this process in its own session", () => {
    const me = readProc(process.pid);
    expect(sessionMembers(me?.sid ?? -1).map((m) => m.pid)).toContain(process.pid);
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
