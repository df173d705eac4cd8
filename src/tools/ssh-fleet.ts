import { clamp, RelayError } from "../core/index.js";
import {
  annotationsFor,
  clampOutput,
  commandOutcome,
  defineTool,
  fanoutShare,
  hostFailureText,
  PER_HOST_FANOUT,
  type Tool,
  type ToolContext,
  type ToolOutcome,
} from "../runner/index.js";
import {
  createFanoutResults,
  FANOUT_KEPT_BYTES,
  type FanoutResults,
  type HostKeyReport,
  type KeptHostRun,
  mapBounded,
} from "../ssh/index.js";
import { type BindContext, hostListTargets, sha256 } from "./consent-bindings.js";
import { clampTimeout } from "./shell.js";
import { sshCheckTool } from "./ssh-check.js";
import {
  callHost,
  REMOTE_COMMAND_TIER,
  remoteProgram,
  type SshToolDeps,
  sshProbe,
  sshTargets,
} from "./ssh-common.js";
import { fleetTargets, NO_HOSTS, overCap } from "./ssh-fleet-hosts.js";

/** Hosts one fan-out may name (ADR 0041). */
const FANOUT_HOST_CAP = 1000;
/** Hosts in flight at once, at most. */
const FANOUT_CONCURRENCY_CAP = 256;

interface FanoutArgs {
  command: string;
  hosts: string;
  timeout?: number | undefined;
  concurrency: number;
}

type HostKeys = Array<HostKeyReport & { name: string }>;

/** A one-word state for the progress notification of a host that finished. */
function stateOf(run: KeptHostRun): string {
  const r = run.result;
  if (!r) {
    const type = run.error instanceof RelayError ? run.error.type : "";
    return type === "PolicyDenied"
      ? "denied by its policy"
      : type === "PolicyHeld"
        ? "held by its policy"
        : "unreachable";
  }
  if (r.timedOut) return "timeout";
  return r.exitCode === null ? "no exit status" : `exit ${r.exitCode}`;
}

/**
 * Bytes of output kept per host: what the result can show inline, raised
 * to an equal share of what one fan-out may keep for the follow-up call,
 * and never more than the call's whole budget.
 */
function keptPerHost(command: string, n: number, aggregate: number): number {
  const inline = fanoutShare(command, n, aggregate);
  return Math.min(aggregate, Math.max(inline, Math.floor(FANOUT_KEPT_BYTES / n)));
}

async function runFanout(
  deps: SshToolDeps,
  results: FanoutResults,
  a: FanoutArgs,
  ctx: ToolContext,
): Promise<ToolOutcome> {
  const { settings, ssh } = deps;
  if (a.command.trim() === "") throw RelayError.untyped("empty command");
  const hosts = fleetTargets(ssh, a.hosts);
  if (hosts.length === 0) return { body: NO_HOSTS };
  if (hosts.length > FANOUT_HOST_CAP) throw overCap(hosts.length, FANOUT_HOST_CAP);
  const timeout = clampTimeout(a.timeout ?? settings.defaultTimeout, settings);
  const concurrency = clamp(a.concurrency, 1, FANOUT_CONCURRENCY_CAP);
  const n = hosts.length;
  const perHost = keptPerHost(a.command, n, clampOutput(settings.maxOutput, settings));

  const runs = await mapBounded(
    hosts,
    concurrency,
    async (host): Promise<KeptHostRun & { hostKey?: HostKeyReport }> => {
      // A host its own policy refused or holds is reported with the runner's reason, never dialled.
      const refused = ctx.hostRefusals?.get(host);
      if (refused) return { host, error: refused };
      // A cancelled call dials no further host; the ones in flight stop through the signal.
      if (ctx.signal.aborted)
        return { host, error: new RelayError("CancelledError", "the call was cancelled") };
      try {
        const result = await ssh.run({
          host,
          command: a.command,
          timeoutSeconds: timeout,
          connectTimeoutSeconds: timeout,
          maxBufferBytes: perHost,
          signal: ctx.signal,
        });
        return { host, result, ...(result.hostKey ? { hostKey: result.hostKey } : {}) };
      } catch (error) {
        return { host, error };
      }
    },
    (done, _index, count) => ctx.progress(count, n, `${done.host}: ${stateOf(done)}`),
  );

  const keys: HostKeys = [];
  for (const { host, hostKey } of runs) {
    // A large fan-out lists only the keys a reader must notice: learned or unchecked.
    if (hostKey && (n <= PER_HOST_FANOUT || hostKey.status !== "verified"))
      keys.push({ name: host, ...hostKey });
  }
  const id = results.newId();
  const kept = runs.map(({ hostKey: _key, ...run }) => run);
  results.keep({ id, owner: ctx.clientId, command: a.command, timeout, runs: kept });
  const failed = kept.filter((r) => !r.result || r.result.timedOut).length;
  return {
    body: "",
    fanout: { id, command: a.command, concurrency, timeout, hosts: kept },
    fields: { host_count: n, failed_hosts: failed, fanout_id: id, host_keys: keys },
  };
}

function fanoutTool(deps: SshToolDeps, results: FanoutResults): Tool {
  const { settings, ssh } = deps;
  return defineTool({
    name: "ssh_fanout",
    title: "Run a command on many SSH hosts",
    description:
      "Run one non-interactive command on many hosts in parallel (at most 1000 hosts, up to 256 at once) and " +
      "return one JSON object. Up to 100 hosts: a result per host in input order (exit code and output, or " +
      "[UNREACHABLE: …] / [TIMEOUT after Ns]). Past 100: hosts grouped by identical output and exit code, " +
      "named in ranges like web[001-040,042], failures grouped by kind. Either way `fanout_id` lets " +
      "ssh_fanout_result read any host's whole output. Empty hosts = every inventory host. For one host use ssh_exec.",
    params: {
      command: { type: "string", description: "command line for each remote shell", noNul: true },
      hosts: {
        type: "string",
        description: "comma/whitespace separated aliases or user@host; empty = the whole inventory",
        default: "",
      },
      timeout: {
        type: "integer",
        description: "seconds per host for connect + run (default RELAY_SHELL_DEFAULT_TIMEOUT)",
        optional: true,
      },
      concurrency: { type: "integer", description: "hosts in flight at once, 1..256", default: 8 },
    },
    tier: REMOTE_COMMAND_TIER,
    programInput: (a) => remoteProgram(a.command),
    annotations: annotationsFor(REMOTE_COMMAND_TIER, { openWorld: true }),
    resultFields: {
      host_count: { type: "integer", description: "hosts in the call" },
      failed_hosts: { type: "integer", description: "hosts without an exit code (unreachable or timed out)" },
      fanout_id: { type: "string", description: "id for ssh_fanout_result, kept for an hour" },
      host_keys: {
        type: "array",
        description:
          "host-key outcome per dialled host: {name, host, port, mode, status, …}; past 100 hosts only the " +
          "learned and unchecked ones",
      },
    },
    budget: () => clampOutput(settings.maxOutput, settings),
    policyText: (a) => {
      const hosts = fleetTargets(ssh, a.hosts);
      // An inventory-wide fan-out names its hosts in the probe, so a host deny rule still applies (ADR 0008).
      const listed = a.hosts.trim() === "" ? hosts.join(", ") : a.hosts;
      return sshProbe(ssh, `${a.command}\n${listed}`, hosts);
    },
    // Each host's own policy decides for it (docs/policy.md); past the cap run() refuses first.
    hosts: (a) =>
      fleetTargets(ssh, a.hosts)
        .slice(0, FANOUT_HOST_CAP)
        .map((host) => callHost(ssh, host)),
    // Past the cap run() refuses before dialling, so the hosts beyond it never act.
    targets: (a) =>
      fleetTargets(ssh, a.hosts)
        .slice(0, FANOUT_HOST_CAP)
        .flatMap((host) => sshTargets(ssh, host)),
    auditArgs: (a) => ({
      command: a.command,
      hosts: a.hosts,
      timeout: clampTimeout(a.timeout ?? settings.defaultTimeout, settings),
      concurrency: clamp(a.concurrency, 1, FANOUT_CONCURRENCY_CAP),
    }),
    // The hosts as a set in one order; the timeout and concurrency only bound the act.
    act: (a, { deps }: BindContext) => ({
      hosts: hostListTargets(deps, a.hosts),
      command: a.command,
      command_sha256: sha256(a.command),
    }),
    run: (a, ctx) => runFanout(deps, results, a, ctx),
  });
}

/** One line per host of a kept fan-out: its state and how much it wrote. */
function listing(runs: readonly KeptHostRun[], id: string, timeout: number): string {
  const lines = runs.map((run) => {
    const r = run.result;
    if (!r) return `${run.host}: unreachable`;
    if (r.timedOut) return `${run.host}: timeout after ${timeout}s`;
    const status = r.exitCode === null ? "no exit status" : `exit ${r.exitCode}`;
    return `${run.host}: ${status}, ${r.totalBytes} bytes`;
  });
  return `fan-out ${id}: ${runs.length} hosts\n${lines.join("\n")}`;
}

function fanoutResultTool(deps: SshToolDeps, results: FanoutResults): Tool {
  const { settings } = deps;
  const readOnly = { kind: "fixed", tier: 0 } as const;
  return defineTool({
    name: "ssh_fanout_result",
    title: "Read a fan-out's per-host output",
    description:
      "Read what one host of an earlier ssh_fanout printed, in full as far as the relay kept it ([exit N] and " +
      "the output, [UNREACHABLE: …] or [TIMEOUT after Ns]); with host empty, list every host of the fan-out " +
      "with its exit status and output size. The relay that ran the fan-out keeps its last 16 for an hour, " +
      "for the client that ran them. Read-only.",
    params: {
      fanout_id: { type: "string", description: "the fanout_id an ssh_fanout result gave" },
      host: {
        type: "string",
        description: "a host name as the fan-out listed it; empty = list the hosts",
        default: "",
      },
    },
    tier: readOnly,
    introspection: true,
    annotations: annotationsFor(readOnly, { openWorld: false }),
    resultFields: {
      host_count: { type: "integer", description: "hosts in the fan-out" },
    },
    budget: () => clampOutput(settings.maxOutput, settings),
    policyText: () => "",
    auditArgs: (a) => ({ fanout_id: a.fanout_id, host: a.host }),
    async run(a, ctx) {
      const fanout = results.get(a.fanout_id, ctx.clientId);
      const fields = { host_count: fanout.runs.length };
      if (a.host === "") return { body: listing(fanout.runs, fanout.id, fanout.timeout), fields };
      const run = fanout.runs.find((r) => r.host === a.host);
      if (!run) {
        const shown = JSON.stringify(a.host.slice(0, 200));
        throw new RelayError(
          "FanoutError",
          `no host ${shown} in fan-out ${fanout.id}; host="" lists its hosts`,
        );
      }
      if (!run.result) return { body: hostFailureText(run.error), fields };
      return commandOutcome(run.result, fanout.timeout, fields);
    },
  });
}

/** ssh_fanout, ssh_fanout_result over the outputs this relay keeps, and ssh_check. */
export function createSshFleetTools(deps: SshToolDeps): Tool[] {
  const results = createFanoutResults(deps.settings.instance);
  return [fanoutTool(deps, results), fanoutResultTool(deps, results), sshCheckTool(deps)];
}
