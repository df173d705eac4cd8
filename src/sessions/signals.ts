import { constants as osConstants } from "node:os";

/**
 * Canonical signal name (without the `SIG` prefix) for what a caller typed:
 * case and a `SIG` prefix are ignored, a number names the signal with that
 * number, and anything unknown becomes TERM (docs/wire-contract.md §2.6). The caller is
 * told the signal that was really sent (ADR 0004), so the fallback is
 * never hidden.
 */
export function resolveSignalName(requested: string): string {
  let name = requested.trim().toUpperCase();
  if (name.startsWith("SIG")) name = name.slice(3);
  const table = osConstants.signals as Record<string, number | undefined>;
  if (/^\d{1,2}$/.test(name)) {
    const wanted = Number(name);
    const found = Object.entries(table).find(([, num]) => num === wanted && wanted > 0);
    return found ? found[0].slice(3) : "TERM";
  }
  return name !== "" && typeof table[`SIG${name}`] === "number" ? name : "TERM";
}

/** The OS number of a canonical signal name (see resolveSignalName). */
export function signalNumber(name: string): number {
  const num = (osConstants.signals as Record<string, number | undefined>)[`SIG${name}`];
  return num ?? osConstants.signals.SIGTERM;
}
