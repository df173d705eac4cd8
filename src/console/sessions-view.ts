import { createReadStream } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import type { Context, Hono } from "hono";
import type { AuditLog } from "../audit/index.js";
import type { Clock, Logger } from "../core/index.js";
import { type SessionRegistry, TERMINAL_ID } from "../sessions/index.js";
import { allowWasm, refuse } from "./http-rules.js";
import type { Nav } from "./pages.js";
import { isRecordingName, listRecordings, openRegular } from "./recordings.js";
import { type FollowCount, followStream } from "./session-follow.js";
import { playerPage, sessionsPage } from "./sessions-pages.js";

/** What the sessions page needs of the registry. */
export type ConsoleSessions = Pick<SessionRegistry, "overview" | "terminate" | "watch">;

/** The logged-in operator behind a request: the page's CSRF token, the passkey's name and credential id. */
interface ConsoleOperator {
  csrf: string;
  passkey: string;
  credentialId: string;
}

export interface SessionsViewOptions {
  sessions: ConsoleSessions;
  /** The operator's kill is written here (action `operator_kill`). */
  audit: Pick<AuditLog, "append" | "reserve">;
  /** RELAY_SHELL_SESSION_RECORD_DIR; "" when sessions are not recorded. */
  recordDir: string;
  operator(c: Context): Promise<ConsoleOperator | null>;
  sentCsrf(c: Context): Promise<string>;
  sameSecret(a: string, b: string): boolean;
  /** The header's navigation (the pending consent requests); none when absent. */
  nav?(): Promise<Nav>;
  clock: Clock;
  logger: Logger;
}

/**
 * The sessions page (/console/sessions): every live session of this relay,
 * local and SSH, whoever owns it, with a kill for each; the recordings in
 * the recording directory, each playable; and a read-only live follow of a
 * session. Killing is the only thing here that changes anything, and it is
 * written to the audit log as the operator's.
 */
export function registerSessionsView(app: Hono, options: SessionsViewOptions): void {
  const view: View = {
    ...options,
    pageNav: async () => (await options.nav?.()) ?? {},
    follows: { following: 0 },
  };
  app.get("/console/sessions", async (c) => {
    const who = await options.operator(c);
    if (!who) return c.redirect("/console/login", 303);
    return c.html(sessionsPage(who.csrf, who.passkey, view.recordDir, await view.pageNav()));
  });
  app.get("/console/sessions/list", (c) => listRoute(view, c));
  app.post("/console/sessions/:id/kill", (c) => killRoute(view, c, c.req.param("id")));
  app.get("/console/recordings/:name", (c) => recordingPageRoute(view, c, c.req.param("name")));
  app.get("/console/recordings/:name/cast", (c) => castRoute(view, c, c.req.param("name")));
  app.get("/console/sessions/:id/follow", (c) => followPageRoute(view, c, c.req.param("id")));
  app.get("/console/sessions/:id/stream", async (c) => {
    if (!(await options.operator(c))) return refuse(c, 401, "Not logged in");
    const id = c.req.param("id");
    if (!TERMINAL_ID.test(id)) return refuse(c, 404, "No such session");
    return followStream(view, c, id);
  });
}

/** The page's options with the navigation it shows and the count of the live follows open. */
interface View extends SessionsViewOptions {
  pageNav(): Promise<Nav>;
  follows: FollowCount;
}

async function listRoute(view: View, c: Context): Promise<Response> {
  if (!(await view.operator(c))) return refuse(c, 401, "Not logged in");
  const { recordDir } = view;
  let recordings: ReturnType<typeof listRecordings> = [];
  let recordingsProblem: string | null = null;
  if (recordDir !== "") {
    try {
      recordings = listRecordings(recordDir);
    } catch (err) {
      recordingsProblem = `the recordings directory cannot be read: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  return c.json({
    sessions: view.sessions.overview(),
    recording: recordDir !== "",
    recordings: recordings.map((r) => ({ ...r, modified: new Date(r.modified).toISOString() })),
    recordingsProblem,
  });
}

async function killRoute(view: View, c: Context, id: string): Promise<Response> {
  const who = await view.operator(c);
  if (!who) return refuse(c, 401, "Not logged in");
  if (!view.sameSecret(await view.sentCsrf(c), who.csrf)) return refuse(c, 403, "Invalid CSRF token");
  if (!TERMINAL_ID.test(id)) return refuse(c, 404, "No such session");
  if (!view.sessions.overview().some((s) => s.id === id)) return refuse(c, 404, `No live session ${id}`);
  // The kill is the operator's safety action: it goes ahead when the audit file cannot take its
  // record, and the page says so (the record then goes to stderr, like every record that misses the file).
  const room = view.audit.reserve();
  let signal: string;
  try {
    signal = (await view.sessions.terminate(id)).signal;
  } catch (err) {
    return refuse(c, 404, err instanceof Error ? err.message : String(err));
  }
  const audited = auditKill(view, id, who) && room;
  view.logger.info({ session: id, passkey: who.passkey, audited }, "console killed a session");
  return c.json({ ok: true, session: id, signal, by: who.passkey, audited });
}

/** The operator's kill as an audit record of its own (action `operator_kill`); whether it reached the file. */
function auditKill(view: View, id: string, who: ConsoleOperator): boolean {
  return view.audit.append({
    tool: "session_kill",
    tier: 1,
    denied: false,
    args: {
      session_id: id,
      signal_name: "TERM",
      close: true,
      operator: { channel: "console", passkey: who.passkey, credential_id: who.credentialId },
    },
    output: `killed and closed ${id}`,
    exitCode: null,
    clientId: "console",
    action: "operator_kill",
  });
}

async function recordingPageRoute(view: View, c: Context, name: string): Promise<Response> {
  const who = await view.operator(c);
  if (!who) return c.redirect("/console/login", 303);
  if (view.recordDir === "" || !isRecordingName(name)) return refuse(c, 404, "No such recording");
  allowWasm(c);
  return c.html(
    playerPage(
      who.csrf,
      who.passkey,
      {
        title: `Recording ${name}`,
        heading: `Recording ${name}`,
        source: { kind: "recording", url: `/console/recordings/${name}/cast` },
      },
      await view.pageNav(),
    ),
  );
}

async function castRoute(view: View, c: Context, name: string): Promise<Response> {
  if (!(await view.operator(c))) return refuse(c, 401, "Not logged in");
  if (view.recordDir === "" || !isRecordingName(name)) return refuse(c, 404, "No such recording");
  let opened: { fd: number; size: number };
  try {
    opened = openRegular(join(view.recordDir, name));
  } catch {
    return refuse(c, 404, "No such recording");
  }
  // Served as it stood when opened; a live session's recording goes on growing after that.
  const file = createReadStream("", { fd: opened.fd, start: 0, end: Math.max(0, opened.size - 1) });
  if (opened.size === 0) {
    file.destroy();
    return c.body("", 200, { "Content-Type": "application/x-asciicast" });
  }
  return c.body(Readable.toWeb(file) as ReadableStream, 200, {
    "Content-Type": "application/x-asciicast",
    "Content-Length": String(opened.size),
  });
}

async function followPageRoute(view: View, c: Context, id: string): Promise<Response> {
  const who = await view.operator(c);
  if (!who) return c.redirect("/console/login", 303);
  if (!TERMINAL_ID.test(id)) return refuse(c, 404, "No such session");
  const live = view.sessions.overview().find((s) => s.id === id);
  if (!live) return refuse(c, 404, `No live session ${id}`);
  allowWasm(c);
  return c.html(
    playerPage(
      who.csrf,
      who.passkey,
      {
        title: `Session ${id}`,
        heading: `Session ${id} (live, read-only): ${live.title}`,
        source: { kind: "live", url: `/console/sessions/${id}/stream` },
      },
      await view.pageNav(),
    ),
  );
}
