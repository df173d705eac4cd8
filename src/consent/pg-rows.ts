import type pg from "pg";
import { fail, type Ids } from "../core/index.js";
import type { PgState } from "../state/index.js";
import { toFailure } from "./store-errors.js";
import { rowToLease, rowToRequest, rowToSession, UnreadableRow } from "./store-rows.js";
import type { ConsentLease, ConsentRequest, ConsentSession, StoreResult } from "./types.js";

/**
 * Row access of the PostgreSQL consent store (src/consent/pg-store.ts): the tables of migration 1
 * (src/state/consent-schema.ts) carry the SQLite store's columns, so rows are read back with the
 * same parsers (store-rows.ts) and an edited row is `unavailable` here as there.
 */

/** Anything that runs a statement: the pool for a plain read, a transaction's client for a write. */
export type Db = Pick<pg.PoolClient, "query">;

/** How a write commits: see PgStoreContext.write. */
export interface WriteMode {
  withdraws?: boolean;
  relaxed?: boolean;
}

/** What the store's methods share: its clock, its ids and its two ways of reaching the database. */
export interface PgStoreContext {
  now(): number;
  /** A request or lease id not taken yet (10 hex digits, drawn again on a collision). */
  freshId(tx: Db, table: "consent_requests" | "consent_leases"): Promise<string>;
  /** A plain read on the pool, as a value. */
  read<T>(work: (db: Db) => Promise<T>): Promise<StoreResult<T>>;
  /**
   * One transaction, as a value. `withdraws`: it can take something back (a denial, a revocation,
   * the end of a session, a lease opened), so it bumps the epoch every relay watches. `relaxed`: a
   * lease read, a session's last-seen time or a prune, committed without waiting for the server's
   * disk, as the SQLite store writes them with synchronous=NORMAL: a server crash can give back a
   * few reads of a budget, never open anything.
   */
  write<T>(work: (tx: Db) => Promise<T>, mode?: WriteMode): Promise<StoreResult<T>>;
}

/** A lease as the SQLite reader expects it: `revoked` as 0 or 1. */
export const LEASE_COLUMNS =
  "id, session, opened_by, mode, created_at, expires_at, remaining, CASE WHEN revoked THEN 1 ELSE 0 END AS revoked";

/** Instance id: 16 hex digits, created once with the database, like the SQLite store's. */
const INSTANCE_BYTES = 8;
const INSTANCE_PATTERN = /^[0-9a-f]{16}$/;

async function one(db: Db, sql: string, values: unknown[]): Promise<unknown> {
  const result = await db.query(sql, values);
  return result.rows[0];
}

export async function requestRow(db: Db, id: string, lock: boolean): Promise<ConsentRequest | null> {
  const row = await one(db, `SELECT * FROM consent_requests WHERE id = $1${lock ? " FOR UPDATE" : ""}`, [id]);
  return row === undefined ? null : rowToRequest(row);
}

export async function sessionRow(db: Db, id: string, lock: boolean): Promise<ConsentSession | null> {
  const row = await one(db, `SELECT * FROM consent_sessions WHERE id = $1${lock ? " FOR UPDATE" : ""}`, [id]);
  return row === undefined ? null : rowToSession(row);
}

export async function leaseRow(db: Db, id: string): Promise<ConsentLease | null> {
  const row = await one(db, `SELECT ${LEASE_COLUMNS} FROM consent_leases WHERE id = $1`, [id]);
  return row === undefined ? null : rowToLease(row);
}

export async function requestRows(db: Db, sql: string, values: unknown[]): Promise<ConsentRequest[]> {
  return (await db.query(sql, values)).rows.map(rowToRequest);
}

/** The one row a statement with RETURNING gave, or a damaged-database refusal. */
export function returned<T>(result: pg.QueryResult, read: (row: unknown) => T): T {
  const row = result.rows[0];
  if (row === undefined) throw new UnreadableRow("a row written was not returned");
  return read(row);
}

/** The epoch of withdrawals (consent_epoch): what every relay on the database has bumped so far. */
export async function epoch(db: Db): Promise<number> {
  const value = ((await one(db, "SELECT value FROM consent_epoch", [])) as { value?: unknown } | undefined)
    ?.value;
  if (typeof value !== "number" || !Number.isSafeInteger(value))
    throw new UnreadableRow("its change counter is unreadable");
  return value;
}

/**
 * The deployment's instance id, shared by every relay on the database: read it, and when there is
 * none yet, offer one (the first relay's offer wins) and read what won.
 */
export async function instanceIdOf(db: Db, ids: Ids): Promise<string> {
  const read = async (): Promise<unknown> =>
    (
      (await one(db, "SELECT value FROM consent_meta WHERE key = 'instance_id'", [])) as
        | { value?: unknown }
        | undefined
    )?.value;
  let value = await read();
  if (value === undefined) {
    await db.query(
      "INSERT INTO consent_meta (key, value) VALUES ('instance_id', $1) ON CONFLICT (key) DO NOTHING",
      [ids.hex(INSTANCE_BYTES)],
    );
    value = await read();
  }
  if (typeof value !== "string" || !INSTANCE_PATTERN.test(value))
    throw new UnreadableRow("its instance id is unreadable");
  return value;
}

/**
 * Every way a method can end as a value: a refusal of the store's rules and an unreadable row keep
 * their own words (store-errors.ts); a lock or statement past its timeout, or transactions that
 * kept conflicting, are `locked`; anything else the server or the connection says is `unavailable`.
 */
export function pgFailure(state: PgState, err: unknown): StoreResult<never> {
  const known = state.classify(err);
  if (known === null) return toFailure(err);
  if (known.failure === "locked") return fail({ failure: "locked", detail: known.detail });
  return fail({ failure: "unavailable", detail: known.detail });
}

/** The failure of opening, from the state layer's words: a newer schema, a lock held, a server away. */
export function openFailure(failure: string, detail: string): StoreResult<never> {
  return fail({ failure: failure === "locked" ? "locked" : "unavailable", detail });
}
