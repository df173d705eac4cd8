import type { ConsentStore } from "./types.js";

/** The store's methods as better-sqlite3 runs them: synchronously, each transaction whole. */
export type SyncStore = {
  [K in keyof ConsentStore]: ConsentStore[K] extends (...args: infer A) => Promise<infer R>
    ? (...args: A) => R
    : ConsentStore[K];
};

/**
 * The shared interface answers through promises (a PostgreSQL store has to); SQLite's answer is
 * ready at once, so each transaction still runs whole before anything else in this process.
 */
export function answerAsync(sync: SyncStore): ConsentStore {
  const store: Record<string, unknown> = { instanceId: sync.instanceId };
  for (const [name, method] of Object.entries(sync) as [string, unknown][]) {
    if (typeof method !== "function") continue;
    store[name] = (...args: unknown[]) => {
      try {
        return Promise.resolve((method as (...a: unknown[]) => unknown)(...args));
      } catch (error) {
        return Promise.reject(error);
      }
    };
  }
  return store as unknown as ConsentStore;
}
