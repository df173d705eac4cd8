import { clamp, describeError, RelayError } from "../core/index.js";
import { splitHostList, type TierSpec } from "../policy/index.js";
import {
  annotationsFor,
  clampOutput,
  defineTool,
  fanoutShare,
  type TierFloor,
  type Tool,
} from "../runner/index.js";
import { type HostKeyReport, mapBounded, type SshRunResult } from "../ssh/index.js";
import { type BindContext, hostListTargets, sha256 } from "./consent-bindings.js";
import { clampTimeout } from "./shell.js";
import { REMOTE_COMMAND_TIER, remoteProgram, type SshToolDeps, sshProbe, sshTargets } from "./ssh-common.js";

const HOST_CAP = 100;
const NO_HOSTS = "[no hosts configured; pass hosts= or add an inventory]";
const CHECK_CONCURRENCY = 8;
const READ_ONLY: TierSpec = { kind: "fixed", tier: 0 };

function overCap(n: number): RelayError {
  return RelayError.untyped(`${n} hosts exceeds the per-call cap of ${HOST_CAP}; split into smaller batches`);
}

export function createSshFleetTools(deps: SshToolDeps): Tool[] {
  const { settings, ssh } = deps;

  /** Hosts a call targets: the typed list, or every inventory / ssh_config name. */
  const targetsOf = (hosts: string): string[] =>
    hosts.trim() === "" ? ssh.directory.names() : splitHostList(hosts);

  /**
   * ssh_check dials every host it is given. A name the operator configured (an inventory or
   * ssh_config alias) is a reachability probe of the operator's own fleet: Tier 0. Any other name
   * (an address, `user@host`, a host name no alias holds) makes the relay open connections where
   * the caller chooses, as ssh_keyscan does: Tier 1, so readonly mode refuses it.
   */
  const outsideInventory = (hosts: string): TierFloor | null => {
    const outside = targetsOf(hosts).filter((host) => ssh.directory.lookup(host).source === "explicit");
    if (outside.length === 0) return null;
    return { tier: 1, basis: "default", part: `not in the inventory: ${outside.join(", ")}`.slice(0, 120) };
  };

  const fanout = defineTool({
    name: "ssh_fanout",
    title: "Run a command on many SSH hosts",
    description:
      "Run one non-interactive command on many hosts in parallel (bounded concurrency, at most 100 hosts) and " +
      "return one JSON object with a result per host in input order: exit code and output, or " +
      "[UNREACHABLE: …] / [TIMEOUT after Ns]. Empty hosts = every inventory host. For one host use ssh_exec.",
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
      concurrency: { type: "integer", description: "hosts in flight at once, 1..32", default: 8 },
    },
    tier: REMOTE_COMMAND_TIER,
    programInput: (a) => remoteProgram(a.command),
    annotations: annotationsFor(REMOTE_COMMAND_TIER, { openWorld: true }),
    resultFields: {
      host_count: { type: "integer", description: "hosts in the call" },
      failed_hosts: { type: "integer", description: "hosts without an exit code (unreachable or timed out)" },
      host_keys: {
        type: "array",
        description: "host-key outcome per dialled host: {name, host, port, mode, status, …}",
      },
    },
    budget: () => clampOutput(settings.maxOutput, settings),
    policyText: (a) => {
      const hosts = targetsOf(a.hosts);
      // An inventory-wide fan-out names its hosts in the probe, so a host deny rule still applies (ADR 0008).
      const listed = a.hosts.trim() === "" ? hosts.join(", ") : a.hosts;
      return sshProbe(ssh, `${a.command}\n${listed}`, hosts);
    },
    // Past the cap run() refuses before dialling, so the hosts beyond it never act.
    targets: (a) =>
      targetsOf(a.hosts)
        .slice(0, HOST_CAP)
        .flatMap((host) => sshTargets(ssh, host)),
    auditArgs: (a) => ({
      command: a.command,
      hosts: a.hosts,
      timeout: clampTimeout(a.timeout ?? settings.defaultTimeout, settings),
      concurrency: clamp(a.concurrency, 1, 32),
    }),
    // The hosts as a set in one order; the timeout and concurrency only bound the act.
    act: (a, { deps }: BindContext) => ({
      hosts: hostListTargets(deps, a.hosts),
      command: a.command,
      command_sha256: sha256(a.command),
    }),
    async run(a, ctx) {
      if (a.command.trim() === "") throw RelayError.untyped("empty command");
      const hosts = targetsOf(a.hosts);
      if (hosts.length === 0) return { body: NO_HOSTS };
      if (hosts.length > HOST_CAP) throw overCap(hosts.length);
      const timeout = clampTimeout(a.timeout ?? settings.defaultTimeout, settings);
      const concurrency = clamp(a.concurrency, 1, 32);
      const n = hosts.length;
      // No more of a host's output can be shown than its share of the budget: keep no more than that.
      const perHost = fanoutShare(a.command, n, clampOutput(settings.maxOutput, settings));
      const keys: Array<HostKeyReport & { name: string }> = [];

      const runs = await mapBounded(
        hosts,
        concurrency,
        async (host): Promise<{ host: string; result?: SshRunResult; error?: unknown }> => {
          try {
            const result = await ssh.run({
              host,
              command: a.command,
              timeoutSeconds: timeout,
              connectTimeoutSeconds: timeout,
              maxBufferBytes: perHost,
              signal: ctx.signal,
            });
            return { host, result };
          } catch (error) {
            return { host, error };
          }
        },
        (done, _index, count) => {
          const r = done.result;
          const state = !r
            ? "unreachable"
            : r.timedOut
              ? "timeout"
              : r.exitCode === null
                ? "no exit status"
                : `exit ${r.exitCode}`;
          ctx.progress(count, n, `${done.host}: ${state}`);
        },
      );

      for (const { host, result } of runs) {
        if (result?.hostKey) keys.push({ name: host, ...result.hostKey });
      }
      const failed = runs.filter((r) => !r.result || r.result.timedOut).length;
      return {
        body: "",
        fanout: { command: a.command, concurrency, timeout, hosts: runs },
        fields: { host_count: n, failed_hosts: failed, host_keys: keys },
      };
    },
  });

  const check = defineTool({
    name: "ssh_check",
    title: "Probe SSH hosts",
    description:
      "Check which hosts answer over SSH by running `echo ok` on each (8 at a time, at most 100 hosts): one " +
      "line per host, `<name>: ok` or `<name>: UNREACHABLE (…)`. Empty hosts = every inventory host. Read-only; " +
      "Tier 0 for inventory and ssh_config aliases, Tier 1 when it names any other host.",
    params: {
      hosts: {
        type: "string",
        description: "comma/whitespace separated aliases; empty = the whole inventory",
        default: "",
      },
      timeout: { type: "integer", description: "seconds per host, connect included, 1..60", default: 5 },
    },
    tier: READ_ONLY,
    annotations: annotationsFor(READ_ONLY, { openWorld: true }),
    resultFields: {
      host_count: { type: "integer", description: "hosts probed" },
      ok_hosts: { type: "integer", description: "hosts that answered" },
      host_keys: { type: "array", description: "host-key outcome per dialled host" },
    },
    budget: () => 8192,
    policyText: (a) => {
      const hosts = targetsOf(a.hosts);
      return sshProbe(ssh, a.hosts.trim() === "" ? hosts.join(" ") : a.hosts, hosts);
    },
    tierFloor: (a) => outsideInventory(a.hosts),
    targets: (a) =>
      targetsOf(a.hosts)
        .slice(0, HOST_CAP)
        .flatMap((host) => sshTargets(ssh, host)),
    auditArgs: (a) => ({ hosts: a.hosts === "" ? "inventory" : a.hosts }),
    // Tier 1 only when it names a host outside the inventory: the hosts it will dial are the act.
    act: (a, { deps }: BindContext) => ({ hosts: hostListTargets(deps, a.hosts) }),
    async run(a, ctx) {
      const hosts = targetsOf(a.hosts);
      if (hosts.length === 0) return { body: NO_HOSTS };
      if (hosts.length > HOST_CAP) throw overCap(hosts.length);
      const timeout = clamp(a.timeout, 1, 60);
      const keys: Array<HostKeyReport & { name: string }> = [];
      const lines = await mapBounded(
        hosts,
        CHECK_CONCURRENCY,
        async (host) => {
          try {
            const r = await ssh.run({
              host,
              command: "echo ok",
              timeoutSeconds: timeout,
              connectTimeoutSeconds: timeout,
              maxBufferBytes: 4096,
              signal: ctx.signal,
            });
            if (r.hostKey) keys.push({ name: host, ...r.hostKey });
            if (r.timedOut) return `${host}: UNREACHABLE (TimeoutError)`;
            return r.exitCode === 0 && r.output.includes("ok") ? `${host}: ok` : `${host}: UNREACHABLE`;
          } catch (err) {
            return `${host}: UNREACHABLE (${describeError(err).type})`;
          }
        },
        (_line, _index, done) => ctx.progress(done, hosts.length),
      );
      const ok = lines.filter((l) => l.endsWith(": ok")).length;
      return { body: lines.join("\n"), fields: { host_count: hosts.length, ok_hosts: ok, host_keys: keys } };
    },
  });

  return [fanout, check];
}
