import { BACKUP_PROGRAMS } from "./programs-backup.js";
import { BSD_PROGRAMS } from "./programs-bsd.js";
import { CLOUD_PROGRAMS } from "./programs-cloud.js";
import { CLUSTER_PROGRAMS } from "./programs-clusters.js";
import { DATA_PROGRAMS } from "./programs-data.js";
import { DELIVERY_PROGRAMS } from "./programs-delivery.js";
import { FILE_PROGRAMS } from "./programs-files.js";
import { SYSTEM_PROGRAMS } from "./programs-host.js";
import { NETWORK_PROGRAMS } from "./programs-network.js";
import { PACKAGE_PROGRAMS } from "./programs-packages.js";
import { PLATFORM_PROGRAMS } from "./programs-platform.js";
import { SECRET_PROGRAMS } from "./programs-secrets.js";
import { SERVICE_PROGRAMS } from "./programs-services.js";
import { STORAGE_PROGRAMS } from "./programs-storage.js";
import { TOOL_PROGRAMS } from "./programs-tools.js";
import { VCS_PROGRAMS } from "./programs-vcs.js";
import type { ReadEntry } from "./spec.js";

/** Every read-only program and its rule (ADR 0033), by lower-cased base name. */
function build(): ReadonlyMap<string, ReadEntry> {
  const all = new Map<string, ReadEntry>();
  for (const part of [
    FILE_PROGRAMS,
    SYSTEM_PROGRAMS,
    NETWORK_PROGRAMS,
    STORAGE_PROGRAMS,
    PACKAGE_PROGRAMS,
    SERVICE_PROGRAMS,
    VCS_PROGRAMS,
    CLUSTER_PROGRAMS,
    CLOUD_PROGRAMS,
    DATA_PROGRAMS,
    SECRET_PROGRAMS,
    TOOL_PROGRAMS,
    BSD_PROGRAMS,
    DELIVERY_PROGRAMS,
    PLATFORM_PROGRAMS,
    BACKUP_PROGRAMS,
  ]) {
    for (const [name, entry] of part) {
      if (all.has(name)) throw new Error(`read-only table: ${name} defined twice`);
      all.set(name, entry);
    }
  }
  return all;
}

export const READ_ONLY_PROGRAMS: ReadonlyMap<string, ReadEntry> = build();

/** How many programs the read-only table knows (reported by `npm run bench`). */
export function readOnlyProgramCount(): number {
  return READ_ONLY_PROGRAMS.size;
}
