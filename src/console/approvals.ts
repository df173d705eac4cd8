import type { Context, Hono } from "hono";
import {
  type ApprovalVerifier,
  actDigest,
  type ConsentRequest,
  type ConsentStore,
  describeAct,
  passkeyChallenge,
  requestPayload,
} from "../consent/index.js";
import type { Clock, Logger } from "../core/index.js";
import {
  approvalBodySchema,
  approvalProblem,
  denialBodySchema,
  denialProblem,
  optionsBodySchema,
} from "./approvals-schema.js";
import { decodeBody, readJson } from "./body.js";
import { refuse } from "./http-rules.js";
import { type ConsoleLogin, sameSecret } from "./logins.js";
import { approvalsPage, type Nav } from "./pages.js";
import type { PasskeyFile } from "./passkey-file.js";

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
  operator(c: Context): Promise<{ id: string; login: ConsoleLogin } | null>;
  sentCsrf(c: Context): Promise<string>;
  /** The header's navigation (the pending count); none when absent. */
  nav?(): Promise<Nav>;
  clock: Clock;
  logger: Logger;
}

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
  /** The act's digest (`consent show` prints the same): the page sends it back with its approval. */
  digest: string;
  /** Why this row cannot be approved as shown (its stored payload or digest is not its act's), or null. */
  problem: string | null;
  /** The consent session (MCP session) that asked, and its client: the page counts requests per session. */
  session: string;
  client: string;
}

/** The bytes a passkey signs for a request: rebuilt from the act shown, never read from the row. */
function payloadOf(store: ConsentStore, request: ConsentRequest): string {
  return requestPayload(request, store.instanceId);
}

/**
 * Why the row does not hold together, or null: the relay's own account can
 * write the consent database, and a row whose payload or digest is not its
 * act's would have the operator sign something other than what is shown.
 */
function rowProblem(store: ConsentStore, request: ConsentRequest): string | null {
  if (request.actDigest !== actDigest(request.act) || request.payload !== payloadOf(store, request))
    return "its stored payload is not the act shown (the consent database was edited)";
  return null;
}

/** Pending, unexpired requests: the count the navigation shows, or null when the store cannot be read. */
export async function pendingCount(store: ConsentStore, now: number): Promise<number | null> {
  const listed = await store.listRequests();
  return listed.ok ? listed.value.filter((r) => r.status === "pending" && r.expiresAt > now).length : null;
}

function listed(store: ConsentStore, request: ConsentRequest, now: number): ListedRequest {
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
    digest: actDigest(request.act),
    problem: rowProblem(store, request),
    session: request.session,
    client: request.clientId,
  };
}

/** The store's refusal as the operator reads it. */
function storeRefusal(c: Context, failure: string, detail: string) {
  const status =
    failure === "not-found" ? 404 : failure === "locked" || failure === "unavailable" ? 503 : 409;
  return refuse(c, status, `The consent store refused: ${detail}`);
}

/**
 * The approval of consent requests with a passkey (docs/console.md,
 * "Approvals"): the page, its list, the WebAuthn options whose challenge is
 * the digest of the request's payload, and approve and deny. An approval is
 * checked with the gate's own verifier before it is stored, so the console
 * never stores what the gate would refuse; the gate checks it again anyway.
 */
export function registerApprovals(app: Hono, deps: ApprovalsDeps): void {
  app.get("/console/approvals", async (c) => {
    const who = await deps.operator(c);
    if (!who) return c.redirect("/console/login", 303);
    return c.html(approvalsPage(who.login.csrf, who.login.passkey, (await deps.nav?.()) ?? {}));
  });
  app.get("/console/approvals/list", (c) => listRoute(deps, c));
  app.post("/console/approvals/:id/options", (c) => optionsRoute(deps, c));
  app.post("/console/approvals/:id/approve", (c) => approveRoute(deps, c));
  app.post("/console/approvals/:id/deny", (c) => denyRoute(deps, c));
}

/** The operator of a POST whose CSRF token matches their login, or the refusal. */
async function postingOperator(deps: ApprovalsDeps, c: Context) {
  const who = await deps.operator(c);
  if (!who) return { refusal: refuse(c, 401, "Not logged in; log in again") };
  if (!sameSecret(await deps.sentCsrf(c), who.login.csrf))
    return { refusal: refuse(c, 403, "Invalid CSRF token") };
  return { login: who.login };
}

/** The pending request named in the path, or the refusal. */
async function pendingRequest(
  deps: ApprovalsDeps,
  c: Context,
): Promise<{ request: ConsentRequest } | { refusal: Response }> {
  const id = c.req.param("id") ?? "";
  if (!REQUEST_ID.test(id)) return { refusal: refuse(c, 400, "Malformed request id") };
  const got = await deps.channel.store.getRequest(id);
  if (!got.ok) return { refusal: storeRefusal(c, got.error.failure, got.error.detail) };
  const request = got.value;
  if (request.status !== "pending")
    return { refusal: refuse(c, 409, `Request ${id} is ${request.status}, not pending`) };
  if (request.expiresAt <= deps.clock.now()) return { refusal: refuse(c, 409, `Request ${id} expired`) };
  return { request };
}

/**
 * The payload to sign for the act the page showed, whose digest it sends back; the refusal when
 * the row holds another act now (rewritten since the page was drawn) or does not hold together.
 */
function asShown(
  deps: ApprovalsDeps,
  c: Context,
  request: ConsentRequest,
  shown: string,
): { payload: string } | { refusal: Response } {
  const { store } = deps.channel;
  const current = actDigest(request.act);
  if (current !== shown) {
    deps.logger.warn(
      { request: request.id, shown, current },
      "console approval of an act other than the one shown refused",
    );
    return {
      refusal: refuse(
        c,
        409,
        `Request ${request.id} now holds another act than the one shown (digest ${current.slice(0, 16)}…, shown ${shown.slice(0, 16)}…); nothing was approved. Reload the page and read the act again`,
      ),
    };
  }
  const problem = rowProblem(store, request);
  if (problem) return { refusal: refuse(c, 409, `Request ${request.id}: ${problem}; nothing was approved`) };
  return { payload: payloadOf(store, request) };
}

async function listRoute(deps: ApprovalsDeps, c: Context): Promise<Response> {
  const { store } = deps.channel;
  if (!(await deps.operator(c))) return refuse(c, 401, "Not logged in; log in again");
  const requests = await store.listRequests();
  if (!requests.ok) return storeRefusal(c, requests.error.failure, requests.error.detail);
  const now = deps.clock.now();
  const pending = requests.value.filter((r) => r.status === "pending" && r.expiresAt > now);
  return c.json({ requests: pending.map((r) => listed(store, r, now)) });
}

async function optionsRoute(deps: ApprovalsDeps, c: Context): Promise<Response> {
  const who = await postingOperator(deps, c);
  if ("refusal" in who) return who.refusal;
  const pending = await pendingRequest(deps, c);
  if ("refusal" in pending) return pending.refusal;
  const body = await readJson(c);
  if (!body.ok) return refuse(c, 400, "Expected a JSON body with the digest shown");
  const sent = decodeBody(optionsBodySchema, body.value);
  if (!sent.ok) return refuse(c, 400, approvalProblem(sent.error));
  const shown = asShown(deps, c, pending.request, sent.value.digest);
  if ("refusal" in shown) return shown.refusal;
  const keys = deps.passkeys.current();
  const key = keys.ok ? keys.value.find((k) => k.credentialId === who.login.credentialId) : undefined;
  if (!key) return refuse(c, 403, "Your passkey is no longer enrolled");
  // Only the logged-in operator's passkey may answer, and its signature is over the payload's digest.
  return c.json({
    challenge: passkeyChallenge(shown.payload),
    rpId: deps.rpId,
    allowCredentials: [{ id: key.credentialId, type: "public-key", transports: key.transports }],
    userVerification: "required",
    timeout: ASSERTION_TIMEOUT_MS,
  });
}

async function approveRoute(deps: ApprovalsDeps, c: Context): Promise<Response> {
  const { channel, clock, logger } = deps;
  const who = await postingOperator(deps, c);
  if ("refusal" in who) return who.refusal;
  const pending = await pendingRequest(deps, c);
  if ("refusal" in pending) return pending.refusal;
  const body = await readJson(c);
  if (!body.ok) return refuse(c, 400, "Expected a JSON body with the digest shown and the assertion");
  const sent = decodeBody(approvalBodySchema, body.value);
  if (!sent.ok) return refuse(c, 400, approvalProblem(sent.error));
  const shown = asShown(deps, c, pending.request, sent.value.digest);
  if ("refusal" in shown) return shown.refusal;
  const { assertion } = sent.value;
  if (assertion.id !== who.login.credentialId) {
    return refuse(c, 403, "The assertion was made with another passkey than the one logged in");
  }
  const approval = {
    channel: "passkey" as const,
    proof: proofOf(assertion),
    claimedSigner: who.login.passkey,
    at: clock.now(),
  };
  const request = pending.request;
  // Checked against the payload of the act shown, which the row was just found to hold.
  const verified = await channel.verifier.verify(approval, shown.payload, approval.at);
  if (!verified.ok) {
    logger.warn(
      { request: request.id, passkey: who.login.passkey, reason: verified.error },
      "console approval refused",
    );
    return refuse(c, 403, `Approval refused: ${verified.error}`);
  }
  const stored = await channel.store.approve(request.id, {
    ...approval,
    claimedSigner: verified.value.signer,
  });
  if (!stored.ok) return storeRefusal(c, stored.error.failure, stored.error.detail);
  logger.info(
    { request: request.id, passkey: verified.value.signer },
    "consent request approved in the console",
  );
  return c.json({ ok: true, id: request.id, status: "approved", by: verified.value.signer });
}

/** The passkey assertion as the proof the store keeps and the verifier reads. */
function proofOf(assertion: {
  id: string;
  response: {
    authenticatorData: string;
    clientDataJSON: string;
    signature: string;
    userHandle?: string | null;
  };
}): string {
  const { id, response } = assertion;
  return JSON.stringify({
    credential_id: id,
    authenticator_data: response.authenticatorData,
    client_data_json: response.clientDataJSON,
    signature: response.signature,
    user_handle: response.userHandle || null,
  });
}

async function denyRoute(deps: ApprovalsDeps, c: Context): Promise<Response> {
  const who = await postingOperator(deps, c);
  if ("refusal" in who) return who.refusal;
  const pending = await pendingRequest(deps, c);
  if ("refusal" in pending) return pending.refusal;
  const body = await readJson(c);
  if (!body.ok) return refuse(c, 400, "Expected a JSON body with a reason");
  const sent = decodeBody(denialBodySchema, body.value);
  if (!sent.ok) return refuse(c, 400, denialProblem(sent.error));
  const reason = sent.value.reason;
  const by = `${who.login.passkey} (console)`;
  const stored = await deps.channel.store.deny(pending.request.id, by, reason.trim());
  if (!stored.ok) return storeRefusal(c, stored.error.failure, stored.error.detail);
  deps.logger.info(
    { request: pending.request.id, passkey: who.login.passkey },
    "consent request denied in the console",
  );
  return c.json({ ok: true, id: pending.request.id, status: "denied", by });
}
