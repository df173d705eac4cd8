import { fail, ok } from "../core/index.js";
import { UnreadableRow } from "./store-rows.js";
import type { StoreError, StoreFailure, StoreResult } from "./types.js";

/**
 * A rule of the store refused the operation. It is thrown, not returned, because the refusal is
 * decided inside a transaction (better-sqlite3's `db.transaction`, the PostgreSQL store's
 * `state.transaction`), and a throw out of the transaction's work is what rolls back what the
 * work already wrote; `toFailure` turns it into the method's failed result just outside.
 */
class StoreRefusal extends Error {
  constructor(
    readonly failure: StoreFailure,
    detail: string,
  ) {
    super(detail);
  }
}

export function refuse(failure: StoreFailure, detail: string): never {
  throw new StoreRefusal(failure, detail);
}

export function sqliteCode(err: unknown): string {
  return err instanceof Error && "code" in err && typeof err.code === "string" ? err.code : "";
}

/** Every outcome of a method as a value: a refusal, a lock not granted in time, or an unusable database. */
export function toFailure(err: unknown): { ok: false; error: StoreError } {
  if (err instanceof StoreRefusal) return fail({ failure: err.failure, detail: err.message });
  const code = sqliteCode(err);
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) {
    return fail({ failure: "locked", detail: "the consent database is locked by another process" });
  }
  if (err instanceof UnreadableRow) {
    return fail({ failure: "unavailable", detail: `the consent database is damaged: ${err.message}` });
  }
  const text = err instanceof Error ? err.message : String(err);
  return fail({ failure: "unavailable", detail: `the consent database failed: ${text}` });
}

export function attempt<T>(work: () => T): StoreResult<T> {
  try {
    return ok(work());
  } catch (err) {
    return toFailure(err);
  }
}
