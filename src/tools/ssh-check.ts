import { clamp, describeError } from "../core/index.js";
import type { TierSpec } from "../policy/index.js";
import { annotationsFor, defineTool, hostFailureText, type TierFloor, type Tool } from "../runner/index.js";
import { type HostKeyReport, mapBounded } from "../ssh/index.js";
import { type BindContext, hostListTargets } from "./consent-bindings.js";
import { callHost, type SshToolDeps, sshProbe, sshTargets } from "./ssh-common.js";
import { fleetTargets, NO_HOSTS, overCap } from "./ssh-fleet-hosts.js";

const CHECK_HOST_CAP = 100;
const CHECK_CONCURRENCY = 8;
const READ_ONLY: TierSpec = { kind: "fixed", tier: 0 };

/**
 * ssh_check dials every host it is given. A name the operator configured (an inventory or
 * ssh_config alias) is a reachability probe of the operator's own fleet: Tier 0. Any other name
 * (an address, `user@host`, a host name no alias holds) makes the relay open connections where
 * the caller chooses, as ssh_keyscan does: Tier 1, so readonly mode refuses it.
 */
function outsideInventory(deps: SshToolDeps, hosts: string): TierFloor | null {
  const outside = fleetTargets(deps.ssh, hosts).filter(
    (host) => deps.ssh.directory.lookup(host).source === "explicit",
  );
  if (outside.length === 0) return null;
  return { tier: 1, basis: "default", part: `not in the inventory: ${outside.join(", ")}`.slice(0, 120) };
}

/** `<name>: ok` or `<name>: UNREACHABLE (…)` for one host, its host-key report kept in `keys`. */
async function probe(
  deps: SshToolDeps,
  host: string,
  timeout: number,
  signal: AbortSignal,
  keys: Array<HostKeyReport & { name: string }>,
): Promise<string> {
  try {
    const r = await deps.ssh.run({
      host,
      command: "echo ok",
      timeoutSeconds: timeout,
      connectTimeoutSeconds: timeout,
      maxBufferBytes: 4096,
      signal,
    });
    if (r.hostKey) keys.push({ name: host, ...r.hostKey });
    if (r.timedOut) return `${host}: UNREACHABLE (TimeoutError)`;
    return r.exitCode === 0 && r.output.includes("ok") ? `${host}: ok` : `${host}: UNREACHABLE`;
  } catch (err) {
    return `${host}: UNREACHABLE (${describeError(err).type})`;
  }
}

export function sshCheckTool(deps: SshToolDeps): Tool {
  const { ssh } = deps;
  return defineTool({
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
      const hosts = fleetTargets(ssh, a.hosts);
      return sshProbe(ssh, a.hosts.trim() === "" ? hosts.join(" ") : a.hosts, hosts);
    },
    tierFloor: (a) => outsideInventory(deps, a.hosts),
    // It runs `echo ok` on each host: each host's own policy decides for it (docs/policy.md).
    hosts: (a) =>
      fleetTargets(ssh, a.hosts)
        .slice(0, CHECK_HOST_CAP)
        .map((host) => callHost(ssh, host)),
    targets: (a) =>
      fleetTargets(ssh, a.hosts)
        .slice(0, CHECK_HOST_CAP)
        .flatMap((host) => sshTargets(ssh, host)),
    auditArgs: (a) => ({ hosts: a.hosts === "" ? "inventory" : a.hosts }),
    // Tier 1 only when it names a host outside the inventory: the hosts it will dial are the act.
    act: (a, { deps }: BindContext) => ({ hosts: hostListTargets(deps, a.hosts) }),
    async run(a, ctx) {
      const hosts = fleetTargets(ssh, a.hosts);
      if (hosts.length === 0) return { body: NO_HOSTS };
      if (hosts.length > CHECK_HOST_CAP) throw overCap(hosts.length, CHECK_HOST_CAP);
      const timeout = clamp(a.timeout, 1, 60);
      const keys: Array<HostKeyReport & { name: string }> = [];
      const lines = await mapBounded(
        hosts,
        CHECK_CONCURRENCY,
        (host) => {
          // A host its own policy refused or holds is not dialled: the line says why.
          const refused = ctx.hostRefusals?.get(host);
          return refused
            ? Promise.resolve(`${host}: ${hostFailureText(refused)}`)
            : probe(deps, host, timeout, ctx.signal, keys);
        },
        (_line, _index, done) => ctx.progress(done, hosts.length),
      );
      const ok = lines.filter((l) => l.endsWith(": ok")).length;
      return { body: lines.join("\n"), fields: { host_count: hosts.length, ok_hosts: ok, host_keys: keys } };
    },
  });
}
