/**
 * Files of a tree copied a few at a time while the walk goes on (ADR 0042).
 * The walk hands each file over with `start` and moves to the next entry; it
 * waits only when `limit` copies are already running. The first failure, of a
 * copy or of the walk (`finish(err)`), stops new copies; `finish` waits for
 * those under way and then throws it. A copy that was running when another
 * failed so ends on its own terms, whole or removed by its own clean-up, and
 * none is still writing after the transfer answered.
 */
export interface CopyQueue {
  /** Start `copy` once fewer than the limit are running; throws the first failure instead, if there was one. */
  start(copy: () => Promise<void>): Promise<void>;
  /** Wait for every copy; throws the first failure (`err`, when given, counts as one at this moment). */
  finish(err?: unknown): Promise<void>;
}

export function createCopyQueue(limit: number): CopyQueue {
  let running = 0;
  let failure: { err: unknown } | null = null;
  // Only the walk waits (for a free place, or for the end), so one waiter at a time.
  let wake: (() => void) | null = null;
  const settled = () => {
    running--;
    const w = wake;
    wake = null;
    w?.();
  };
  const waitForOne = () =>
    new Promise<void>((resolve) => {
      wake = resolve;
    });
  return {
    async start(copy) {
      while (running >= limit && failure === null) await waitForOne();
      if (failure !== null) throw failure.err;
      running++;
      void copy().then(settled, (err: unknown) => {
        failure ??= { err };
        settled();
      });
    },
    async finish(err) {
      if (err !== undefined) failure ??= { err };
      while (running > 0) await waitForOne();
      if (failure !== null) throw failure.err;
    },
  };
}
