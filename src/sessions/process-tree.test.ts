import { describe, expect, it } from "vitest";
import { parseStat, readStat, sessionMembers } from "./process-tree.js";

describe("process tree", () => {
  it("parses /proc/<pid>/stat even when the command name holds spaces and parentheses", () => {
    const line =
      "4242 (we (ird) name) S 1 4240 4239 34817 4240 4194304 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200 " +
      "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0";
    expect(parseStat(line)).toEqual({
      pid: 4242,
      state: "S",
      pgid: 4240,
      sid: 4239,
      tpgid: 4240,
      startTime: 987654,
    });
    expect(parseStat("garbage")).toBeNull();
  });

  it("reads this process and finds it in its own session", () => {
    const me = readStat(process.pid);
    expect(me?.pid).toBe(process.pid);
    expect(me?.startTime).toBeGreaterThan(0);
    expect(sessionMembers(me?.sid ?? -1).map((m) => m.pid)).toContain(process.pid);
    expect(readStat(2 ** 30)).toBeNull();
  });
});
