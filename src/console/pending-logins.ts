import type { Clock } from "../core/index.js";
import { keyOf, newToken } from "./logins.js";

/** A browser on the way to logging in: its CSRF token, and the challenge it was given. */
interface PendingLogin {
  csrf: string;
  challenge: string | null;
  createdMs: number;
  /** The client address that opened the login page. */
  address: string;
  /** The browser came back with the login's cookie: it holds the page, so a flood cannot evict it. */
  claimed: boolean;
}

/** A login ceremony has this long to finish. */
const LOGIN_TTL_MS = 5 * 60 * 1000;
/** New pending logins one client address may open in a sliding minute. */
const STARTS_PER_MINUTE = 20;
/** Pending logins of one address no browser came back for; a newer one evicts that address's oldest. */
const UNCLAIMED_PER_ADDRESS = 32;
/** Unclaimed pending logins of all addresses together. */
const MAX_UNCLAIMED = 256;
/**
 * Claimed pending logins (a browser holds each one's cookie and page): more than one address can
 * claim within a login's lifetime ({@link STARTS_PER_MINUTE} for 5 minutes), so one address alone
 * cannot evict another's.
 */
const MAX_CLAIMED = 128;
/** Addresses whose recent starts are remembered for the rate limit. */
const MAX_ADDRESSES = 4096;
const MINUTE_MS = 60_000;

/**
 * The login ceremonies in progress, in memory, also where several relays
 * share their logins in a database: a ceremony lasts the few seconds between
 * the login page and the authenticator's answer, and its challenge is single
 * use, so it is not worth a round trip to the database on every request. Its
 * three requests must reach the relay that started it (the load balancer keeps
 * a browser on one relay by its login cookie); on another relay the browser is
 * told to reload and starts again there. The login it ends in is shared
 * (logins.ts). Opening the login page
 * starts one (its cookie and CSRF token) unless the browser already holds
 * a live one, which is then shown again. Each client address may start
 * {@link STARTS_PER_MINUTE} a minute and keep {@link UNCLAIMED_PER_ADDRESS}
 * that no browser came back for; past the bounds the oldest unclaimed one
 * goes. A pending login whose cookie came back (the page loading its
 * scripts, the button's request) is claimed and never evicted by
 * unclaimed ones, so a flood of login pages, from any address, cannot push
 * out the login an operator is in the middle of.
 */
export interface PendingLogins {
  /** A new pending login for `address`, or the seconds to wait when that address started too many. */
  start(address: string): { id: string; login: PendingLogin } | { retryAfter: number };
  /** The live pending login under `id`, claimed by this use; null when unknown or expired. */
  get(id: string): PendingLogin | null;
  end(id: string): void;
  readonly size: number;
}

export function createPendingLogins(clock: Clock): PendingLogins {
  const logins = new Map<string, PendingLogin>();
  const starts = new Map<string, number[]>();

  function sweep(now: number): void {
    for (const [key, login] of logins) if (now - login.createdMs >= LOGIN_TTL_MS) logins.delete(key);
  }

  /** Drop the oldest login that `pick` selects (insertion order is age order). */
  function evictOldest(pick: (login: PendingLogin) => boolean): void {
    for (const [key, login] of logins) {
      if (pick(login)) {
        logins.delete(key);
        return;
      }
    }
  }

  function count(pick: (login: PendingLogin) => boolean): number {
    let n = 0;
    for (const login of logins.values()) if (pick(login)) n++;
    return n;
  }

  /** Seconds to wait before `address` may start another, or 0 (and the start is counted). */
  function rateLimit(address: string, now: number): number {
    const times = (starts.get(address) ?? []).filter((t) => now - t < MINUTE_MS);
    if (times.length >= STARTS_PER_MINUTE) {
      starts.set(address, times);
      return Math.max(1, Math.ceil((MINUTE_MS - (now - (times[0] ?? now))) / 1000));
    }
    times.push(now);
    starts.delete(address);
    starts.set(address, times);
    if (starts.size > MAX_ADDRESSES) {
      for (const [key, list] of starts) if (now - (list.at(-1) ?? 0) >= MINUTE_MS) starts.delete(key);
      while (starts.size > MAX_ADDRESSES) {
        const oldest = starts.keys().next();
        if (oldest.done) break;
        starts.delete(oldest.value);
      }
    }
    return 0;
  }

  return {
    start(address) {
      const now = clock.monotonic();
      sweep(now);
      const wait = rateLimit(address, now);
      if (wait > 0) return { retryAfter: wait };
      const unclaimedHere = (l: PendingLogin) => !l.claimed && l.address === address;
      if (count(unclaimedHere) >= UNCLAIMED_PER_ADDRESS) evictOldest(unclaimedHere);
      if (count((l) => !l.claimed) >= MAX_UNCLAIMED) evictOldest((l) => !l.claimed);
      const id = newToken();
      const login: PendingLogin = {
        csrf: newToken(),
        challenge: null,
        createdMs: now,
        address,
        claimed: false,
      };
      logins.set(keyOf(id), login);
      return { id, login };
    },
    get(id) {
      const key = keyOf(id);
      const login = logins.get(key);
      if (!login) return null;
      if (clock.monotonic() - login.createdMs >= LOGIN_TTL_MS) {
        logins.delete(key);
        return null;
      }
      if (!login.claimed) {
        if (count((l) => l.claimed) >= MAX_CLAIMED) evictOldest((l) => l.claimed);
        login.claimed = true;
      }
      return login;
    },
    end: (id) => void logins.delete(keyOf(id)),
    get size() {
      return logins.size;
    },
  };
}
