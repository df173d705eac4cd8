import type { IncomingMessage } from "node:http";
import { type Clock, isLoopbackHost } from "../core/index.js";

export interface ThrottleConfig {
  /** Failures a source may make within one window before it is refused. */
  maxFailures: number;
  windowMs: number;
  /** Sources tracked at once; the oldest entry is forgotten first, so memory stays bounded. */
  maxSources: number;
}

export const DEFAULT_THROTTLE: ThrottleConfig = { maxFailures: 20, windowMs: 60_000, maxSources: 10_000 };

export interface FailureThrottle {
  /** Milliseconds this source must wait before presenting credentials again; 0 when it may. */
  blockedFor(source: string): number;
  /** Count one failed authentication (bad token, bad client secret, bad grant) from this source. */
  fail(source: string): void;
}

interface Window {
  start: number;
  failures: number;
}

/**
 * A throttle on repeated authentication failures, per source: after
 * `maxFailures` failures in a window, the source's credentialed requests are
 * refused with 429 until the window ends. Guessing a 384-bit token is hopeless
 * anyway; this keeps a misbehaving client from flooding the state files and
 * the logs, and caps what an online guesser gets.
 */
export function createFailureThrottle(config: ThrottleConfig, clock: Clock): FailureThrottle {
  const windows = new Map<string, Window>();
  const current = (source: string, now: number): Window | undefined => {
    const entry = windows.get(source);
    if (entry && now - entry.start >= config.windowMs) {
      windows.delete(source);
      return undefined;
    }
    return entry;
  };
  return {
    blockedFor(source) {
      const now = clock.monotonic();
      const entry = current(source, now);
      if (!entry || entry.failures < config.maxFailures) return 0;
      return Math.max(1, entry.start + config.windowMs - now);
    },
    fail(source) {
      const now = clock.monotonic();
      const entry = current(source, now);
      if (entry) {
        entry.failures++;
        return;
      }
      windows.set(source, { start: now, failures: 1 });
      if (windows.size > config.maxSources) {
        const oldest = windows.keys().next().value;
        if (oldest !== undefined) windows.delete(oldest);
      }
    },
  };
}

/**
 * Whom to charge a failure to. Behind a reverse proxy on the same host every
 * peer is loopback, so the proxy's own appended X-Forwarded-For entry (the
 * last one) names the client; from any other peer the header is ignored,
 * since the client could have written it.
 */
export function sourceOf(req: IncomingMessage): string {
  const peer = req.socket.remoteAddress ?? "";
  if (!isLoopbackHost(peer)) return peer;
  const forwarded = req.headers["x-forwarded-for"];
  const text = Array.isArray(forwarded) ? forwarded.join(",") : (forwarded ?? "");
  const last = text.split(",").at(-1)?.trim() ?? "";
  return last !== "" && last.length <= 64 ? last : peer;
}
