import { freshId, type SqliteContext, sessionById } from "./sqlite-context.js";
import { attempt, refuse } from "./store-errors.js";
import { rowToLease, rowToSession } from "./store-rows.js";
import type { SyncStore } from "./sync-store.js";
import { leaseProblem, sessionIsLive } from "./transitions.js";
import type { ConsentLease, ConsentSession, StoreResult, TakenReads } from "./types.js";

type LeaseMethods = Pick<
  SyncStore,
  | "openLease"
  | "takeLeaseRead"
  | "listLeases"
  | "getLease"
  | "revoke"
  | "revokeAll"
  | "touchSession"
  | "endSession"
  | "listSessions"
  | "prune"
>;

/**
 * The consent sessions and read leases of the SQLite store (sqlite-store.ts): each method is one
 * step below, bound to the store's connection.
 */
export function leaseMethods(ctx: SqliteContext): LeaseMethods {
  return {
    openLease: (lease) => openLease(ctx, lease),
    takeLeaseRead: (session, idleMs, count) => takeLeaseRead(ctx, session, idleMs, count),
    listLeases: () =>
      attempt(() => ctx.stmt("SELECT * FROM leases ORDER BY created_at, rowid").all().map(rowToLease)),
    getLease: (id) => attempt(() => leaseById(ctx, id)),
    revoke: (idOrSession) => revoke(ctx, idOrSession),
    revokeAll: () =>
      ctx.write(() => ctx.stmt("UPDATE leases SET revoked = 1 WHERE revoked = 0").run().changes),
    touchSession: (id, clientId) => touchSession(ctx, id, clientId),
    endSession: (id) => endSession(ctx, id),
    listSessions: () =>
      attempt(() => ctx.stmt("SELECT * FROM sessions ORDER BY started_at, rowid").all().map(rowToSession)),
    prune: (graceMs) => prune(ctx, graceMs),
  };
}

function leaseById(ctx: SqliteContext, id: string): ConsentLease | null {
  const row = ctx.stmt("SELECT * FROM leases WHERE id = ?").get(id);
  return row === undefined ? null : rowToLease(row);
}

function openLease(
  ctx: SqliteContext,
  lease: Omit<ConsentLease, "id" | "revoked">,
): StoreResult<ConsentLease> {
  return ctx.write(() => {
    const problem = leaseProblem(lease);
    if (problem !== null) refuse("unavailable", problem);
    const session = sessionById(ctx, lease.session);
    if (session === null) refuse("not-found", `no consent session ${lease.session}`);
    if (session.endedAt !== undefined) refuse("expired", `consent session ${lease.session} has ended`);
    const id = freshId(ctx, "leases");
    ctx
      .stmt(
        `INSERT INTO leases (id, session, opened_by, mode, created_at, expires_at, remaining, revoked)
         VALUES (?, ?, ?, ?, ?, ?, ?, 0)`,
      )
      .run(id, lease.session, lease.openedBy, lease.mode, lease.createdAt, lease.expiresAt, lease.remaining);
    return rowToLease(ctx.stmt("SELECT * FROM leases WHERE id = ?").get(id));
  });
}

function takeLeaseRead(
  ctx: SqliteContext,
  session: string,
  idleMs: number,
  count = 1,
): StoreResult<TakenReads | null> {
  return ctx.write(() => {
    if (!Number.isSafeInteger(count) || count < 1) refuse("not-found", `cannot take ${count} reads`);
    const at = ctx.now();
    if (!sessionIsLive(sessionById(ctx, session), at, idleMs)) return null;
    const lease = newestUsableLease(ctx, session, at);
    if (lease === null) return null;
    const taken = Math.min(count, lease.remaining);
    ctx.stmt("UPDATE leases SET remaining = remaining - ? WHERE id = ?").run(taken, lease.id);
    // A read granted is activity of the session: it keeps the session from going idle.
    ctx.stmt("UPDATE sessions SET last_seen_at = ? WHERE id = ? AND last_seen_at < ?").run(at, session, at);
    return { ...lease, remaining: lease.remaining - taken, taken };
  }, "NORMAL");
}

/** The session's newest lease that is neither revoked, spent nor expired. */
function newestUsableLease(ctx: SqliteContext, session: string, at: number): ConsentLease | null {
  const row = ctx
    .stmt(
      `SELECT * FROM leases WHERE session = ? AND revoked = 0 AND remaining > 0 AND expires_at > ?
           ORDER BY created_at DESC, rowid DESC LIMIT 1`,
    )
    .get(session, at);
  return row === undefined ? null : rowToLease(row);
}

function revokeLeasesOf(ctx: SqliteContext, session: string): number {
  return ctx.stmt("UPDATE leases SET revoked = 1 WHERE session = ? AND revoked = 0").run(session).changes;
}

function revoke(ctx: SqliteContext, idOrSession: string): StoreResult<number> {
  return ctx.write(() => {
    const lease = ctx.stmt("SELECT id FROM leases WHERE id = ?").get(idOrSession);
    if (lease !== undefined) {
      return ctx.stmt("UPDATE leases SET revoked = 1 WHERE id = ? AND revoked = 0").run(idOrSession).changes;
    }
    if (sessionById(ctx, idOrSession) === null)
      refuse("not-found", `no lease or consent session ${idOrSession}`);
    // Revoking a session ends it: no lease can be opened on it again.
    ctx
      .stmt("UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL")
      .run(ctx.now(), idOrSession);
    return revokeLeasesOf(ctx, idOrSession);
  });
}

function touchSession(ctx: SqliteContext, id: string, clientId: string): StoreResult<ConsentSession> {
  return ctx.write(() => {
    if (typeof id !== "string" || id.length === 0) refuse("not-found", "a consent session needs an id");
    const at = ctx.now();
    const existing = sessionById(ctx, id);
    if (existing === null) {
      ctx
        .stmt("INSERT INTO sessions (id, client_id, started_at, last_seen_at) VALUES (?, ?, ?, ?)")
        .run(id, clientId, at, at);
    } else {
      // A consent session is never shared: the same id from another client is not this session.
      if (existing.clientId !== clientId)
        refuse("not-found", `consent session ${id} belongs to another client`);
      // An ended session stays ended; only a live one is refreshed.
      if (existing.endedAt !== undefined) return existing;
      ctx
        .stmt("UPDATE sessions SET last_seen_at = ? WHERE id = ?")
        .run(Math.max(at, existing.lastSeenAt), id);
    }
    return sessionById(ctx, id) ?? refuse("unavailable", `consent session ${id} vanished`);
  }, "NORMAL");
}

function endSession(ctx: SqliteContext, id: string): StoreResult<void> {
  return ctx.write(() => {
    if (sessionById(ctx, id) === null) refuse("not-found", `no consent session ${id}`);
    ctx.stmt("UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL").run(ctx.now(), id);
    revokeLeasesOf(ctx, id);
  });
}

function prune(ctx: SqliteContext, graceMs: number): StoreResult<number> {
  return ctx.write(() => {
    const before = ctx.now() - Math.max(0, graceMs);
    let removed = 0;
    removed += ctx.stmt("DELETE FROM requests WHERE expires_at < ?").run(before).changes;
    removed += ctx.stmt("DELETE FROM nonces WHERE expires_at < ?").run(before).changes;
    removed += ctx.stmt("DELETE FROM leases WHERE expires_at < ?").run(before).changes;
    removed += ctx
      .stmt(
        `DELETE FROM sessions WHERE (ended_at IS NOT NULL AND ended_at < ?)
             OR (last_seen_at < ? AND NOT EXISTS (SELECT 1 FROM leases WHERE leases.session = sessions.id))`,
      )
      .run(before, before).changes;
    return removed;
  }, "NORMAL");
}
