/*
 * Every timing and bound of one-shot process supervision, in one place
 * (docs/adr/0039-process-limits-in-one-place-told-to-the-launcher.md). The TypeScript side
 * (exec/supervise.ts, proc/subreaper.ts, the launchers' links) reads them here. The native
 * launcher is told the timings of each command in its run frame; what it keeps itself are hard
 * bounds on its own memory and lifetime (native/launcher.h), and limits.test.ts holds those equal
 * to the numbers below.
 */

/** Between SIGTERM and SIGKILL of a command that timed out or was aborted, when its request names none. */
export const KILL_GRACE_MS = 2000;

/**
 * After the leader exits, how long its pipes may stay open before whatever holds them is killed:
 * long enough to read what is still in flight, short enough that `server &` does not hold the call.
 */
export const PIPE_GRACE_MS = 100;

/** After the SIGKILL of a command, how long to wait for its exit and its pipes before the call ends anyway. */
export const REAP_WAIT_MS = 3000;

/**
 * How long a launcher told to close waits for its killed commands to be answered before it exits
 * anyway; longer than REAP_WAIT_MS, so a command it killed is answered unless its end is stuck.
 */
export const LAUNCHER_CLOSE_DEADLINE_MS = 5000;

/** Delays of the follow-up passes after a stop: reap what was killed, kill what it forked meanwhile. */
export const FOLLOW_UP_MS: readonly number[] = [10, 40, 150, 400, 1000];

/** The most processes one walk of a process tree collects; the next walk finds the rest. */
export const WALK_LIMIT = 4096;

/** The longest delay a timer honours (setTimeout's bound); a longer timing is cut to it. */
export const MAX_TIMER_MS = 2_147_483_647;

/** The most output one command keeps, whatever its budget says: the highest RELAY_SHELL_MAX_OUTPUT_HARD. */
export const MAX_OUTPUT_BYTES = 128 * 1024 * 1024;

/** The largest request frame the native launcher reads; a longer one means the two sides are out of step. */
export const MAX_REQUEST_FRAME_BYTES = 256 * 1024 * 1024;
