import type pg from "pg";
import { fail, ok } from "../core/index.js";
import { CONSENT_SCHEMA_SQL } from "./consent-schema.js";
import type { StateError, StateResult } from "./errors.js";
import { OAUTH_SCHEMA_SQL } from "./oauth-schema.js";
import type { PgState } from "./pg.js";
import { SHARED_SCHEMA_SQL } from "./shared-schema.js";
import { TERMINALS_SCHEMA_SQL } from "./terminals-schema.js";

/** One step of the shared schema; applied once, in order, each in a transaction of its own. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Every step this relay knows, oldest first. A step once released is never edited: add another. */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "consent store", sql: CONSENT_SCHEMA_SQL },
  { version: 2, name: "oauth", sql: OAUTH_SCHEMA_SQL },
  { version: 3, name: "shared", sql: SHARED_SCHEMA_SQL },
  { version: 4, name: "terminals", sql: TERMINALS_SCHEMA_SQL },
];

/**
 * The session-level advisory lock every relay takes before it looks at the schema, so that of
 * several relays started together one migrates and the others then find nothing left to do. The
 * key is the ASCII bytes of "relay-sh" read as a big-endian 64-bit integer (0x72656c61792d7368);
 * another program on the same database would have to pick the same eight bytes to collide.
 */
const MIGRATION_LOCK_KEY = "8243113858872210280";

const LEDGER_SQL = `CREATE TABLE IF NOT EXISTS relay_schema_migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now(),
  applied_by text NOT NULL
)`;

interface MigrateOptions {
  /** Recorded as `applied_by` (the state's instance name by default). */
  instance?: string;
  /** The steps to apply (MIGRATIONS); tests give their own. */
  migrations?: readonly Migration[];
  /** How long to wait for another relay's migration to finish (60 s). */
  lockWaitMs?: number;
  /** A statement of a migration may run this long (60 s), past the pool's statement timeout. */
  statementTimeoutMs?: number;
}

interface MigrateReport {
  /** The schema version found, 0 for a new database. */
  from: number;
  to: number;
  applied: number[];
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A refusal of this module's own, carried out of the try block as a value. */
class Refused extends Error {
  constructor(readonly error: StateError) {
    super(error.detail);
  }
}

/**
 * Bring the database to the newest schema this relay knows, under the migration lock on one
 * dedicated connection. A database newer than this relay is refused (`incompatible`): an older
 * relay must not write to tables it does not understand.
 */
export async function migrate(
  state: PgState,
  options: MigrateOptions = {},
): Promise<StateResult<MigrateReport>> {
  const steps = [...(options.migrations ?? MIGRATIONS)].sort((a, b) => a.version - b.version);
  let client: pg.PoolClient;
  try {
    client = await state.pool.connect();
  } catch (err) {
    return failure(state, err);
  }
  const onError = (): void => undefined;
  client.on("error", onError);
  let locked = false;
  let broken: Error | undefined;
  try {
    locked = await takeLock(client, options.lockWaitMs ?? 60_000, state.target);
    await client.query(LEDGER_SQL);
    const found = await client.query<{ version: number; name: string }>(
      "SELECT version, name FROM relay_schema_migrations ORDER BY version",
    );
    const done = new Map(found.rows.map((row) => [row.version, row.name]));
    const from = Math.max(0, ...done.keys());
    checkKnown(done, steps);
    const applied: number[] = [];
    for (const step of steps) {
      if (done.has(step.version)) continue;
      await applyStep(client, step, options.instance ?? state.instance, options.statementTimeoutMs ?? 60_000);
      applied.push(step.version);
    }
    return ok({ from, to: Math.max(from, ...applied), applied });
  } catch (err) {
    broken = err instanceof Refused ? undefined : err instanceof Error ? err : new Error(String(err));
    return failure(state, err);
  } finally {
    if (locked && broken === undefined) {
      await client.query("SELECT pg_advisory_unlock($1::bigint)", [MIGRATION_LOCK_KEY]).catch((err) => {
        broken = err instanceof Error ? err : new Error(String(err));
      });
    }
    client.removeListener("error", onError);
    // A connection that failed midway is closed, and the server drops its lock with it.
    client.release(broken);
  }
}

/** Wait for the migration lock, asking again every few tens of milliseconds, up to `waitMs`. */
async function takeLock(client: pg.PoolClient, waitMs: number, target: string): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const got = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1::bigint) AS locked", [
      MIGRATION_LOCK_KEY,
    ]);
    if (got.rows[0]?.locked === true) return true;
    if (Date.now() >= deadline) {
      throw new Refused({
        failure: "locked",
        detail: `another relay has held the schema migration lock of PostgreSQL at ${target} for more than ${waitMs} ms`,
      });
    }
    await pause(20 + Math.random() * 30);
  }
}

/** Refuse a database ahead of this relay, or one whose history names a step differently. */
function checkKnown(done: Map<number, string>, steps: readonly Migration[]): void {
  const known = Math.max(0, ...steps.map((step) => step.version));
  const newest = Math.max(0, ...done.keys());
  if (newest > known) {
    throw new Refused({
      failure: "incompatible",
      detail: `the state database is at schema version ${newest}, newer than this relay knows (${known}): upgrade relay-shell before starting it against this database`,
    });
  }
  for (const step of steps) {
    const name = done.get(step.version);
    if (name !== undefined && name !== step.name) {
      throw new Refused({
        failure: "incompatible",
        detail: `the state database records schema version ${step.version} as "${name}", this relay knows it as "${step.name}"`,
      });
    }
  }
}

/** One step and its record in one transaction: a step is either wholly there or not at all. */
async function applyStep(client: pg.PoolClient, step: Migration, instance: string, timeoutMs: number) {
  await client.query("BEGIN");
  try {
    await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
    await client.query(step.sql);
    await client.query(
      "INSERT INTO relay_schema_migrations (version, name, applied_by) VALUES ($1, $2, $3)",
      [step.version, step.name, instance],
    );
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  }
}

function failure(state: PgState, err: unknown): StateResult<never> {
  if (err instanceof Refused) return fail(err.error);
  const known = state.classify(err);
  if (known !== null) return fail(known);
  return fail({ failure: "failed", detail: `migrating the state database failed: ${String(err)}` });
}
