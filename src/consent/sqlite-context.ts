import type Database from "better-sqlite3";
import type { Clock, Ids } from "../core/index.js";
import { attempt, refuse } from "./store-errors.js";
import { rowToRequest, rowToSession } from "./store-rows.js";
import { type RequestEvent, transition } from "./transitions.js";
import type { ConsentRequest, ConsentSession, StoreResult } from "./types.js";

/** Request and lease ids: 10 lowercase hex digits, short enough to type. */
const ID_BYTES = 5;
const ID_PATTERN = /^[0-9a-f]{10}$/;

/** How much of a write must reach the disk before it is acknowledged (see {@link durableWriter}). */
type Durability = "FULL" | "NORMAL";

/** A compiled statement of this connection, by its SQL text. */
type Statements = (sql: string) => Database.Statement;

/** Runs `work` as one BEGIN IMMEDIATE transaction; every outcome is a value. */
type Write = <T>(work: () => T, durability?: Durability) => StoreResult<T>;

/**
 * What the request and lease steps of the SQLite store (sqlite-requests.ts, sqlite-leases.ts)
 * share: one connection, its statement cache and its transactions, the clock and the id source,
 * and the row lookups every step starts from.
 */
export interface SqliteContext {
  db: Database.Database;
  instanceId: string;
  ids: Ids;
  now(): number;
  stmt: Statements;
  write: Write;
}

export function sqliteContext(
  db: Database.Database,
  instanceId: string,
  options: { clock: Clock; ids: Ids },
): SqliteContext {
  const { clock, ids } = options;
  return { db, instanceId, ids, now: () => clock.now(), stmt: statementCache(db), write: durableWriter(db) };
}

/** Each statement compiled once per connection: a read under a lease runs three of them. */
function statementCache(db: Database.Database): Statements {
  const statements = new Map<string, Database.Statement>();
  return (sql) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
}

/*
 * Durability per write. FULL syncs the log at every commit, so an acknowledged
 * consumption, approval, denial or revocation survives a power cut: losing one
 * would make a used approval usable again, or bring back a withdrawn lease,
 * after a reboot. A lease read or a session's last-seen time is written with
 * NORMAL (synced at the next FULL commit or checkpoint): a power cut can give
 * back a few reads of a lease's budget, never open anything, and the read
 * under a lease stays a fraction of a millisecond instead of one fsync.
 */
function durableWriter(db: Database.Database): Write {
  let synchronous: Durability = "FULL";
  return <T>(work: () => T, durability: Durability = "FULL"): StoreResult<T> =>
    attempt(() => {
      if (synchronous !== durability) {
        db.pragma(`synchronous = ${durability}`);
        synchronous = durability;
      }
      return db.transaction(work).immediate();
    });
}

function requestById(ctx: SqliteContext, id: string): ConsentRequest | null {
  const row = ctx.stmt("SELECT * FROM requests WHERE id = ?").get(id);
  return row === undefined ? null : rowToRequest(row);
}

/** The request named `id`, or the not-found refusal that ends the transaction. */
export function requireRequest(ctx: SqliteContext, id: string): ConsentRequest {
  if (typeof id !== "string" || !ID_PATTERN.test(id)) refuse("not-found", `no consent request ${String(id)}`);
  return requestById(ctx, id) ?? refuse("not-found", `no consent request ${id}`);
}

export function sessionById(ctx: SqliteContext, id: string): ConsentSession | null {
  const row = ctx.stmt("SELECT * FROM sessions WHERE id = ?").get(id);
  return row === undefined ? null : rowToSession(row);
}

/** An id not yet used in `table`; a source that keeps repeating itself is broken, and refused. */
export function freshId(ctx: SqliteContext, table: "requests" | "leases"): string {
  const taken = ctx.stmt(`SELECT 1 FROM ${table} WHERE id = ?`).pluck();
  for (let i = 0; i < 16; i += 1) {
    const id = ctx.ids.hex(ID_BYTES);
    if (taken.get(id) === undefined) return id;
  }
  return refuse("unavailable", "no free id after 16 draws: the id source is broken");
}

/** The move the rules allow (consent/transitions.ts), or the refusal that ends the transaction. */
export function allowed(
  ctx: SqliteContext,
  request: ConsentRequest,
  event: RequestEvent,
  at = ctx.now(),
): void {
  const move = transition(request, event, at);
  if (!move.ok) refuse(move.error.failure, move.error.detail);
}
