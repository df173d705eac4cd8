import { neutralizeTerminalOutput, type TerminalOutputMode, utf8Length } from "../core/index.js";
import { fitForJson } from "./fanout-fit.js";
import { type FanoutHostRun, formatGrouped, groupRuns } from "./fanout-groups.js";
import { hostFailureText, timeoutText } from "./format.js";

/** Bytes kept free for trailing notices (a tier line and a host-key line listing up to 8 hosts). */
const NOTICE_ROOM = 1536;

/**
 * Up to this many hosts a fan-out answers with a result per host in input
 * order, the shape docs/wire-contract.md §2.4 fixes; past it, with hosts
 * grouped by identical output (ADR 0041).
 */
export const PER_HOST_FANOUT = 100;

/**
 * A command run on many hosts (ssh_fanout). The runner writes it as one JSON
 * object within the call's budget: a result per host in input order, or
 * for a large fan-out, groups of hosts that gave the same output.
 */
export interface FanoutOutcome {
  /** Where the whole outputs stay reachable (`ssh_fanout_result`). */
  id: string;
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
  if (n > PER_HOST_FANOUT) {
    const grouped = groupRuns(hosts, timeout, mode);
    const header = { command: plan.echo, concurrency, timeout, host_count: n, fanout_id: fanout.id };
    return {
      body: formatGrouped(header, grouped, aggregate - plan.noticeRoom),
      terminalRemoved: grouped.terminalRemoved,
    };
  }
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
          output: fitForJson(neutralizeTerminalOutput(hostFailureText(error), mode).text, limit),
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
    return JSON.stringify({
      command: plan.echo,
      concurrency,
      timeout,
      host_count: n,
      fanout_id: fanout.id,
      results,
    });
  };
  let body = build(perHost);
  // Long host names can still push past the envelope; shrink the per-host share until it fits.
  while (utf8Length(body) > aggregate - plan.noticeRoom && perHost > 0) {
    perHost = Math.floor(perHost / 2);
    body = build(perHost);
  }
  return { body, terminalRemoved };
}
