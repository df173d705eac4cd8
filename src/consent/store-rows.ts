import { z } from "zod";
import type { ConsentLease, ConsentRequest, ConsentSession } from "./types.js";

/**
 * The SQLite schema of the consent store, version 1. Times are epoch
 * milliseconds; the act, an approval and a denial are JSON text. A row read
 * back is parsed again (rowToRequest …): the file is writable by the relay's
 * own user, so a malformed row is a refusal, never a guess.
 */
export const SCHEMA_VERSION = 1;

export const SCHEMA_SQL = `
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;
CREATE TABLE requests (
  id TEXT PRIMARY KEY,
  nonce TEXT NOT NULL UNIQUE,
  act_digest TEXT NOT NULL,
  act TEXT NOT NULL,
  basis TEXT NOT NULL,
  session TEXT NOT NULL,
  client_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
  payload TEXT NOT NULL,
  approval TEXT,
  denial TEXT,
  consumed_at INTEGER
) STRICT;
CREATE INDEX requests_by_act ON requests (act_digest, status, expires_at);
CREATE TABLE nonces (
  nonce TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
) STRICT;
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  ended_at INTEGER
) STRICT;
CREATE TABLE leases (
  id TEXT PRIMARY KEY,
  session TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  opened_by TEXT NOT NULL,
  mode TEXT NOT NULL CHECK (mode IN ('window', 'session')),
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  remaining INTEGER NOT NULL CHECK (remaining >= 0),
  revoked INTEGER NOT NULL CHECK (revoked IN (0, 1))
) STRICT;
CREATE INDEX leases_by_session ON leases (session, created_at);
`;

const epoch = z.number().int().nonnegative();
const text = z.string();

const actSchema = z.object({
  tool: z.string().min(1),
  tier: z.union([z.literal(0), z.literal(1), z.literal(2), z.literal(3)]),
  bound: z.record(z.string(), z.unknown()),
});

const approvalSchema = z.object({
  channel: z.enum(["sshsig", "passkey"]),
  proof: z.string().min(1),
  claimedSigner: z.string(),
  at: epoch,
});

const denialSchema = z.object({ by: z.string(), reason: z.string(), at: epoch });

const requestRow = z.object({
  id: text,
  nonce: text,
  act_digest: text,
  act: text,
  basis: text,
  session: text,
  client_id: text,
  created_at: epoch,
  expires_at: epoch,
  status: z.enum(["pending", "approved", "denied", "consumed"]),
  payload: text,
  approval: text.nullable(),
  denial: text.nullable(),
  consumed_at: epoch.nullable(),
});

const leaseRow = z.object({
  id: text,
  session: text,
  opened_by: text,
  mode: z.enum(["window", "session"]),
  created_at: epoch,
  expires_at: epoch,
  remaining: z.number().int().nonnegative(),
  revoked: z.union([z.literal(0), z.literal(1)]),
});

const sessionRow = z.object({
  id: text,
  client_id: text,
  started_at: epoch,
  last_seen_at: epoch,
  ended_at: epoch.nullable(),
});

/** A row the store cannot read back: the database was edited or is damaged. */
export class UnreadableRow extends Error {
  override readonly name = "UnreadableRow";
}

function parseJsonText<T>(schema: z.ZodType<T>, value: string, what: string): T {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new UnreadableRow(`${what} is not JSON`);
  }
  const result = schema.safeParse(parsed);
  if (!result.success) throw new UnreadableRow(`${what} is malformed`);
  return result.data;
}

function parseRow<T>(schema: z.ZodType<T>, row: unknown, what: string): T {
  const result = schema.safeParse(row);
  if (!result.success) throw new UnreadableRow(`${what} is malformed`);
  return result.data;
}

export function rowToRequest(row: unknown): ConsentRequest {
  const r = parseRow(requestRow, row, "a request row");
  const what = `request ${r.id}`;
  const request: ConsentRequest = {
    id: r.id,
    nonce: r.nonce,
    actDigest: r.act_digest,
    act: parseJsonText(actSchema, r.act, `the act of ${what}`),
    basis: r.basis,
    session: r.session,
    clientId: r.client_id,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    status: r.status,
    payload: r.payload,
  };
  if (r.approval !== null)
    request.approval = parseJsonText(approvalSchema, r.approval, `the approval of ${what}`);
  if (r.denial !== null) request.denial = parseJsonText(denialSchema, r.denial, `the denial of ${what}`);
  if (r.consumed_at !== null) request.consumedAt = r.consumed_at;
  return request;
}

export function rowToLease(row: unknown): ConsentLease {
  const r = parseRow(leaseRow, row, "a lease row");
  return {
    id: r.id,
    session: r.session,
    openedBy: r.opened_by,
    mode: r.mode,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    remaining: r.remaining,
    revoked: r.revoked === 1,
  };
}

export function rowToSession(row: unknown): ConsentSession {
  const r = parseRow(sessionRow, row, "a session row");
  const session: ConsentSession = {
    id: r.id,
    clientId: r.client_id,
    startedAt: r.started_at,
    lastSeenAt: r.last_seen_at,
  };
  if (r.ended_at !== null) session.endedAt = r.ended_at;
  return session;
}
