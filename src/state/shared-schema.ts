/**
 * The state several relays behind one load balancer must share beyond consent: Tier-3
 * confirmation tokens (src/broker/pg-broker.ts), passkey sign counters and the assertions already
 * counted (src/consent/pg-counters.ts), and console logins (src/console/pg-logins.ts).
 *
 * Times are epoch milliseconds in bigint, written by the relay from its own clock, as the consent
 * tables keep them: every expiry is decided against the clock the relay's tests drive, and the
 * relays of one deployment keep their clocks in step (NTP) anyway for the audit log.
 *
 * - `confirm_tokens` is keyed by the SHA-256 of the token (hex), never the token; `seq` orders
 *   tokens planned in the same millisecond, so the oldest armed one is consumed first. `args` is
 *   the JSON of the planned call's validated arguments, which the arm step checks follow-up
 *   commands against, on whichever relay it comes to (the consent store keeps an act's arguments
 *   the same way).
 * - `passkey_counters` holds one counter per credential, never lowered: a write only replaces a
 *   smaller value. `passkey_assertions` is keyed by the digest of an accepted assertion, so the
 *   same assertion is counted once across every relay.
 * - `console_logins` is keyed by the SHA-256 of the login's cookie (base64url), never the cookie.
 */
export const SHARED_SCHEMA_SQL = `
CREATE TABLE confirm_tokens (
  token_key text PRIMARY KEY,
  operation text NOT NULL,
  tool text NOT NULL,
  args text NOT NULL,
  armed boolean NOT NULL DEFAULT false,
  follow_ups text,
  bound text,
  expires_at bigint NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX confirm_tokens_by_operation ON confirm_tokens (operation, seq) WHERE armed;
CREATE INDEX confirm_tokens_by_expiry ON confirm_tokens (expires_at, seq);
CREATE TABLE passkey_counters (
  credential_id text PRIMARY KEY,
  counter bigint NOT NULL CHECK (counter >= 0 AND counter <= 4294967295),
  updated_at bigint NOT NULL
);
CREATE TABLE passkey_assertions (
  digest text PRIMARY KEY,
  credential_id text NOT NULL,
  accepted_at bigint NOT NULL
);
CREATE INDEX passkey_assertions_by_age ON passkey_assertions (accepted_at);
CREATE TABLE console_logins (
  key text PRIMARY KEY,
  passkey text NOT NULL,
  credential_id text NOT NULL,
  csrf text NOT NULL,
  created_at bigint NOT NULL,
  last_seen_at bigint NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX console_logins_by_age ON console_logins (created_at, seq);
`;
