import type { Settings } from "../config/index.js";
import type { ProcessRunner } from "../exec/index.js";
import { type PolicyTarget, type ProgramInput, type TierSpec, widenHostTokens } from "../policy/index.js";
import type { CallHost } from "../runner/index.js";
import type { ConnectionOverrides, HostKeyReport, SshService, SshTarget } from "../ssh/index.js";
import { withAddressForms } from "./targets.js";

export interface SshToolDeps {
  settings: Settings;
  ssh: SshService;
  /** ssh_keyscan runs the local OpenSSH `ssh-keyscan` through the one process runner. */
  processes: ProcessRunner;
  baseEnv: Readonly<Record<string, string | undefined>>;
}

/**
 * Remote command text: the Windows/PowerShell rules apply too (docs/wire-contract.md §11.7).
 * Tier 0 when the command alone (not the host line of the probe) is proven to only read (ADR 0033).
 */
export const REMOTE_COMMAND_TIER: TierSpec = { kind: "heuristic", floor: 0, windows: true };

/** A remote terminal (ssh_spawn): what starts a shell or a console, or nothing (the login shell), is at least Tier 2 (ADR 0034). */
export const REMOTE_TERMINAL_TIER: TierSpec = { kind: "heuristic", floor: 0, windows: true, terminal: true };

/** What a remote command tool classifies: the command, without the host names the probe adds. */
export function remoteProgram(command: string): ProgramInput {
  return { language: "shell", program: command, stdin: "", env: "" };
}

/** The target host parameter of the single-host SSH tools. */
export const HOST_PARAM = {
  type: "string",
  description: "inventory / ssh_config alias, or user@host",
  noNul: true,
} as const;

/** Transfers and forwards change state: at least Tier 2, and a Tier-3 word in a path still raises it (docs/wire-contract.md §2.1). */
export const MUTATING_TIER: TierSpec = { kind: "heuristic", floor: 2, windows: false };

/** The per-call connection parameters shared by the single-host SSH tools (docs/wire-contract.md §2.4). */
export const CONNECTION_PARAMS = {
  user: {
    type: "string",
    description: "remote user; empty = inventory / ssh_config / the server's user",
    default: "",
    noNul: true,
  },
  port: { type: "integer", description: "remote port; 0 = inventory / ssh_config / 22", default: 0 },
  key_path: {
    type: "string",
    description: "private key file (~ expanded); empty = inventory / defaults",
    default: "",
    noNul: true,
  },
  known_hosts: {
    type: "string",
    description:
      "host-key mode: strict, accept-new or ignore; empty = the inventory entry's, else RELAY_SHELL_SSH_KNOWN_HOSTS. " +
      "A weaker mode than the host's own is refused unless the operator allows it",
    default: "",
    noNul: true,
  },
  jump: {
    type: "string",
    description:
      "bastion(s) user@host[:port], comma-separated for a chain; ssh_config ProxyJump also applies",
    default: "",
    noNul: true,
  },
} as const;

export interface ConnectionArgs {
  user: string;
  port: number;
  key_path: string;
  known_hosts: string;
  jump: string;
}

export function toOverrides(a: ConnectionArgs): ConnectionOverrides {
  return { user: a.user, port: a.port, keyPath: a.key_path, knownHosts: a.known_hosts, jump: a.jump };
}

/** Audit fields of the connection parameters: the host-key mode as actually used, not as typed. */
export function connectionAudit(ssh: SshService, host: string, a: ConnectionArgs): Record<string, unknown> {
  return {
    user: a.user,
    port: a.port,
    key_path: a.key_path,
    jump: a.jump,
    known_hosts: ssh.directory.effectiveMode(host, a.known_hosts),
  };
}

function bareHost(token: string): string {
  const at = token.lastIndexOf("@");
  return (at === -1 ? token : token.slice(at + 1)).replace(/^\[(.*)\]$/, "$1").toLowerCase();
}

/**
 * The probe of an SSH tool: the head text (command and host as typed, docs/wire-contract.md
 * §5.4), then the names the call really reaches that the caller did not type
 * (an alias's HostName, jump hops), then the canonical IP forms of all of them.
 * A deny rule on an address therefore gates an alias that points at it too.
 */
export function sshProbe(ssh: SshService, head: string, typed: readonly string[], jump = ""): string {
  const seen = new Set(typed.map(bareHost));
  const extra: string[] = [];
  for (const host of typed) {
    for (const name of ssh.directory.reachedNames(host, jump)) {
      const key = bareHost(name);
      if (name === "" || seen.has(key)) continue;
      seen.add(key);
      extra.push(name);
    }
  }
  const text = extra.length > 0 ? `${head} ${extra.join(" ")}` : head;
  return widenHostTokens(text, [...typed, ...extra]);
}

function endpointTargets(t: SshTarget): PolicyTarget[] {
  return [
    { kind: "host", value: t.host },
    { kind: "user", value: t.user },
    { kind: "port", value: String(t.port) },
  ];
}

/**
 * Where an SSH call lands, for the deny list (ADR 0020): the host as typed,
 * the names it reaches (an alias's HostName, jump hops), and once resolved the
 * dialled host, user and port of the target and of every hop. A host that
 * does not resolve keeps what was typed; the call then fails before dialling.
 */
/**
 * A host a call names, as the runner finds its policy (docs/policy.md): the
 * inventory alias when the name is one, and the address and port it leads to.
 * Throws when the name cannot be resolved.
 */
export function callHost(ssh: SshService, host: string, a?: ConnectionArgs): CallHost {
  const spec = ssh.directory.lookup(host);
  const target = ssh.directory.resolve(host, a === undefined ? {} : toOverrides(a));
  const alias = spec.source === "inventory" ? spec.name : null;
  return { name: host, ref: { alias, hostname: target.host, port: target.port } };
}

export function sshTargets(ssh: SshService, host: string, a?: ConnectionArgs): PolicyTarget[] {
  const out: PolicyTarget[] = [{ kind: "host", value: host }];
  if (a !== undefined && a.user !== "") out.push({ kind: "user", value: a.user });
  for (const name of ssh.directory.reachedNames(host, a?.jump ?? "")) {
    if (name !== "") out.push({ kind: "host", value: name });
  }
  try {
    const target = ssh.directory.resolve(host, a === undefined ? {} : toOverrides(a));
    out.push(...endpointTargets(target));
    for (const hop of target.jump) {
      out.push({ kind: "jump", value: `${hop.user}@${hop.host}:${hop.port}` }, ...endpointTargets(hop));
    }
  } catch {
    // Unresolvable: run() fails on the same resolve before anything is dialled.
  }
  return withAddressForms(out);
}

const HOST_KEY_FIELD = {
  type: ["object", "null"],
  description:
    "host-key outcome of the target: {host, port, mode, status: verified | learned | unchecked, key_type, fingerprint}",
};

/** What every single-host SSH tool reports about the connection it used. */
export const CONNECTION_RESULT_FIELDS = {
  connection_reused: { type: "boolean", description: "a pooled connection was reused" },
  host_key: HOST_KEY_FIELD,
  jump_host_keys: { type: "array", description: "host-key outcomes of the bastions, first hop first" },
};

/** The values of CONNECTION_RESULT_FIELDS for one call. */
export function connectionFields(opened: {
  reused: boolean;
  hostKey: HostKeyReport | null;
  jumpHostKeys: readonly HostKeyReport[];
}) {
  return {
    connection_reused: opened.reused,
    host_key: opened.hostKey,
    jump_host_keys: [...opened.jumpHostKeys],
  };
}
