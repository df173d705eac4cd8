import { readdirSync, readFileSync } from "node:fs";

/** What /proc/<pid>/stat says about one process. */
export interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  /** One-letter state; `Z` is a zombie: dead, waiting to be reaped. */
  state: string;
  /** Clock ticks since boot: tells a process from a later one that got the same pid. */
  startTime: number;
}

export function readProc(pid: number): ProcInfo | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    // Gone (or no /proc): nothing to report.
    return null;
  }
  // The command name may hold spaces and parentheses: the fields start after the last ")".
  const close = text.lastIndexOf(")");
  if (close < 0) return null;
  // state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime
  // cstime priority nice num_threads itrealvalue starttime
  const fields = text.slice(close + 2).split(" ");
  const ppid = Number(fields[1]);
  const pgid = Number(fields[2]);
  const sid = Number(fields[3]);
  const startTime = Number(fields[19]);
  if (![ppid, pgid, sid, startTime].every(Number.isInteger)) return null;
  return { pid, ppid, pgid, sid, state: fields[0] ?? "", startTime };
}

/** Still the same process: alive (or a zombie) and started when we first saw it. */
export function isSameProcess(pid: number, startTime: number): boolean {
  return readProc(pid)?.startTime === startTime;
}

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
export function allChildren(pid: number): number[] {
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

/** Children of `pid` by a walk of all of /proc: the fallback without children files. */
export function childrenByScan(pid: number): number[] {
  const found: number[] = [];
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
    if (info !== null && info.ppid === pid) found.push(info.pid);
  }
  return found;
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
