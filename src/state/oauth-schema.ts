/**
 * Migration 2: the OAuth authorization server's state (src/server/oauth-pg-store.ts), the
 * PostgreSQL twin of the three JSON files of the file backend, with the same fields. Times are
 * epoch seconds in bigint, as the records keep them: the relay's clock decides expiry, never the
 * server's. Secrets are never stored: a code or a token is its SHA-256 (hex), which is the primary
 * key, so a value is single-use across every relay on the database (`DELETE … RETURNING`); a client
 * secret is its SHA-256 too.
 *
 * `seq` (an identity) orders rows by age: beyond the bound a store keeps, the oldest go first.
 * Tokens do not reference their client: a client is never removed, and a foreign key would only
 * add a lock to every token written.
 */
export const OAUTH_SCHEMA_SQL = `
CREATE TABLE oauth_clients (
  client_id text PRIMARY KEY,
  client_id_issued_at bigint NOT NULL,
  client_secret_sha256 text CHECK (client_secret_sha256 ~ '^[0-9a-f]{64}$'),
  client_secret_expires_at bigint,
  redirect_uris text[] NOT NULL,
  token_endpoint_auth_method text NOT NULL
    CHECK (token_endpoint_auth_method IN ('none', 'client_secret_post', 'client_secret_basic')),
  grant_types text[] NOT NULL,
  response_types text[] NOT NULL,
  client_name text,
  client_uri text,
  scope text,
  software_id text,
  software_version text,
  seq bigint GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE oauth_codes (
  code_sha256 text PRIMARY KEY CHECK (code_sha256 ~ '^[0-9a-f]{64}$'),
  client_id text NOT NULL,
  scopes text[] NOT NULL,
  expires_at bigint NOT NULL,
  code_challenge text NOT NULL,
  redirect_uri text NOT NULL,
  redirect_uri_explicit boolean NOT NULL,
  resource text,
  seq bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX oauth_codes_by_expiry ON oauth_codes (expires_at);
CREATE INDEX oauth_codes_by_age ON oauth_codes (seq);
CREATE TABLE oauth_tokens (
  kind text NOT NULL CHECK (kind IN ('access', 'refresh')),
  token_sha256 text NOT NULL CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
  client_id text NOT NULL,
  scopes text[] NOT NULL,
  expires_at bigint NOT NULL,
  resource text,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (kind, token_sha256)
);
CREATE INDEX oauth_tokens_by_expiry ON oauth_tokens (expires_at);
CREATE INDEX oauth_tokens_by_age ON oauth_tokens (seq);
`;
