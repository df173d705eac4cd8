import type { ConsentLeaseMode, PolicyMode } from "../../config/index.js";
import type { Tier } from "../../core/index.js";

/** A pattern of a deny or allow list with the name policy_explain may show instead of its text. */
export interface NamedPattern {
  regex: RegExp;
  /** `RELAY_SHELL_POLICY_DENY`, or `deny[2] of tag:prod`: where it was written, never what it says. */
  label: string;
}

/** The policy one call gets, every field decided (docs/policy.md, precedence). */
export interface EffectivePolicy {
  /** `default`, `tag:<tag>` or `host:<inventory alias>`: the most specific layer that applied. */
  name: string;
  /** Where that layer was written: `settings`, the policy file's path, or the inventory's path. */
  source: string;
  mode: PolicyMode;
  /** Every layer's deny patterns, least specific first. */
  deny: readonly NamedPattern[];
  /** The most specific allow list; empty = none. */
  allow: readonly NamedPattern[];
  consent: boolean;
  consentLeaseMode: ConsentLeaseMode;
  confirmTier3: boolean;
  maxTier: Tier;
}

/** A host a call reaches, as the SSH layer resolved the name the caller gave. */
export interface HostRef {
  /** The inventory alias when the name was one; null for `user@host` or an ssh_config name. */
  alias: string | null;
  hostname: string;
  port: number;
}

/** Every policy in force, and which one governs a call. Built once at start-up. */
export interface PolicyBook {
  /** The policy of local calls and of hosts no inventory entry matches. */
  readonly default: EffectivePolicy;
  /** The policy of a host: its inventory entry's (by alias, else by hostname and port), else the default. */
  forHost(host: HostRef): EffectivePolicy;
  /** Every distinct policy in force, the default first: for server_info, the console and --check-config. */
  all(): readonly EffectivePolicy[];
}
