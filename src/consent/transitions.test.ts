import { describe, expect, it } from "vitest";
import { type RequestEvent, transition } from "./transitions.js";
import type { ConsentRequest } from "./types.js";

const LIVE = 1_000;
const AFTER = 2_000;

/** Every status against every event, before and at the expiry: the whole table of a request's life. */
const TABLE: Array<[ConsentRequest["status"], RequestEvent, string, string]> = [
  // status, event, before expiry, at or after expiry
  ["pending", "approve", "approved", "expired"],
  ["pending", "deny", "denied", "expired"],
  ["pending", "consume", "not-approved", "not-approved"],
  ["approved", "approve", "approved", "expired"],
  ["approved", "deny", "denied", "expired"],
  ["approved", "consume", "consumed", "expired"],
  ["denied", "approve", "not-pending", "not-pending"],
  ["denied", "deny", "not-pending", "not-pending"],
  ["denied", "consume", "not-approved", "not-approved"],
  ["consumed", "approve", "consumed", "consumed"],
  ["consumed", "deny", "consumed", "consumed"],
  ["consumed", "consume", "consumed", "consumed"],
];

describe("the life of a consent request", () => {
  it.each(TABLE)("%s + %s: %s before its expiry, %s at it", (status, event, before, after) => {
    const request = { id: "0123456789", status, expiresAt: AFTER };
    for (const [now, want] of [
      [LIVE, before],
      [AFTER, after],
    ] as const) {
      const move = transition(request, event, now);
      expect(move.ok ? move.value : move.error.failure).toBe(want);
      if (!move.ok) expect(move.error.detail).toContain("0123456789");
    }
  });

  it("never moves a request out of consumed, nor back to pending", () => {
    for (const [status, event] of TABLE.map(([s, e]) => [s, e] as const)) {
      const move = transition({ id: "x", status, expiresAt: AFTER }, event, LIVE);
      if (move.ok) expect(move.value).not.toBe("pending");
      if (status === "consumed") expect(move.ok).toBe(false);
    }
  });
});
