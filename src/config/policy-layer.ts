import type { Tier } from "../core/index.js";
import type { ConsentLeaseMode, PolicyMode } from "./types.js";

/**
 * One layer of policy as an operator wrote it: the settings (the default
 * policy), the policy file's `default`, a tag's policy, or an inventory
 * entry's own `policy`. Every field is optional: a layer sets only what it
 * names, and the most specific layer that names a field decides it, except
 * `deny`, whose patterns add up over every layer (docs/policy.md).
 * Patterns are already compiled and checked like RELAY_SHELL_POLICY_DENY.
 */
export interface PolicyLayer {
  mode?: PolicyMode;
  /** Each searched like RELAY_SHELL_POLICY_DENY; they add to the less specific layers' patterns. */
  deny?: readonly RegExp[];
  /** Each searched like RELAY_SHELL_POLICY_ALLOW; a layer that names it replaces the allow list. */
  allow?: readonly RegExp[];
  /** Signed consent on or off for the calls this layer governs. */
  consent?: boolean;
  consentLeaseMode?: ConsentLeaseMode;
  confirmTier3?: boolean;
  /** The highest tier admitted at all, whatever the mode says. */
  maxTier?: Tier;
}
