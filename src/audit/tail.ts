import { readLastLines } from "./read-lines.js";
import type { TailQuery } from "./types.js";

/** Upper bound on the scanned window whatever the caller passes (docs/wire-contract.md §2.7 clamps to 1000). */
export const MAX_TAIL_LINES = 1000;

/**
 * `audit_tail` (docs/wire-contract.md §2.7): the last `lines` non-blank lines of the file,
 * oldest first, joined by newlines. Filters (exact tool, tier, denied) narrow
 * within that window; lines that are not JSON objects are dropped only when a
 * filter is active, otherwise the lines come back as they are in the file.
 * A missing or empty file, a window of zero, or no match gives "". The file
 * is read backwards in chunks, so memory follows the window. Never throws:
 * it is read-only diagnostics, and an unreadable file reads as empty.
 */
export function tailAudit(path: string, query: TailQuery): string {
  try {
    const requested = Math.floor(query.lines);
    if (!Number.isFinite(requested) || requested <= 0) return "";
    const window = readLastLines(path, Math.min(requested, MAX_TAIL_LINES));
    if (window === null || window.length === 0) return "";
    const match = matcher(query);
    if (match === null) return window.join("\n");
    return window.filter(match).join("\n");
  } catch {
    return ""; // unreadable file (permissions, a directory): nothing to show, and the tool must not fail
  }
}

function matcher(query: TailQuery): ((line: string) => boolean) | null {
  const tool = query.tool !== undefined && query.tool !== "" ? query.tool : undefined;
  const tier = query.tier !== undefined && query.tier >= 0 ? query.tier : undefined;
  const denied = query.denied;
  if (tool === undefined && tier === undefined && denied === undefined) return null;
  return (line) => {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      return false; // a non-JSON line cannot match a field filter
    }
    if (typeof record !== "object" || record === null || Array.isArray(record)) return false;
    const fields = record as Record<string, unknown>;
    if (tool !== undefined && fields.tool !== tool) return false;
    if (tier !== undefined && fields.tier !== tier) return false;
    if (denied !== undefined && fields.denied !== denied) return false;
    return true;
  };
}
