import { readFileSync } from "node:fs";

/** What /proc/<pid>/stat says about one process. */
export interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  /** Foreground process group of the controlling terminal (-1 without one). */
  tpgid: number;
  /** One-letter state; `Z` is a zombie: dead, waiting to be reaped. */
  state: string;
  /** Clock ticks since boot: tells a process from a later one that got the same pid. */
  startTime: number;
}

/** The fields of one /proc/<pid>/stat line, or null when it is not one. */
export function parseStat(text: string): ProcInfo | null {
  // The command name may hold spaces and parentheses: the fields start after the last ")".
  const close = text.lastIndexOf(")");
  const pid = Number.parseInt(text, 10);
  if (close < 0 || !Number.isInteger(pid)) return null;
  // state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime
  // cstime priority nice num_threads itrealvalue starttime
  const fields = text.slice(close + 2).split(" ");
  const ppid = Number(fields[1]);
  const pgid = Number(fields[2]);
  const sid = Number(fields[3]);
  const tpgid = Number(fields[5]);
  const startTime = Number(fields[19]);
  if (![ppid, pgid, sid, tpgid, startTime].every(Number.isInteger)) return null;
  return { pid, ppid, pgid, sid, tpgid, state: fields[0] ?? "", startTime };
}

export function readProc(pid: number): ProcInfo | null {
  try {
    // latin1 keeps every byte of a command name that is not UTF-8 as one character.
    return parseStat(readFileSync(`/proc/${pid}/stat`, "latin1"));
  } catch {
    // Gone (or no /proc): nothing to report.
    return null;
  }
}

/** Still the same process: alive (or a zombie) and started when we first saw it. */
export function isSameProcess(pid: number, startTime: number): boolean {
  return readProc(pid)?.startTime === startTime;
}
