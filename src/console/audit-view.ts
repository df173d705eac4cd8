import { statSync } from "node:fs";
import type { Context, Hono } from "hono";
import { streamSSE } from "hono/streaming";
import {
  type AuditFilter,
  type AuditFollower,
  type FollowedLine,
  followAudit,
  matchesFilter,
  outcomeOf,
} from "../audit/index.js";
import { fail, type Logger, ok, type Result } from "../core/index.js";
import { refuse } from "./http-rules.js";
import { auditPage, type Nav } from "./pages.js";
import { createStreamPace } from "./stream-pace.js";

/** Records of the file's end sent when a page opens, before the live ones. */
const AUDIT_BACKLOG = 200;
/** Open event streams at once, for the whole console: each holds a follower, a watch and a file. */
const MAX_AUDIT_STREAMS = 8;
/** Lines waiting for a slow page before the oldest are dropped (and the page told how many). */
const MAX_QUEUED = 5000;
const OUTCOMES: ReadonlySet<string> = new Set(["ok", "denied", "error", "challenge"]);

export interface AuditViewOptions {
  auditPath: string;
  /** The CSRF token and passkey name of the logged-in operator behind the request, or null. */
  operator(c: Context): Promise<{ csrf: string; passkey: string } | null>;
  /** The header's navigation (the pending consent requests); none when absent. */
  nav?(): Promise<Nav>;
  logger: Logger;
}

/** What the page receives for one line (event `record`). */
interface SentLine {
  file: number;
  line: number;
  chain: FollowedLine["chain"];
  record: Record<string, unknown> | null;
  outcome: string | null;
  unreadable: string | null;
}

/**
 * The filter of the event stream's query, or why it cannot be read. Unknown
 * parameters are refused too, so a typo does not silently show everything.
 */
export function parseAuditFilter(query: Record<string, string>): Result<AuditFilter, string> {
  const filter: AuditFilter = {};
  for (const [key, raw] of Object.entries(query)) {
    const value = raw.trim();
    if (value === "") continue;
    switch (key) {
      case "tool":
      case "client":
      case "host":
        if (value.length > 256) return fail(`${key}: at most 256 characters`);
        filter[key] = value;
        break;
      case "tier":
        if (!/^[0-3]$/.test(value)) return fail(`tier: expected 0, 1, 2 or 3, got "${value.slice(0, 40)}"`);
        filter.tier = Number(value);
        break;
      case "outcome":
        if (!OUTCOMES.has(value))
          return fail(`outcome: expected ok, denied, error or challenge, got "${value.slice(0, 40)}"`);
        filter.outcome = value as NonNullable<AuditFilter["outcome"]>;
        break;
      case "denied":
        if (value !== "true" && value !== "false")
          return fail(`denied: expected true or false, got "${value.slice(0, 40)}"`);
        filter.denied = value === "true";
        break;
      case "since":
      case "until": {
        const ms = Date.parse(value);
        if (Number.isNaN(ms)) return fail(`${key}: expected a date and time, got "${value.slice(0, 40)}"`);
        filter[key] = ms;
        break;
      }
      default:
        return fail(`unknown filter "${key.slice(0, 40)}"`);
    }
  }
  if (filter.since !== undefined && filter.until !== undefined && filter.since >= filter.until)
    return fail("since: must be before until");
  return ok(filter);
}

/** A line passes when it is a record matching the filter; an unreadable line shows only unfiltered. */
function passes(line: FollowedLine, filter: AuditFilter, filtered: boolean): boolean {
  if (line.record === null) return !filtered;
  return matchesFilter(line.record, filter);
}

function sent(line: FollowedLine): SentLine {
  return {
    file: line.file,
    line: line.line,
    chain: line.chain,
    record: line.record,
    outcome: line.record === null ? null : outcomeOf(line.record),
    unreadable: line.unreadable,
  };
}

/**
 * The live audit page (/console/audit) and its event stream
 * (/console/audit/events). Each open page has a follower of its own that
 * walks the file from its first line, so every record's chain status is
 * the one `--verify-audit` would give up to that line, and sends the last
 * {@link AUDIT_BACKLOG} matching lines of what was there, then every new
 * matching line as it is written, by this relay or any other process. The
 * follower is closed when the page goes.
 */
export function registerAuditView(app: Hono, options: AuditViewOptions): void {
  const { auditPath, logger } = options;
  let open = 0;

  app.get("/console/audit", async (c) => {
    const who = await options.operator(c);
    if (!who) return c.redirect("/console/login", 303);
    return c.html(auditPage(who.csrf, who.passkey, auditPath, (await options.nav?.()) ?? {}));
  });

  app.get("/console/audit/events", async (c) => {
    if (!(await options.operator(c))) return refuse(c, 401, "Not logged in");
    const parsed = parseAuditFilter(c.req.query());
    if (!parsed.ok) return refuse(c, 400, `Invalid filter: ${parsed.error}`);
    if (open >= MAX_AUDIT_STREAMS) {
      c.header("Retry-After", "5");
      return refuse(c, 429, `Too many open audit views (at most ${MAX_AUDIT_STREAMS}); close one`);
    }
    const filter = parsed.value;
    const filtered = Object.keys(filter).length > 0;
    open += 1;
    return streamSSE(
      c,
      async (stream) => {
        let ended = false;
        let follower: AuditFollower | null = null;
        const pace = createStreamPace(Date.now);
        const nudge = pace.nudge;
        const queue: string[] = [];
        let dropped = 0;
        const finish = () => {
          if (ended) return;
          ended = true;
          follower?.close();
          follower = null;
          open -= 1;
          nudge();
        };
        stream.onAbort(finish);

        const push = (event: string, data: unknown) => {
          queue.push(`${event}\n${JSON.stringify(data)}`);
          if (queue.length > MAX_QUEUED) {
            const over = queue.length - MAX_QUEUED;
            queue.splice(0, over);
            dropped += over;
          }
          nudge();
        };

        // Until the follower has read what the file held when the page opened, only the last
        // matching lines are kept: the page starts from the end, with chain statuses from the start.
        let size = 0;
        try {
          size = statSync(auditPath).size;
        } catch {
          size = 0; // no file yet: everything is live
        }
        let backlog: FollowedLine[] | null = size > 0 ? [] : null;
        const flushBacklog = () => {
          if (backlog === null) return;
          const lines = backlog;
          backlog = null;
          for (const line of lines) push("record", sent(line));
          push("live", {});
        };
        if (backlog === null) push("live", {});

        follower = followAudit(auditPath, {
          onRecords(batch) {
            for (const line of batch) {
              if (!passes(line, filter, filtered)) continue;
              if (backlog !== null) {
                backlog.push(line);
                if (backlog.length > AUDIT_BACKLOG) backlog.shift();
              } else push("record", sent(line));
            }
            if (backlog !== null && (follower === null || follower.position().offset >= size)) flushBacklog();
          },
          onReset(event) {
            flushBacklog();
            push("reset", event);
          },
          onError(error) {
            logger.warn({ err: error.message }, "console audit view cannot read the audit file");
            push("problem", { message: error.message });
          },
        });

        try {
          while (!ended) {
            if (queue.length === 0) await pace.sleep();
            if (ended) break;
            if (dropped > 0) {
              await stream.writeSSE({ event: "dropped", data: JSON.stringify({ lines: dropped }) });
              dropped = 0;
            }
            // Several lines per write: at 500 records a second one write per line costs more than the lines.
            const take = queue.splice(0, 200);
            if (take.length > 0) {
              let text = "";
              for (const item of take) {
                const nl = item.indexOf("\n");
                text += `event: ${item.slice(0, nl)}\ndata: ${item.slice(nl + 1)}\n\n`;
              }
              await stream.write(text);
            }
            if (pace.beatDue()) {
              // A page whose login expired or whose passkey was removed stops receiving.
              if (!(await options.operator(c))) {
                await stream.writeSSE({ event: "expired", data: "{}" });
                break;
              }
              await stream.write(": keep-alive\n\n");
            }
          }
        } finally {
          finish();
        }
      },
      async (err) => {
        logger.warn({ err: String(err) }, "console audit stream ended with an error");
      },
    );
  });
}
