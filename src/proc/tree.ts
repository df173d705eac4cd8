import { readdirSync, readFileSync } from "node:fs";
import { type ProcInfo, readProc } from "./stat.js";

function parsePids(text: string, into: number[]): void {
  for (const word of text.split(" ")) {
    const pid = Number(word);
    if (word !== "" && Number.isInteger(pid) && pid > 0) into.push(pid);
  }
}

/**
 * Children forked by the main thread of `pid`: one small read, enough for a
 * process that forks only from its main thread and adopts orphans there (the
 * kernel hands an orphan to the first live thread of its reaper). null when
 * the kernel lacks the children file.
 */
export function mainThreadChildren(pid: number): number[] | null {
  try {
    const found: number[] = [];
    parsePids(readFileSync(`/proc/${pid}/task/${pid}/children`, "latin1"), found);
    return found;
  } catch {
    return null;
  }
}

/** Children of every thread of `pid` (a multi-threaded program may fork from any of them). */
function allChildren(pid: number): number[] {
  const found: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return found;
  }
  for (const task of tasks) {
    try {
      parsePids(readFileSync(`/proc/${pid}/task/${task}/children`, "latin1"), found);
    } catch {
      // The thread ended, or the process did.
    }
  }
  return found;
}

/** Every process /proc lists that `keep` accepts. */
function scanProc(keep: (info: ProcInfo) => boolean): ProcInfo[] {
  const found: ProcInfo[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return found;
  }
  for (const entry of entries) {
    const first = entry.charCodeAt(0);
    if (first < 48 || first > 57) continue;
    const info = readProc(Number(entry));
    if (info !== null && keep(info)) found.push(info);
  }
  return found;
}

/** Children of `pid` by a walk of all of /proc: the fallback without children files. */
export function childrenByScan(pid: number): number[] {
  return scanProc((info) => info.ppid === pid).map((info) => info.pid);
}

/**
 * Every living process whose session id is `sid` (zombies are already dead and
 * wait only for a parent that may never reap them). A PTY child is a session leader,
 * so this finds its whole tree, including jobs an interactive shell moved into
 * process groups of their own (which a kill of the leader's group misses).
 * A process that called setsid() itself has left on purpose and is not found.
 */
export function sessionMembers(sid: number): ProcInfo[] {
  return scanProc((info) => info.sid === sid && info.state !== "Z");
}

/**
 * `roots` and everything below them, parents before children. Bounded by
 * `limit` so a fork bomb cannot make one walk unbounded; what is beyond the
 * limit is found by the next walk once its parents are dead and it was adopted.
 */
export function descendants(roots: readonly ProcInfo[], limit: number): ProcInfo[] {
  const out: ProcInfo[] = [...roots];
  const seen = new Set(roots.map((r) => r.pid));
  for (let i = 0; i < out.length && out.length < limit; i++) {
    const parent = out[i] as ProcInfo;
    for (const pid of allChildren(parent.pid)) {
      if (seen.has(pid)) continue;
      seen.add(pid);
      const info = readProc(pid);
      if (info !== null && info.ppid === parent.pid) out.push(info);
    }
  }
  return out;
}
