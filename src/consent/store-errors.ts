import { UnreadableRow } from "./store-rows.js";
import type { StoreFailure, StoreResult } from "./types.js";

/** A rule of the store refused the operation; thrown inside a transaction so it rolls back. */
class Refusal extends Error {
  constructor(
    readonly failure: StoreFailure,
    detail: string,
  ) {
    super(detail);
  }
}

export function refuse(failure: StoreFailure, detail: string): never {
  throw new Refusal(failure, detail);
}

export function sqliteCode(err: unknown): string {
  return err instanceof Error && "code" in err && typeof err.code === "string" ? err.code : "";
}

/** Every outcome of a method as a value: a refusal, a lock not granted in time, or an unusable database. */
export function toFailure(err: unknown): { ok: false; failure: StoreFailure; detail: string } {
  if (err instanceof Refusal) return { ok: false, failure: err.failure, detail: err.message };
  const code = sqliteCode(err);
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) {
    return { ok: false, failure: "locked", detail: "the consent database is locked by another process" };
  }
  if (err instanceof UnreadableRow) {
    return { ok: false, failure: "unavailable", detail: `the consent database is damaged: ${err.message}` };
  }
  const text = err instanceof Error ? err.message : String(err);
  return { ok: false, failure: "unavailable", detail: `the consent database failed: ${text}` };
}

export function attempt<T>(work: () => T): StoreResult<T> {
  try {
    return { ok: true, value: work() };
  } catch (err) {
    return toFailure(err);
  }
}
