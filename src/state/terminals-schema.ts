/**
 * Which relay holds which terminal, for several relays on one database (docs/scaling.md): a
 * terminal is a PTY in one relay's process, so the row only says where it is, for listing and for
 * telling a caller which relay to look to. `relay_instances` is each relay's heartbeat: a relay
 * whose `last_seen_at` is old has stopped, and its terminals with it. Times are epoch milliseconds.
 */
export const TERMINALS_SCHEMA_SQL = `
CREATE TABLE relay_instances (
  instance text PRIMARY KEY,
  started_at bigint NOT NULL,
  last_seen_at bigint NOT NULL
);
CREATE TABLE relay_terminals (
  id text PRIMARY KEY,
  instance text NOT NULL,
  kind text NOT NULL,
  title text NOT NULL,
  owner text NOT NULL,
  started_at bigint NOT NULL
);
CREATE INDEX relay_terminals_owner ON relay_terminals (owner);
CREATE INDEX relay_terminals_instance ON relay_terminals (instance);
`;
