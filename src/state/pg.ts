import type pg from "pg";
import { fail, type Logger, ok, silentLogger } from "../core/index.js";
import { pgDriver } from "./driver.js";
import { classifyPgError, connectionProblem, type StateError, type StateResult } from "./errors.js";

/**
 * The PostgreSQL connection of the relay's shared state ("Several relays, one state"): one bounded
 * pool per process, every connection with its own timeouts, and one way to run a transaction.
 * Nothing here throws at the caller but `transaction`, whose rejection the caller turns into a
 * value with `classify`.
 */

export interface PgStateOptions {
  /** Names this relay to the server (`application_name`) and in the migrations it applies. */
  instance: string;
  /** Connections the pool may hold at once (10). */
  poolMax?: number;
  /** A statement, a wait for a lock, and a transaction left idle are each cut after this (5000 ms). */
  statementTimeoutMs?: number;
  /** How long a connection (or a free slot in the pool) may take to come (5000 ms). */
  connectTimeoutMs?: number;
  /** Where an idle connection's failure is reported; it never ends the process. */
  logger?: Logger;
}

type Isolation = "read committed" | "repeatable read" | "serializable";

interface TransactionOptions {
  isolation?: Isolation;
  /** Further attempts after a serialization failure or a deadlock (5). */
  retries?: number;
}

export interface PgState {
  readonly pool: pg.Pool;
  /** `host:port` of the server, never the credentials: how every message names it. */
  readonly target: string;
  readonly instance: string;
  /**
   * Run `work` between BEGIN and COMMIT on one pooled connection. Any error rolls back; a
   * serialization failure (40001) or a deadlock (40P01) runs `work` again, a few times, after a
   * short random pause, so `work` must only touch the database. Rejects with the last error.
   */
  transaction<T>(work: (client: pg.PoolClient) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** What an error of the database or its connection means; null for an error of the caller's own. */
  classify(err: unknown): StateError | null;
  /** End the pool; idempotent, never rejects. */
  close(): Promise<void>;
}

const DEFAULTS = { poolMax: 10, statementTimeoutMs: 5000, connectTimeoutMs: 5000, retries: 5 } as const;
/** The SQLSTATEs after which the same transaction, run again, can succeed. */
const RETRYABLE = new Set(["40001", "40P01"]);
const INT8_OID = 20;

/** Check a `postgres://` URL and say what is wrong with it, never echoing the password. */
function parsePgUrl(url: string): StateResult<{ target: string; password: string }> {
  const bad = (detail: string): StateResult<never> => fail({ failure: "unavailable", detail });
  let parsed: URL;
  let password: string;
  try {
    parsed = new URL(url);
    password = decodeURIComponent(parsed.password);
  } catch {
    return bad("the state database URL is not a URL: write postgres://USER:PASSWORD@HOST:PORT/DATABASE");
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    return bad(
      `the state database URL must start with postgres:// or postgresql://, not ${parsed.protocol}//`,
    );
  }
  const host = parsed.searchParams.get("host") ?? decodeURIComponent(parsed.hostname);
  if (host === "") return bad("the state database URL names no host");
  const port = parsed.port === "" ? Number(parsed.searchParams.get("port") ?? 5432) : Number(parsed.port);
  if (!Number.isInteger(port) || port < 1 || port > 65_535)
    return bad("the state database URL has no valid port");
  return ok({ target: `${host}:${port}`, password });
}

/** The first option that is not a positive whole number, named; null when all are. */
function badOption(options: PgStateOptions): string | null {
  const { poolMax, statementTimeoutMs, connectTimeoutMs } = options;
  for (const [name, given] of Object.entries({ poolMax, statementTimeoutMs, connectTimeoutMs })) {
    if (given !== undefined && (!Number.isSafeInteger(given) || given < 1)) {
      return `the state database option ${name} must be a whole number of at least 1, got ${given}`;
    }
  }
  return null;
}

/** int8 (counts, epoch milliseconds) as a number when it is exactly one, else the text: a reader refuses it. */
function int8Types(): pg.CustomTypesConfig {
  const types = new (pgDriver().TypeOverrides)();
  types.setTypeParser(INT8_OID, (text: string) => {
    const value = Number(text);
    return Number.isSafeInteger(value) ? value : text;
  });
  return types;
}

/** `application_name`: printable ASCII, within the server's 63 bytes. */
function applicationName(instance: string): string {
  return `relay-shell:${instance}`.replace(/[^\x20-\x7e]/g, "?").slice(0, 63);
}

/**
 * A pool for `url` (postgres:// or postgresql://); no connection is made until the first query,
 * so an unreachable server shows at the first use, as `unavailable`.
 */
export function openPgState(url: string, options: PgStateOptions): StateResult<PgState> {
  const checked = parsePgUrl(url);
  if (!checked.ok) return checked;
  const problem = badOption(options);
  if (problem !== null) return fail({ failure: "unavailable", detail: problem });
  const { target, password } = checked.value;
  const statementMs = options.statementTimeoutMs ?? DEFAULTS.statementTimeoutMs;
  const connectMs = options.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs;
  const logger = options.logger ?? silentLogger;
  const pool = new (pgDriver().Pool)({
    connectionString: url,
    max: options.poolMax ?? DEFAULTS.poolMax,
    connectionTimeoutMillis: connectMs,
    idleTimeoutMillis: 30_000,
    application_name: applicationName(options.instance),
    statement_timeout: statementMs,
    lock_timeout: statementMs,
    // A transaction left open (its process stalled) holds its row locks only this long.
    idle_in_transaction_session_timeout: statementMs * 2,
    // A server that stops answering (a partition, not a refusal) is given up on here.
    query_timeout: statementMs + connectMs,
    keepAlive: true,
    types: int8Types(),
  });
  const classify = (err: unknown): StateError | null => classifyPgError(err, { target, password });
  // An idle connection the server closed (a restart, a failover) must not end the process.
  pool.on("error", (err) => {
    logger.warn({ detail: classify(err)?.detail ?? String(err) }, "an idle PostgreSQL connection failed");
  });
  let closed: Promise<void> | null = null;
  return ok({
    pool,
    target,
    instance: options.instance,
    transaction: (work, txOptions = {}) => runTransaction(pool, work, txOptions),
    classify,
    close: () => {
      closed ??= pool.end().catch(() => undefined);
      return closed;
    },
  });
}

/** A pause of a few milliseconds, longer each attempt and random, so two retries do not meet again. */
function backoff(attempt: number): Promise<void> {
  const ceiling = Math.min(100, 5 * 2 ** attempt);
  return new Promise((resolve) => setTimeout(resolve, ceiling / 2 + Math.random() * (ceiling / 2)));
}

function sqlState(err: unknown): string {
  return typeof err === "object" && err !== null && "code" in err && typeof err.code === "string"
    ? err.code
    : "";
}

async function runTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  options: TransactionOptions,
): Promise<T> {
  const retries = options.retries ?? DEFAULTS.retries;
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await once(pool, work, options.isolation ?? "read committed");
    } catch (err) {
      if (!RETRYABLE.has(sqlState(err)) || attempt >= retries) throw err;
    }
    await backoff(attempt);
  }
}

/** One attempt on one connection; a connection in doubt after an error is closed, not reused. */
async function once<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  isolation: Isolation,
): Promise<T> {
  const client = await pool.connect();
  // While checked out, the pool does not listen: a connection lost now would be an unhandled event.
  const onError = (): void => undefined;
  client.on("error", onError);
  let broken: Error | undefined;
  try {
    await client.query(isolation === "read committed" ? "BEGIN" : `BEGIN ISOLATION LEVEL ${isolation}`);
    const value = await work(client);
    await client.query("COMMIT");
    return value;
  } catch (err) {
    broken = await rollback(client, err);
    throw err;
  } finally {
    client.removeListener("error", onError);
    client.release(broken);
  }
}

/** Roll back after `err`; the error to release the connection with when it cannot be trusted again. */
async function rollback(client: pg.PoolClient, err: unknown): Promise<Error | undefined> {
  // The connection itself failed or stopped answering: the server rolls back when it closes.
  if (connectionProblem(err) !== null) return err instanceof Error ? err : new Error(String(err));
  try {
    await client.query("ROLLBACK");
    return undefined;
  } catch (failed) {
    return failed instanceof Error ? failed : new Error(String(failed));
  }
}
