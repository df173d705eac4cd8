import type Database from "better-sqlite3";
import type { Clock, Ids } from "../core/index.js";
import { sqliteContext } from "./sqlite-context.js";
import { leaseMethods } from "./sqlite-leases.js";
import { requestMethods } from "./sqlite-requests.js";
import { attempt } from "./store-errors.js";
import { openDatabase } from "./store-open.js";
import { answerAsync, type SyncStore } from "./sync-store.js";
import type { ConsentStore, StoreResult } from "./types.js";

export interface SqliteStoreOptions {
  clock: Clock;
  ids: Ids;
  /**
   * How long a write waits for another process's transaction before it is
   * refused as `locked`. better-sqlite3 is synchronous, so this is also how
   * long the caller's event loop can stall: keep it to a few seconds.
   */
  busyTimeoutMs: number;
  /** The owner the file must have; defaults to this process's effective uid. */
  euid?: number;
}

/**
 * Open (creating if needed) the consent database at `path`: the SQLite store
 * of docs/adr/0024-consent-store-and-approval-lifetime.md. Every method that
 * reads then writes is one BEGIN IMMEDIATE transaction; none throws.
 */
export function openSqliteStore(path: string, options: SqliteStoreOptions): StoreResult<ConsentStore> {
  const opened = openDatabase(path, {
    ids: options.ids,
    busyTimeoutMs: options.busyTimeoutMs,
    euid: options.euid ?? process.geteuid?.() ?? 0,
  });
  if (!opened.ok) return opened;
  return { ok: true, value: answerAsync(createStore(opened.value.db, opened.value.instanceId, options)) };
}

/**
 * The store over one open connection: the request steps (sqlite-requests.ts) and the session and
 * lease steps (sqlite-leases.ts) share its statements and transactions (sqlite-context.ts).
 */
function createStore(db: Database.Database, instanceId: string, options: SqliteStoreOptions): SyncStore {
  const ctx = sqliteContext(db, instanceId, options);
  return {
    instanceId,
    ...requestMethods(ctx),
    ...leaseMethods(ctx),
    // A prepared statement, not db.pragma(): this runs on every leased read.
    changeCounter: () => attempt(() => Number(ctx.stmt("PRAGMA data_version").pluck().get())),
    close: () => {
      if (db.open) db.close();
    },
  };
}
