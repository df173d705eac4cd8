/** A comment this often notices an expired login and keeps proxies from closing an idle stream. */
const KEEPALIVE_MS = 15_000;

/**
 * The pace of one of the console's event streams: the writer sleeps until
 * something is queued (`nudge`) or the keep-alive interval passes, and
 * `beatDue` says when a keep-alive (and the login check with it) is owed.
 */
export interface StreamPace {
  nudge(): void;
  /** Resolves on the next nudge or after the keep-alive interval, whichever comes first. */
  sleep(): Promise<void>;
  /** True once per keep-alive interval. */
  beatDue(): boolean;
}

export function createStreamPace(now: () => number): StreamPace {
  let wake: (() => void) | null = null;
  let lastBeat = now();
  return {
    nudge() {
      const w = wake;
      wake = null;
      w?.();
    },
    async sleep() {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, KEEPALIVE_MS);
        timer.unref();
      });
      clearTimeout(timer);
    },
    beatDue() {
      if (now() - lastBeat < KEEPALIVE_MS) return false;
      lastBeat = now();
      return true;
    },
  };
}
