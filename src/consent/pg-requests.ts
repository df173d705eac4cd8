import { canonicalJson, type Ids } from "../core/index.js";
import { consentPayload } from "./payload.js";
import { type Db, type PgStoreContext, requestRow, requestRows, returned } from "./pg-rows.js";
import { refuse } from "./store-errors.js";
import { rowToRequest } from "./store-rows.js";
import {
  approvalProblem,
  foreignNonceProblem,
  newRequestProblem,
  pendingBoundProblem,
  type RequestEvent,
  storedApproval,
  transition,
} from "./transitions.js";
import type { ConsentRequest, ConsentStore, NewRequest, StoredApproval, StoreResult } from "./types.js";

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

type RequestMethods = Pick<
  ConsentStore,
  | "createRequest"
  | "getRequest"
  | "listRequests"
  | "findApproved"
  | "findOpen"
  | "approve"
  | "deny"
  | "consume"
  | "consumeNonce"
>;

/** What the request steps add to the store's context: the id source and the instance they sign for. */
interface PgRequestContext extends PgStoreContext {
  ids: Ids;
  instanceId: string;
}

/**
 * The consent requests of the PostgreSQL store (pg-store.ts), with the SQLite store's rules: each
 * read-modify-write locks the request's row first (`SELECT … FOR UPDATE`).
 */
export function requestMethods(ctx: PgRequestContext): RequestMethods {
  const { read, now } = ctx;
  return {
    createRequest: (request) => createRequest(ctx, request),
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
    approve: (id, approval) => approve(ctx, id, approval),
    deny: (id, by, reason) => deny(ctx, id, by, reason),
    consume: (id, nonce) => consume(ctx, id, nonce),
    consumeNonce: (nonce, expiresAt) => consumeNonce(ctx, nonce, expiresAt),
  };
}

async function requireRequest(db: Db, id: string, lock: boolean): Promise<ConsentRequest> {
  if (typeof id !== "string" || !ID_PATTERN.test(id)) refuse("not-found", `no consent request ${String(id)}`);
  return (await requestRow(db, id, lock)) ?? refuse("not-found", `no consent request ${id}`);
}

/** The move the rules allow (consent/transitions.ts), or the refusal that rolls the transaction back. */
function allowed(request: ConsentRequest, event: RequestEvent, at: number): void {
  const move = transition(request, event, at);
  if (!move.ok) refuse(move.error.failure, move.error.detail);
}

function createRequest(ctx: PgRequestContext, request: NewRequest): Promise<StoreResult<ConsentRequest>> {
  return ctx.write(async (tx) => {
    const problem = newRequestProblem(request, MAX_TTL_SECONDS);
    if (problem !== null) refuse("unavailable", problem);
    const createdAt = ctx.now();
    if (request.maxPending) await checkPendingBound(tx, request.session, request.maxPending, createdAt);
    const expiresAt = createdAt + Math.round(request.ttlSeconds * 1000);
    const id = await ctx.freshId(tx, "consent_requests");
    const nonce = ctx.ids.hex(NONCE_BYTES);
    const payload = consentPayload(request.act, { request: id, nonce, expiresAt, instance: ctx.instanceId });
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

/**
 * Refuses as `full` when the session, or the whole store, already has as many pending requests as
 * allowed; the advisory lock makes the count and the insert after it one step across relays.
 */
async function checkPendingBound(
  tx: Db,
  session: string,
  limits: { session: number; total: number },
  at: number,
): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock($1::bigint)", [PENDING_LOCK_KEY]);
  const counted = await tx.query<{ total: number; own: number }>(
    `SELECT COUNT(*) AS total, COUNT(*) FILTER (WHERE session = $1) AS own FROM consent_requests
       WHERE status = 'pending' AND expires_at > $2`,
    [session, at],
  );
  const full = pendingBoundProblem(counted.rows[0] ?? { own: 0, total: 0 }, limits);
  if (full !== null) refuse("full", full);
}

function approve(
  ctx: PgRequestContext,
  id: string,
  approval: StoredApproval,
): Promise<StoreResult<ConsentRequest>> {
  return ctx.write(async (tx) => {
    allowed(await requireRequest(tx, id, true), "approve", ctx.now());
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

function deny(
  ctx: PgRequestContext,
  id: string,
  by: string,
  reason: string,
): Promise<StoreResult<ConsentRequest>> {
  return ctx.write(
    async (tx) => {
      allowed(await requireRequest(tx, id, true), "deny", ctx.now());
      const updated = await tx.query(
        "UPDATE consent_requests SET status = 'denied', denial = $1 WHERE id = $2 RETURNING *",
        [JSON.stringify({ by: String(by), reason: String(reason), at: ctx.now() }), id],
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
function consume(ctx: PgRequestContext, id: string, nonce: string): Promise<StoreResult<ConsentRequest>> {
  return ctx.write(async (tx) => {
    const request = await requireRequest(tx, id, true);
    if (request.nonce !== nonce) refuse("not-found", `request ${id} has another nonce`);
    const at = ctx.now();
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

function consumeNonce(
  ctx: PgRequestContext,
  nonce: string,
  expiresAt: number,
): Promise<StoreResult<boolean>> {
  return ctx.read(async (db) => {
    const problem = foreignNonceProblem(nonce, expiresAt, MAX_FOREIGN_NONCE);
    if (problem !== null) refuse("unavailable", problem);
    const taken = await db.query(
      "INSERT INTO consent_nonces (nonce, expires_at) VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING",
      [nonce, expiresAt],
    );
    return taken.rowCount === 1;
  });
}
