import { RelayError } from "../core/index.js";
import { splitHostList } from "../policy/index.js";
import type { SshService } from "../ssh/index.js";

export const NO_HOSTS = "[no hosts configured; pass hosts= or add an inventory]";

/** Hosts a fleet call targets: the typed list, or every inventory / ssh_config name. */
export function fleetTargets(ssh: SshService, hosts: string): string[] {
  return hosts.trim() === "" ? ssh.directory.names() : splitHostList(hosts);
}

export function overCap(n: number, cap: number): RelayError {
  return RelayError.untyped(`${n} hosts exceeds the per-call cap of ${cap}; split into smaller batches`);
}
