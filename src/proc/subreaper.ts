import { FOLLOW_UP_MS, WALK_LIMIT } from "../core/index.js";
import { becomeChildSubreaper, reapChild } from "./libc.js";
import { signalPid } from "./signal.js";
import { isSameProcess, type ProcInfo, readProc } from "./stat.js";
import { childrenByScan, descendants, mainThreadChildren } from "./tree.js";

/** The processes one one-shot command started, from its spawn to its end. */
export interface CommandTracker {
  /** libuv has reaped the leader (its 'exit' event): its pid is no longer ours to protect. */
  leaderReaped(): void;
  /**
   * Send `signal` to everything the command started except the leader (a
   * timeout's first step). `first` runs after they were found and before they
   * are signalled: the leader's group is signalled there, so the leader dies of
   * the signal rather than reporting a child's death, and what the group signal
   * ends is still counted.
   */
  signalDescendants(signal: NodeJS.Signals, first?: () => void): void;
  /** SIGKILL everything the command started except the leader; `first` as for signalDescendants. */
  stopDescendants(first?: () => void): void;
  /**
   * The command is over: stop what is left, and say how many of the stopped
   * processes had escaped the leader's own job (background jobs after the
   * leader exited, orphans, other process groups).
   */
  end(): number;
}

export interface Subreaper {
  /** Orphaned descendants are reparented to this process (PR_SET_CHILD_SUBREAPER is in effect). */
  readonly adopting: boolean;
  /** Start tracking a command whose leader (a session leader, spawned detached) has just started. */
  track(leaderPid: number): CommandTracker;
  /** SIGKILL every adopted orphan and everything below it, whoever started it (shutdown). */
  killStrays(): number;
}

interface Command {
  leader: number;
  /** Start time of the leader, for deciding which commands may have started an orphan. */
  leaderStart: number;
  /** Session ids whose members are this command's: its own (the leader's pid) and any it was seen to create. */
  sids: Set<number>;
  /** Every process signalled on its behalf, by pid, with its start time. */
  stopped: Map<number, number>;
  /**
   * The stopped processes the caller is told about: all but the leader's own
   * job, i.e. members of its process group still below it when it was
   * stopped, which a timeout always killed and which the timeout already reports.
   */
  reported: Set<number>;
  /**
   * Members of its own job seen below the leader: one of them found again as an orphan (the
   * leader died first, and the kill had not landed yet) is still its own job, not news.
   */
  ownJob: Set<number>;
}

/** A process to stop, and whether stopping it is news to the caller. */
interface Found {
  info: ProcInfo;
  reported: boolean;
}

export interface SubreaperOptions {
  /**
   * Become the child subreaper of this process. Only a process that starts
   * nothing but tracked commands may adopt (the process launcher): every
   * process it adopts is then one some command started.
   */
  adopt: boolean;
  /**
   * Adopt at the first track() instead of now: loading the binding costs
   * start-up time, and until something is tracked there is nothing to adopt.
   */
  lazy?: boolean;
  /**
   * Also reap adopted orphans that exit on their own as soon as any child
   * exits (SIGCHLD), instead of at the next command's end. For a process
   * whose tracked work is long-lived (terminal sessions); the launcher, whose
   * commands end often, does without the extra pass per exit.
   */
  reapOnChildExit?: boolean;
}

/**
 * Attribution and cleanup of everything a one-shot command starts
 * (docs/adr/0019-one-shot-commands-stop-what-they-start.md).
 *
 * The leader of each command leads a session of its own, and its session id
 * (the leader's pid) stays on every descendant that does not call setsid().
 * Linux keeps that pid number allocated for as long as any process uses it as
 * a session id, so the number cannot pass to another command meanwhile. While
 * the leader lives, its tree is walked by /proc children lists; once it is
 * gone, what it left behind has been reparented here (the subreaper) and is
 * found among this process's own children. A process that left the session
 * with setsid() and then lost its parent carries no trace of its command; it
 * is given to the ending command when no other running command could have
 * started it (none started before it did), and otherwise to the last such
 * command to end. Nothing here waits for "any child": only pids that are
 * known not to be libuv's are reaped, so libuv still sees its own exits.
 */
export function createSubreaper(options: SubreaperOptions): Subreaper {
  const r: Reaper = {
    options,
    self: process.pid,
    ownSid: readProc(process.pid)?.sid ?? -1,
    adopting: false,
    adoptTried: false,
    commands: new Set(),
    libuvChildren: new Set(),
    doomed: new Set(),
    followUp: null,
    followUpStep: 0,
  };
  if (!options.lazy) adopt(r);
  return {
    get adopting() {
      return r.adopting;
    },
    track: (leaderPid) => track(r, leaderPid),
    killStrays() {
      let killed = 0;
      for (const orphan of adoptedOrphans(r)) {
        for (const info of descendants([orphan], WALK_LIMIT)) {
          signalPid(info.pid, "SIGKILL");
          killed += 1;
        }
      }
      return killed;
    },
  };
}

/** One subreaper's state: the commands it tracks and what it is still cleaning up after. */
interface Reaper {
  options: SubreaperOptions;
  self: number;
  ownSid: number;
  adopting: boolean;
  adoptTried: boolean;
  commands: Set<Command>;
  /** Leaders libuv has not reaped yet: never reaped or walked as orphans here. */
  libuvChildren: Set<number>;
  /** Session ids of ended commands, while the follow-up passes run. */
  doomed: Set<number>;
  followUp: NodeJS.Timeout | null;
  followUpStep: number;
}

function adopt(r: Reaper): void {
  if (r.adoptTried || !r.options.adopt) return;
  r.adoptTried = true;
  r.adopting = becomeChildSubreaper();
  if (r.adopting && r.options.reapOnChildExit) {
    // Node's signal listeners never keep the process alive; libuv still handles its own children.
    process.on("SIGCHLD", () => {
      adoptedOrphans(r);
    });
  }
}

/** Orphans reparented to this process, zombies reaped on the way. */
function adoptedOrphans(r: Reaper): ProcInfo[] {
  if (!r.adopting) return [];
  const pids = mainThreadChildren(r.self) ?? childrenByScan(r.self);
  const found: ProcInfo[] = [];
  for (const pid of pids) {
    if (r.libuvChildren.has(pid)) continue;
    const info = readProc(pid);
    // A child in our own session is not a command's (commands lead sessions of their own).
    if (info === null || info.ppid !== r.self || info.sid === r.ownSid) continue;
    if (info.state === "Z") {
      reapChild(pid);
      continue;
    }
    found.push(info);
  }
  return found;
}

function commandOf(r: Reaper, info: ProcInfo): Command | undefined {
  for (const command of r.commands) if (command.sids.has(info.sid)) return command;
  return undefined;
}

/** Whether `command` is the one to answer for an orphan no session id ties to anyone. */
function mayClaim(r: Reaper, command: Command, orphan: ProcInfo): boolean {
  for (const other of r.commands) {
    if (other !== command && other.leaderStart <= orphan.startTime) return false;
  }
  return true;
}

/** Everything `command` started that still lives, leader excluded. */
function collect(r: Reaper, command: Command): Found[] {
  const found: Found[] = [];
  // While the pid is still libuv's child it cannot have been reused.
  if (r.libuvChildren.has(command.leader)) collectBelowLeader(command, found);
  for (const orphan of adoptedOrphans(r)) {
    const owner = commandOf(r, orphan);
    // Killed already for a command that ended (its SIGKILL not yet seen in /proc on a busy host):
    // the follow-up reaps it; it is not this command's to count.
    if (owner === undefined && r.doomed.has(orphan.sid)) continue;
    const ours = owner === command || (owner === undefined && mayClaim(r, command, orphan));
    if (!ours) continue;
    for (const info of descendants([orphan], WALK_LIMIT)) {
      command.sids.add(info.sid);
      if (info.state !== "Z") found.push({ info, reported: !command.ownJob.has(info.pid) });
    }
  }
  return found;
}

/** The live leader's tree, walked by /proc children lists; its own job is noted as such. */
function collectBelowLeader(command: Command, found: Found[]): void {
  const leader = readProc(command.leader);
  if (leader === null || leader.state === "Z") return;
  for (const info of descendants([leader], WALK_LIMIT)) {
    // A zombie is dead already, waiting for its parent: nothing to stop, nothing to count.
    if (info.pid === command.leader || info.state === "Z") continue;
    command.sids.add(info.sid);
    const own = info.pgid === command.leader;
    if (own) command.ownJob.add(info.pid);
    found.push({ info, reported: !own });
  }
}

function signalAll(command: Command, found: readonly Found[], signal: NodeJS.Signals): void {
  for (const { info, reported } of found) {
    if (!command.stopped.has(info.pid)) command.stopped.set(info.pid, info.startTime);
    if (reported) command.reported.add(info.pid);
    signalPid(info.pid, signal);
  }
}

/** Reap what was killed, and kill what the killed processes forked before they died. */
function runFollowUp(r: Reaper): void {
  r.followUp = null;
  for (const orphan of adoptedOrphans(r)) {
    if (commandOf(r, orphan) !== undefined || !r.doomed.has(orphan.sid)) continue;
    for (const info of descendants([orphan], WALK_LIMIT)) signalPid(info.pid, "SIGKILL");
  }
  r.followUpStep += 1;
  const delay = FOLLOW_UP_MS[r.followUpStep];
  if (delay === undefined) {
    r.doomed.clear();
    return;
  }
  r.followUp = setTimeout(() => runFollowUp(r), delay);
  r.followUp.unref();
}

function scheduleFollowUp(r: Reaper): void {
  r.followUpStep = 0;
  if (r.followUp !== null) clearTimeout(r.followUp);
  r.followUp = setTimeout(() => runFollowUp(r), FOLLOW_UP_MS[0]);
  r.followUp.unref();
}

function stop(r: Reaper, command: Command, first?: () => void): void {
  const found = collect(r, command);
  first?.();
  // Processes seen earlier (a timeout's TERM) and no longer found: the same process, if still there.
  for (const [pid, startTime] of command.stopped) {
    if (!found.some(({ info }) => info.pid === pid) && isSameProcess(pid, startTime)) {
      signalPid(pid, "SIGKILL");
    }
  }
  if (found.length === 0) return;
  signalAll(command, found, "SIGKILL");
  for (const sid of command.sids) r.doomed.add(sid);
  scheduleFollowUp(r);
}

function track(r: Reaper, leaderPid: number): CommandTracker {
  adopt(r);
  r.libuvChildren.add(leaderPid);
  const command: Command = {
    leader: leaderPid,
    leaderStart: readProc(leaderPid)?.startTime ?? 0,
    sids: new Set([leaderPid]),
    stopped: new Map(),
    reported: new Set(),
    ownJob: new Set(),
  };
  r.commands.add(command);
  let ended = false;
  return {
    leaderReaped() {
      r.libuvChildren.delete(leaderPid);
    },
    signalDescendants(signal, first) {
      if (ended) {
        first?.();
        return;
      }
      const found = collect(r, command);
      first?.();
      signalAll(command, found, signal);
    },
    stopDescendants(first) {
      if (ended) first?.();
      else stop(r, command, first);
    },
    end() {
      if (!ended) {
        stop(r, command);
        ended = true;
        r.commands.delete(command);
      }
      return command.reported.size;
    },
  };
}
