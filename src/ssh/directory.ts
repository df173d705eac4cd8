import { isAbsolute, resolve as resolvePath } from "node:path";
import type { KnownHostsMode } from "../config/index.js";
import { RelayError } from "../core/index.js";
import { MODE_STRENGTH, strongerMode } from "./host-key.js";
import type { HostSpec } from "./inventory.js";
import { isWritableHostName } from "./known-hosts.js";
import type { SshConfigFile } from "./ssh-config.js";
import type { SshTarget } from "./target.js";

/** Per-call connection parameters (docs/wire-contract.md §2.4); "" and 0 mean "not given". */
export interface ConnectionOverrides {
  user?: string;
  port?: number;
  keyPath?: string;
  knownHosts?: string;
  jump?: string;
}

export interface HostDirectoryConfig {
  inventory: readonly HostSpec[];
  sshConfig: SshConfigFile;
  /** RELAY_SHELL_SSH_KNOWN_HOSTS. */
  defaultMode: KnownHostsMode;
  /** RELAY_SHELL_SSH_ALLOW_WEAKER_KNOWN_HOSTS. */
  allowWeaker: boolean;
  /** The service account's home: `~` in key paths and the default keys. */
  home: string;
  /** The service account's name: the user when nothing else names one. */
  localUser: string;
  /** Base for relative key paths. */
  cwd: string;
}

/** Resolves host names against the inventory and ssh_config, and lists them. */
export interface HostDirectory {
  /** The merged listing, sorted by name: ssh_config entries, replaced whole by same-named inventory ones. */
  list(): HostSpec[];
  /** Inventory and ssh_config aliases, sorted: what an empty `hosts=` fans out to. */
  names(): string[];
  /** The raw ssh_config facts for the `ssh-config` resource. */
  sshConfig(): { path: string | null; aliases: string[] };
  /** An alias's spec, `user@host` split, or a passthrough spec (`source: "explicit"`). */
  lookup(name: string): HostSpec;
  /** Everything needed to dial `name`. Throws a RelayError (ValueError) on a bad parameter. */
  resolve(name: string, overrides?: ConnectionOverrides): SshTarget;
  /** The host-key mode a call would use, for the audit record. Never throws. */
  effectiveMode(name: string, perCall?: string): string;
  /** Host names a call reaches besides the ones it typed (alias targets, jump hops). Never throws. */
  reachedNames(name: string, jump?: string): string[];
}

const MODES: readonly KnownHostsMode[] = ["accept-new", "ignore", "strict"];
const MAX_HOPS = 8;
const USER_TEXT = /^[^\s\p{Cc}:]{1,256}$/u;

function valueError(message: string): RelayError {
  return new RelayError("ValueError", message);
}

/** Validate a per-call `known_hosts` on every call, cached connection or not (docs/wire-contract.md §11.1). */
export function parseModeArg(value: string | undefined): KnownHostsMode | null {
  const text = (value ?? "").trim().toLowerCase();
  if (text === "") return null;
  if ((MODES as readonly string[]).includes(text)) return text as KnownHostsMode;
  throw valueError("known_hosts must be one of 'accept-new', 'ignore', 'strict'");
}

function splitUserHost(name: string): { user: string | null; host: string } {
  const at = name.lastIndexOf("@");
  if (at <= 0) return { user: null, host: at === 0 ? name.slice(1) : name };
  return { user: name.slice(0, at), host: name.slice(at + 1) };
}

/** `[user@]host[:port]` of a jump hop; `[v6addr]:port` keeps its brackets off the host. */
function splitHop(text: string): { user: string | null; host: string; port: number | null } {
  const { user, host: rest } = splitUserHost(text);
  const bracketed = /^\[([^\]]+)\](?::([0-9]{1,5}))?$/.exec(rest);
  if (bracketed) return { user, host: bracketed[1] ?? "", port: bracketed[2] ? Number(bracketed[2]) : null };
  const colon = rest.lastIndexOf(":");
  if (colon > 0 && rest.indexOf(":") === colon && /^[0-9]{1,5}$/.test(rest.slice(colon + 1))) {
    return { user, host: rest.slice(0, colon), port: Number(rest.slice(colon + 1)) };
  }
  return { user, host: rest, port: null };
}

/** One directory's state: its settings and the names it knows, by source and merged. */
interface Directory {
  config: HostDirectoryConfig;
  inventory: Map<string, HostSpec>;
  fromConfig: Map<string, HostSpec>;
  /** Sorted by name: ssh_config entries, replaced whole by same-named inventory ones. */
  listing: HostSpec[];
}

export function createHostDirectory(config: HostDirectoryConfig): HostDirectory {
  const merged = new Map<string, HostSpec>(config.sshConfig.specs.map((s) => [s.name, s]));
  for (const spec of config.inventory) merged.set(spec.name, spec);
  const d: Directory = {
    config,
    inventory: new Map(config.inventory.map((s) => [s.name, s])),
    fromConfig: new Map(config.sshConfig.specs.map((s) => [s.name, s])),
    listing: [...merged.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  };
  return {
    list: () => d.listing,
    names: () => d.listing.map((s) => s.name),
    sshConfig: () => ({ path: config.sshConfig.path, aliases: config.sshConfig.aliases }),
    lookup: (raw) => lookup(d, raw),
    resolve: (raw, overrides = {}) => resolve(d, raw, overrides),
    effectiveMode(name, perCall) {
      const given = (perCall ?? "").trim().toLowerCase();
      if (given !== "") return given;
      try {
        return lookup(d, name).knownHosts ?? config.defaultMode;
      } catch {
        return config.defaultMode;
      }
    },
    reachedNames: (name, jump) => reachedNames(d, name, jump),
  };
}

/** A name the inventory or ssh_config knows as it is written. */
function known(d: Directory, name: string): HostSpec | undefined {
  return d.inventory.get(name) ?? d.fromConfig.get(name.toLowerCase());
}

function lookup(d: Directory, raw: string): HostSpec {
  const name = raw.trim();
  const exact = known(d, name);
  if (exact) return exact;
  const { user, host } = splitUserHost(name);
  return {
    name,
    hostname: host,
    user,
    port: null,
    identityFile: null,
    jump: null,
    source: "explicit",
    knownHosts: null,
    tags: [],
    policy: null,
  };
}

function expandPath(
  config: HostDirectoryConfig,
  path: string,
  tokens: { user: string; host: string },
): string {
  let out = path.replace(/%([%dhru])/g, (_m, c: string) => {
    switch (c) {
      case "d":
        return config.home;
      case "u":
        return config.localUser;
      case "r":
        return tokens.user;
      case "h":
        return tokens.host;
      default:
        return "%";
    }
  });
  if (out === "~") out = config.home;
  else if (out.startsWith("~/")) out = `${config.home}/${out.slice(2)}`;
  return isAbsolute(out) ? out : resolvePath(config.cwd, out);
}

function checkHost(host: string, label: string): string {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  if (!isWritableHostName(bare)) {
    throw valueError(`invalid host name ${JSON.stringify(label.slice(0, 200))}`);
  }
  return bare;
}

function checkUser(user: string): string {
  if (!USER_TEXT.test(user)) throw valueError(`invalid user name ${JSON.stringify(user.slice(0, 100))}`);
  return user;
}

function checkPort(port: number): number {
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw valueError(`port ${port} out of range 1..65535`);
  return port;
}

/** The spec and its ssh_config options, as one dial sees them. */
function settle(d: Directory, spec: HostSpec) {
  const cfg = d.config.sshConfig.compute(spec.source === "ssh_config" ? spec.name : spec.hostname);
  // An inventory entry replaces the alias whole; only explicit names pick up a wildcard HostName.
  const hostname = spec.source === "explicit" && cfg.hostname ? cfg.hostname : spec.hostname;
  return { spec, cfg, hostname };
}

function resolveHops(d: Directory, jump: string, mode: KnownHostsMode): SshTarget[] {
  const text = jump.trim();
  if (text === "" || text.toLowerCase() === "none") return [];
  const hops = text.split(",").map((h) => h.trim());
  if (hops.length > MAX_HOPS)
    throw valueError(`jump chain of ${hops.length} hops exceeds the limit of ${MAX_HOPS}`);
  return hops.map((hop) => {
    if (hop === "") throw valueError(`empty hop in jump ${JSON.stringify(text.slice(0, 200))}`);
    return resolveHop(d, hop, mode);
  });
}

function resolveHop(d: Directory, hop: string, mode: KnownHostsMode): SshTarget {
  const { config } = d;
  const entry = known(d, hop);
  const parts = entry ? { user: null, host: hop, port: null } : splitHop(hop);
  const base = entry ?? lookup(d, parts.host);
  const { spec, cfg, hostname } = settle(d, parts.user ? { ...base, user: parts.user } : base);
  const host = checkHost(hostname, hop);
  const user = checkUser(spec.user ?? cfg.user ?? config.localUser);
  const port = checkPort(parts.port ?? spec.port ?? cfg.port ?? 22);
  const named = spec.source === "inventory" && spec.identityFile !== null;
  const files = named && spec.identityFile ? [spec.identityFile] : cfg.identityFiles;
  // A hop is never checked more weakly than the call asked for, nor than its own entry says.
  const hopMode = strongerMode(mode, spec.knownHosts ?? config.defaultMode);
  return {
    label: hop,
    host,
    port,
    user,
    identityFiles: files.map((f) => expandPath(config, f, { user, host })),
    identitiesRequired: named,
    mode: hopMode,
    jump: [],
  };
}

function modeFor(
  config: HostDirectoryConfig,
  spec: HostSpec,
  perCall: KnownHostsMode | null,
): KnownHostsMode {
  const base = spec.knownHosts ?? config.defaultMode;
  if (perCall === null) return base;
  if (MODE_STRENGTH[perCall] < MODE_STRENGTH[base] && !config.allowWeaker) {
    throw valueError(
      `known_hosts='${perCall}' is weaker than '${base}', the mode this host gets otherwise; ` +
        "per-call downgrades need RELAY_SHELL_SSH_ALLOW_WEAKER_KNOWN_HOSTS=true",
    );
  }
  return perCall;
}

function resolve(d: Directory, raw: string, overrides: ConnectionOverrides): SshTarget {
  const { config } = d;
  const name = raw.trim();
  if (name === "") throw valueError("host is empty");
  const perCall = parseModeArg(overrides.knownHosts);
  const { spec, cfg, hostname } = settle(d, lookup(d, name));
  const host = checkHost(hostname, name);
  const user = checkUser(overrides.user || spec.user || cfg.user || config.localUser);
  const port = checkPort(overrides.port || spec.port || cfg.port || 22);
  const mode = modeFor(config, spec, perCall);
  const keys = keysFor(spec, cfg.identityFiles, overrides.keyPath);
  const jump = overrides.jump || spec.jump || cfg.proxyJump || "";
  return {
    label: name,
    host,
    port,
    user,
    identityFiles: keys.files.map((f) => expandPath(config, f, { user, host })),
    identitiesRequired: keys.required,
    mode,
    jump: resolveHops(d, jump, mode),
  };
}

/** The keys a dial offers: the call's own, the inventory entry's, or ssh_config's (then none is required). */
function keysFor(
  spec: HostSpec,
  configured: string[],
  keyPath: string | undefined,
): { files: string[]; required: boolean } {
  if (keyPath) return { files: [keyPath], required: true };
  if (spec.source === "inventory" && spec.identityFile) return { files: [spec.identityFile], required: true };
  return { files: configured, required: false };
}

function reachedNames(d: Directory, name: string, jump: string | undefined): string[] {
  const out: string[] = [];
  try {
    const { spec, cfg, hostname } = settle(d, lookup(d, name));
    out.push(hostname);
    const chain = jump || spec.jump || cfg.proxyJump || "";
    if (chain.toLowerCase() !== "none") {
      for (const hop of chain.split(",").slice(0, MAX_HOPS)) {
        const trimmed = hop.trim();
        if (trimmed === "") continue;
        out.push(trimmed);
        const entry = known(d, trimmed);
        out.push(entry ? entry.hostname : splitHop(trimmed).host);
      }
    }
  } catch {
    // Best effort: the probe still holds everything the caller typed.
  }
  return out;
}
