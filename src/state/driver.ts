import { createRequire } from "node:module";
import type pg from "pg";

/**
 * node-postgres, loaded the first time a shared state is opened. Loading it costs some 40 ms,
 * which a relay on its own files (the default) would pay at every start for nothing.
 */
let driver: typeof pg | null = null;

export function pgDriver(): typeof pg {
  driver ??= createRequire(import.meta.url)("pg") as typeof pg;
  return driver;
}
