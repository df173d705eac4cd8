import type { Context } from "hono";
import { type SSEStreamingApi, streamSSE } from "hono/streaming";
import type { Clock, Logger } from "../core/index.js";
import type { SessionRegistry } from "../sessions/index.js";
import { refuse } from "./http-rules.js";
import { outputSoFar } from "./recordings.js";
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

/** The live follows open now, shared by every follow of the console. */
export interface FollowCount {
  following: number;
}

/** What a live follow needs of the sessions page (sessions-view.ts). */
interface FollowDeps {
  sessions: Pick<SessionRegistry, "watch">;
  operator(c: Context): Promise<unknown>;
  clock: Clock;
  logger: Logger;
  follows: FollowCount;
}

/** An asciicast event line as the player's live driver reads it: `[seconds, code, data]`. */
function event(seconds: number, code: "o" | "r", data: string): string {
  return JSON.stringify([Math.round(seconds * 1e6) / 1e6, code, data]);
}

/**
 * The session's output as it comes, queued for one follower: bounded, so a follower that falls
 * too far behind is ended rather than held in memory.
 */
interface FollowQueue {
  lines: string[];
  queued: number;
  over: boolean;
  ended: boolean;
  decoder: InstanceType<typeof TextDecoder>;
  pace: ReturnType<typeof createStreamPace>;
  seconds(): number;
}

function newQueue(clock: Clock): FollowQueue {
  const pace = createStreamPace(() => clock.monotonic());
  const started = clock.monotonic();
  return {
    lines: [],
    queued: 0,
    over: false,
    ended: false,
    decoder: new TextDecoder("utf-8"),
    pace,
    seconds: () => (clock.monotonic() - started) / 1000,
  };
}

function push(q: FollowQueue, data: string): void {
  if (q.over) return;
  q.lines.push(data);
  q.queued += data.length;
  if (q.queued > MAX_QUEUED_BYTES) q.over = true;
  q.pace.nudge();
}

/**
 * The read-only live follow of session `id` as server-sent events: the screen so far from its
 * recording, then its output and resizes as they come, until it ends, the follower falls behind,
 * or the login ends.
 */
export async function followStream(deps: FollowDeps, c: Context, id: string): Promise<Response> {
  if (deps.follows.following >= MAX_FOLLOW_STREAMS) {
    c.header("Retry-After", "5");
    return refuse(c, 429, `Too many live follows (at most ${MAX_FOLLOW_STREAMS}); close one`);
  }
  const q = newQueue(deps.clock);
  let watch: ReturnType<FollowDeps["sessions"]["watch"]>;
  try {
    watch = deps.sessions.watch(id, {
      output: (chunk) => {
        const text = q.decoder.decode(chunk, { stream: true });
        if (text !== "") push(q, event(q.seconds(), "o", text));
      },
      resize: (cols, rows) => push(q, event(q.seconds(), "r", `${cols}x${rows}`)),
      ended: () => {
        q.ended = true;
        q.pace.nudge();
      },
    });
  } catch (err) {
    return refuse(c, 404, err instanceof Error ? err.message : String(err));
  }
  // In the same turn as the watch began: the recording holds exactly the output before it.
  const init = backlog(deps.logger, id, watch.recording);
  q.lines.unshift(JSON.stringify({ cols: watch.cols, rows: watch.rows, time: 0, init }));
  deps.follows.following += 1;
  const state = { released: false };
  const release = () => {
    if (state.released) return;
    state.released = true;
    watch.stop();
    deps.follows.following -= 1;
    q.pace.nudge();
  };
  return streamSSE(
    c,
    async (stream) => {
      stream.onAbort(release);
      try {
        await pump(deps, c, stream, q, state);
      } finally {
        release();
      }
    },
    async (err) => {
      deps.logger.warn({ session: id, err: String(err) }, "console follow ended with an error");
    },
  );
}

/** The screen so far: the end of the session's recording, or nothing when it has none or it cannot be read. */
function backlog(logger: Logger, id: string, recording: string): string {
  if (recording === "") return "";
  try {
    return outputSoFar(recording, MAX_BACKLOG_BYTES).text;
  } catch (err) {
    logger.warn({ session: id, err: String(err) }, "console follow cannot read the session's recording");
    return "";
  }
}

/** Writes what is queued as it comes, with a keep-alive that also checks the login, until the follow ends. */
async function pump(
  deps: FollowDeps,
  c: Context,
  stream: SSEStreamingApi,
  q: FollowQueue,
  state: { released: boolean },
): Promise<void> {
  while (!state.released) {
    if (q.lines.length === 0 && !q.ended && !q.over) await q.pace.sleep();
    if (state.released) break;
    if (q.over) {
      await stream.writeSSE({ event: "done", data: JSON.stringify({ reason: FELL_BEHIND }) });
      break;
    }
    const take = q.lines.splice(0, q.lines.length);
    q.queued = 0;
    if (take.length > 0) await stream.write(take.map((d) => `data: ${d}\n\n`).join(""));
    if (q.ended && q.lines.length === 0) {
      const tail = q.decoder.decode();
      if (tail !== "") await stream.writeSSE({ data: event(q.seconds(), "o", tail) });
      await stream.writeSSE({ event: "done", data: '{"reason":"the session ended"}' });
      break;
    }
    if (q.pace.beatDue()) {
      if (!(await deps.operator(c))) {
        await stream.writeSSE({ event: "done", data: JSON.stringify({ reason: LOGIN_ENDED }) });
        break;
      }
      await stream.write(": keep-alive\n\n");
    }
  }
}
