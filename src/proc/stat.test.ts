import { describe, expect, it } from "vitest";
import { isSameProcess, parseStat, readProc } from "./stat.js";

describe("proc/stat", () => {
  it("parses /proc/<pid>/stat even when the command name holds spaces and parentheses", () => {
    const line =
      "4242 (we (ird) name) S 1 4240 4239 34817 4240 4194304 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200 " +
      "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0";
    expect(parseStat(line)).toEqual({
      pid: 4242,
      ppid: 1,
      state: "S",
      pgid: 4240,
      sid: 4239,
      tpgid: 4240,
      startTime: 987654,
    });
    expect(parseStat("garbage")).toBeNull();
  });

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
    expect(readProc(2 ** 30)).toBeNull();
  });
});
