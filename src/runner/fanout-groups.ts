import {
  describeError,
  foldHosts,
  neutralizeTerminalOutput,
  RelayError,
  type RunOutcome,
  type TerminalOutputMode,
  utf8Length,
} from "../core/index.js";
import { fitForJson } from "./fanout-fit.js";
import { hostFailureText, timeoutText } from "./format.js";

/** What one host of a fan-out did: its run, or why it has none. */
export interface FanoutHostRun {
  host: string;
  /**
   * Absent when the host was not reached; `error` then says why. What the host's buffer had to drop
   * and all it wrote let the marker report the real size.
   */
  result?: Pick<RunOutcome, "exitCode" | "output" | "timedOut" | "droppedBytes" | "totalBytes">;
  error?: unknown;
}

/** Hosts that gave the same output with the same exit status. */
interface OutputGroup {
  hosts: string[];
  exitCode: number | null;
  /** The output as shown (made safe for a terminal), and all the first host wrote. */
  output: string;
  producedBytes: number | undefined;
}

/** Hosts that did not finish, by the kind of failure: one example message for all. */
interface FailureGroup {
  error: string;
  hosts: string[];
  message: string;
}

export interface Grouped {
  groups: OutputGroup[];
  failures: FailureGroup[];
  terminalRemoved: number;
}

/** The kind a failed host is filed under: TIMEOUT, the error's type token, and for a policy's refusal its name. */
function failureKind(run: FanoutHostRun): string {
  if (run.result?.timedOut) return "TIMEOUT";
  const { error } = run;
  // Hosts refused or held by different policies are different kinds, each with its own reason.
  if (error instanceof RelayError && (error.type === "PolicyDenied" || error.type === "PolicyHeld"))
    return `${error.type} ${error.code}`;
  return describeError(error).type;
}

/**
 * Hosts grouped by identical output and exit status (the output compared
 * as the host's buffer kept it, with how much it wrote), largest group
 * first, ties in input order; failures grouped by kind in input order.
 */
export function groupRuns(
  runs: readonly FanoutHostRun[],
  timeout: number,
  mode: TerminalOutputMode,
): Grouped {
  const groups = new Map<string, OutputGroup & { first: number }>();
  const failures = new Map<string, FailureGroup>();
  let terminalRemoved = 0;
  runs.forEach((run, index) => {
    const { result } = run;
    if (!result || result.timedOut) {
      const kind = failureKind(run);
      const known = failures.get(kind);
      if (known) known.hosts.push(run.host);
      else {
        const text = result ? timeoutText(timeout) : hostFailureText(run.error);
        failures.set(kind, {
          error: kind,
          hosts: [run.host],
          message: neutralizeTerminalOutput(text, mode).text,
        });
      }
      return;
    }
    const produced = result.droppedBytes > 0 ? result.totalBytes : undefined;
    const key = `${result.exitCode}\u0000${produced ?? ""}\u0000${result.output}`;
    const known = groups.get(key);
    if (known) {
      known.hosts.push(run.host);
      return;
    }
    const clean = neutralizeTerminalOutput(result.output, mode);
    terminalRemoved += clean.removed;
    groups.set(key, {
      hosts: [run.host],
      exitCode: result.exitCode,
      output: clean.text,
      producedBytes: produced,
      first: index,
    });
  });
  const ordered = [...groups.values()].sort((a, b) => b.hosts.length - a.hosts.length || a.first - b.first);
  return {
    groups: ordered.map(({ first: _first, ...group }) => group),
    failures: [...failures.values()],
    terminalRemoved,
  };
}

/** The floor of an output's share: enough to show the start of a line and the marker. */
const MIN_SHARE = 96;
/** Room for the folded host names of one entry before they are cut (the follow-up call lists them all). */
const HOSTS_ROOM = 2048;
/** Room for a failure's example message: the kind and the first host's reason. */
const MESSAGE_ROOM = 512;
/** Slack for the closing brackets and the omitted-groups tail. */
const TAIL_ROOM = 2560;

interface GroupedHeader {
  command: string;
  concurrency: number;
  timeout: number;
  host_count: number;
  fanout_id: string;
}

/** A group as the object shows it; `hosts` already folded and fitted, once per group. */
function groupEntry(group: OutputGroup, hosts: string, share: number) {
  return {
    hosts,
    host_count: group.hosts.length,
    exit_code: group.exitCode,
    output: fitForJson(group.output, share, group.producedBytes),
  };
}

function failureEntry(failure: FailureGroup) {
  return {
    error: failure.error,
    hosts: fitForJson(foldHosts(failure.hosts), HOSTS_ROOM),
    host_count: failure.hosts.length,
    message: fitForJson(failure.message, MESSAGE_ROOM),
  };
}

/**
 * The grouped fan-out object within `limit` bytes: every failure kind
 * (a reader must see what went wrong), then output groups, largest first,
 * the room left shared equally by their outputs. Groups that do not fit
 * even at the smallest share are counted in `groups_omitted`, their hosts
 * folded in `omitted_hosts`; the follow-up call reads any host's output.
 */
export function formatGrouped(header: GroupedHeader, grouped: Grouped, limit: number): string {
  const { groups } = grouped;
  const failures = grouped.failures.map(failureEntry);
  const base = utf8Length(JSON.stringify({ ...header, groups: [], failures })) + TAIL_ROOM;
  const folded = groups.map((group) => fitForJson(foldHosts(group.hosts), HOSTS_ROOM));
  const overhead = groups.reduce(
    (sum, group, i) => sum + utf8Length(JSON.stringify(groupEntry(group, folded[i] ?? "", 0))) + 1,
    0,
  );
  let share = Math.max(MIN_SHARE, Math.floor((limit - base - overhead) / Math.max(1, groups.length)));
  for (;;) {
    let used = base;
    const shown: ReturnType<typeof groupEntry>[] = [];
    const omitted: string[] = [];
    for (const [i, group] of groups.entries()) {
      // Shown groups are a prefix of the order: once one is left out, the smaller ones are too.
      if (omitted.length === 0) {
        const entry = groupEntry(group, folded[i] ?? "", share);
        const size = utf8Length(JSON.stringify(entry)) + 1;
        if (used + size <= limit) {
          shown.push(entry);
          used += size;
          continue;
        }
      }
      omitted.push(...group.hosts);
    }
    const tail =
      omitted.length === 0
        ? {}
        : {
            groups_omitted: groups.length - shown.length,
            omitted_hosts: fitForJson(foldHosts(omitted), HOSTS_ROOM),
          };
    const body = JSON.stringify({ ...header, groups: shown, failures, ...tail });
    if (utf8Length(body) <= limit || share === 0) return body;
    share = share > MIN_SHARE ? Math.max(MIN_SHARE, Math.floor(share / 2)) : 0;
  }
}
