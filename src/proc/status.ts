import { readFileSync } from "node:fs";

/** The identity lines of /proc/<pid>/status. */
interface ProcIdentity {
  /** Real, effective, saved and file-system uid. */
  uids: number[];
  gids: number[];
  /** Supplementary groups. */
  groups: number[];
}

const MAX_GROUPS = 65536;

function ids(value: string | undefined): number[] | null {
  if (value === undefined) return null;
  const words = value
    .trim()
    .split(/\s+/)
    .filter((w) => w !== "");
  if (words.length > MAX_GROUPS) return null;
  const out: number[] = [];
  for (const word of words) {
    if (!/^\d{1,10}$/.test(word)) return null;
    const n = Number(word);
    if (n >= 2 ** 32) return null;
    out.push(n);
  }
  return out;
}

/** The Uid, Gid and Groups lines of one status text, or null when one is missing or unreadable. */
export function parseStatusIdentity(text: string): ProcIdentity | null {
  const lines = new Map<string, string>();
  for (const line of text.split("\n")) {
    const colon = line.indexOf(":");
    if (colon > 0) lines.set(line.slice(0, colon), line.slice(colon + 1));
  }
  const uids = ids(lines.get("Uid"));
  const gids = ids(lines.get("Gid"));
  const groups = ids(lines.get("Groups"));
  if (uids === null || gids === null || groups === null || uids.length !== 4 || gids.length !== 4)
    return null;
  return { uids, gids, groups };
}

/**
 * The supplementary groups of process `pid`, provided its effective uid is
 * still `euid`: a pid that was reused by another user's process, or a
 * process that changed identity, gives null rather than someone else's
 * groups. Null too when /proc hides the process (hidepid) or it is gone.
 */
export function readSupplementaryGroups(pid: number, euid: number): number[] | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, "latin1");
  } catch {
    return null;
  }
  const identity = parseStatusIdentity(text);
  if (identity === null || identity.uids[1] !== euid) return null;
  return identity.groups;
}
