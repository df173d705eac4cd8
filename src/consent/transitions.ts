import type { ConsentRequest, StoreFailure } from "./types.js";

/** What can happen to a request: a human approves or denies it, a call consumes its approval. */
export type RequestEvent = "approve" | "deny" | "consume";

/** The status a request moves to, or the rule that refuses the move. */
export type Transition =
  | { ok: true; to: ConsentRequest["status"] }
  | { ok: false; failure: StoreFailure; detail: string };

/**
 * The rules of a request's life (docs/adr/0024-consent-store-and-approval-lifetime.md), pure, so
 * every store (SQLite today, PostgreSQL for several relays) applies exactly these. A request is
 * `pending`, then `approved` or `denied`, and an approved one `consumed`, once; nothing happens
 * to it at or after its expiry.
 * - approve: a pending request, or an approved one not yet used (its proof is replaced: the
 *   channels replace only one that does not verify);
 * - deny: a pending request, or an approved one not yet used (the operator withdraws it);
 * - consume: an approved request.
 */
export function transition(
  request: Pick<ConsentRequest, "id" | "status" | "expiresAt">,
  event: RequestEvent,
  now: number,
): Transition {
  const { id, status } = request;
  const refuse = (failure: StoreFailure, detail: string): Transition => ({ ok: false, failure, detail });
  if (status === "consumed") return refuse("consumed", `request ${id} was already used`);
  switch (event) {
    case "approve":
      if (status !== "pending" && status !== "approved")
        return refuse("not-pending", `request ${id} is ${status}, not pending`);
      if (now >= request.expiresAt) return refuse("expired", `request ${id} expired`);
      return { ok: true, to: "approved" };
    case "deny":
      if (status === "denied") return refuse("not-pending", `request ${id} is already denied`);
      if (now >= request.expiresAt) return refuse("expired", `request ${id} expired`);
      return { ok: true, to: "denied" };
    case "consume":
      if (status !== "approved") return refuse("not-approved", `request ${id} is ${status}, not approved`);
      if (now >= request.expiresAt) return refuse("expired", `the approval of request ${id} expired`);
      return { ok: true, to: "consumed" };
  }
}
