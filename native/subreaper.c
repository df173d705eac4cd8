/*
 * What a one-shot command left running, found and stopped by the rules of ADR 0019, step by step as
 * src/proc/subreaper.ts does it for the Node launcher.
 */
#include "launcher.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Delays of the follow-up passes after a stop: reap what was killed, catch what it forked meanwhile. */
static const double FOLLOW_UP_MS[] = {10, 40, 150, 400, 1000};
#define FOLLOW_UPS (sizeof FOLLOW_UP_MS / sizeof FOLLOW_UP_MS[0])

command *commands;
static int self_pid, own_sid;
static ints doomed;
static double follow_up_at = INFINITY;
static size_t follow_up_step;

static void stopped_set(command *c, int pid, unsigned long long start) {
  if (ints_has(&c->stopped_pid, pid)) return;
  ints_push(&c->stopped_pid, pid);
  c->stopped_start = xrealloc(c->stopped_start, c->stopped_pid.cap * sizeof *c->stopped_start);
  c->stopped_start[c->stopped_pid.n - 1] = start;
}

static int is_live_leader(int pid) {
  for (command *c = commands; c; c = c->next)
    if (c->pid == pid && !c->leader_reaped) return 1;
  return 0;
}

/* Orphans reparented to us (we are their subreaper); zombies among them are reaped on the way. */
static void adopted_orphans(procs *out) {
  ints pids = {0};
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", self_pid, self_pid);
  if (!read_children(path, &pids)) children_by_scan(self_pid, &pids);
  for (size_t i = 0; i < pids.n; i++) {
    int pid = pids.v[i];
    if (is_live_leader(pid)) continue;
    proc_info info;
    /* A child in our own session is not a command's (commands lead sessions of their own). */
    if (!read_proc(pid, &info) || info.ppid != self_pid || info.sid == own_sid) continue;
    if (info.state == 'Z') {
      waitpid(pid, NULL, WNOHANG);
      continue;
    }
    procs_push(out, info);
  }
  free(pids.v);
}

static command *command_of(const proc_info *info) {
  for (command *c = commands; c; c = c->next)
    if (!c->ended && ints_has(&c->sids, info->sid)) return c;
  return NULL;
}

/* Whether c answers for an orphan no session id ties to anyone: no other running command started before it. */
static int may_claim(const command *c, const proc_info *orphan) {
  for (command *o = commands; o; o = o->next)
    if (o != c && !o->ended && o->leader_start <= orphan->start) return 0;
  return 1;
}

typedef struct {
  procs found;
  ints reported_here; /* pids among found that are news to the caller */
} collected;

/* Everything c started that still lives, the leader excluded. */
static void collect(command *c, collected *out) {
  if (!c->leader_reaped) {
    proc_info leader;
    if (read_proc(c->pid, &leader) && leader.state != 'Z') {
      procs tree = {0};
      descendants(&leader, 1, &tree);
      for (size_t i = 0; i < tree.n; i++) {
        proc_info *info = &tree.v[i];
        if (info->pid == c->pid || info->state == 'Z') continue;
        ints_add(&c->sids, info->sid);
        procs_push(&out->found, *info);
        if (info->pgid == c->pid) ints_add(&c->own_job, info->pid);
        else ints_push(&out->reported_here, info->pid);
      }
      free(tree.v);
    }
  }
  procs orphans = {0};
  adopted_orphans(&orphans);
  for (size_t i = 0; i < orphans.n; i++) {
    command *owner = command_of(&orphans.v[i]);
    int ours = owner == c || (owner == NULL && may_claim(c, &orphans.v[i]));
    if (!ours) continue;
    procs tree = {0};
    descendants(&orphans.v[i], 1, &tree);
    for (size_t k = 0; k < tree.n; k++) {
      ints_add(&c->sids, tree.v[k].sid);
      if (tree.v[k].state == 'Z') continue;
      procs_push(&out->found, tree.v[k]);
      if (!ints_has(&c->own_job, tree.v[k].pid)) ints_push(&out->reported_here, tree.v[k].pid);
    }
    free(tree.v);
  }
  free(orphans.v);
}

static void collected_free(collected *c) {
  free(c->found.v);
  free(c->reported_here.v);
}

static void signal_all(command *c, const collected *found, int sig) {
  for (size_t i = 0; i < found->found.n; i++) {
    const proc_info *info = &found->found.v[i];
    stopped_set(c, info->pid, info->start);
    if (ints_has(&found->reported_here, info->pid)) ints_add(&c->reported, info->pid);
    signal_pid(info->pid, sig);
  }
}

static void schedule_follow_up(void) {
  follow_up_step = 0;
  follow_up_at = now_ms() + FOLLOW_UP_MS[0];
}

/* Reap what was killed, and kill what the killed processes forked before they died. */
void run_follow_up(void) {
  follow_up_at = INFINITY;
  procs orphans = {0};
  adopted_orphans(&orphans);
  for (size_t i = 0; i < orphans.n; i++) {
    if (command_of(&orphans.v[i]) != NULL || !ints_has(&doomed, orphans.v[i].sid)) continue;
    procs tree = {0};
    descendants(&orphans.v[i], 1, &tree);
    for (size_t k = 0; k < tree.n; k++) signal_pid(tree.v[k].pid, SIGKILL);
    free(tree.v);
  }
  free(orphans.v);
  follow_up_step++;
  if (follow_up_step >= FOLLOW_UPS) {
    doomed.n = 0;
    return;
  }
  follow_up_at = now_ms() + FOLLOW_UP_MS[follow_up_step];
}

/* SIGKILL everything c started; `group_signal` (0 = none) goes to the leader's group after the walk. */
static void stop(command *c, int group_signal) {
  collected found = {0};
  collect(c, &found);
  if (group_signal) signal_group(c->pid, group_signal);
  /* Processes seen earlier (a timeout's TERM) and no longer found: the same process, if still there. */
  for (size_t i = 0; i < c->stopped_pid.n; i++) {
    int pid = c->stopped_pid.v[i];
    int seen = 0;
    for (size_t k = 0; k < found.found.n; k++)
      if (found.found.v[k].pid == pid) seen = 1;
    if (!seen && same_process(pid, c->stopped_start[i])) signal_pid(pid, SIGKILL);
  }
  if (found.found.n > 0) {
    signal_all(c, &found, SIGKILL);
    for (size_t i = 0; i < c->sids.n; i++) ints_add(&doomed, c->sids.v[i]);
    schedule_follow_up();
  }
  collected_free(&found);
}

void signal_descendants(command *c, int sig, int group_signal) {
  if (c->ended) {
    if (group_signal) signal_group(c->pid, group_signal);
    return;
  }
  collected found = {0};
  collect(c, &found);
  if (group_signal) signal_group(c->pid, group_signal);
  signal_all(c, &found, sig);
  collected_free(&found);
}

void stop_descendants(command *c, int group_signal) {
  if (c->ended) {
    if (group_signal) signal_group(c->pid, group_signal);
  } else {
    stop(c, group_signal);
  }
}

/* The command is over: stop what is left; how many stopped processes had escaped its own job. */
size_t end_command(command *c) {
  if (!c->ended) {
    stop(c, 0);
    c->ended = 1;
  }
  return c->reported.n;
}

void kill_strays(void) {
  procs orphans = {0};
  adopted_orphans(&orphans);
  for (size_t i = 0; i < orphans.n; i++) {
    procs tree = {0};
    descendants(&orphans.v[i], 1, &tree);
    for (size_t k = 0; k < tree.n; k++) signal_pid(tree.v[k].pid, SIGKILL);
    free(tree.v);
  }
  free(orphans.v);
}

/* Become the child subreaper of everything we start, and know our own session. */
void subreaper_init(void) {
  self_pid = getpid();
  proc_info me;
  own_sid = read_proc(self_pid, &me) ? me.sid : getsid(0);
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    perror("relay-launcher: PR_SET_CHILD_SUBREAPER");
    exit(71);
  }
}

/* A command whose leader has just started: its session id is its own, its start time is noted. */
void subreaper_track(command *c) {
  proc_info info;
  c->leader_start = read_proc(c->pid, &info) ? info.start : 0;
  ints_push(&c->sids, c->pid);
}

double follow_up_due(void) { return follow_up_at; }
