import type pg from "pg";
import type { z } from "zod";
import type { PgState } from "../state/index.js";
import {
  type ClientRecord,
  ClientRecordSchema,
  type CodeRecord,
  CodeRecordSchema,
  DEFAULT_OAUTH_BOUNDS,
  lockdownDecision,
  type OAuthBounds,
  OAuthStateError,
  type OAuthStore,
  type Registered,
  type StoredToken,
  type TokenRecord,
  TokenRecordSchema,
} from "./oauth-state.js";

/**
 * The PostgreSQL backend of the OAuth state (oauth-state.ts), for several relays on one database
 * (tables of src/state/oauth-schema.ts, applied by the shared migrations). What decides who gets
 * what is one statement or one transaction: a code is taken with `DELETE … RETURNING`, a refresh
 * token is spent by the DELETE that precedes its successors in the same transaction, and the
 * lockdown check holds a transaction-level advisory lock. A failure of the database rejects with
 * an OAuthStateError and changes nothing; the pool reconnects by itself once it is back. The state
 * (its pool) stays the caller's.
 */

type Db = Pick<pg.Pool, "query">;

/**
 * The advisory lock that makes counting the clients and adding one a single step across relays
 * (otherwise two relays under lockdown could each admit a first client): the ASCII bytes of
 * "relay-oc" as a big-endian 64-bit integer (0x72656c61792d6f63).
 */
const CLIENTS_LOCK_KEY = "8243113858872209251";

const CLIENT_COLUMNS = [
  "client_id",
  "client_id_issued_at",
  "client_secret_sha256",
  "client_secret_expires_at",
  "redirect_uris",
  "token_endpoint_auth_method",
  "grant_types",
  "response_types",
  "client_name",
  "client_uri",
  "scope",
  "software_id",
  "software_version",
] as const;
const CODE_COLUMNS = [
  "client_id",
  "scopes",
  "expires_at",
  "code_challenge",
  "redirect_uri",
  "redirect_uri_explicit",
  "resource",
] as const;
const TOKEN_COLUMNS = ["kind", "client_id", "scopes", "expires_at", "resource"] as const;

const placeholders = (count: number, from = 1): string =>
  Array.from({ length: count }, (_, i) => `$${from + i}`).join(", ");

const UPSERT_CLIENT = `INSERT INTO oauth_clients (${CLIENT_COLUMNS.join(", ")})
  VALUES (${placeholders(CLIENT_COLUMNS.length)})
  ON CONFLICT (client_id) DO UPDATE SET ${CLIENT_COLUMNS.slice(1)
    .map((c) => `${c} = EXCLUDED.${c}`)
    .join(", ")}`;
const INSERT_CODE = `INSERT INTO oauth_codes (code_sha256, ${CODE_COLUMNS.join(", ")})
  VALUES (${placeholders(CODE_COLUMNS.length + 1)})`;

/** A row as the record it holds: NULL columns are absent fields; a row that does not parse is refused. */
function recordOf<T>(schema: z.ZodType<T>, row: Record<string, unknown>, columns: readonly string[]): T {
  const fields: Record<string, unknown> = {};
  for (const column of columns)
    if (row[column] !== null && row[column] !== undefined) fields[column] = row[column];
  const parsed = schema.safeParse(fields);
  if (!parsed.success) throw new OAuthStateError("the OAuth state database holds a malformed row", false);
  return parsed.data;
}

/** The values of `columns` in `record`, absent fields as NULL. */
function valuesOf(record: object, columns: readonly string[]): unknown[] {
  const fields = record as Record<string, unknown>;
  return columns.map((column) => fields[column] ?? null);
}

function insertTokens(db: Db, tokens: StoredToken[]): Promise<unknown> {
  const width = TOKEN_COLUMNS.length + 1;
  const rows = tokens.map((_, i) => `(${placeholders(width, i * width + 1)})`).join(", ");
  const values = tokens.flatMap(({ digest, record }) => [digest, ...valuesOf(record, TOKEN_COLUMNS)]);
  return db.query(
    `INSERT INTO oauth_tokens (token_sha256, ${TOKEN_COLUMNS.join(", ")}) VALUES ${rows}`,
    values,
  );
}

/** Keep the newest `keep` rows of a table; the oldest go first. */
function trim(db: Db, table: "oauth_codes" | "oauth_tokens", keep: number): Promise<unknown> {
  return db.query(
    `DELETE FROM ${table} WHERE seq <= (SELECT seq FROM ${table} ORDER BY seq DESC OFFSET $1 LIMIT 1)`,
    [keep],
  );
}

/**
 * The OAuth state on `state`'s database; no connection is made until the first operation. The
 * schema must be there already (migration 2, run by whoever opens the state).
 */
export function openPgOAuthStore(state: PgState, bounds: OAuthBounds = DEFAULT_OAUTH_BOUNDS): OAuthStore {
  const db: Db = state.pool;

  /** Run one operation; any failure of the database becomes an OAuthStateError naming what was attempted. */
  async function attempt<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof OAuthStateError) throw err;
      const known = state.classify(err);
      const detail = known?.detail ?? (err instanceof Error ? err.message : String(err));
      const transient = known?.failure === "unavailable" || known?.failure === "locked";
      throw new OAuthStateError(`${what} failed: ${detail}`, transient);
    }
  }
  /**
   * The bound is housekeeping, not a decision: it runs after the write it follows has committed,
   * and its failure (a deadlock between two relays trimming at once) is left to the next write.
   */
  const bound = (table: "oauth_codes" | "oauth_tokens", keep: number): Promise<void> =>
    trim(db, table, keep).then(
      () => undefined,
      () => undefined,
    );
  const clientRow = async (tx: Db, clientId: string): Promise<ClientRecord | undefined> => {
    const found = await tx.query(
      `SELECT ${CLIENT_COLUMNS.join(", ")} FROM oauth_clients WHERE client_id = $1`,
      [clientId],
    );
    const row = found.rows[0];
    return row ? recordOf(ClientRecordSchema, row, CLIENT_COLUMNS) : undefined;
  };

  return {
    where: `PostgreSQL at ${state.target}`,

    clientCount: () =>
      attempt("counting the OAuth clients", async () => {
        const found = await db.query<{ n: number }>("SELECT count(*)::integer AS n FROM oauth_clients");
        return found.rows[0]?.n ?? 0;
      }),

    getClient: (clientId) => attempt("reading an OAuth client", () => clientRow(db, clientId)),

    registerClient: (record, lockdown) =>
      attempt("registering an OAuth client", () =>
        state.transaction(async (tx): Promise<Registered> => {
          await tx.query("SELECT pg_advisory_xact_lock($1::bigint)", [CLIENTS_LOCK_KEY]);
          const counted = await tx.query<{ n: number }>("SELECT count(*)::integer AS n FROM oauth_clients");
          const existing = await clientRow(tx, record.client_id);
          const decision = lockdownDecision(record, existing, counted.rows[0]?.n ?? 0, lockdown);
          if (decision !== "store") return decision;
          await tx.query(UPSERT_CLIENT, valuesOf(record, CLIENT_COLUMNS));
          return { outcome: "stored", record };
        }),
      ),

    saveCode: (digest, record: CodeRecord) =>
      attempt("saving an authorization code", async () => {
        await db.query(INSERT_CODE, [digest, ...valuesOf(record, CODE_COLUMNS)]);
        await bound("oauth_codes", bounds.codes);
      }),

    takeCode: (digest) =>
      attempt("taking an authorization code", async () => {
        const taken = await db.query(
          `DELETE FROM oauth_codes WHERE code_sha256 = $1 RETURNING ${CODE_COLUMNS.join(", ")}`,
          [digest],
        );
        const row = taken.rows[0];
        return row ? recordOf(CodeRecordSchema, row, CODE_COLUMNS) : undefined;
      }),

    saveTokens: (tokens) =>
      attempt("saving OAuth tokens", async () => {
        if (tokens.length === 0) return;
        await insertTokens(db, tokens);
        await bound("oauth_tokens", bounds.tokens);
      }),

    getToken: (kind, digest) =>
      attempt("reading an OAuth token", async (): Promise<TokenRecord | undefined> => {
        const found = await db.query(
          `SELECT ${TOKEN_COLUMNS.join(", ")} FROM oauth_tokens WHERE kind = $1 AND token_sha256 = $2`,
          [kind, digest],
        );
        const row = found.rows[0];
        return row ? recordOf(TokenRecordSchema, row, TOKEN_COLUMNS) : undefined;
      }),

    rotateRefresh: (digest, clientId, next) =>
      attempt("rotating a refresh token", async () => {
        const rotated = await state.transaction(async (tx) => {
          // Of concurrent DELETEs of one row, the first to commit removes it; the others find none.
          const spent = await tx.query(
            "DELETE FROM oauth_tokens WHERE kind = 'refresh' AND token_sha256 = $1 AND client_id = $2",
            [digest, clientId],
          );
          if (spent.rowCount !== 1) return false;
          if (next.length > 0) await insertTokens(tx, next);
          return true;
        });
        if (rotated) await bound("oauth_tokens", bounds.tokens);
        return rotated;
      }),

    revoke: (digest, clientId) =>
      attempt("revoking an OAuth token", async () => {
        const removed = await db.query(
          "DELETE FROM oauth_tokens WHERE kind IN ('access', 'refresh') AND token_sha256 = $1 AND client_id = $2",
          [digest, clientId],
        );
        return removed.rowCount ?? 0;
      }),

    deleteToken: (kind, digest) =>
      attempt("removing an expired OAuth token", async () => {
        await db.query("DELETE FROM oauth_tokens WHERE kind = $1 AND token_sha256 = $2", [kind, digest]);
      }),

    sweep: (now) =>
      attempt("sweeping expired OAuth codes and tokens", async () => {
        const swept = await db.query<{ codes: number; tokens: number }>(
          `WITH codes AS (DELETE FROM oauth_codes WHERE expires_at < $1 RETURNING 1),
                tokens AS (DELETE FROM oauth_tokens WHERE expires_at < $1 RETURNING 1)
           SELECT (SELECT count(*)::integer FROM codes) AS codes, (SELECT count(*)::integer FROM tokens) AS tokens`,
          [now],
        );
        return { codes: swept.rows[0]?.codes ?? 0, tokens: swept.rows[0]?.tokens ?? 0 };
      }),
  };
}
