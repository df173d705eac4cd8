import { closeSync, constants, fchmodSync, openSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { type Clock, describeError } from "../core/index.js";

/** The broker's own record of consumed approval nonces, in its state directory. */
const NONCES_FILE = "approval-nonces.sqlite";

/** How long a request waits for another writer's lock before it is refused. */
const DEFAULT_BUSY_TIMEOUT_MS = 2000;

/** What one consumption did. */
type NonceOutcome =
  | { kind: "consumed" }
  | { kind: "reused"; consumedAt: number }
  | { kind: "unavailable"; reason: string };

export interface NonceStore {
  /**
   * Record `nonce` as consumed, once: one BEGIN IMMEDIATE transaction drops
   * the nonces whose approvals expired, looks the nonce up and inserts it.
   * A lock not granted within the busy timeout, or a failed write, is
   * `unavailable`, and the caller must not act.
   */
  consume(nonce: string, entry: { expiresAt: number; request: string; principal: string }): NonceOutcome;
  path: string;
  close(): void;
}

/**
 * Open (or create, mode 0600) the nonce store under `stateDir`. A nonce is
 * kept until its approval's expiry, after which the approval is refused
 * anyway, so the table holds at most the approvals still alive. Throws when
 * the database cannot be opened or prepared.
 */
export function openNonceStore(stateDir: string, deps: { clock: Clock; busyTimeoutMs?: number }): NonceStore {
  const path = join(stateDir, NONCES_FILE);
  // Created by us with the final mode, so it is never readable by others, even for an instant.
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
  const db = new Database(path, { timeout: deps.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS });
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.exec(
      "CREATE TABLE IF NOT EXISTS nonces (" +
        "nonce TEXT PRIMARY KEY, expires_at INTEGER NOT NULL, consumed_at INTEGER NOT NULL, " +
        "request TEXT NOT NULL, principal TEXT NOT NULL) STRICT",
    );
  } catch (err) {
    db.close();
    throw err;
  }
  const prune = db.prepare("DELETE FROM nonces WHERE expires_at < ?");
  const find = db.prepare<[string], { consumed_at: number }>(
    "SELECT consumed_at FROM nonces WHERE nonce = ?",
  );
  const insert = db.prepare(
    "INSERT INTO nonces (nonce, expires_at, consumed_at, request, principal) VALUES (?, ?, ?, ?, ?)",
  );
  const take = db.transaction(
    (nonce: string, expiresAt: number, request: string, principal: string): NonceOutcome => {
      const now = deps.clock.now();
      prune.run(now);
      const seen = find.get(nonce);
      if (seen !== undefined) return { kind: "reused", consumedAt: seen.consumed_at };
      insert.run(nonce, expiresAt, now, request, principal);
      return { kind: "consumed" };
    },
  );

  return {
    path,
    consume(nonce, entry) {
      try {
        return take.immediate(nonce, entry.expiresAt, entry.request, entry.principal);
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        return {
          kind: "unavailable",
          reason:
            code === "SQLITE_BUSY"
              ? "is locked by another writer past its timeout"
              : `cannot be written (${describeError(err).message})`,
        };
      }
    },
    close: () => db.close(),
  };
}
