import { createReadStream } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import type { Context, Hono } from "hono";
import { streamSSE } from "hono/streaming";
import type { AuditLog } from "../audit/index.js";
import type { Clock, Logger } from "../core/index.js";
import { type SessionRegistry, TERMINAL_ID } from "../sessions/index.js";
import { allowWasm, refuse } from "./http-rules.js";
import type { Nav } from "./pages.js";
import { isRecordingName, listRecordings, openRegular, outputSoFar } from "./recordings.js";
import { playerPage, sessionsPage } from "./sessions-pages.js";
import { createStreamPace } from "./stream-pace.js";

/** Live follows open at once, for the whole console: each holds a viewer on a session. */
const MAX_FOLLOW_STREAMS = 8;
/** The screen so far a follower starts from: at most this much of the recording's end. */
const MAX_BACKLOG_BYTES = 2 * 1024 * 1024;
/** Output waiting for a slow follower before the follow is ended (the page says so). */
const MAX_QUEUED_BYTES = 4 * 1024 * 1024;
/** Why a follow ends, as the page shows it. */
const FELL_BEHIND = "this page fell too far behind the session's output; reload it to follow again";
const LOGIN_ENDED =
  "your login ended (it expired, you logged out, or its passkey was removed); log in again to follow";

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

/** An asciicast event line as the player's live driver reads it: `[seconds, code, data]`. */
function event(seconds: number, code: "o" | "r", data: string): string {
  return JSON.stringify([Math.round(seconds * 1e6) / 1e6, code, data]);
}

/**
 * The sessions page (/console/sessions): every live session of this relay,
 * local and SSH, whoever owns it, with a kill for each; the recordings in
 * the recording directory, each playable; and a read-only live follow of a
 * session. Killing is the only thing here that changes anything, and it is
 * written to the audit log as the operator's.
 */
export function registerSessionsView(app: Hono, options: SessionsViewOptions): void {
  const { sessions, recordDir, clock, logger } = options;
  const nav = async (): Promise<Nav> => (await options.nav?.()) ?? {};
  let following = 0;

  app.get("/console/sessions", async (c) => {
    const who = await options.operator(c);
    if (!who) return c.redirect("/console/login", 303);
    return c.html(sessionsPage(who.csrf, who.passkey, recordDir, await nav()));
  });

  app.get("/console/sessions/list", async (c) => {
    if (!(await options.operator(c))) return refuse(c, 401, "Not logged in");
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
      sessions: sessions.overview(),
      recording: recordDir !== "",
      recordings: recordings.map((r) => ({ ...r, modified: new Date(r.modified).toISOString() })),
      recordingsProblem,
    });
  });

  app.post("/console/sessions/:id/kill", async (c) => {
    const who = await options.operator(c);
    if (!who) return refuse(c, 401, "Not logged in");
    if (!options.sameSecret(await options.sentCsrf(c), who.csrf)) return refuse(c, 403, "Invalid CSRF token");
    const id = c.req.param("id");
    if (!TERMINAL_ID.test(id)) return refuse(c, 404, "No such session");
    if (!sessions.overview().some((s) => s.id === id)) return refuse(c, 404, `No live session ${id}`);
    // The kill is the operator's safety action: it goes ahead when the audit file cannot take its
    // record, and the page says so (the record then goes to stderr, like every record that misses the file).
    const room = options.audit.reserve();
    let signal: string;
    try {
      signal = (await sessions.terminate(id)).signal;
    } catch (err) {
      return refuse(c, 404, err instanceof Error ? err.message : String(err));
    }
    const body = `killed and closed ${id}`;
    const audited =
      options.audit.append({
        tool: "session_kill",
        tier: 1,
        denied: false,
        args: {
          session_id: id,
          signal_name: "TERM",
          close: true,
          operator: { channel: "console", passkey: who.passkey, credential_id: who.credentialId },
        },
        output: body,
        exitCode: null,
        clientId: "console",
        action: "operator_kill",
      }) && room;
    logger.info({ session: id, passkey: who.passkey, audited }, "console killed a session");
    return c.json({ ok: true, session: id, signal, by: who.passkey, audited });
  });

  app.get("/console/recordings/:name", async (c) => {
    const who = await options.operator(c);
    if (!who) return c.redirect("/console/login", 303);
    const name = c.req.param("name");
    if (recordDir === "" || !isRecordingName(name)) return refuse(c, 404, "No such recording");
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
        await nav(),
      ),
    );
  });

  app.get("/console/recordings/:name/cast", async (c) => {
    if (!(await options.operator(c))) return refuse(c, 401, "Not logged in");
    const name = c.req.param("name");
    if (recordDir === "" || !isRecordingName(name)) return refuse(c, 404, "No such recording");
    let opened: { fd: number; size: number };
    try {
      opened = openRegular(join(recordDir, name));
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
  });

  app.get("/console/sessions/:id/follow", async (c) => {
    const who = await options.operator(c);
    if (!who) return c.redirect("/console/login", 303);
    const id = c.req.param("id");
    if (!TERMINAL_ID.test(id)) return refuse(c, 404, "No such session");
    const live = sessions.overview().find((s) => s.id === id);
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
        await nav(),
      ),
    );
  });

  app.get("/console/sessions/:id/stream", async (c) => {
    if (!(await options.operator(c))) return refuse(c, 401, "Not logged in");
    const id = c.req.param("id");
    if (!TERMINAL_ID.test(id)) return refuse(c, 404, "No such session");
    if (following >= MAX_FOLLOW_STREAMS) {
      c.header("Retry-After", "5");
      return refuse(c, 429, `Too many live follows (at most ${MAX_FOLLOW_STREAMS}); close one`);
    }
    const queue: string[] = [];
    let queued = 0;
    let over = false;
    let ended = false;
    const pace = createStreamPace(() => clock.monotonic());
    const nudge = pace.nudge;
    const push = (data: string) => {
      if (over) return;
      queue.push(data);
      queued += data.length;
      if (queued > MAX_QUEUED_BYTES) over = true;
      nudge();
    };
    const started = clock.monotonic();
    const seconds = () => (clock.monotonic() - started) / 1000;
    const decoder = new TextDecoder("utf-8");
    let watch: ReturnType<ConsoleSessions["watch"]>;
    try {
      watch = sessions.watch(id, {
        output: (chunk) => {
          const text = decoder.decode(chunk, { stream: true });
          if (text !== "") push(event(seconds(), "o", text));
        },
        resize: (cols, rows) => push(event(seconds(), "r", `${cols}x${rows}`)),
        ended: () => {
          ended = true;
          nudge();
        },
      });
    } catch (err) {
      return refuse(c, 404, err instanceof Error ? err.message : String(err));
    }
    // In the same turn as the watch began: the recording holds exactly the output before it.
    let init = "";
    if (watch.recording !== "") {
      try {
        init = outputSoFar(watch.recording, MAX_BACKLOG_BYTES).text;
      } catch (err) {
        logger.warn({ session: id, err: String(err) }, "console follow cannot read the session's recording");
      }
    }
    queue.unshift(JSON.stringify({ cols: watch.cols, rows: watch.rows, time: 0, init }));
    following += 1;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      watch.stop();
      following -= 1;
      nudge();
    };
    return streamSSE(
      c,
      async (stream) => {
        stream.onAbort(release);
        try {
          while (!released) {
            if (queue.length === 0 && !ended && !over) await pace.sleep();
            if (released) break;
            if (over) {
              await stream.writeSSE({ event: "done", data: JSON.stringify({ reason: FELL_BEHIND }) });
              break;
            }
            const take = queue.splice(0, queue.length);
            queued = 0;
            if (take.length > 0) await stream.write(take.map((d) => `data: ${d}\n\n`).join(""));
            if (ended && queue.length === 0) {
              const tail = decoder.decode();
              if (tail !== "") await stream.writeSSE({ data: event(seconds(), "o", tail) });
              await stream.writeSSE({ event: "done", data: '{"reason":"the session ended"}' });
              break;
            }
            if (pace.beatDue()) {
              if (!(await options.operator(c))) {
                await stream.writeSSE({ event: "done", data: JSON.stringify({ reason: LOGIN_ENDED }) });
                break;
              }
              await stream.write(": keep-alive\n\n");
            }
          }
        } finally {
          release();
        }
      },
      async (err) => {
        logger.warn({ session: id, err: String(err) }, "console follow ended with an error");
      },
    );
  });
}
