import type { ResourceDef } from "../runner/index.js";
import { type HostDirectory, toListing } from "../ssh/index.js";

/**
 * The three read-only resources of docs/wire-contract.md §3.1: reads are
 * audited by the relay under the fixed label, with user input in args.
 */
export function createSshResources(directory: HostDirectory): ResourceDef[] {
  return [
    {
      name: "inventory",
      description: "Every SSH host the relay knows (inventory and ssh_config merged), as a JSON array.",
      mimeType: "application/json",
      uri: "relay-shell://inventory",
      template: false,
      auditLabel: "resource:inventory",
      auditArgs: () => ({}),
      read: () => JSON.stringify(directory.list().map(toListing)),
    },
    {
      name: "inventory_host",
      description:
        "One host's resolved spec; a name in neither file comes back as given (source: explicit), user@host split.",
      mimeType: "application/json",
      uri: "relay-shell://inventory/{host}",
      template: true,
      auditLabel: "resource:inventory_host",
      auditArgs: (vars) => ({ host: vars.host ?? "" }),
      read: (vars) => JSON.stringify(toListing(directory.lookup(vars.host ?? ""))),
    },
    {
      name: "ssh_config",
      description: "The ssh_config file the relay reads and its non-wildcard Host aliases.",
      mimeType: "application/json",
      uri: "relay-shell://ssh-config",
      template: false,
      auditLabel: "resource:ssh-config",
      auditArgs: () => ({}),
      read: () => JSON.stringify(directory.sshConfig()),
    },
  ];
}
