import { FILE_PROGRAMS } from "./programs-files.js";
import { PLATFORM_PROGRAMS } from "./programs-platforms.js";
import { SYSTEM_PROGRAMS } from "./programs-system.js";
import { TOOL_PROGRAMS } from "./programs-tools.js";
import type { ReadEntry } from "./spec.js";

/** Every read-only program and its rule (ADR 0033), by lower-cased base name. */
function build(): ReadonlyMap<string, ReadEntry> {
  const all = new Map<string, ReadEntry>();
  for (const part of [FILE_PROGRAMS, SYSTEM_PROGRAMS, PLATFORM_PROGRAMS, TOOL_PROGRAMS]) {
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
