import { type Db, LEASE_COLUMNS, leaseRow, type PgStoreContext, returned, sessionRow } from "./pg-rows.js";
import { refuse } from "./store-errors.js";
import { rowToLease, rowToSession } from "./store-rows.js";
import { leaseProblem, sessionIsLive } from "./transitions.js";
import type { ConsentLease, ConsentSession, ConsentStore, StoreResult, TakenReads } from "./types.js";

type LeaseMethods = Pick<
  ConsentStore,
  | "openLease"
  | "takeLeaseRead"
  | "getLease"
  | "listLeases"
  | "revoke"
  | "revokeAll"
  | "touchSession"
  | "endSession"
  | "listSessions"
  | "prune"
>;

/**
 * The consent sessions and read leases of the PostgreSQL store (src/consent/pg-store.ts), with the
 * SQLite store's rules. A session's row is the lock of everything done to it: opening a lease,
 * taking reads, revoking it and ending it each lock that row first, so they follow one another.
 */
export function leaseMethods(ctx: PgStoreContext): LeaseMethods {
  return {
    openLease: (lease) => openLease(ctx, lease),
    takeLeaseRead: (session, idleMs, count) => takeLeaseRead(ctx, session, idleMs, count),
    getLease: (id) => ctx.read((db) => leaseRow(db, id)),
    listLeases: () =>
      ctx.read(async (db) =>
        (await db.query(`SELECT ${LEASE_COLUMNS} FROM consent_leases ORDER BY created_at, seq`)).rows.map(
          rowToLease,
        ),
      ),
    revoke: (idOrSession) => revoke(ctx, idOrSession),
    revokeAll: () =>
      ctx.write(
        async (tx) =>
          (await tx.query("UPDATE consent_leases SET revoked = true WHERE NOT revoked")).rowCount ?? 0,
        { withdraws: true },
      ),
    touchSession: (id, clientId) => touchSession(ctx, id, clientId),
    endSession: (id) => endSession(ctx, id),
    listSessions: () =>
      ctx.read(async (db) =>
        (await db.query("SELECT * FROM consent_sessions ORDER BY started_at, seq")).rows.map(rowToSession),
      ),
    prune: (graceMs) => prune(ctx, graceMs),
  };
}

async function revokeLeasesOf(tx: Db, session: string): Promise<number> {
  return (
    (await tx.query("UPDATE consent_leases SET revoked = true WHERE session = $1 AND NOT revoked", [session]))
      .rowCount ?? 0
  );
}

function openLease(
  ctx: PgStoreContext,
  lease: Omit<ConsentLease, "id" | "revoked">,
): Promise<StoreResult<ConsentLease>> {
  return ctx.write(
    async (tx) => {
      const problem = leaseProblem(lease);
      if (problem !== null) refuse("unavailable", problem);
      // Locked: an endSession or a revocation of the session commits before this reads it, or after it.
      const session = await sessionRow(tx, lease.session, true);
      if (session === null) refuse("not-found", `no consent session ${lease.session}`);
      if (session.endedAt !== undefined) refuse("expired", `consent session ${lease.session} has ended`);
      const id = await ctx.freshId(tx, "consent_leases");
      const inserted = await tx.query(
        `INSERT INTO consent_leases (id, session, opened_by, mode, created_at, expires_at, remaining, revoked)
           VALUES ($1, $2, $3, $4, $5, $6, $7, false) RETURNING ${LEASE_COLUMNS}`,
        [id, lease.session, lease.openedBy, lease.mode, lease.createdAt, lease.expiresAt, lease.remaining],
      );
      return returned(inserted, rowToLease);
    },
    { withdraws: true },
  );
}

/**
 * The session's row is locked first, then its newest usable lease: reads of one session are
 * taken one transaction after another, so together they never exceed the budget. It does not
 * bump the epoch: a read taken withdraws nothing, and another relay's reads are of its own leases.
 */
function takeLeaseRead(
  ctx: PgStoreContext,
  session: string,
  idleMs: number,
  count = 1,
): Promise<StoreResult<TakenReads | null>> {
  return ctx.write(
    async (tx) => {
      if (!Number.isSafeInteger(count) || count < 1) refuse("not-found", `cannot take ${count} reads`);
      const at = ctx.now();
      const owner = await sessionRow(tx, session, true);
      if (!sessionIsLive(owner, at, idleMs)) return null;
      const row = (
        await tx.query(
          `SELECT ${LEASE_COLUMNS} FROM consent_leases
             WHERE session = $1 AND NOT revoked AND remaining > 0 AND expires_at > $2
             ORDER BY created_at DESC, seq DESC LIMIT 1 FOR UPDATE`,
          [session, at],
        )
      ).rows[0];
      if (row === undefined) return null;
      const lease = rowToLease(row);
      const taken = Math.min(count, lease.remaining);
      await tx.query("UPDATE consent_leases SET remaining = remaining - $1 WHERE id = $2", [taken, lease.id]);
      // A read granted is activity of the session: it keeps the session from going idle.
      await tx.query("UPDATE consent_sessions SET last_seen_at = $1 WHERE id = $2 AND last_seen_at < $1", [
        at,
        session,
      ]);
      return { ...lease, remaining: lease.remaining - taken, taken };
    },
    { relaxed: true },
  );
}

function revoke(ctx: PgStoreContext, idOrSession: string): Promise<StoreResult<number>> {
  return ctx.write(
    async (tx) => {
      const lease = await tx.query("SELECT id FROM consent_leases WHERE id = $1", [idOrSession]);
      if ((lease.rowCount ?? 0) > 0) {
        const done = await tx.query(
          "UPDATE consent_leases SET revoked = true WHERE id = $1 AND NOT revoked",
          [idOrSession],
        );
        return done.rowCount ?? 0;
      }
      if ((await sessionRow(tx, idOrSession, true)) === null) {
        refuse("not-found", `no lease or consent session ${idOrSession}`);
      }
      // Revoking a session ends it: no lease can be opened on it again.
      await tx.query("UPDATE consent_sessions SET ended_at = $1 WHERE id = $2 AND ended_at IS NULL", [
        ctx.now(),
        idOrSession,
      ]);
      return revokeLeasesOf(tx, idOrSession);
    },
    { withdraws: true },
  );
}

function touchSession(
  ctx: PgStoreContext,
  id: string,
  clientId: string,
): Promise<StoreResult<ConsentSession>> {
  return ctx.write(
    async (tx) => {
      if (typeof id !== "string" || id.length === 0) refuse("not-found", "a consent session needs an id");
      const at = ctx.now();
      // Two relays creating one session at once: one inserts, the other finds it and goes on.
      const inserted = await tx.query(
        `INSERT INTO consent_sessions (id, client_id, started_at, last_seen_at) VALUES ($1, $2, $3, $3)
           ON CONFLICT (id) DO NOTHING RETURNING *`,
        [id, clientId, at],
      );
      if ((inserted.rowCount ?? 0) > 0) return returned(inserted, rowToSession);
      const existing =
        (await sessionRow(tx, id, true)) ?? refuse("unavailable", `consent session ${id} vanished`);
      // A consent session is never shared: the same id from another client is not this session.
      if (existing.clientId !== clientId)
        refuse("not-found", `consent session ${id} belongs to another client`);
      // An ended session stays ended; only a live one is refreshed.
      if (existing.endedAt !== undefined) return existing;
      const updated = await tx.query(
        "UPDATE consent_sessions SET last_seen_at = GREATEST(last_seen_at, $1) WHERE id = $2 RETURNING *",
        [at, id],
      );
      return returned(updated, rowToSession);
    },
    { relaxed: true },
  );
}

function endSession(ctx: PgStoreContext, id: string): Promise<StoreResult<void>> {
  return ctx.write(
    async (tx) => {
      if ((await sessionRow(tx, id, true)) === null) refuse("not-found", `no consent session ${id}`);
      await tx.query("UPDATE consent_sessions SET ended_at = $1 WHERE id = $2 AND ended_at IS NULL", [
        ctx.now(),
        id,
      ]);
      await revokeLeasesOf(tx, id);
    },
    { withdraws: true },
  );
}

function prune(ctx: PgStoreContext, graceMs: number): Promise<StoreResult<number>> {
  return ctx.write(
    async (tx) => {
      const before = ctx.now() - Math.max(0, graceMs);
      const statements = [
        "DELETE FROM consent_requests WHERE expires_at < $1",
        "DELETE FROM consent_nonces WHERE expires_at < $1",
        "DELETE FROM consent_leases WHERE expires_at < $1",
        `DELETE FROM consent_sessions s WHERE (s.ended_at IS NOT NULL AND s.ended_at < $1)
           OR (s.last_seen_at < $1 AND NOT EXISTS (SELECT 1 FROM consent_leases l WHERE l.session = s.id))`,
      ];
      let removed = 0;
      for (const sql of statements) removed += (await tx.query(sql, [before])).rowCount ?? 0;
      return removed;
    },
    { relaxed: true },
  );
}
