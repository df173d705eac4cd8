/**
 * Migration 1: the consent store's tables (src/consent/pg-store.ts), the PostgreSQL twin of the
 * SQLite schema in src/consent/store-rows.ts, with the same columns, so one row reader serves both.
 * Times are epoch milliseconds in bigint, as SQLite keeps them: the store's injected clock decides
 * expiry, never the server's. The act, an approval and a denial stay JSON text (canonical bytes,
 * parsed again on every read), not jsonb, which would reorder them.
 *
 * Beyond SQLite:
 * - `seq` (an identity) orders rows created in the same millisecond, as SQLite's rowid does;
 * - `consent_nonces.nonce` is the primary key: whatever a status says, a spent nonce is spent
 *   once, across every relay on the database;
 * - `consent_epoch`, one row, is bumped by every write that can withdraw something (a denial, a
 *   revocation, the end of a session, a lease opened): the change counter of the store, what
 *   SQLite's data_version gives for free.
 */
export const CONSENT_SCHEMA_SQL = `
CREATE TABLE consent_meta (
  key text PRIMARY KEY,
  value text NOT NULL
);
CREATE TABLE consent_requests (
  id text PRIMARY KEY,
  nonce text NOT NULL UNIQUE,
  act_digest text NOT NULL,
  act text NOT NULL,
  basis text NOT NULL,
  session text NOT NULL,
  client_id text NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
  payload text NOT NULL,
  approval text,
  denial text,
  consumed_at bigint,
  seq bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX consent_requests_by_act ON consent_requests (act_digest, status, expires_at);
CREATE INDEX consent_requests_by_status ON consent_requests (status, expires_at);
CREATE INDEX consent_requests_by_expiry ON consent_requests (expires_at);
CREATE TABLE consent_nonces (
  nonce text PRIMARY KEY,
  expires_at bigint NOT NULL
);
CREATE INDEX consent_nonces_by_expiry ON consent_nonces (expires_at);
CREATE TABLE consent_sessions (
  id text PRIMARY KEY,
  client_id text NOT NULL,
  started_at bigint NOT NULL,
  last_seen_at bigint NOT NULL,
  ended_at bigint,
  seq bigint GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE consent_leases (
  id text PRIMARY KEY,
  session text NOT NULL REFERENCES consent_sessions (id) ON DELETE CASCADE,
  opened_by text NOT NULL,
  mode text NOT NULL CHECK (mode IN ('window', 'session')),
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  remaining integer NOT NULL CHECK (remaining >= 0),
  revoked boolean NOT NULL DEFAULT false,
  seq bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX consent_leases_by_session ON consent_leases (session, created_at);
CREATE INDEX consent_leases_by_expiry ON consent_leases (expires_at);
CREATE TABLE consent_epoch (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  value bigint NOT NULL
);
INSERT INTO consent_epoch (one, value) VALUES (true, 0);
`;
