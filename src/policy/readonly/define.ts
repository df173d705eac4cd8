import type { ReadEntry, ReadSpec } from "./spec.js";

/** One part of the read-only table, filled in by its module at load time. */
export interface TablePart {
  readonly entries: Map<string, ReadEntry>;
  /** Add a program with its rule, or `true` for a program no option turns into a write. */
  spec(name: string, entry: ReadSpec | true): void;
  /** Add programs no option turns into a write. */
  all(names: readonly string[]): void;
}

export function tablePart(): TablePart {
  const entries = new Map<string, ReadEntry>();
  return {
    entries,
    spec: (name, entry) => {
      entries.set(name, entry);
    },
    all: (names) => {
      for (const n of names) entries.set(n, true);
    },
  };
}

/** Subcommands that only read, each in every form. */
export function subsOf(names: readonly string[]): Record<string, true> {
  return Object.fromEntries(names.map((n) => [n, true as const]));
}
