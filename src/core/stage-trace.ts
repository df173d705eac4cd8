import { AsyncLocalStorage } from "node:async_hooks";

/**
 * Where one call's time goes inside the server, stage by stage, for the
 * benchmark's breakdown (docs/performance.md). Off unless the start-up turns
 * it on (RELAY_SHELL_TRACE_FILE): then every call runs inside a trace, each
 * hook adds the time since the previous hook to its stage, and the finished
 * trace goes to the sink. Off, a hook is one call that reads one boolean, and
 * no async context is ever entered.
 */

/** Microseconds per stage, in the order the stages were first reached. */
export type StageTimes = Record<string, number>;

export interface StageRecord {
  /** What was traced: the tool name, or "launcher" for the launcher's share of a call. */
  label: string;
  /** From the start of the trace to its end, in microseconds. */
  totalUs: number;
  stages: StageTimes;
}

interface Trace {
  label: string;
  start: bigint;
  last: bigint;
  stages: StageTimes;
}

// Set once at start-up (cli/build.ts, or the launcher on a traced request); never reset.
let on = false;
let sink: ((record: StageRecord) => void) | undefined;
let store: AsyncLocalStorage<Trace> | undefined;

/** Turn tracing on for the life of the process; `emit` receives each finished trace. */
export function enableStageTrace(emit?: (record: StageRecord) => void): void {
  on = true;
  sink = emit;
  store ??= new AsyncLocalStorage<Trace>();
}

export function stageTraceEnabled(): boolean {
  return on;
}

/** Add the time since the previous mark of the current call to `stage`. */
export function markStage(stage: string): void {
  if (!on) return;
  const trace = store?.getStore();
  if (trace === undefined) return;
  const now = process.hrtime.bigint();
  trace.stages[stage] = (trace.stages[stage] ?? 0) + Number(now - trace.last) / 1000;
  trace.last = now;
}

/**
 * Fold stages measured elsewhere (the launcher's spawn and drain) into the
 * current call: they came out of the time just marked as `outer`, so that
 * stage keeps only what is left of it (the hop there and back).
 */
export function mergeStages(outer: string, inner: StageTimes | undefined): void {
  if (!on || inner === undefined) return;
  const trace = store?.getStore();
  if (trace === undefined) return;
  let total = 0;
  for (const [stage, us] of Object.entries(inner)) {
    trace.stages[stage] = (trace.stages[stage] ?? 0) + us;
    total += us;
  }
  trace.stages[outer] = (trace.stages[outer] ?? 0) - total;
}

/**
 * Run `work` as one traced call when tracing is on (just `work()` when it is
 * off). The finished record goes to the sink, and to `done` for a caller that
 * ships it elsewhere (the launcher sends its share back with the outcome).
 */
export function traceCall<T>(
  label: string,
  work: () => Promise<T>,
  done?: (record: StageRecord) => void,
): Promise<T> {
  if (!on || store === undefined) return work();
  const start = process.hrtime.bigint();
  const trace: Trace = { label, start, last: start, stages: {} };
  const finish = (): void => {
    const record: StageRecord = {
      label,
      totalUs: Number(process.hrtime.bigint() - start) / 1000,
      stages: trace.stages,
    };
    done?.(record);
    sink?.(record);
  };
  return store.run(trace, work).finally(finish);
}
