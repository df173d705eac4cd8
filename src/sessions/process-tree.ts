import { readdirSync, readFileSync } from "node:fs";

export interface ProcessStat {
  pid: number;
  /** One-letter state; `Z` is a zombie, already dead. */
  state: string;
  pgid: number;
  sid: number;
  /** Foreground process group of the controlling terminal (-1 without one). */
  tpgid: number;
  /** Start time in clock ticks since boot: tells a process from a later one that reuses its pid. */
  startTime: number;
}

/** Fields of /proc/<pid>/stat after the command name, which may itself contain spaces and parentheses. */
export function parseStat(text: string): ProcessStat | null {
  const close = text.lastIndexOf(")");
  const pid = Number.parseInt(text, 10);
  if (close < 0 || !Number.isInteger(pid)) return null;
  // After ") ": state ppid pgrp session tty_nr tpgid ...
  const fields = text.slice(close + 2).split(" ");
  const state = fields[0] ?? "";
  const pgid = Number(fields[2]);
  const sid = Number(fields[3]);
  const tpgid = Number(fields[5]);
  const startTime = Number(fields[19]);
  if (![pgid, sid, tpgid, startTime].every(Number.isInteger)) return null;
  return { pid, state, pgid, sid, tpgid, startTime };
}

export function readStat(pid: number): ProcessStat | null {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    // The process is gone (or /proc is not mounted): nothing to report.
    return null;
  }
}

/**
 * Every living process whose session id is `sid` (zombies are already dead and
 * wait only for a parent that may never reap them). A PTY child is a session leader,
 * so this finds its whole tree, including jobs an interactive shell moved into
 * process groups of their own (which a kill of the leader's group misses).
 * A process that called setsid() itself has left on purpose and is not found.
 */
export function sessionMembers(sid: number): ProcessStat[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const members: ProcessStat[] = [];
  for (const entry of entries) {
    const first = entry.charCodeAt(0);
    if (first < 48 || first > 57) continue;
    const stat = readStat(Number(entry));
    if (stat && stat.sid === sid && stat.state !== "Z") members.push(stat);
  }
  return members;
}

/** Signal a process group; false when it no longer exists or cannot be signalled. */
export function signalGroup(pgid: number, signal: number): boolean {
  if (!Number.isInteger(pgid) || pgid <= 1) return false;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // ESRCH: already gone. EPERM: a member runs under other credentials (setuid); nothing more to do here.
    if (code === "ESRCH" || code === "EPERM") return false;
    throw err;
  }
}

/**
 * Signal every process group that has a member in session `sid`; returns how
 * many groups were reached. `withLeaderGroup` also signals group `sid` itself
 * without finding it first (only while the leader is known to be alive, so a
 * reused pid is never hit).
 */
export function signalSession(sid: number, signals: readonly number[], withLeaderGroup: boolean): number {
  const groups = new Set<number>(withLeaderGroup ? [sid] : []);
  for (const member of sessionMembers(sid)) groups.add(member.pgid);
  let reached = 0;
  for (const pgid of groups) {
    let ok = false;
    for (const signal of signals) ok = signalGroup(pgid, signal) || ok;
    if (ok) reached += 1;
  }
  return reached;
}
