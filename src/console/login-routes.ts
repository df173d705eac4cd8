import type { IncomingMessage } from "node:http";
import {
  generateAuthenticationOptions,
  verifyAuthenticationResponse,
  type WebAuthnCredential,
} from "@simplewebauthn/server";
import { isoBase64URL } from "@simplewebauthn/server/helpers";
import type { Context, Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { PasskeyCounters } from "../consent/index.js";
import type { Clock, Logger } from "../core/index.js";
import { decodeBody, problemText, readJson } from "./body.js";
import { refuse } from "./http-rules.js";
import { type ConsoleLogin, createLoginLimiter, type LoginStore, sameSecret } from "./logins.js";
import { loginPage } from "./pages.js";
import type { PasskeyFile } from "./passkey-file.js";
import type { Passkey } from "./passkeys.js";
import type { PendingLogins } from "./pending-logins.js";
import { authenticationResponseSchema } from "./webauthn-schema.js";

export const SESSION_COOKIE = "relay_console";
export const LOGIN_COOKIE = "relay_console_login";
/** Verified login attempts per minute, for the whole console. */
const LOGINS_PER_MINUTE = 10;
/** Challenges handed out per minute: each holds a pending login. */
const OPTIONS_PER_MINUTE = 30;

/** What the login and logout routes need of the console app (app.ts). */
export interface LoginDeps {
  /** The one origin the console is reached under (and passkeys are bound to). */
  origin: string;
  rpId: string;
  passkeys: PasskeyFile;
  counters: PasskeyCounters;
  logins: LoginStore;
  /** Logins half-way through their WebAuthn ceremony (pending-logins.ts). */
  ceremonies: PendingLogins;
  cookie: { httpOnly: true; sameSite: "Strict"; path: "/console"; secure: boolean };
  operator(c: Context): Promise<{ id: string; login: ConsoleLogin } | null>;
  sentCsrf(c: Context): Promise<string>;
  clock: Clock;
  logger: Logger;
}

/** The routes state each handler keeps: the limiters, and when a flood of login pages was last logged. */
interface LoginRoutes extends LoginDeps {
  loginLimiter: ReturnType<typeof createLoginLimiter>;
  optionsLimiter: ReturnType<typeof createLoginLimiter>;
  floodWarned: number;
}

/**
 * The passkey login of the console: the login page, a challenge, the verified assertion that opens
 * a login, and the logout. A login is opened only on a user-verified assertion of an enrolled
 * passkey whose sign counter went up.
 */
export function registerLogin(app: Hono, deps: LoginDeps): void {
  const r: LoginRoutes = {
    ...deps,
    loginLimiter: createLoginLimiter(LOGINS_PER_MINUTE, deps.clock),
    optionsLimiter: createLoginLimiter(OPTIONS_PER_MINUTE, deps.clock),
    floodWarned: Number.NEGATIVE_INFINITY,
  };
  app.get("/console/login", (c) => loginPageRoute(r, c));
  app.post("/console/login/options", (c) => optionsRoute(r, c));
  app.post("/console/login/verify", (c) => verifyRoute(r, c));
  app.post("/console/logout", (c) => logoutRoute(r, c));
}

/** The address of the client's connection ("unknown" when the request did not come over a socket). */
function clientAddress(c: Context): string {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress ?? "unknown";
}

async function loginPageRoute(r: LoginRoutes, c: Context): Promise<Response> {
  if (await r.operator(c)) return c.redirect("/console", 303);
  // The login page is a page of its own: an image or a script of another page cannot start logins.
  const dest = c.req.header("sec-fetch-dest");
  if (dest !== undefined && dest !== "document")
    return refuse(c, 403, "The login page opens only as a page of its own");
  // A browser already in the middle of a login gets the same one again.
  const held = getCookie(c, LOGIN_COOKIE);
  const kept = held === undefined ? null : r.ceremonies.get(held);
  if (kept) return c.html(loginPage(kept.csrf));
  const started = r.ceremonies.start(clientAddress(c));
  if ("retryAfter" in started) {
    c.header("Retry-After", String(started.retryAfter));
    // Once a minute at most: a flood is one line in the log, not one per request.
    if (r.clock.monotonic() - r.floodWarned >= 60_000) {
      r.floodWarned = r.clock.monotonic();
      r.logger.warn({ address: clientAddress(c) }, "console login pages opened over the limit");
    }
    return refuse(c, 429, "Too many logins started from this address; retry later");
  }
  setCookie(c, LOGIN_COOKIE, started.id, { ...r.cookie, maxAge: 300 });
  return c.html(loginPage(started.login.csrf));
}

/** The pending login of a POST whose CSRF token matches it, or the refusal. */
async function pendingLogin(r: LoginRoutes, c: Context) {
  const id = getCookie(c, LOGIN_COOKIE);
  const login = id === undefined ? null : r.ceremonies.get(id);
  if (id === undefined || !login) return { refusal: refuse(c, 403, "No login in progress; reload the page") };
  if (!sameSecret(await r.sentCsrf(c), login.csrf)) return { refusal: refuse(c, 403, "Invalid CSRF token") };
  return { id, login };
}

async function optionsRoute(r: LoginRoutes, c: Context): Promise<Response> {
  const pending = await pendingLogin(r, c);
  if ("refusal" in pending) return pending.refusal;
  const wait = r.optionsLimiter.attempt();
  if (wait > 0) {
    c.header("Retry-After", String(wait));
    return refuse(c, 429, "Too many login attempts; retry later");
  }
  const generated = await generateAuthenticationOptions({
    rpID: r.rpId,
    userVerification: "required",
    timeout: 120_000,
  });
  pending.login.challenge = generated.challenge;
  return c.json(generated);
}

async function verifyRoute(r: LoginRoutes, c: Context): Promise<Response> {
  const pending = await pendingLogin(r, c);
  if ("refusal" in pending) return pending.refusal;
  const wait = r.loginLimiter.attempt();
  if (wait > 0) {
    c.header("Retry-After", String(wait));
    r.logger.warn({ retryAfter: wait }, "console login attempts over the limit");
    return refuse(c, 429, "Too many login attempts; retry later");
  }
  const challenge = pending.login.challenge;
  // A challenge answers one attempt, successful or not.
  pending.login.challenge = null;
  if (challenge === null) return refuse(c, 400, "Ask for a challenge first");
  const body = await readJson(c);
  if (!body.ok) return refuse(c, 400, "Expected a JSON WebAuthn response");
  const decoded = decodeBody(authenticationResponseSchema, body.value);
  if (!decoded.ok) return refuse(c, 400, `Expected a JSON WebAuthn response: ${problemText(decoded.error)}`);
  const key = enrolledKey(r, c, decoded.value.id);
  if ("refusal" in key) return key.refusal;
  const checked = await checkAssertion(r, c, key.passkey, decoded.value, challenge);
  if (checked !== null) return checked;
  void r.logins.end(pending.id);
  deleteCookie(c, LOGIN_COOKIE, r.cookie);
  const { id } = await r.logins.create(key.passkey.name, key.passkey.credentialId);
  setCookie(c, SESSION_COOKIE, id, r.cookie);
  r.logger.info({ passkey: key.passkey.name }, "console login");
  return c.json({ ok: true, next: "/console" });
}

/** The enrolled passkey the response names, or the refusal when there is none (or no usable file). */
function enrolledKey(
  r: LoginRoutes,
  c: Context,
  credentialId: string,
): { passkey: Passkey } | { refusal: Response } {
  const keys = r.passkeys.current();
  if (!keys.ok) {
    r.logger.error({ problems: keys.error }, "console passkeys file unusable; nobody can log in");
    return { refusal: refuse(c, 403, "The passkeys file cannot be used; see the relay's log") };
  }
  const key = keys.value.find((k) => k.credentialId === credentialId);
  if (!key) {
    r.logger.warn(
      { credential: credentialId.slice(0, 100) },
      "console login with a passkey that is not enrolled",
    );
    return { refusal: refuse(c, 401, "This passkey is not enrolled") };
  }
  return { passkey: key };
}

/**
 * The assertion verified against the passkey, user verification included, and its sign counter
 * advanced; null when the login may open, else the refusal.
 */
async function checkAssertion(
  r: LoginRoutes,
  c: Context,
  key: Passkey,
  response: Parameters<typeof verifyAuthenticationResponse>[0]["response"],
  challenge: string,
): Promise<Response | null> {
  let stored: number | undefined;
  try {
    stored = await r.counters.get(key.credentialId);
  } catch (err) {
    return countersDown(r, c, err);
  }
  let newCounter: number;
  try {
    const verified = await verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: r.origin,
      expectedRPID: r.rpId,
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
    r.logger.warn({ passkey: key.name, err: String(err) }, "console login refused");
    return refuse(c, 401, `Login refused: ${err instanceof Error ? err.message : String(err)}`);
  }
  return advanceCounter(r, c, key, newCounter);
}

/** Taken only above the stored one, whichever relay stored it: a login racing a copy of the passkey loses. */
async function advanceCounter(
  r: LoginRoutes,
  c: Context,
  key: Passkey,
  newCounter: number,
): Promise<Response | null> {
  let taken: Awaited<ReturnType<PasskeyCounters["advance"]>>;
  try {
    taken = await r.counters.advance(key.credentialId, newCounter);
  } catch (err) {
    return countersDown(r, c, err);
  }
  if (taken.accepted) return null;
  const reason = `the sign counter of passkey ${key.name} did not increase (${newCounter}, last seen ${taken.last}): a copy of the authenticator may be in use`;
  r.logger.warn({ passkey: key.name, reason }, "console login refused");
  return refuse(c, 401, `Login refused: ${reason}`);
}

/** The answer to a login when the sign counters cannot be read or written: nobody logs in blind. */
function countersDown(r: LoginRoutes, c: Context, err: unknown): Response {
  r.logger.error({ err: err instanceof Error ? err.message : String(err) }, "console sign counters unusable");
  return refuse(c, 503, "The passkey sign counters cannot be used; see the relay's log");
}

async function logoutRoute(r: LoginRoutes, c: Context): Promise<Response> {
  const who = await r.operator(c);
  if (!who) return refuse(c, 401, "Not logged in");
  if (!sameSecret(await r.sentCsrf(c), who.login.csrf)) return refuse(c, 403, "Invalid CSRF token");
  await r.logins.end(who.id);
  deleteCookie(c, SESSION_COOKIE, r.cookie);
  return c.redirect("/console/login", 303);
}
