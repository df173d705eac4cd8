import { loadPolicyFile, type PolicyFile, type Settings } from "../config/index.js";
import { RelayError } from "../core/index.js";
import { trustAnchorProblems } from "../files/index.js";
import { createPolicyBook, type EffectivePolicy, type PolicyBook } from "../policy/index.js";
import type { HostDirectory } from "../ssh/index.js";

type HostSpec = ReturnType<HostDirectory["list"]>[number];

/** What makes a file the relay obeys unsafe to trust; [] when nothing does (files/trust-anchor.ts). */
type TrustCheck = typeof trustAnchorProblems;

/**
 * An inventory that picks a host's policy (an entry's own `policy`, or a tag
 * the policy file gives one) decides what the relay may do as much as the
 * file does, so it is held to the same rule: the relay must not be able to
 * write it, or a command it admits could move a production host under the
 * lab's tag.
 */
function checkInventory(
  path: string,
  hosts: readonly HostSpec[],
  file: PolicyFile | null,
  check: TrustCheck,
  selfUid: number,
): void {
  const picks = hosts.some((h) => h.policy !== null || h.tags.some((tag) => file?.tags.has(tag)));
  if (!picks) return;
  const problems = check(path, { selfUid });
  if (problems.length === 0) return;
  throw new RelayError(
    "InventoryError",
    `RELAY_SHELL_INVENTORY: ${path}: its tags and policies decide hosts' policies, and the relay must not be able to change the policy it obeys: ${problems.join("; ")}`,
  );
}

/**
 * The policies in force: the settings, RELAY_SHELL_POLICY_FILE and the
 * inventory's tags and policies (docs/policy.md, "Policy per host and per
 * tag"). Throws on any problem, so the relay does not start on a policy it
 * cannot read as written. Entries are matched where the SSH layer dials
 * them, ssh_config's port included.
 */
export function openPolicyBook(
  settings: Settings,
  directory: HostDirectory,
  check: TrustCheck = trustAnchorProblems,
): PolicyBook {
  const selfUid = process.geteuid?.() ?? 0;
  const file = loadPolicyFile(settings.policyFile, { selfUid }, check);
  const hosts = directory.list().filter((host) => host.source === "inventory");
  checkInventory(settings.inventory, hosts, file, check, selfUid);
  return createPolicyBook({
    settings,
    file,
    inventoryPath: settings.inventory,
    hosts,
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
