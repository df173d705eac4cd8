import type pg from "pg";
import { type Clock, canonicalJson, type Ids } from "../core/index.js";
import { migrate, type PgState } from "../state/index.js";
import { consentPayload } from "./payload.js";
import { leaseMethods } from "./pg-leases.js";
import {
  type Db,
  epoch,
  instanceIdOf,
  openFailure,
  pgFailure,
  requestRow,
  requestRows,
  returned,
  type WriteMode,
} from "./pg-rows.js";
import { refuse } from "./store-errors.js";
import { rowToRequest } from "./store-rows.js";
import {
  approvalProblem,
  newRequestProblem,
  pendingBoundProblem,
  type RequestEvent,
  storedApproval,
  transition,
} from "./transitions.js";
import type { ConsentRequest, ConsentStore, NewRequest, StoredApproval, StoreResult } from "./types.js";

export interface PgStoreOptions {
  clock: Clock;
  ids: Ids;
}

/** Request and lease ids: 10 lowercase hex digits, as in the SQLite store. */
const ID_BYTES = 5;
/** Nonces: 32 hex digits. */
const NONCE_BYTES = 16;
const ID_PATTERN = /^[0-9a-f]{10}$/;
/** The longest nonce another store may hand over (consumeNonce). */
const MAX_FOREIGN_NONCE = 256;
/** The longest approval window a request can ask for: a day. */
const MAX_TTL_SECONDS = 86_400;
/**
 * The transaction-level advisory lock that makes counting the pending requests and adding one a
 * single step across relays (otherwise two relays could both see 15 of 16 and both add one): the
 * ASCII bytes of "relay-cp" as a big-endian 64-bit integer (0x72656c61792d6370).
 */
const PENDING_LOCK_KEY = "8243113858872206192";

/**
 * The consent store on PostgreSQL, for several relays sharing one database
 * (docs/adr/0024-consent-store-and-approval-lifetime.md): the SQLite store's rules, refusals and
 * formats, each read-modify-write one transaction that locks the rows it decides from
 * (`SELECT … FOR UPDATE`). The schema is brought up to date first. The state (its pool) stays the
 * caller's: `close` ends this store's use of it, not the pool.
 */
export async function openPgStore(
  state: PgState,
  options: PgStoreOptions,
): Promise<StoreResult<ConsentStore>> {
  const migrated = await migrate(state);
  if (!migrated.ok) return openFailure(migrated.failure, migrated.detail);
  try {
    const instanceId = await instanceIdOf(state.pool, options.ids);
    return { ok: true, value: createStore(state, instanceId, options) };
  } catch (err) {
    return pgFailure(state, err);
  }
}

function createStore(state: PgState, instanceId: string, options: PgStoreOptions): ConsentStore {
  const { clock, ids } = options;
  const now = (): number => clock.now();
  let closed = false;
  // Epoch bumps this store committed itself: the change counter shows only the others' (see changeCounter).
  let ownBumps = 0;

  async function attempt<T>(work: () => Promise<T>): Promise<StoreResult<T>> {
    if (closed) return { ok: false, failure: "unavailable", detail: "the consent store is closed" };
    try {
      return { ok: true, value: await work() };
    } catch (err) {
      return pgFailure(state, err);
    }
  }
  const read = <T>(work: (db: Db) => Promise<T>): Promise<StoreResult<T>> => attempt(() => work(state.pool));
  /** One transaction (PgStoreContext.write says what the modes mean). */
  const write = <T>(work: (tx: Db) => Promise<T>, mode: WriteMode = {}): Promise<StoreResult<T>> =>
    attempt(async () => {
      const value = await state.transaction(async (tx: pg.PoolClient) => {
        if (mode.relaxed) await tx.query("SET LOCAL synchronous_commit = off");
        const result = await work(tx);
        if (mode.withdraws) await tx.query("UPDATE consent_epoch SET value = value + 1");
        return result;
      });
      if (mode.withdraws) ownBumps += 1;
      return value;
    });

  const requireRequest = async (db: Db, id: string, lock: boolean): Promise<ConsentRequest> => {
    if (typeof id !== "string" || !ID_PATTERN.test(id))
      refuse("not-found", `no consent request ${String(id)}`);
    return (await requestRow(db, id, lock)) ?? refuse("not-found", `no consent request ${id}`);
  };
  const freshId = async (tx: Db, table: "consent_requests" | "consent_leases"): Promise<string> => {
    for (let i = 0; i < 16; i += 1) {
      const id = ids.hex(ID_BYTES);
      if ((await tx.query(`SELECT 1 FROM ${table} WHERE id = $1`, [id])).rowCount === 0) return id;
    }
    return refuse("unavailable", "no free id after 16 draws: the id source is broken");
  };
  /** The move the rules allow (consent/transitions.ts), or the refusal that rolls the transaction back. */
  const allowed = (request: ConsentRequest, event: RequestEvent, at = now()): void => {
    const move = transition(request, event, at);
    if (!move.ok) refuse(move.failure, move.detail);
  };

  function createRequest(request: NewRequest): Promise<StoreResult<ConsentRequest>> {
    return write(async (tx) => {
      const problem = newRequestProblem(request, MAX_TTL_SECONDS);
      if (problem !== null) refuse("unavailable", problem);
      const createdAt = now();
      if (request.maxPending) {
        await tx.query("SELECT pg_advisory_xact_lock($1::bigint)", [PENDING_LOCK_KEY]);
        const counted = await tx.query<{ total: number; own: number }>(
          `SELECT COUNT(*) AS total, COUNT(*) FILTER (WHERE session = $1) AS own FROM consent_requests
             WHERE status = 'pending' AND expires_at > $2`,
          [request.session, createdAt],
        );
        const full = pendingBoundProblem(counted.rows[0] ?? { own: 0, total: 0 }, request.maxPending);
        if (full !== null) refuse("full", full);
      }
      const expiresAt = createdAt + Math.round(request.ttlSeconds * 1000);
      const id = await freshId(tx, "consent_requests");
      const nonce = ids.hex(NONCE_BYTES);
      const payload = consentPayload(request.act, { request: id, nonce, expiresAt, instance: instanceId });
      const act = canonicalJson({ tool: request.act.tool, tier: request.act.tier, bound: request.act.bound });
      const inserted = await tx.query(
        `INSERT INTO consent_requests (id, nonce, act_digest, act, basis, session, client_id, created_at,
           expires_at, status, payload) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', $10) RETURNING *`,
        [
          id,
          nonce,
          request.actDigest,
          act,
          request.basis,
          request.session,
          request.clientId,
          createdAt,
          expiresAt,
          payload,
        ],
      );
      return returned(inserted, rowToRequest);
    });
  }

  function approve(id: string, approval: StoredApproval): Promise<StoreResult<ConsentRequest>> {
    return write(async (tx) => {
      allowed(await requireRequest(tx, id, true), "approve");
      const problem = approvalProblem(approval);
      if (problem !== null) refuse("unavailable", problem);
      const stored = storedApproval(approval);
      const updated = await tx.query(
        "UPDATE consent_requests SET status = 'approved', approval = $1 WHERE id = $2 RETURNING *",
        [JSON.stringify(stored), id],
      );
      return returned(updated, rowToRequest);
    });
  }

  function deny(id: string, by: string, reason: string): Promise<StoreResult<ConsentRequest>> {
    return write(
      async (tx) => {
        allowed(await requireRequest(tx, id, true), "deny");
        const updated = await tx.query(
          "UPDATE consent_requests SET status = 'denied', denial = $1 WHERE id = $2 RETURNING *",
          [JSON.stringify({ by: String(by), reason: String(reason), at: now() }), id],
        );
        return returned(updated, rowToRequest);
      },
      { withdraws: true },
    );
  }

  /**
   * Exactly once across every relay: the request's row is locked, so a second consumer waits and
   * then reads it consumed; the nonce's primary key refuses a second spend whatever a status says.
   */
  function consume(id: string, nonce: string): Promise<StoreResult<ConsentRequest>> {
    return write(async (tx) => {
      const request = await requireRequest(tx, id, true);
      if (request.nonce !== nonce) refuse("not-found", `request ${id} has another nonce`);
      const at = now();
      allowed(request, "consume", at);
      const recorded = await tx.query(
        "INSERT INTO consent_nonces (nonce, expires_at) VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING",
        [nonce, request.expiresAt],
      );
      if (recorded.rowCount === 0) refuse("consumed", `the nonce of request ${id} was already used`);
      const updated = await tx.query(
        "UPDATE consent_requests SET status = 'consumed', consumed_at = $1 WHERE id = $2 RETURNING *",
        [at, id],
      );
      return returned(updated, rowToRequest);
    });
  }

  function consumeNonce(nonce: string, expiresAt: number): Promise<StoreResult<boolean>> {
    return read(async (db) => {
      if (typeof nonce !== "string" || nonce.length === 0 || nonce.length > MAX_FOREIGN_NONCE) {
        refuse("unavailable", `a nonce must be 1..${MAX_FOREIGN_NONCE} characters`);
      }
      if (!Number.isSafeInteger(expiresAt))
        refuse("unavailable", "a nonce's expiry must be epoch milliseconds");
      const taken = await db.query(
        "INSERT INTO consent_nonces (nonce, expires_at) VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING",
        [nonce, expiresAt],
      );
      return taken.rowCount === 1;
    });
  }

  return {
    instanceId,
    createRequest,
    getRequest: (id) => read((db) => requireRequest(db, id, false)),
    listRequests: () =>
      read((db) =>
        requestRows(
          db,
          `SELECT * FROM consent_requests WHERE status IN ('pending', 'approved') AND expires_at > $1
             ORDER BY created_at, seq`,
          [now()],
        ),
      ),
    findApproved: (actDigest) =>
      read(async (db) => {
        const rows = await requestRows(
          db,
          `SELECT * FROM consent_requests WHERE act_digest = $1 AND status = 'approved' AND expires_at > $2
             ORDER BY created_at DESC, seq DESC LIMIT 1`,
          [actDigest, now()],
        );
        return rows[0] ?? null;
      }),
    findOpen: (actDigest, session) =>
      read(async (db) => {
        const rows = await requestRows(
          db,
          `SELECT * FROM consent_requests WHERE act_digest = $1 AND session = $2 AND status IN ('pending', 'denied')
             AND expires_at > $3 ORDER BY created_at DESC, seq DESC LIMIT 1`,
          [actDigest, session, now()],
        );
        return rows[0] ?? null;
      }),
    approve,
    deny,
    consume,
    consumeNonce,
    /**
     * The epoch less this store's own bumps: it moves only when another store (another relay, the
     * operator's command) committed a withdrawal since, as SQLite's data_version moves only for
     * another connection's commit. A bump of ours not yet counted shows as a change, which only
     * makes the caller look again.
     */
    changeCounter: () => read(async (db) => (await epoch(db)) - ownBumps),
    ...leaseMethods({ now, read, write, freshId }),
    close: async () => {
      closed = true;
    },
  };
}
