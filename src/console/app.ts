import type { IncomingMessage } from "node:http";
import {
  generateAuthenticationOptions,
  verifyAuthenticationResponse,
  type WebAuthnCredential,
} from "@simplewebauthn/server";
import { isoBase64URL } from "@simplewebauthn/server/helpers";
import { type Context, Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { AuditLog } from "../audit/index.js";
import type { PasskeyCounters } from "../consent/index.js";
import type { Clock, Logger } from "../core/index.js";
import { type ApprovalsChannel, pendingCount, registerApprovals } from "./approvals.js";
import type { Asset } from "./assets.js";
import { registerAuditView } from "./audit-view.js";
import { boundedBody, decodeBody, problemText, readJson } from "./body.js";
import { guardRequests, refuse, securityHeaders } from "./http-rules.js";
import {
  type ConsoleLogin,
  createLoginLimiter,
  createLoginStore,
  type LoginStore,
  LoginStoreError,
  sameSecret,
} from "./logins.js";
import { loginPage, type Nav, type Posture, posturePage } from "./pages.js";
import type { PasskeyFile } from "./passkey-file.js";
import { createPendingLogins } from "./pending-logins.js";
import { type ConsoleSessions, registerSessionsView } from "./sessions-view.js";
import { authenticationResponseSchema } from "./webauthn-schema.js";

const SESSION_COOKIE = "relay_console";
const LOGIN_COOKIE = "relay_console_login";
/** Every console body is a small JSON object or form; a WebAuthn response is a few KiB. */
const MAX_BODY_BYTES = 64 * 1024;
/** Verified login attempts per minute, for the whole console. */
const LOGINS_PER_MINUTE = 10;
/** Challenges handed out per minute: each holds a pending login. */
const OPTIONS_PER_MINUTE = 30;

/** The address of the client's connection ("unknown" when the request did not come over a socket). */
function clientAddress(c: Context): string {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress ?? "unknown";
}

export interface ConsoleAppOptions {
  /** The one origin the console is reached under (and passkeys are bound to). */
  origin: string;
  rpId: string;
  sessionTtlSeconds: number;
  passkeys: PasskeyFile;
  /** The passkeys' sign counters: the same store consent's passkey verifier counts in. */
  counters: PasskeyCounters;
  /** Where logins are kept: the database several relays share; this process's memory when absent. */
  logins?: LoginStore;
  assets: ReadonlyMap<string, Asset>;
  posture(): Promise<Posture>;
  /** The audit file the live audit page follows. */
  auditPath: string;
  clock: Clock;
  logger: Logger;
  /** Consent's store and passkey verifier, when consent is on with the passkey channel. */
  approvals?: ApprovalsChannel;
  /** The relay's terminals, for the sessions page. */
  sessions: ConsoleSessions;
  /** Where the operator's kills are written. */
  audit: Pick<AuditLog, "append" | "reserve">;
  /** RELAY_SHELL_SESSION_RECORD_DIR ("" = not recorded). */
  recordDir: string;
}

/**
 * The console's routes under /console. Nothing here runs a command: it
 * reads the posture, logs operators in and out, approves and denies consent
 * requests, and kills a session at the operator's word. A bearer token is never
 * looked at, so an MCP credential cannot open a page, and the session
 * cookie is scoped to /console, so it cannot reach the MCP endpoint.
 */
export function createConsoleApp(options: ConsoleAppOptions): Hono {
  const { origin, rpId, passkeys, counters, assets, clock, logger } = options;
  const secure = origin.startsWith("https:");
  const sessions = options.logins ?? createLoginStore(options.sessionTtlSeconds, clock);
  const logins = createPendingLogins(clock);
  let floodWarned = Number.NEGATIVE_INFINITY;
  const loginLimiter = createLoginLimiter(LOGINS_PER_MINUTE, clock);
  const optionsLimiter = createLoginLimiter(OPTIONS_PER_MINUTE, clock);
  const cookie = { httpOnly: true, sameSite: "Strict", path: "/console", secure } as const;

  /** The operator behind the request, when the session is live and its passkey still enrolled. */
  async function operator(c: Context): Promise<{ id: string; session: ConsoleLogin } | null> {
    const id = getCookie(c, SESSION_COOKIE);
    if (id === undefined) return null;
    const session = await sessions.use(id);
    if (!session) return null;
    const keys = passkeys.current();
    if (!keys.ok || !keys.keys.some((k) => k.credentialId === session.credentialId)) {
      await sessions.end(id);
      return null;
    }
    return { id, session };
  }

  /** The answer to a login when the sign counters cannot be read or written: nobody logs in blind. */
  function countersDown(c: Context, err: unknown): Response {
    logger.error({ err: err instanceof Error ? err.message : String(err) }, "console sign counters unusable");
    return refuse(c, 503, "The passkey sign counters cannot be used; see the relay's log");
  }

  /** The header's navigation: the approvals page and its pending count, where consent is on. */
  const nav = async (): Promise<Nav> =>
    options.approvals ? { pending: await pendingCount(options.approvals.store, clock.now()) } : {};

  /** The synchronizer token of a state-changing request: a header from script, a field from a form. */
  async function sentCsrf(c: Context): Promise<string> {
    const header = c.req.header("x-csrf-token");
    if (header !== undefined) return header;
    const type = c.req.header("content-type") ?? "";
    if (type.startsWith("application/x-www-form-urlencoded")) {
      const form = await c.req.parseBody();
      return typeof form.csrf === "string" ? form.csrf : "";
    }
    return "";
  }

  const app = new Hono();
  app.use("*", securityHeaders());
  app.use("*", guardRequests(origin));
  app.use(
    "*",
    boundedBody(MAX_BODY_BYTES, (c) => refuse(c, 413, "Request body too large")),
  );
  // A browser that comes back with its login cookie (the page loading its scripts, the button's
  // request) holds that login: from then on a flood of new login pages cannot evict it.
  app.use("*", async (c, next) => {
    const pending = getCookie(c, LOGIN_COOKIE);
    if (pending !== undefined) logins.get(pending);
    await next();
  });

  app.get("/console/assets/:name", (c) => {
    const asset = assets.get(c.req.param("name"));
    if (!asset) return refuse(c, 404, "Not found");
    return c.body(new Uint8Array(asset.body), 200, { "Content-Type": asset.type });
  });

  const home = async (c: Context) => {
    const who = await operator(c);
    if (!who) return c.redirect("/console/login", 303);
    return c.html(posturePage(who.session.csrf, who.session.passkey, await options.posture(), await nav()));
  };
  app.get("/console", home);
  app.get("/console/", home);

  app.get("/console/login", async (c) => {
    if (await operator(c)) return c.redirect("/console", 303);
    // The login page is a page of its own: an image or a script of another page cannot start logins.
    const dest = c.req.header("sec-fetch-dest");
    if (dest !== undefined && dest !== "document")
      return refuse(c, 403, "The login page opens only as a page of its own");
    // A browser already in the middle of a login gets the same one again.
    const held = getCookie(c, LOGIN_COOKIE);
    const kept = held === undefined ? null : logins.get(held);
    if (kept) return c.html(loginPage(kept.csrf));
    const started = logins.start(clientAddress(c));
    if ("retryAfter" in started) {
      c.header("Retry-After", String(started.retryAfter));
      // Once a minute at most: a flood is one line in the log, not one per request.
      if (clock.monotonic() - floodWarned >= 60_000) {
        floodWarned = clock.monotonic();
        logger.warn({ address: clientAddress(c) }, "console login pages opened over the limit");
      }
      return refuse(c, 429, "Too many logins started from this address; retry later");
    }
    setCookie(c, LOGIN_COOKIE, started.id, { ...cookie, maxAge: 300 });
    return c.html(loginPage(started.login.csrf));
  });

  /** The pending login of a POST whose CSRF token matches it, or the refusal. */
  async function pendingLogin(c: Context) {
    const id = getCookie(c, LOGIN_COOKIE);
    const login = id === undefined ? null : logins.get(id);
    if (id === undefined || !login)
      return { refusal: refuse(c, 403, "No login in progress; reload the page") };
    if (!sameSecret(await sentCsrf(c), login.csrf)) return { refusal: refuse(c, 403, "Invalid CSRF token") };
    return { id, login };
  }

  app.post("/console/login/options", async (c) => {
    const pending = await pendingLogin(c);
    if ("refusal" in pending) return pending.refusal;
    const wait = optionsLimiter.attempt();
    if (wait > 0) {
      c.header("Retry-After", String(wait));
      return refuse(c, 429, "Too many login attempts; retry later");
    }
    const generated = await generateAuthenticationOptions({
      rpID: rpId,
      userVerification: "required",
      timeout: 120_000,
    });
    pending.login.challenge = generated.challenge;
    return c.json(generated);
  });

  app.post("/console/login/verify", async (c) => {
    const pending = await pendingLogin(c);
    if ("refusal" in pending) return pending.refusal;
    const wait = loginLimiter.attempt();
    if (wait > 0) {
      c.header("Retry-After", String(wait));
      logger.warn({ retryAfter: wait }, "console login attempts over the limit");
      return refuse(c, 429, "Too many login attempts; retry later");
    }
    const challenge = pending.login.challenge;
    // A challenge answers one attempt, successful or not.
    pending.login.challenge = null;
    if (challenge === null) return refuse(c, 400, "Ask for a challenge first");
    const body = await readJson(c);
    if (!body.ok) return refuse(c, 400, "Expected a JSON WebAuthn response");
    const decoded = decodeBody(authenticationResponseSchema, body.value);
    if (!decoded.ok) return refuse(c, 400, `Expected a JSON WebAuthn response: ${problemText(decoded)}`);
    const response = decoded.value;
    const keys = passkeys.current();
    if (!keys.ok) {
      logger.error({ problems: keys.problems }, "console passkeys file unusable; nobody can log in");
      return refuse(c, 403, "The passkeys file cannot be used; see the relay's log");
    }
    const key = keys.keys.find((k) => k.credentialId === response.id);
    if (!key) {
      logger.warn(
        { credential: response.id.slice(0, 100) },
        "console login with a passkey that is not enrolled",
      );
      return refuse(c, 401, "This passkey is not enrolled");
    }
    let stored: number | undefined;
    try {
      stored = await counters.get(key.credentialId);
    } catch (err) {
      return countersDown(c, err);
    }
    let newCounter: number;
    try {
      const verified = await verifyAuthenticationResponse({
        response,
        expectedChallenge: challenge,
        expectedOrigin: origin,
        expectedRPID: rpId,
        requireUserVerification: true,
        credential: {
          id: key.credentialId,
          publicKey: isoBase64URL.toBuffer(key.publicKey),
          counter: stored ?? 0,
          transports: key.transports as NonNullable<WebAuthnCredential["transports"]>,
        },
      });
      if (!verified.verified || !verified.authenticationInfo.userVerified) throw new Error("not verified");
      newCounter = verified.authenticationInfo.newCounter;
    } catch (err) {
      logger.warn({ passkey: key.name, err: String(err) }, "console login refused");
      return refuse(c, 401, `Login refused: ${err instanceof Error ? err.message : String(err)}`);
    }
    // Taken only above the stored one, whichever relay stored it: a login racing a copy of the passkey loses.
    let taken: Awaited<ReturnType<PasskeyCounters["advance"]>>;
    try {
      taken = await counters.advance(key.credentialId, newCounter);
    } catch (err) {
      return countersDown(c, err);
    }
    if (!taken.accepted) {
      const reason = `the sign counter of passkey ${key.name} did not increase (${newCounter}, last seen ${taken.last}): a copy of the authenticator may be in use`;
      logger.warn({ passkey: key.name, reason }, "console login refused");
      return refuse(c, 401, `Login refused: ${reason}`);
    }
    logins.end(pending.id);
    deleteCookie(c, LOGIN_COOKIE, cookie);
    const { id } = await sessions.create(key.name, key.credentialId);
    setCookie(c, SESSION_COOKIE, id, cookie);
    logger.info({ passkey: key.name }, "console login");
    return c.json({ ok: true, next: "/console" });
  });

  app.post("/console/logout", async (c) => {
    const who = await operator(c);
    if (!who) return refuse(c, 401, "Not logged in");
    if (!sameSecret(await sentCsrf(c), who.session.csrf)) return refuse(c, 403, "Invalid CSRF token");
    await sessions.end(who.id);
    deleteCookie(c, SESSION_COOKIE, cookie);
    return c.redirect("/console/login", 303);
  });

  if (options.approvals)
    registerApprovals(app, {
      channel: options.approvals,
      rpId,
      passkeys,
      operator,
      sentCsrf,
      nav,
      clock,
      logger,
    });
  registerAuditView(app, {
    auditPath: options.auditPath,
    operator: async (c) => {
      const who = await operator(c);
      return who && { csrf: who.session.csrf, passkey: who.session.passkey };
    },
    nav,
    logger,
  });

  registerSessionsView(app, {
    sessions: options.sessions,
    audit: options.audit,
    recordDir: options.recordDir,
    operator: async (c) => {
      const who = await operator(c);
      return (
        who && {
          csrf: who.session.csrf,
          passkey: who.session.passkey,
          credentialId: who.session.credentialId,
        }
      );
    },
    sentCsrf,
    sameSecret,
    nav,
    clock,
    logger,
  });

  app.notFound((c) => refuse(c, 404, "Not found"));
  app.onError((err, c) => {
    if (err instanceof LoginStoreError) {
      logger.error({ err: err.message }, "console request refused: the login store cannot be used");
      return refuse(c, 503, "The console's logins cannot be read now; see the relay's log");
    }
    logger.error({ err: String(err) }, "console request failed");
    return c.json({ error: "Internal error" }, 500);
  });
  return app;
}
