import {
  decodeUtf8,
  neutralizeTerminalOutput,
  openSequenceStart,
  type TerminalOutputMode,
  utf8Length,
} from "../core/index.js";
import { timeoutText, unreachableText } from "./format.js";

/** Bytes kept free for trailing notices (a tier line and a host-key line listing up to 8 hosts). */
const NOTICE_ROOM = 1536;

/** What one host of a fan-out did. */
interface FanoutHostRun {
  host: string;
  /** Absent when the host was not reached; `error` then says why. */
  result?: {
    exitCode: number | null;
    output: string;
    timedOut: boolean;
    /** Output the host's buffer had to drop, and all it wrote: the marker reports the real size. */
    droppedBytes: number;
    totalBytes: number;
  };
  error?: unknown;
}

/**
 * A command run on many hosts (ssh_fanout). The runner writes it as one JSON
 * object with a result per host in input order, within the call's budget.
 */
export interface FanoutOutcome {
  command: string;
  concurrency: number;
  /** Seconds per host, as the call clamped it. */
  timeout: number;
  hosts: FanoutHostRun[];
}

interface FanoutPlan {
  /** The command as echoed in the object. */
  echo: string;
  /** Room for the `notices` array the runner may splice in after the record is written (docs/wire-contract.md §8.3). */
  noticeRoom: number;
  /** Each host's first share of the budget. */
  perHost: number;
}

/** The envelope arithmetic of docs/wire-contract.md §2.4: the object always fits the output budget. */
function planFanout(command: string, hostCount: number, aggregate: number): FanoutPlan {
  const echo = fitForJson(command, Math.min(2048, Math.floor(aggregate / 4)));
  const noticeRoom = Math.min(NOTICE_ROOM, Math.floor(aggregate / 4));
  const reserve = 1024 + noticeRoom + utf8Length(echo) + 200 * hostCount;
  const perHost = Math.max(128, Math.floor(Math.max(aggregate - reserve, 0) / hostCount));
  return { echo, noticeRoom, perHost };
}

/**
 * The bytes of output worth keeping per host when `hostCount` hosts run
 * `command` under a budget of `aggregate` bytes: the work caps each host's
 * buffer at it, since no more of any host's output can be shown.
 */
export function fanoutShare(command: string, hostCount: number, aggregate: number): number {
  return planFanout(command, hostCount, aggregate).perHost;
}

/** JSON-escaped UTF-8 size of a string's content (without the quotes). */
function jsonSize(text: string): number {
  return utf8Length(JSON.stringify(text)) - 2;
}

/**
 * Cut `text` so that its JSON-escaped form fits in `limit` bytes, marker
 * included. Escaping can grow a byte sixfold (`\u0001`), so a raw byte budget
 * alone would let the fan-out object outgrow its envelope.
 */
export function fitForJson(text: string, limit: number, producedBytes?: number): string {
  const bytes = Buffer.from(text, "utf8");
  const total = Math.max(producedBytes ?? 0, bytes.length);
  if (total <= bytes.length && jsonSize(text) <= limit) return text;
  let keep = Math.min(bytes.length, limit);
  for (;;) {
    // A cut inside a character decodes to U+FFFD; drop it rather than show a broken glyph.
    let head = decodeUtf8(bytes.subarray(0, keep)).replace(/\uFFFD$/, "");
    // Nor leave half a colour sequence for the marker to complete.
    const open = openSequenceStart(head);
    if (open !== -1) head = head.slice(0, open);
    const candidate = `${head}\n\n[TRUNCATED - ${total} bytes total, ${utf8Length(head)} shown]`;
    const size = jsonSize(candidate);
    if (size <= limit) return candidate;
    if (keep === 0) return "";
    // Shrink in proportion to the overshoot (escapes make the ratio uneven), always by at least a byte.
    keep = Math.max(0, Math.min(keep - 1, Math.floor((keep * limit) / size) - 1));
  }
}

interface HostResult {
  host: string;
  exit_code: number | null;
  output: string;
}

/**
 * The fan-out object, within `aggregate` bytes less the notice room. Each
 * host's output is made safe for a terminal before it is fitted, so its
 * share counts what is sent; the count of what was removed comes back too.
 */
export function formatFanout(
  fanout: FanoutOutcome,
  aggregate: number,
  mode: TerminalOutputMode,
): { body: string; terminalRemoved: number } {
  const { concurrency, timeout, hosts } = fanout;
  const n = hosts.length;
  const plan = planFanout(fanout.command, n, aggregate);
  let perHost = plan.perHost;
  let terminalRemoved = 0;
  const outputs = hosts.map(({ result }) => {
    if (!result || result.timedOut) return "";
    const clean = neutralizeTerminalOutput(result.output, mode);
    terminalRemoved += clean.removed;
    return clean.text;
  });
  const build = (limit: number): string => {
    const results: HostResult[] = hosts.map(({ host, result, error }, index) => {
      const name = fitForJson(host, 200);
      if (!result) {
        return {
          host: name,
          exit_code: null,
          output: fitForJson(neutralizeTerminalOutput(unreachableText(error), mode).text, limit),
        };
      }
      if (result.timedOut) return { host: name, exit_code: null, output: timeoutText(timeout) };
      const produced = result.droppedBytes > 0 ? result.totalBytes : undefined;
      return {
        host: name,
        exit_code: result.exitCode,
        output: fitForJson(outputs[index] ?? "", limit, produced),
      };
    });
    return JSON.stringify({ command: plan.echo, concurrency, timeout, host_count: n, results });
  };
  let body = build(perHost);
  // Long host names can still push past the envelope; shrink the per-host share until it fits.
  while (utf8Length(body) > aggregate - plan.noticeRoom && perHost > 0) {
    perHost = Math.floor(perHost / 2);
    body = build(perHost);
  }
  return { body, terminalRemoved };
}
