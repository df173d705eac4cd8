import { type Args, always, type Hit, hit, type RuleInput, table } from "./args.js";

/**
 * Processes: signals and scheduling. Signalling PID 1 or every process, or
 * SIGKILL to a broad selection, is Tier 3 (process_kill); a signal or a new
 * priority for a chosen process is Tier 2 (process_change).
 */

const CRITICAL_PROCESS =
  /^(?:sshd|systemd|init|systemd-networkd|networkmanager|dhclient|dhcpcd|wpa_supplicant|dbus-daemon|dbus|systemd-logind|systemd-journald)$/i;

/**
 * kill: signalling PID 1 (init) or -1 (every process the caller may signal) is
 * Tier 3, whatever the signal except 0 (a probe). A SIGKILL to a chosen
 * process is Tier 2 (no chance to clean up); other signals to one process
 * stay Tier 1, like any reversible action.
 */
function kill({ args }: RuleInput): Hit | null {
  let signal: string | null = null;
  const pids: string[] = [];
  const v = args.values;
  let optionsDone = false;
  for (let i = 0; i < v.length; i++) {
    const a = v[i]!;
    if (!optionsDone && a === "--") {
      optionsDone = true;
    } else if (!optionsDone && (a === "-l" || a === "-L" || a === "--list" || a === "--table")) {
      return null;
    } else if (!optionsDone && (a === "-s" || a === "-n" || a === "--signal")) {
      signal = v[++i] ?? "";
    } else if (!optionsDone && signal === null && /^-[A-Za-z0-9+]+$/.test(a)) {
      signal = a.slice(1);
    } else {
      pids.push(a);
    }
  }
  const sig = signalName(signal ?? "TERM");
  if (sig === "0") return null;
  if (pids.some((p) => p === "1" || p === "-1")) return hit(3, "process_kill");
  if (pids.length === 0) return null;
  return isKill(sig) ? hit(2, "process_kill") : PROCESS_CHANGE;
}

/**
 * A signal that ends the process or makes it act: any but 0 (a probe). Plain
 * `kill PID` (TERM), HUP and STOP reach one process and it can be started
 * again (Tier 2, process_change); KILL gives it no chance to clean up
 * (Tier 2, process_kill).
 */
const PROCESS_CHANGE = hit(2, "process_change");

/** `-9`, `KILL`, `SIGKILL`, `sigkill` → `9` / `KILL`. */
function signalName(s: string): string {
  return s.toUpperCase().replace(/^SIG/, "");
}

function isKill(sig: string): boolean {
  return sig === "KILL" || sig === "9";
}

/** Signals that only ask a daemon to reload, reopen logs or report (`pkill -HUP nginx`). */
const GENTLE_SIGNAL = /^(?:HUP|1|USR1|10|USR2|12|WINCH|28|CONT|18|CHLD|17|URG|23)$/;

/**
 * The signal killall or pkill sends: `-9`, `-KILL`, `-SIGKILL`, `-s KILL`,
 * `--signal=KILL`; null when none is given (TERM). pkill's other short
 * options are letters (`-f`, `-x`), never a digit or an upper-case name.
 */
const SIGNAL_OPTION = /^-(?:\d+|[Ss][Ii][Gg]\w+|[A-Z]{2}[A-Z0-9+]*)$/;

function selectorSignal(args: Args, dashS: boolean): string | null {
  const v = args.values;
  for (let i = 0; i < args.optionEnd; i++) {
    const a = v[i]!;
    if ((dashS && a === "-s") || a === "--signal") return signalName(v[i + 1] ?? "");
    if (a.startsWith("--signal=")) return signalName(a.slice(9));
    if (SIGNAL_OPTION.test(a)) return signalName(a.slice(1));
  }
  return null;
}

/**
 * killall and pkill select processes by name or owner, so they reach every
 * match: a SIGKILL to all of them, every process of a user (`-u`), a pattern
 * that matches nearly everything or a critical daemon is Tier 3; a reload
 * signal is a process change; anything else is Tier 2.
 */
function selectorVerdict(sig: string | null, broad: boolean): Hit | null {
  if (sig === "0") return null;
  if (broad || (sig !== null && isKill(sig))) return hit(3, "process_kill");
  if (sig !== null && GENTLE_SIGNAL.test(sig)) return PROCESS_CHANGE;
  return hit(2, "process_kill");
}

const KILLALL_VALUED = new Set([
  "-u",
  "--user",
  "-s",
  "--signal",
  "-o",
  "--older-than",
  "-y",
  "--younger-than",
  "-n",
  "--ns",
  "-Z",
  "--context",
]);

function killall({ args }: RuleInput): Hit | null {
  if (args.short("l") || args.long("list")) return null;
  const regex = args.short("r") || args.long("regexp");
  const names: string[] = [];
  let user = false;
  for (let i = 0; i < args.length; i++) {
    const a = args.values[i]!;
    if (i > args.optionEnd || !(a.startsWith("-") && a.length > 1)) {
      if (a !== "--") names.push(a);
    } else if (KILLALL_VALUED.has(a)) {
      user ||= a === "-u" || a === "--user";
      i++;
    } else user ||= a.startsWith("--user=");
  }
  // `killall -u bob` with no name is every process bob owns.
  const broad =
    (user && names.length === 0) ||
    names.some((n) => CRITICAL_PROCESS.test(n)) ||
    (regex && names.some(broadPattern));
  return selectorVerdict(selectorSignal(args, true), broad);
}

function broadPattern(p: string): boolean {
  return p.length <= 1 || /^[.^$*+?()|\\[\]]*$/.test(p);
}

const PKILL_VALUED = new Set([
  "-u",
  "-U",
  "-g",
  "-G",
  "-P",
  "-s",
  "-t",
  "-F",
  "--signal",
  "--ns",
  "--nslist",
  "--euid",
  "--uid",
  "--pidfile",
  "--parent",
  "--session",
  "--terminal",
  "--group",
  "--pgroup",
]);

/** pkill selects by pattern, so it is at least Tier 2; a pattern that matches nearly everything, or a critical daemon, is Tier 3. */
function pkill({ args }: RuleInput): Hit | null {
  const v = args.values;
  let pattern: string | null = null;
  let user: string | null = null;
  for (let i = 0; i < v.length; i++) {
    const a = v[i]!;
    if (PKILL_VALUED.has(a)) {
      if (a === "-u" || a === "-U" || a === "--euid" || a === "--uid") user = v[i + 1] ?? null;
      i++;
    } else if (a.startsWith("-") && a.length > 1) {
      if (/^-[uU]./.test(a)) user = a.slice(2);
    } else if (pattern === null) {
      pattern = a;
    }
  }
  // `pkill -u bob` with no pattern is every process bob owns.
  const broad = pattern === null ? user !== null : broadPattern(pattern) || CRITICAL_PROCESS.test(pattern);
  // pkill's `-s` is a session id; its signal is `--signal` or `-SIG`.
  return selectorVerdict(selectorSignal(args, false), broad);
}

/**
 * renice, ionice, chrt and taskset change how an existing process is
 * scheduled (`renice -n 10 -p 123`, `ionice -c3 -p 123`); without a new value
 * `ionice -p`, `chrt -p PID` and `taskset -p PID` only print it.
 */
function renice({ args }: RuleInput): Hit | null {
  return args.operands().length > 0 || args.optionValue("-n", "--priority") !== undefined
    ? PROCESS_CHANGE
    : null;
}

function ionice({ args }: RuleInput): Hit | null {
  const sets = args.optionValue("-c", "--class", "-n", "--classdata") !== undefined || args.short("t");
  return sets ? PROCESS_CHANGE : null;
}

/** `chrt -p PRIO PID`, `taskset -p MASK PID`: two operands set, one reads. */
function schedulerSet({ args }: RuleInput): Hit | null {
  if (!args.clusters().some((c) => c.includes("p")) && !args.long("pid")) return null;
  return args.operands().length >= 2 ? PROCESS_CHANGE : null;
}

export const PROCESS_RULES = table([
  ["kill", kill],
  ["killall", killall],
  ["pkill", pkill],
  [["fuser"], ({ args }) => (args.short("k") || args.long("kill") ? hit(2, "process_kill") : null)],
  [["skill", "snice"], always(2, "process_kill")],
  ["renice", renice],
  ["ionice", ionice],
  [["chrt", "taskset"], schedulerSet],
]);
