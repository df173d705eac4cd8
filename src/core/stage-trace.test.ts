import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import {
  enableStageTrace,
  markStage,
  mergeStages,
  type StageRecord,
  stageTraceEnabled,
  traceCall,
} from "./stage-trace.js";

// Tracing is switched on once per process and never off: the tests of the off state run first.
describe("stage trace", () => {
  it("is off until enabled: work runs as is and nothing is recorded", async () => {
    expect(stageTraceEnabled()).toBe(false);
    let done: StageRecord | undefined;
    const value = await traceCall(
      "off",
      async () => {
        markStage("a");
        mergeStages("a", { b: 1 });
        return 42;
      },
      (r) => (done = r),
    );
    expect(value).toBe(42);
    expect(done).toBeUndefined();
  });

  it("once enabled, gives each stage the time since the previous mark and sends the record to the sink", async () => {
    const sunk: StageRecord[] = [];
    enableStageTrace((r) => sunk.push(r));
    let done: StageRecord | undefined;
    await traceCall(
      "call",
      async () => {
        await sleep(20);
        markStage("first");
        await sleep(5);
        markStage("second");
        await sleep(20);
        markStage("first");
      },
      (r) => (done = r),
    );
    expect(sunk).toEqual([done]);
    const stages = done?.stages ?? {};
    expect(Object.keys(stages)).toEqual(["first", "second"]);
    expect(stages.first).toBeGreaterThanOrEqual(38_000);
    expect(stages.second).toBeGreaterThanOrEqual(4_000);
    expect(stages.second).toBeLessThan(stages.first ?? 0);
    expect(done?.totalUs).toBeGreaterThanOrEqual((stages.first ?? 0) + (stages.second ?? 0));
  });

  it("keeps concurrent calls apart", async () => {
    const records: StageRecord[] = [];
    const call = (label: string, ms: number) =>
      traceCall(
        label,
        async () => {
          await sleep(ms);
          markStage(label);
        },
        (r) => records.push(r),
      );
    await Promise.all([call("slow", 40), call("fast", 5)]);
    const byLabel = Object.fromEntries(records.map((r) => [r.label, r.stages]));
    expect(Object.keys(byLabel.slow ?? {})).toEqual(["slow"]);
    expect(Object.keys(byLabel.fast ?? {})).toEqual(["fast"]);
    expect(byLabel.slow?.slow).toBeGreaterThanOrEqual(38_000);
  });

  it("moves stages measured elsewhere out of the stage that waited for them", async () => {
    let done: StageRecord | undefined;
    await traceCall(
      "merge",
      async () => {
        await sleep(30);
        markStage("hop");
        mergeStages("hop", { spawn: 10_000, drain: 5_000 });
      },
      (r) => (done = r),
    );
    const { hop = 0, spawn, drain } = done?.stages ?? {};
    expect(spawn).toBe(10_000);
    expect(drain).toBe(5_000);
    expect(hop + 15_000).toBeGreaterThanOrEqual(28_000);
  });

  it("a mark outside any traced call is ignored, and a failing call is still recorded", async () => {
    markStage("nowhere");
    let done: StageRecord | undefined;
    await expect(
      traceCall(
        "fails",
        async () => {
          markStage("before");
          throw new Error("boom");
        },
        (r) => (done = r),
      ),
    ).rejects.toThrow("boom");
    expect(Object.keys(done?.stages ?? {})).toEqual(["before"]);
  });
});
