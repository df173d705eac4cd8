import type { Context, Hono } from "hono";
import {
  type ApprovalVerifier,
  type ConsentRequest,
  type ConsentStore,
  describeAct,
  passkeyChallenge,
} from "../consent/index.js";
import type { Clock, Logger } from "../core/index.js";
import { refuse } from "./http-rules.js";
import { approvalsPage } from "./pages.js";
import type { PasskeyFile } from "./passkey-file.js";
import { type ConsoleSession, sameSecret } from "./sessions.js";

/** The store and verifier the relay's consent gate uses: approvals here are the gate's own. */
export interface ApprovalsChannel {
  store: ConsentStore;
  /** The gate's passkey verifier: same passkeys file, relying party, origin and counters file. */
  verifier: ApprovalVerifier;
}

/** What the approval routes borrow from the console app: who is logged in, and the CSRF token sent. */
export interface ApprovalsDeps {
  channel: ApprovalsChannel;
  rpId: string;
  passkeys: PasskeyFile;
  operator(c: Context): { id: string; session: ConsoleSession } | null;
  sentCsrf(c: Context): Promise<string>;
  clock: Clock;
  logger: Logger;
}

/** A deny reason is one line a human reads in the refusal; longer text is refused, not cut. */
const MAX_REASON_CHARS = 500;
/** Request ids are short tokens; anything else is refused before the store is asked. */
const REQUEST_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** How long the browser waits for the authenticator. */
const ASSERTION_TIMEOUT_MS = 120_000;

/** One pending request as the page shows it. */
interface ListedRequest {
  id: string;
  tool: string;
  tier: number;
  created: string;
  expires: string;
  expiresInSeconds: number;
  /** describeAct's text, the same the MCP client and `relay-shell consent show` print. */
  description: string;
}

function listed(request: ConsentRequest, now: number): ListedRequest {
  const expiresInSeconds = Math.max(0, Math.ceil((request.expiresAt - now) / 1000));
  return {
    id: request.id,
    tool: request.act.tool,
    tier: request.act.tier,
    created: new Date(request.createdAt).toISOString(),
    expires: new Date(request.expiresAt).toISOString(),
    expiresInSeconds,
    description: describeAct({
      id: request.id,
      act: request.act,
      basis: request.basis,
      expiresInSeconds,
      session: request.session,
      clientId: request.clientId,
    }),
  };
}

/** The store's refusal as the operator reads it. */
function storeRefusal(c: Context, failure: string, detail: string) {
  const status =
    failure === "not-found" ? 404 : failure === "locked" || failure === "unavailable" ? 503 : 409;
  return refuse(c, status, `The consent store refused: ${detail}`);
}

/** C0 and C1 controls, DEL and the line and paragraph separators. */
function isControl(ch: string): boolean {
  const cp = ch.codePointAt(0) ?? 0;
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp === 0x2028 || cp === 0x2029;
}

function isText(value: unknown): value is string {
  return typeof value === "string" && value !== "";
}

/**
 * The approval of consent requests with a passkey (docs/console.md,
 * "Approvals"): the page, its list, the WebAuthn options whose challenge is
 * the digest of the request's payload, and approve and deny. An approval is
 * checked with the gate's own verifier before it is stored, so the console
 * never stores what the gate would refuse; the gate checks it again anyway.
 */
export function registerApprovals(app: Hono, deps: ApprovalsDeps): void {
  const { channel, clock, logger } = deps;

  /** The operator of a POST whose CSRF token matches their login, or the refusal. */
  async function postingOperator(c: Context) {
    const who = deps.operator(c);
    if (!who) return { refusal: refuse(c, 401, "Not logged in; log in again") };
    if (!sameSecret(await deps.sentCsrf(c), who.session.csrf))
      return { refusal: refuse(c, 403, "Invalid CSRF token") };
    return { session: who.session };
  }

  /** The pending request named in the path, or the refusal. */
  function pendingRequest(c: Context): { request: ConsentRequest } | { refusal: Response } {
    const id = c.req.param("id") ?? "";
    if (!REQUEST_ID.test(id)) return { refusal: refuse(c, 400, "Malformed request id") };
    const got = channel.store.getRequest(id);
    if (!got.ok) return { refusal: storeRefusal(c, got.failure, got.detail) };
    const request = got.value;
    if (request.status !== "pending")
      return { refusal: refuse(c, 409, `Request ${id} is ${request.status}, not pending`) };
    if (request.expiresAt <= clock.now()) return { refusal: refuse(c, 409, `Request ${id} expired`) };
    return { request };
  }

  app.get("/console/approvals", (c) => {
    const who = deps.operator(c);
    if (!who) return c.redirect("/console/login", 303);
    return c.html(approvalsPage(who.session.csrf, who.session.passkey));
  });

  app.get("/console/approvals/list", (c) => {
    if (!deps.operator(c)) return refuse(c, 401, "Not logged in; log in again");
    const requests = channel.store.listRequests();
    if (!requests.ok) return storeRefusal(c, requests.failure, requests.detail);
    const now = clock.now();
    const pending = requests.value.filter((r) => r.status === "pending" && r.expiresAt > now);
    return c.json({ requests: pending.map((r) => listed(r, now)) });
  });

  app.post("/console/approvals/:id/options", async (c) => {
    const who = await postingOperator(c);
    if ("refusal" in who) return who.refusal;
    const pending = pendingRequest(c);
    if ("refusal" in pending) return pending.refusal;
    const keys = deps.passkeys.current();
    const key = keys.ok ? keys.keys.find((k) => k.credentialId === who.session.credentialId) : undefined;
    if (!key) return refuse(c, 403, "Your passkey is no longer enrolled");
    // Only the logged-in operator's passkey may answer, and its signature is over the payload's digest.
    return c.json({
      challenge: passkeyChallenge(pending.request.payload),
      rpId: deps.rpId,
      allowCredentials: [{ id: key.credentialId, type: "public-key", transports: key.transports }],
      userVerification: "required",
      timeout: ASSERTION_TIMEOUT_MS,
    });
  });

  app.post("/console/approvals/:id/approve", async (c) => {
    const who = await postingOperator(c);
    if ("refusal" in who) return who.refusal;
    const pending = pendingRequest(c);
    if ("refusal" in pending) return pending.refusal;
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return refuse(c, 400, "Expected a JSON WebAuthn response");
    }
    const response = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
    const inner = (
      typeof response.response === "object" && response.response !== null ? response.response : {}
    ) as Record<string, unknown>;
    if (
      !isText(response.id) ||
      !isText(inner.authenticatorData) ||
      !isText(inner.clientDataJSON) ||
      !isText(inner.signature)
    ) {
      return refuse(c, 400, "Expected a JSON WebAuthn response");
    }
    if (response.id !== who.session.credentialId) {
      return refuse(c, 403, "The assertion was made with another passkey than the one logged in");
    }
    const proof = JSON.stringify({
      credential_id: response.id,
      authenticator_data: inner.authenticatorData,
      client_data_json: inner.clientDataJSON,
      signature: inner.signature,
      user_handle: isText(inner.userHandle) ? inner.userHandle : null,
    });
    const approval = {
      channel: "passkey" as const,
      proof,
      claimedSigner: who.session.passkey,
      at: clock.now(),
    };
    const request = pending.request;
    const verified = channel.verifier.verify(approval, request.payload, approval.at);
    if (!verified.ok) {
      logger.warn(
        { request: request.id, passkey: who.session.passkey, reason: verified.reason },
        "console approval refused",
      );
      return refuse(c, 403, `Approval refused: ${verified.reason}`);
    }
    const stored = channel.store.approve(request.id, { ...approval, claimedSigner: verified.signer });
    if (!stored.ok) return storeRefusal(c, stored.failure, stored.detail);
    logger.info({ request: request.id, passkey: verified.signer }, "consent request approved in the console");
    return c.json({ ok: true, id: request.id, status: "approved", by: verified.signer });
  });

  app.post("/console/approvals/:id/deny", async (c) => {
    const who = await postingOperator(c);
    if ("refusal" in who) return who.refusal;
    const pending = pendingRequest(c);
    if ("refusal" in pending) return pending.refusal;
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return refuse(c, 400, "Expected a JSON body with a reason");
    }
    const reason =
      typeof body === "object" && body !== null ? (body as { reason?: unknown }).reason : undefined;
    if (typeof reason !== "string" || reason.trim() === "")
      return refuse(c, 400, "Give a reason for the denial");
    // The reason is shown to the MCP client and on the operator's terminal: one line, no controls.
    if (Array.from(reason).some(isControl))
      return refuse(c, 400, "The reason must be one line of text without control characters");
    if (Array.from(reason).length > MAX_REASON_CHARS)
      return refuse(c, 400, `The reason is over ${MAX_REASON_CHARS} characters`);
    const by = `${who.session.passkey} (console)`;
    const stored = channel.store.deny(pending.request.id, by, reason.trim());
    if (!stored.ok) return storeRefusal(c, stored.failure, stored.detail);
    logger.info(
      { request: pending.request.id, passkey: who.session.passkey },
      "consent request denied in the console",
    );
    return c.json({ ok: true, id: pending.request.id, status: "denied", by });
  });
}
