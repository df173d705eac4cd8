import type { PolicyFile, PolicyLayer, Settings } from "../../config/index.js";
import { RelayError } from "../../core/index.js";
import { addressKey } from "./address.js";
import { settingsPolicy } from "./settings.js";
import type { EffectivePolicy, HostRef, NamedPattern, PolicyBook } from "./types.js";

/** An inventory entry as the book reads it (the SSH layer's HostSpec has these fields). */
export interface PolicyHost {
  name: string;
  hostname: string;
  port: number | null;
  tags: readonly string[];
  policy: PolicyLayer | null;
}

export interface PolicyBookOptions {
  /** The default layer: the policy settings as they were before any file. */
  settings: Pick<
    Settings,
    "policyMode" | "policyDeny" | "policyAllow" | "consent" | "consentLeaseMode" | "confirmTier3"
  >;
  file: PolicyFile | null;
  /** RELAY_SHELL_INVENTORY: the source of a host's own policy. */
  inventoryPath: string;
  /** The inventory's entries (not ssh_config's: those carry no tags and no policy). */
  hosts: readonly PolicyHost[];
  /**
   * Where the SSH layer dials an entry (its hostname, its port or ssh_config's); without it, or
   * when it answers null, the entry's hostname and its port or 22.
   */
  resolve?: (alias: string) => { hostname: string; port: number } | null;
}

/** Where a layer sits: its name in labels and in the effective policy, and the file that wrote it. */
interface Scope {
  name: string;
  source: string;
}

/** Both refusals are about how inventory entries combine with the file: an inventory error. */
function refuse(message: string): never {
  throw new RelayError("InventoryError", message);
}

function named(regexes: readonly RegExp[], kind: "deny" | "allow", scope: string): NamedPattern[] {
  return regexes.map((regex, i) => ({ regex, label: `${kind}[${i}] of ${scope}` }));
}

function frozen(policy: EffectivePolicy): EffectivePolicy {
  return Object.freeze({ ...policy, deny: Object.freeze(policy.deny), allow: Object.freeze(policy.allow) });
}

/**
 * `layer` over `base`: each field the layer sets replaces the base's, except
 * the deny patterns, which add to the base's (a more specific layer can
 * refuse more, never less).
 */
function over(base: EffectivePolicy, scope: Scope, layer: PolicyLayer): EffectivePolicy {
  return frozen({
    name: scope.name,
    source: scope.source,
    mode: layer.mode ?? base.mode,
    deny: [...base.deny, ...named(layer.deny ?? [], "deny", scope.name)],
    allow: layer.allow ? named(layer.allow, "allow", scope.name) : base.allow,
    consent: layer.consent ?? base.consent,
    consentLeaseMode: layer.consentLeaseMode ?? base.consentLeaseMode,
    confirmTier3: layer.confirmTier3 ?? base.confirmTier3,
    maxTier: layer.maxTier ?? base.maxTier,
  });
}

/** The one tag of `host` that has a policy, or null; two or more stop start-up. */
function policyTag(
  host: PolicyHost,
  tags: ReadonlyMap<string, unknown>,
  o: PolicyBookOptions,
): string | null {
  const withPolicy = host.tags.filter((tag) => tags.has(tag));
  if (withPolicy.length <= 1) return withPolicy[0] ?? null;
  return refuse(
    `RELAY_SHELL_INVENTORY: ${o.inventoryPath}: entry ${JSON.stringify(host.name)}: tags ${withPolicy.join(", ")} ` +
      `each have a policy in ${o.file?.path ?? "the policy file"}, and a host takes one: ` +
      "keep one tag with a policy on the entry and write what differs in the entry's own policy",
  );
}

interface Entry {
  host: PolicyHost;
  policy: EffectivePolicy;
}

/**
 * Index the entries by the address and port they dial. Two entries that
 * reach the same place under different policies stop start-up: a call that
 * names the address instead of an alias could not tell which applies, and
 * the looser alias would be a way around the stricter one.
 */
function indexAddresses(entries: readonly Entry[], o: PolicyBookOptions): Map<string, Entry> {
  const byAddress = new Map<string, Entry>();
  for (const entry of entries) {
    const { host } = entry;
    const dialled = o.resolve?.(host.name) ?? { hostname: host.hostname, port: host.port ?? 22 };
    const key = addressKey(dialled.hostname, dialled.port);
    const seen = byAddress.get(key);
    if (seen === undefined) byAddress.set(key, entry);
    else if (seen.policy !== entry.policy) {
      refuse(
        `RELAY_SHELL_INVENTORY: ${o.inventoryPath}: entries ${JSON.stringify(seen.host.name)} and ` +
          `${JSON.stringify(host.name)} both reach ${dialled.hostname} port ${dialled.port} under different ` +
          `policies (${seen.policy.name}, ${entry.policy.name}); give them the same policy or keep one entry`,
      );
    }
  }
  return byAddress;
}

/**
 * Every policy in force, decided once at start-up (docs/policy.md, "Policy
 * per host and per tag"). Least specific first: the settings, the file's
 * `default`, the policy of the host's tag, the entry's own `policy`.
 * Throws a RelayError on a host with two policy tags or an address two
 * entries reach under different policies.
 */
export function createPolicyBook(o: PolicyBookOptions): PolicyBook {
  const { file } = o;
  const base = frozen(settingsPolicy(o.settings));
  const defaultPolicy = file?.default
    ? over(base, { name: "default", source: file.path }, file.default)
    : base;
  // Every tag policy of the file, used by a host or not: all() reports each one.
  const tagPolicies = new Map<string, EffectivePolicy>(
    [...(file?.tags ?? [])].map(([tag, layer]) => [
      tag,
      over(defaultPolicy, { name: `tag:${tag}`, source: file?.path ?? "" }, layer),
    ]),
  );
  const own: EffectivePolicy[] = [];
  const entries = o.hosts.map((host): Entry => {
    const tag = policyTag(host, tagPolicies, o);
    const inherited = (tag === null ? undefined : tagPolicies.get(tag)) ?? defaultPolicy;
    if (host.policy === null) return { host, policy: inherited };
    const policy = over(inherited, { name: `host:${host.name}`, source: o.inventoryPath }, host.policy);
    own.push(policy);
    return { host, policy };
  });
  const byAlias = new Map(entries.map((e) => [e.host.name, e.policy]));
  const byAddress = indexAddresses(entries, o);
  const all = Object.freeze([
    ...new Map([defaultPolicy, ...tagPolicies.values(), ...own].map((p) => [p.name, p])).values(),
  ]);
  return {
    default: defaultPolicy,
    forHost(host: HostRef): EffectivePolicy {
      const byName = host.alias === null ? undefined : byAlias.get(host.alias);
      return byName ?? byAddress.get(addressKey(host.hostname, host.port))?.policy ?? defaultPolicy;
    },
    all: () => all,
  };
}
