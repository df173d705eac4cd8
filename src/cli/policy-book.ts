import { loadPolicyFile, type Settings } from "../config/index.js";
import { createPolicyBook, type EffectivePolicy, type PolicyBook } from "../policy/index.js";
import type { HostDirectory } from "../ssh/index.js";

/**
 * The policies in force: the settings, RELAY_SHELL_POLICY_FILE and the
 * inventory's tags and policies (docs/policy.md, "Policy per host and per
 * tag"). Throws on any problem, so the relay does not start on a policy it
 * cannot read as written. Entries are matched where the SSH layer dials
 * them, ssh_config's port included.
 */
export function openPolicyBook(settings: Settings, directory: HostDirectory): PolicyBook {
  const file = loadPolicyFile(settings.policyFile, { selfUid: process.geteuid?.() ?? 0 });
  return createPolicyBook({
    settings,
    file,
    inventoryPath: settings.inventory,
    hosts: directory.list().filter((host) => host.source === "inventory"),
    resolve(alias) {
      try {
        const target = directory.resolve(alias);
        return { hostname: target.host, port: target.port };
      } catch {
        // An entry that cannot be dialled is matched on what it says; a dial fails on it anyway.
        return null;
      }
    },
  });
}

/** One line of --check-config: what a policy decides, never the text of its patterns. */
export function policyLine(p: EffectivePolicy): string {
  return (
    `${p.name} (${p.source}): mode=${p.mode} deny=${p.deny.length} allow=${p.allow.length} ` +
    `consent=${p.consent} confirm_tier3=${p.confirmTier3} max_tier=${p.maxTier}`
  );
}
