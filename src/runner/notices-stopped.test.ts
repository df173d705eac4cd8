import { describe, expect, it } from "vitest";
import { computeNotices, type NoticeInput } from "./notices.js";

const quiet: NoticeInput = {
  enabled: true,
  tier: 1,
  basis: "file_destruction",
  mode: "open",
  brokerOn: false,
  confirmed: false,
};

describe("the stopped-processes notice (ADR 0019)", () => {
  it("says how many background processes a one-shot command lost, in the singular too", () => {
    expect(computeNotices({ ...quiet, fields: { stopped_processes: 1 } })).toEqual([
      "[NOTICE 1 background process was stopped: what a one-shot command starts ends with it; use shell_spawn for long-lived work]",
    ]);
    expect(computeNotices({ ...quiet, fields: { stopped_processes: 3 } })).toEqual([
      "[NOTICE 3 background processes were stopped: what a one-shot command starts ends with it; use shell_spawn for long-lived work]",
    ]);
  });

  it("comes after the tier line, and not at all for nothing stopped or a malformed count", () => {
    const lines = computeNotices({ ...quiet, tier: 3, fields: { stopped_processes: 2 } });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\[NOTICE tier 3 /);
    expect(lines[1]).toMatch(/^\[NOTICE 2 background processes were stopped/);
    for (const value of [0, -1, 1.5, "2", null, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(computeNotices({ ...quiet, fields: { stopped_processes: value } })).toEqual([]);
    }
    expect(computeNotices({ ...quiet })).toEqual([]);
  });

  it("is off with every other notice", () => {
    expect(computeNotices({ ...quiet, enabled: false, fields: { stopped_processes: 4 } })).toEqual([]);
  });
});
