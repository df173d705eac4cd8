import { clamp, RelayError } from "../core/index.js";
import { buildEnv } from "../exec/index.js";
import { splitHostList, type TierSpec, widenHostTokens } from "../policy/index.js";
import {
  annotationsFor,
  clampOutput,
  commandOutcome,
  defineTool,
  hostFailureText,
  type Tool,
} from "../runner/index.js";
import { toListing } from "../ssh/index.js";
import { Unbindable } from "./consent-bindings.js";
import type { SshToolDeps } from "./ssh-common.js";
import { withAddressForms } from "./targets.js";

const READ_ONLY: TierSpec = { kind: "fixed", tier: 0 };
/** ssh-keyscan dials hosts the caller names: never Tier 0, whatever its text (docs/wire-contract.md §2.1). */
const KEYSCAN_TIER: TierSpec = { kind: "heuristic", floor: 1, windows: true };
const KEYSCAN_CAP = 32;
const KEYSCAN_HOST = /^[A-Za-z0-9._\-[\]:]+$/;
const KEY_TYPES = ["dsa", "ecdsa", "ed25519", "rsa"] as const;

/** The checks of docs/wire-contract.md §2.4, in its order, before anything runs. Returns the host list and types. */
function validateKeyscan(
  hostsText: string,
  port: number,
  keyTypes: string,
): { hosts: string[]; types: string[] } | { body: string } {
  const hosts = splitHostList(hostsText);
  if (hosts.length === 0) return { body: "[no hosts; pass hosts=<host>[,<host>...]]" };
  if (hosts.length > KEYSCAN_CAP) {
    throw RelayError.untyped(
      `${hosts.length} hosts exceeds the per-call cap of ${KEYSCAN_CAP}; split into smaller batches`,
    );
  }
  for (const host of hosts) {
    if (!KEYSCAN_HOST.test(host)) {
      throw RelayError.untyped(
        `rejected host '${host.slice(0, 200)}': must match ^[A-Za-z0-9._\\-\\[\\]:]+$`,
      );
    }
  }
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw RelayError.untyped(`port ${port} out of range 1..65535`);
  }
  const types: string[] = [];
  for (const raw of keyTypes.split(",")) {
    const type = raw.trim().toLowerCase();
    if (type === "") continue;
    if (!(KEY_TYPES as readonly string[]).includes(type)) {
      throw RelayError.untyped(
        `rejected key type '${raw.trim().slice(0, 100)}': choose from ['dsa', 'ecdsa', 'ed25519', 'rsa']`,
      );
    }
    if (!types.includes(type)) types.push(type);
  }
  if (types.length === 0) throw RelayError.untyped("empty key_types");
  return { hosts, types };
}

export function createSshInventoryTools(deps: SshToolDeps): Tool[] {
  const { settings, ssh, processes, baseEnv } = deps;

  const keyscan = defineTool({
    name: "ssh_keyscan",
    title: "Fetch SSH host keys",
    description:
      "Fetch the public host keys of up to 32 hosts with the local OpenSSH ssh-keyscan and return `[exit N]` and " +
      "the known_hosts lines it printed. Hosts are validated before anything runs. It opens outbound " +
      "connections, so it is not read-only.",
    params: {
      hosts: { type: "string", description: "comma/whitespace separated host names or addresses, 1..32" },
      port: { type: "integer", description: "port to scan, 1..65535", default: 22 },
      key_types: {
        type: "string",
        description: "comma list of rsa, ecdsa, ed25519, dsa",
        default: "rsa,ecdsa,ed25519",
      },
      timeout: { type: "integer", description: "seconds per host, 1..60", default: 10 },
    },
    tier: KEYSCAN_TIER,
    annotations: annotationsFor(KEYSCAN_TIER, { openWorld: true }),
    resultFields: {
      duration_ms: { type: "number", description: "wall time of ssh-keyscan" },
      output_bytes: { type: "integer", description: "bytes ssh-keyscan wrote in all" },
    },
    budget: () => clampOutput(settings.maxOutput, settings),
    policyText: (a) => widenHostTokens(a.hosts, splitHostList(a.hosts)),
    targets: (a) => [
      ...withAddressForms(splitHostList(a.hosts).map((host) => ({ kind: "host" as const, value: host }))),
      { kind: "port", value: String(a.port) },
    ],
    auditArgs: (a) => ({ hosts: a.hosts, port: a.port, key_types: a.key_types }),
    act: (a) => {
      // The tool's own checks: what would be refused when it runs cannot be approved either.
      const checked = validateKeyscan(a.hosts, a.port, a.key_types);
      if ("body" in checked) throw new Unbindable("no hosts to scan");
      return { hosts: [...checked.hosts].sort(), port: a.port, key_types: [...checked.types].sort() };
    },
    // ssh-keyscan dials each name as written (no inventory alias): each host's own policy decides for it.
    hosts: (a) =>
      splitHostList(a.hosts).map((name) => ({
        name,
        ref: { alias: null, hostname: name.replace(/^\[(.*)\]$/, "$1"), port: a.port },
      })),
    async run(a, ctx) {
      const checked = validateKeyscan(a.hosts, a.port, a.key_types);
      if ("body" in checked) return { body: checked.body };
      // A host its own policy refused or holds is not scanned; a comment line says why.
      const refusals = ctx.hostRefusals;
      const notes = checked.hosts.flatMap((h) => {
        const refused = refusals?.get(h);
        return refused ? [`# ${h}: ${hostFailureText(refused)}\n`] : [];
      });
      if (refusals) checked.hosts = checked.hosts.filter((h) => !refusals.has(h));
      const timeout = clamp(a.timeout, 1, 60);
      // An argv, not a shell line: the hosts were validated anyway, and `--` ends the options.
      const argv = [
        "ssh-keyscan",
        "-T",
        String(timeout),
        "-t",
        checked.types.join(","),
        "-p",
        String(a.port),
        "--",
        ...checked.hosts,
      ];
      const result = await processes.run(
        {
          argv,
          env: buildEnv(baseEnv, ""),
          // ssh-keyscan works on all hosts at once; -T bounds each, this bounds the whole run.
          timeoutMs: (2 * timeout + 5) * 1000,
          maxBufferBytes: settings.maxOutputHard,
          mergeStderr: true,
        },
        ctx.signal,
      );
      const fields = { duration_ms: Math.round(result.durationMs), output_bytes: result.totalBytes };
      const outcome = commandOutcome(result, 2 * timeout + 5, fields);
      return notes.length === 0 ? outcome : { ...outcome, body: notes.join("") + outcome.body };
    },
  });

  const hosts = defineTool({
    name: "ssh_hosts",
    title: "List SSH hosts",
    description:
      "List the hosts the relay knows, from RELAY_SHELL_INVENTORY and ssh_config merged, as a JSON array sorted " +
      "by name: name, hostname, user, port, identity_file, jump, source. Read-only.",
    params: {},
    tier: READ_ONLY,
    introspection: true,
    annotations: annotationsFor(READ_ONLY, { openWorld: false }),
    resultFields: { host_count: { type: "integer", description: "entries listed" } },
    budget: () => 32768,
    policyText: () => "",
    auditArgs: () => ({}),
    async run() {
      const list = ssh.directory.list().map(toListing);
      return { body: JSON.stringify(list, null, 2), fields: { host_count: list.length } };
    },
  });

  return [keyscan, hosts];
}
