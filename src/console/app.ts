import { type Context, Hono } from "hono";
import { getCookie } from "hono/cookie";
import type { AuditLog } from "../audit/index.js";
import type { PasskeyCounters } from "../consent/index.js";
import type { Clock, Logger } from "../core/index.js";
import { type ApprovalsChannel, pendingCount, registerApprovals } from "./approvals.js";
import type { Asset } from "./assets.js";
import { registerAuditView } from "./audit-view.js";
import { boundedBody } from "./body.js";
import { guardRequests, refuse, securityHeaders } from "./http-rules.js";
import { LOGIN_COOKIE, registerLogin, SESSION_COOKIE } from "./login-routes.js";
import {
  type ConsoleLogin,
  createLoginStore,
  type LoginStore,
  LoginStoreError,
  sameSecret,
} from "./logins.js";
import { type Nav, type Posture, posturePage } from "./pages.js";
import type { PasskeyFile } from "./passkey-file.js";
import { createPendingLogins, type PendingLogins } from "./pending-logins.js";
import { type ConsoleSessions, registerSessionsView } from "./sessions-view.js";

/** Every console body is a small JSON object or form; a WebAuthn response is a few KiB. */
const MAX_BODY_BYTES = 64 * 1024;

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
  const logins = options.logins ?? createLoginStore(options.sessionTtlSeconds, clock);
  // Logins half-way through their WebAuthn ceremony (pending-logins.ts).
  const ceremonies = createPendingLogins(clock);
  const cookie = { httpOnly: true, sameSite: "Strict", path: "/console", secure } as const;

  const operator = (c: Context) => operatorOf(logins, passkeys, c);

  /** The header's navigation: the approvals page and its pending count, where consent is on. */
  const nav = async (): Promise<Nav> =>
    options.approvals ? { pending: await pendingCount(options.approvals.store, clock.now()) } : {};

  const app = new Hono();
  useGuards(app, origin, ceremonies);

  app.get("/console/assets/:name", (c) => {
    const asset = assets.get(c.req.param("name"));
    if (!asset) return refuse(c, 404, "Not found");
    return c.body(new Uint8Array(asset.body), 200, { "Content-Type": asset.type });
  });

  const home = async (c: Context) => {
    const who = await operator(c);
    if (!who) return c.redirect("/console/login", 303);
    return c.html(posturePage(who.login.csrf, who.login.passkey, await options.posture(), await nav()));
  };
  app.get("/console", home);
  app.get("/console/", home);

  registerLogin(app, {
    origin,
    rpId,
    passkeys,
    counters,
    logins,
    ceremonies,
    cookie,
    operator,
    sentCsrf,
    clock,
    logger,
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
      return who && { csrf: who.login.csrf, passkey: who.login.passkey };
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
          csrf: who.login.csrf,
          passkey: who.login.passkey,
          credentialId: who.login.credentialId,
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
  app.onError((err, c) => consoleError(logger, err, c));
  return app;
}

/** The operator behind the request, when the login is live and its passkey still enrolled. */
async function operatorOf(
  logins: LoginStore,
  passkeys: PasskeyFile,
  c: Context,
): Promise<{ id: string; login: ConsoleLogin } | null> {
  const id = getCookie(c, SESSION_COOKIE);
  if (id === undefined) return null;
  const login = await logins.use(id);
  if (!login) return null;
  const keys = passkeys.current();
  if (!keys.ok || !keys.value.some((k) => k.credentialId === login.credentialId)) {
    await logins.end(id);
    return null;
  }
  return { id, login };
}

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

/** What every request passes first: the security headers, Host and Origin, the body bound. */
function useGuards(app: Hono, origin: string, ceremonies: PendingLogins): void {
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
    if (pending !== undefined) ceremonies.get(pending);
    await next();
  });
}

/** A failure no route answered: the login store down is said as such, anything else is an internal error. */
function consoleError(logger: Logger, err: Error, c: Context): Response {
  if (err instanceof LoginStoreError) {
    logger.error({ err: err.message }, "console request refused: the login store cannot be used");
    return refuse(c, 503, "The console's logins cannot be read now; see the relay's log");
  }
  logger.error({ err: String(err) }, "console request failed");
  return c.json({ error: "Internal error" }, 500);
}
