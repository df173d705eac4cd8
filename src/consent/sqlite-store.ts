import type Database from "better-sqlite3";
import { type Clock, canonicalJson, type Ids } from "../core/index.js";
import { consentPayload } from "./payload.js";
import { attempt, refuse } from "./store-errors.js";
import { openDatabase } from "./store-open.js";
import { rowToLease, rowToRequest, rowToSession } from "./store-rows.js";
import { answerAsync, type SyncStore } from "./sync-store.js";
import {
  approvalProblem,
  newRequestProblem,
  pendingBoundProblem,
  type RequestEvent,
  storedApproval,
  transition,
} from "./transitions.js";
import type {
  ConsentLease,
  ConsentRequest,
  ConsentSession,
  ConsentStore,
  NewRequest,
  StoredApproval,
  StoreResult,
  TakenReads,
} from "./types.js";

export interface SqliteStoreOptions {
  clock: Clock;
  ids: Ids;
  /**
   * How long a write waits for another process's transaction before it is
   * refused as `locked`. better-sqlite3 is synchronous, so this is also how
   * long the caller's event loop can stall: keep it to a few seconds.
   */
  busyTimeoutMs: number;
  /** The owner the file must have; defaults to this process's effective uid. */
  euid?: number;
}

/** Request and lease ids: 10 lowercase hex digits, short enough to type. */
const ID_BYTES = 5;
/** Nonces: 32 hex digits. */
const NONCE_BYTES = 16;
const ID_PATTERN = /^[0-9a-f]{10}$/;
/** The longest nonce another store may hand over (consumeNonce). */
const MAX_FOREIGN_NONCE = 256;
/** The longest approval window a request can ask for: a day. */
const MAX_TTL_SECONDS = 86_400;

/**
 * Open (creating if needed) the consent database at `path`: the SQLite store
 * of docs/adr/0024-consent-store-and-approval-lifetime.md. Every method that
 * reads then writes is one BEGIN IMMEDIATE transaction; none throws.
 */
export function openSqliteStore(path: string, options: SqliteStoreOptions): StoreResult<ConsentStore> {
  const opened = openDatabase(path, {
    ids: options.ids,
    busyTimeoutMs: options.busyTimeoutMs,
    euid: options.euid ?? process.geteuid?.() ?? 0,
  });
  if (!opened.ok) return opened;
  return { ok: true, value: answerAsync(createStore(opened.value.db, opened.value.instanceId, options)) };
}

function createStore(db: Database.Database, instanceId: string, options: SqliteStoreOptions): SyncStore {
  const { clock, ids } = options;
  const now = (): number => clock.now();
  // Each statement compiled once per connection: a read under a lease runs three of them.
  const statements = new Map<string, Database.Statement>();
  const stmt = (sql: string): Database.Statement => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  /*
   * Durability per write. FULL syncs the log at every commit, so an acknowledged
   * consumption, approval, denial or revocation survives a power cut: losing one
   * would make a used approval usable again, or bring back a withdrawn lease,
   * after a reboot. A lease read or a session's last-seen time is written with
   * NORMAL (synced at the next FULL commit or checkpoint): a power cut can give
   * back a few reads of a lease's budget, never open anything, and the read
   * under a lease stays a fraction of a millisecond instead of one fsync.
   */
  let synchronous: "FULL" | "NORMAL" = "FULL";
  const write = <T>(work: () => T, durability: "FULL" | "NORMAL" = "FULL"): StoreResult<T> =>
    attempt(() => {
      if (synchronous !== durability) {
        db.pragma(`synchronous = ${durability}`);
        synchronous = durability;
      }
      return db.transaction(work).immediate();
    });

  const requestById = (id: string): ConsentRequest | null => {
    const row = stmt("SELECT * FROM requests WHERE id = ?").get(id);
    return row === undefined ? null : rowToRequest(row);
  };
  const requireRequest = (id: string): ConsentRequest => {
    if (typeof id !== "string" || !ID_PATTERN.test(id))
      refuse("not-found", `no consent request ${String(id)}`);
    return requestById(id) ?? refuse("not-found", `no consent request ${id}`);
  };
  const sessionById = (id: string): ConsentSession | null => {
    const row = stmt("SELECT * FROM sessions WHERE id = ?").get(id);
    return row === undefined ? null : rowToSession(row);
  };
  const freshId = (table: "requests" | "leases"): string => {
    const taken = stmt(`SELECT 1 FROM ${table} WHERE id = ?`).pluck();
    for (let i = 0; i < 16; i += 1) {
      const id = ids.hex(ID_BYTES);
      if (taken.get(id) === undefined) return id;
    }
    return refuse("unavailable", "no free id after 16 draws: the id source is broken");
  };
  const revokeLeasesOf = (session: string): number =>
    stmt("UPDATE leases SET revoked = 1 WHERE session = ? AND revoked = 0").run(session).changes;

  function createRequest(request: NewRequest): StoreResult<ConsentRequest> {
    return write(() => {
      const problem = newRequestProblem(request, MAX_TTL_SECONDS);
      if (problem !== null) refuse("unavailable", problem);
      const createdAt = now();
      if (request.maxPending) {
        const pending = stmt(
          "SELECT COUNT(*) AS total, COALESCE(SUM(session = ?), 0) AS own FROM requests WHERE status = 'pending' AND expires_at > ?",
        ).get(request.session, createdAt) as { total: number; own: number };
        const full = pendingBoundProblem(pending, request.maxPending);
        if (full !== null) refuse("full", full);
      }
      const expiresAt = createdAt + Math.round(request.ttlSeconds * 1000);
      const id = freshId("requests");
      const nonce = ids.hex(NONCE_BYTES);
      const payload = consentPayload(request.act, { request: id, nonce, expiresAt, instance: instanceId });
      stmt(
        `INSERT INTO requests (id, nonce, act_digest, act, basis, session, client_id, created_at, expires_at,
           status, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)`,
      ).run(
        id,
        nonce,
        request.actDigest,
        canonicalJson({ tool: request.act.tool, tier: request.act.tier, bound: request.act.bound }),
        request.basis,
        request.session,
        request.clientId,
        createdAt,
        expiresAt,
        payload,
      );
      return requireRequest(id);
    });
  }

  /** The move the rules allow (consent/transitions.ts), or the refusal that ends the transaction. */
  const allowed = (request: ConsentRequest, event: RequestEvent, at = now()): void => {
    const move = transition(request, event, at);
    if (!move.ok) refuse(move.failure, move.detail);
  };

  function approve(id: string, approval: StoredApproval): StoreResult<ConsentRequest> {
    return write(() => {
      allowed(requireRequest(id), "approve");
      const problem = approvalProblem(approval);
      if (problem !== null) refuse("unavailable", problem);
      const stored = storedApproval(approval);
      stmt("UPDATE requests SET status = 'approved', approval = ? WHERE id = ?").run(
        JSON.stringify(stored),
        id,
      );
      return requireRequest(id);
    });
  }

  function deny(id: string, by: string, reason: string): StoreResult<ConsentRequest> {
    return write(() => {
      allowed(requireRequest(id), "deny");
      stmt("UPDATE requests SET status = 'denied', denial = ? WHERE id = ?").run(
        JSON.stringify({ by: String(by), reason: String(reason), at: now() }),
        id,
      );
      return requireRequest(id);
    });
  }

  function consume(id: string, nonce: string): StoreResult<ConsentRequest> {
    return write(() => {
      const request = requireRequest(id);
      if (request.nonce !== nonce) refuse("not-found", `request ${id} has another nonce`);
      const at = now();
      allowed(request, "consume", at);
      const recorded = stmt("INSERT OR IGNORE INTO nonces (nonce, expires_at) VALUES (?, ?)").run(
        nonce,
        request.expiresAt,
      ).changes;
      if (recorded === 0) refuse("consumed", `the nonce of request ${id} was already used`);
      stmt("UPDATE requests SET status = 'consumed', consumed_at = ? WHERE id = ?").run(at, id);
      return requireRequest(id);
    });
  }

  function consumeNonce(nonce: string, expiresAt: number): StoreResult<boolean> {
    return write(() => {
      if (typeof nonce !== "string" || nonce.length === 0 || nonce.length > MAX_FOREIGN_NONCE) {
        refuse("unavailable", `a nonce must be 1..${MAX_FOREIGN_NONCE} characters`);
      }
      if (!Number.isSafeInteger(expiresAt))
        refuse("unavailable", "a nonce's expiry must be epoch milliseconds");
      const taken = stmt("INSERT OR IGNORE INTO nonces (nonce, expires_at) VALUES (?, ?)").run(
        nonce,
        expiresAt,
      ).changes;
      return taken === 1;
    });
  }

  function openLease(lease: Omit<ConsentLease, "id" | "revoked">): StoreResult<ConsentLease> {
    return write(() => {
      if (lease.mode !== "window" && lease.mode !== "session")
        refuse("unavailable", "a lease is window or session");
      if (!Number.isSafeInteger(lease.remaining) || lease.remaining < 1) {
        refuse("unavailable", `a lease needs a budget of at least 1 read, got ${lease.remaining}`);
      }
      if (!Number.isSafeInteger(lease.createdAt) || !Number.isSafeInteger(lease.expiresAt)) {
        refuse("unavailable", "a lease's times must be epoch milliseconds");
      }
      const session = sessionById(lease.session);
      if (session === null) refuse("not-found", `no consent session ${lease.session}`);
      if (session.endedAt !== undefined) refuse("expired", `consent session ${lease.session} has ended`);
      const id = freshId("leases");
      stmt(
        `INSERT INTO leases (id, session, opened_by, mode, created_at, expires_at, remaining, revoked)
         VALUES (?, ?, ?, ?, ?, ?, ?, 0)`,
      ).run(id, lease.session, lease.openedBy, lease.mode, lease.createdAt, lease.expiresAt, lease.remaining);
      return rowToLease(stmt("SELECT * FROM leases WHERE id = ?").get(id));
    });
  }

  function takeLeaseRead(session: string, idleMs: number, count = 1): StoreResult<TakenReads | null> {
    return write(() => {
      if (!Number.isSafeInteger(count) || count < 1) refuse("not-found", `cannot take ${count} reads`);
      const at = now();
      const owner = sessionById(session);
      if (owner === null || owner.endedAt !== undefined) return null;
      if (!(at - owner.lastSeenAt <= idleMs)) return null;
      const row = stmt(
        `SELECT * FROM leases WHERE session = ? AND revoked = 0 AND remaining > 0 AND expires_at > ?
           ORDER BY created_at DESC, rowid DESC LIMIT 1`,
      ).get(session, at);
      if (row === undefined) return null;
      const lease = rowToLease(row);
      const taken = Math.min(count, lease.remaining);
      stmt("UPDATE leases SET remaining = remaining - ? WHERE id = ?").run(taken, lease.id);
      // A read granted is activity of the session: it keeps the session from going idle.
      stmt("UPDATE sessions SET last_seen_at = ? WHERE id = ? AND last_seen_at < ?").run(at, session, at);
      return { ...lease, remaining: lease.remaining - taken, taken };
    }, "NORMAL");
  }

  function revoke(idOrSession: string): StoreResult<number> {
    return write(() => {
      const lease = stmt("SELECT id FROM leases WHERE id = ?").get(idOrSession);
      if (lease !== undefined) {
        return stmt("UPDATE leases SET revoked = 1 WHERE id = ? AND revoked = 0").run(idOrSession).changes;
      }
      if (sessionById(idOrSession) === null)
        refuse("not-found", `no lease or consent session ${idOrSession}`);
      // Revoking a session ends it: no lease can be opened on it again.
      stmt("UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL").run(now(), idOrSession);
      return revokeLeasesOf(idOrSession);
    });
  }

  function touchSession(id: string, clientId: string): StoreResult<ConsentSession> {
    return write(() => {
      if (typeof id !== "string" || id.length === 0) refuse("not-found", "a consent session needs an id");
      const at = now();
      const existing = sessionById(id);
      if (existing === null) {
        stmt("INSERT INTO sessions (id, client_id, started_at, last_seen_at) VALUES (?, ?, ?, ?)").run(
          id,
          clientId,
          at,
          at,
        );
      } else {
        // A consent session is never shared: the same id from another client is not this session.
        if (existing.clientId !== clientId)
          refuse("not-found", `consent session ${id} belongs to another client`);
        // An ended session stays ended; only a live one is refreshed.
        if (existing.endedAt !== undefined) return existing;
        stmt("UPDATE sessions SET last_seen_at = ? WHERE id = ?").run(Math.max(at, existing.lastSeenAt), id);
      }
      return sessionById(id) ?? refuse("unavailable", `consent session ${id} vanished`);
    }, "NORMAL");
  }

  function endSession(id: string): StoreResult<void> {
    return write(() => {
      if (sessionById(id) === null) refuse("not-found", `no consent session ${id}`);
      stmt("UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL").run(now(), id);
      revokeLeasesOf(id);
    });
  }

  function prune(graceMs: number): StoreResult<number> {
    return write(() => {
      const before = now() - Math.max(0, graceMs);
      let removed = 0;
      removed += stmt("DELETE FROM requests WHERE expires_at < ?").run(before).changes;
      removed += stmt("DELETE FROM nonces WHERE expires_at < ?").run(before).changes;
      removed += stmt("DELETE FROM leases WHERE expires_at < ?").run(before).changes;
      removed += stmt(
        `DELETE FROM sessions WHERE (ended_at IS NOT NULL AND ended_at < ?)
             OR (last_seen_at < ? AND NOT EXISTS (SELECT 1 FROM leases WHERE leases.session = sessions.id))`,
      ).run(before, before).changes;
      return removed;
    }, "NORMAL");
  }

  return {
    instanceId,
    createRequest,
    getRequest: (id) => attempt(() => requireRequest(id)),
    listRequests: () =>
      attempt(() =>
        stmt(
          `SELECT * FROM requests WHERE status IN ('pending', 'approved') AND expires_at > ?
             ORDER BY created_at, rowid`,
        )
          .all(now())
          .map(rowToRequest),
      ),
    findApproved: (actDigest) =>
      attempt(() => {
        const row = stmt(
          `SELECT * FROM requests WHERE act_digest = ? AND status = 'approved' AND expires_at > ?
             ORDER BY created_at DESC, rowid DESC LIMIT 1`,
        ).get(actDigest, now());
        return row === undefined ? null : rowToRequest(row);
      }),
    findOpen: (actDigest, session) =>
      attempt(() => {
        const row = stmt(
          `SELECT * FROM requests WHERE act_digest = ? AND session = ? AND status IN ('pending', 'denied')
               AND expires_at > ? ORDER BY created_at DESC, rowid DESC LIMIT 1`,
        ).get(actDigest, session, now());
        return row === undefined ? null : rowToRequest(row);
      }),
    approve,
    deny,
    consume,
    consumeNonce,
    openLease,
    takeLeaseRead,
    listLeases: () =>
      attempt(() => stmt("SELECT * FROM leases ORDER BY created_at, rowid").all().map(rowToLease)),
    getLease: (id) =>
      attempt(() => {
        const row = stmt("SELECT * FROM leases WHERE id = ?").get(id);
        return row === undefined ? null : rowToLease(row);
      }),
    // A prepared statement, not db.pragma(): this runs on every leased read.
    changeCounter: () => attempt(() => Number(stmt("PRAGMA data_version").pluck().get())),
    revoke,
    revokeAll: () => write(() => stmt("UPDATE leases SET revoked = 1 WHERE revoked = 0").run().changes),
    touchSession,
    endSession,
    listSessions: () =>
      attempt(() => stmt("SELECT * FROM sessions ORDER BY started_at, rowid").all().map(rowToSession)),
    prune,
    close: () => {
      if (db.open) db.close();
    },
  };
}
