import { canonicalJson } from "../core/index.js";
import { consentPayload } from "./payload.js";
import { allowed, freshId, requireRequest, type SqliteContext } from "./sqlite-context.js";
import { attempt, refuse } from "./store-errors.js";
import { rowToRequest } from "./store-rows.js";
import type { SyncStore } from "./sync-store.js";
import {
  approvalProblem,
  foreignNonceProblem,
  newRequestProblem,
  pendingBoundProblem,
  storedApproval,
} from "./transitions.js";
import type { ConsentRequest, NewRequest, StoredApproval, StoreResult } from "./types.js";

/** Nonces: 32 hex digits. */
const NONCE_BYTES = 16;
/** The longest nonce another store may hand over (consumeNonce). */
const MAX_FOREIGN_NONCE = 256;
/** The longest approval window a request can ask for: a day. */
const MAX_TTL_SECONDS = 86_400;

type RequestMethods = Pick<
  SyncStore,
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

/**
 * The consent requests of the SQLite store (sqlite-store.ts): each method is one step below,
 * bound to the store's connection.
 */
export function requestMethods(ctx: SqliteContext): RequestMethods {
  return {
    createRequest: (request) => createRequest(ctx, request),
    getRequest: (id) => attempt(() => requireRequest(ctx, id)),
    listRequests: () => attempt(() => listRequests(ctx)),
    findApproved: (actDigest) => attempt(() => findApproved(ctx, actDigest)),
    findOpen: (actDigest, session) => attempt(() => findOpen(ctx, actDigest, session)),
    approve: (id, approval) => approve(ctx, id, approval),
    deny: (id, by, reason) => deny(ctx, id, by, reason),
    consume: (id, nonce) => consume(ctx, id, nonce),
    consumeNonce: (nonce, expiresAt) => consumeNonce(ctx, nonce, expiresAt),
  };
}

function createRequest(ctx: SqliteContext, request: NewRequest): StoreResult<ConsentRequest> {
  return ctx.write(() => {
    const problem = newRequestProblem(request, MAX_TTL_SECONDS);
    if (problem !== null) refuse("unavailable", problem);
    const createdAt = ctx.now();
    if (request.maxPending) checkPendingBound(ctx, request.session, request.maxPending, createdAt);
    const id = freshId(ctx, "requests");
    insertRequest(ctx, request, id, createdAt);
    return requireRequest(ctx, id);
  });
}

/** Refuses as `full` when the session, or the whole store, already has as many pending requests as allowed. */
function checkPendingBound(
  ctx: SqliteContext,
  session: string,
  limits: { session: number; total: number },
  at: number,
): void {
  const pending = ctx
    .stmt(
      "SELECT COUNT(*) AS total, COALESCE(SUM(session = ?), 0) AS own FROM requests WHERE status = 'pending' AND expires_at > ?",
    )
    .get(session, at) as { total: number; own: number };
  const full = pendingBoundProblem(pending, limits);
  if (full !== null) refuse("full", full);
}

/** The new pending row, with its nonce and the payload a human signs. */
function insertRequest(ctx: SqliteContext, request: NewRequest, id: string, createdAt: number): void {
  const expiresAt = createdAt + Math.round(request.ttlSeconds * 1000);
  const nonce = ctx.ids.hex(NONCE_BYTES);
  const payload = consentPayload(request.act, { request: id, nonce, expiresAt, instance: ctx.instanceId });
  ctx
    .stmt(
      `INSERT INTO requests (id, nonce, act_digest, act, basis, session, client_id, created_at, expires_at,
           status, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)`,
    )
    .run(
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
}

function listRequests(ctx: SqliteContext): ConsentRequest[] {
  return ctx
    .stmt(
      `SELECT * FROM requests WHERE status IN ('pending', 'approved') AND expires_at > ?
             ORDER BY created_at, rowid`,
    )
    .all(ctx.now())
    .map(rowToRequest);
}

function findApproved(ctx: SqliteContext, actDigest: string): ConsentRequest | null {
  const row = ctx
    .stmt(
      `SELECT * FROM requests WHERE act_digest = ? AND status = 'approved' AND expires_at > ?
             ORDER BY created_at DESC, rowid DESC LIMIT 1`,
    )
    .get(actDigest, ctx.now());
  return row === undefined ? null : rowToRequest(row);
}

function findOpen(ctx: SqliteContext, actDigest: string, session: string): ConsentRequest | null {
  const row = ctx
    .stmt(
      `SELECT * FROM requests WHERE act_digest = ? AND session = ? AND status IN ('pending', 'denied')
               AND expires_at > ? ORDER BY created_at DESC, rowid DESC LIMIT 1`,
    )
    .get(actDigest, session, ctx.now());
  return row === undefined ? null : rowToRequest(row);
}

function approve(ctx: SqliteContext, id: string, approval: StoredApproval): StoreResult<ConsentRequest> {
  return ctx.write(() => {
    allowed(ctx, requireRequest(ctx, id), "approve");
    const problem = approvalProblem(approval);
    if (problem !== null) refuse("unavailable", problem);
    const stored = storedApproval(approval);
    ctx
      .stmt("UPDATE requests SET status = 'approved', approval = ? WHERE id = ?")
      .run(JSON.stringify(stored), id);
    return requireRequest(ctx, id);
  });
}

function deny(ctx: SqliteContext, id: string, by: string, reason: string): StoreResult<ConsentRequest> {
  return ctx.write(() => {
    allowed(ctx, requireRequest(ctx, id), "deny");
    ctx
      .stmt("UPDATE requests SET status = 'denied', denial = ? WHERE id = ?")
      .run(JSON.stringify({ by: String(by), reason: String(reason), at: ctx.now() }), id);
    return requireRequest(ctx, id);
  });
}

/** The approval is used once: its nonce is recorded as spent, then the request is consumed. */
function consume(ctx: SqliteContext, id: string, nonce: string): StoreResult<ConsentRequest> {
  return ctx.write(() => {
    const request = requireRequest(ctx, id);
    if (request.nonce !== nonce) refuse("not-found", `request ${id} has another nonce`);
    const at = ctx.now();
    allowed(ctx, request, "consume", at);
    if (!recordNonce(ctx, nonce, request.expiresAt))
      refuse("consumed", `the nonce of request ${id} was already used`);
    ctx.stmt("UPDATE requests SET status = 'consumed', consumed_at = ? WHERE id = ?").run(at, id);
    return requireRequest(ctx, id);
  });
}

function consumeNonce(ctx: SqliteContext, nonce: string, expiresAt: number): StoreResult<boolean> {
  return ctx.write(() => {
    const problem = foreignNonceProblem(nonce, expiresAt, MAX_FOREIGN_NONCE);
    if (problem !== null) refuse("unavailable", problem);
    return recordNonce(ctx, nonce, expiresAt);
  });
}

/** True when the nonce was not spent before and now is. */
function recordNonce(ctx: SqliteContext, nonce: string, expiresAt: number): boolean {
  return (
    ctx.stmt("INSERT OR IGNORE INTO nonces (nonce, expires_at) VALUES (?, ?)").run(nonce, expiresAt)
      .changes === 1
  );
}
