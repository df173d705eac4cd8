import type { Clock } from "../core/index.js";
import type { PgState } from "../state/index.js";
import {
  absoluteLifetimeSeconds,
  type ConsoleLogin,
  keyOf,
  type LoginStore,
  LoginStoreError,
  MAX_LOGINS,
  newToken,
} from "./logins.js";

/**
 * The transaction-level advisory lock that makes sweeping, adding a login and trimming to the
 * bound one step across relays: the ASCII bytes of "relay-cl" as a big-endian 64-bit integer.
 */
const CREATE_LOCK_KEY = "8243113858872206188";

interface LoginRow {
  passkey: string;
  credential_id: string;
  csrf: string;
  created_at: number;
  last_seen_at: number;
}

const RETURNED = "passkey, credential_id, csrf, created_at, last_seen_at";

/** Still live: seen after the idle floor (parameter `idle`) and made after the absolute one. */
const live = (idle: number, absolute: number): string =>
  `last_seen_at > $${idle}::bigint AND created_at > $${absolute}::bigint`;

function loginOf(row: LoginRow): ConsoleLogin {
  return {
    passkey: row.passkey,
    credentialId: row.credential_id,
    csrf: row.csrf,
    createdMs: Number(row.created_at),
    lastSeenMs: Number(row.last_seen_at),
  };
}

/**
 * The console's logins on PostgreSQL (table `console_logins` of src/state/shared-schema.ts, which
 * the caller migrates first), so a login made through one relay is valid on every relay behind the
 * load balancer. A row is keyed by the SHA-256 of the login's cookie, never the cookie; its CSRF
 * token is kept as is, since every relay must show it and compare it. The idle and absolute limits
 * are checked in SQL against epoch milliseconds from `clock` (the relays keep their clocks in step);
 * a login seen by two relays keeps the later time. Ending a login deletes its row.
 */
export function createPgLoginStore(state: PgState, idleSeconds: number, clock: Clock): LoginStore {
  const idleMs = idleSeconds * 1000;
  const absoluteMs = absoluteLifetimeSeconds(idleSeconds) * 1000;
  /** The two floors at `now`: a login last seen at or before the first, or made at or before the second, is over. */
  const floors = (now: number): [number, number] => [now - idleMs, now - absoluteMs];

  async function guarded<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      const detail = state.classify(err)?.detail ?? (err instanceof Error ? err.message : String(err));
      throw new LoginStoreError(`the console's login store cannot be used: ${detail}`, { cause: err });
    }
  }

  async function create(passkey: string, credentialId: string) {
    const id = newToken();
    const login: ConsoleLogin = { passkey, credentialId, csrf: newToken(), createdMs: 0, lastSeenMs: 0 };
    await guarded(() =>
      state.transaction(async (tx) => {
        await tx.query("SELECT pg_advisory_xact_lock($1::bigint)", [CREATE_LOCK_KEY]);
        const now = clock.now();
        login.createdMs = now;
        login.lastSeenMs = now;
        await tx.query(`DELETE FROM console_logins WHERE NOT (${live(1, 2)})`, floors(now));
        await tx.query(
          `INSERT INTO console_logins (key, passkey, credential_id, csrf, created_at, last_seen_at)
             VALUES ($1, $2, $3, $4, $5, $5)`,
          [keyOf(id), passkey, credentialId, login.csrf, now],
        );
        // The oldest go first past the bound, as in memory.
        await tx.query(
          "DELETE FROM console_logins WHERE key IN (SELECT key FROM console_logins ORDER BY seq DESC OFFSET $1)",
          [MAX_LOGINS],
        );
      }),
    );
    return { id, login };
  }

  async function use(id: string): Promise<ConsoleLogin | null> {
    const now = clock.now();
    const used = await guarded(() =>
      state.pool.query<LoginRow>(
        `UPDATE console_logins SET last_seen_at = GREATEST(last_seen_at, $2::bigint)
           WHERE key = $1 AND ${live(3, 4)} RETURNING ${RETURNED}`,
        [keyOf(id), now, ...floors(now)],
      ),
    );
    const row = used.rows[0];
    if (row) return loginOf(row);
    // Unknown, or expired: an expired row goes now rather than at the next login.
    await guarded(() =>
      state.pool.query(`DELETE FROM console_logins WHERE key = $1 AND NOT (${live(2, 3)})`, [
        keyOf(id),
        ...floors(now),
      ]),
    );
    return null;
  }

  return {
    create,
    use,
    async end(id) {
      await guarded(() => state.pool.query("DELETE FROM console_logins WHERE key = $1", [keyOf(id)]));
    },
    async count() {
      const counted = await guarded(() =>
        state.pool.query<{ n: number }>(
          `SELECT count(*) AS n FROM console_logins WHERE ${live(1, 2)}`,
          floors(clock.now()),
        ),
      );
      return Number(counted.rows[0]?.n ?? 0);
    },
  };
}
