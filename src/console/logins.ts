import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Clock } from "../core/index.js";

/** A fresh unguessable token: 32 random bytes, base64url. */
export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

/** Compare two secrets in time independent of where they differ (and of their lengths). */
export function sameSecret(a: string, b: string): boolean {
  const da = createHash("sha256").update(a).digest();
  const db = createHash("sha256").update(b).digest();
  return timingSafeEqual(da, db) && a.length === b.length;
}

/**
 * Logins and pending logins are kept under the SHA-256 of their token, so
 * looking one up compares digests, never the secret a request sent.
 */
export function keyOf(token: string): string {
  return createHash("sha256").update(token).digest("base64url");
}

/** A logged-in operator. */
export interface ConsoleLogin {
  /** The passkey that logged in. */
  passkey: string;
  credentialId: string;
  /** The synchronizer token every state-changing request must carry. */
  csrf: string;
  /** Milliseconds on the store's clock: monotonic in memory, epoch in the database. */
  createdMs: number;
  lastSeenMs: number;
}

/** How long a login lives at most, however busy: a multiple of the idle limit, within a day. */
export function absoluteLifetimeSeconds(idleSeconds: number): number {
  return Math.min(86400, idleSeconds * 8);
}

/** Open logins kept at most; a new one pushes out the oldest. */
export const MAX_LOGINS = 64;

/**
 * The console's logins, each under the SHA-256 of its cookie: in this
 * process's memory for one relay (a restart logs everyone out), or in the
 * database several relays share (pg-logins.ts), so a login made through one
 * relay holds on every relay. A login ends after its idle limit without a
 * request, at its absolute limit however busy, or when it is ended. A method
 * rejects with {@link LoginStoreError} when the store cannot be used. The
 * ceremonies on the way to a login stay in memory (pending-logins.ts).
 */
export interface LoginStore {
  create(passkey: string, credentialId: string): Promise<{ id: string; login: ConsoleLogin }>;
  /** The live login under `id`, its idle clock restarted; null when unknown or expired. */
  use(id: string): Promise<ConsoleLogin | null>;
  end(id: string): Promise<void>;
  /** Live logins. */
  count(): Promise<number>;
}

/** The store of logins cannot be used now (its database is down): the console answers 503. */
export class LoginStoreError extends Error {
  override name = "LoginStoreError";
}

/** The in-memory logins of one relay; idle and absolute limits run on the monotonic clock. */
export function createLoginStore(idleSeconds: number, clock: Clock): LoginStore {
  const logins = new Map<string, ConsoleLogin>();
  const idleMs = idleSeconds * 1000;
  const absoluteMs = absoluteLifetimeSeconds(idleSeconds) * 1000;

  const expired = (s: ConsoleLogin, now: number) =>
    now - s.lastSeenMs >= idleMs || now - s.createdMs >= absoluteMs;

  function sweep(now: number): void {
    for (const [key, s] of logins) if (expired(s, now)) logins.delete(key);
  }

  function evictOldest<T>(map: Map<string, T>, max: number): void {
    while (map.size >= max) {
      const first = map.keys().next();
      if (first.done) return;
      map.delete(first.value);
    }
  }

  return {
    async create(passkey, credentialId) {
      const now = clock.monotonic();
      sweep(now);
      evictOldest(logins, MAX_LOGINS);
      const id = newToken();
      const login = { passkey, credentialId, csrf: newToken(), createdMs: now, lastSeenMs: now };
      logins.set(keyOf(id), login);
      return { id, login };
    },
    async use(id) {
      const now = clock.monotonic();
      const login = logins.get(keyOf(id));
      if (!login) return null;
      if (expired(login, now)) {
        logins.delete(keyOf(id));
        return null;
      }
      login.lastSeenMs = now;
      return login;
    },
    end: async (id) => void logins.delete(keyOf(id)),
    async count() {
      sweep(clock.monotonic());
      return logins.size;
    },
  };
}

/**
 * Login attempts allowed in a sliding minute, for the whole console: a
 * passkey cannot be guessed, but each attempt costs a signature check and
 * a file write, and a burst of them is worth refusing and noticing.
 */
export interface LoginLimiter {
  /** Count an attempt; the seconds to wait when over the limit, else 0. */
  attempt(): number;
}

export function createLoginLimiter(perMinute: number, clock: Clock): LoginLimiter {
  const times: number[] = [];
  return {
    attempt() {
      const now = clock.monotonic();
      while (times.length > 0 && now - (times[0] ?? 0) >= 60_000) times.shift();
      if (times.length >= perMinute)
        return Math.max(1, Math.ceil((60_000 - (now - (times[0] ?? now))) / 1000));
      times.push(now);
      return 0;
    },
  };
}
