/*
 * What a one-shot command left running, found and stopped by the rules of ADR 0019, step by step as
 * src/proc/subreaper.ts does it for the Node launcher.
 */
#include "launcher.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static const double FOLLOW_UP_MS[] = {FOLLOW_UP_DELAYS_MS};
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

static command *live_leader(int pid) {
  for (command *c = commands; c; c = c->next)
    if (c->pid == pid && !c->leader_reaped) return c;
  return NULL;
}
static int is_live_leader(int pid) { return live_leader(pid) != NULL; }

/*
 * A process group is signalled by its number, and that number is its leader's pid. Once the leader
 * is reaped and the group has emptied, the kernel may give the pid to a new process, which becomes
 * the leader of a new group of that number if it calls setsid or setpgid: a kill(-pgid) then hits
 * a stranger. So the launcher keeps each command's leader unreaped, a zombie, until the command is
 * finished (reap_children notes its exit with WNOWAIT, release_leader reaps it last). While the
 * zombie exists the pid is not reused, and a group signal reaches only the command's own group or
 * nobody. Once the leader is reaped (or was found gone) the group is never signalled again.
 */
void signal_command_group(command *c, int sig) {
  if (!c->leader_reaped) signal_group(c->pid, sig);
}

void release_leader(command *c) {
  if (c->leader_reaped) return;
  /* Still running (a finish forced by the reap wait): it stays our child, reaped as any orphan. */
  if (waitpid(c->pid, NULL, WNOHANG) == c->pid) c->leader_reaped = 1;
}

/* The wait status waitpid would have given for what waitid says. */
static int wait_status(const siginfo_t *si) {
  if (si->si_code == CLD_EXITED) return (si->si_status & 0xff) << 8;
  return (si->si_status & 0x7f) | (si->si_code == CLD_DUMPED ? 0x80 : 0);
}

/* Every exited child that is not a command's leader, reaped by its own pid. */
static void reap_listed_orphans(void) {
  ints pids = {0};
  own_children(self_pid, &pids);
  for (size_t i = 0; i < pids.n; i++)
    if (!is_live_leader(pids.v[i])) waitpid(pids.v[i], NULL, WNOHANG);
  free(pids.v);
}

/*
 * On SIGCHLD. First the leaders: each exit is noted (WNOWAIT keeps the zombie, see
 * signal_command_group). Then every other exited child, which is an orphan adopted as subreaper, is
 * reaped now rather than at the next scan. waitid(P_ALL, WNOWAIT) names an exited child without
 * reaping it: one that is no leader is reaped by its pid; a held leader would be named again and
 * again and hides the children after it, so then the children are listed and reaped one by one.
 * A leader's status is never taken by anyone but its command.
 */
void reap_children(void) {
  for (command *c = commands; c; c = c->next) {
    if (c->leader_reaped || c->exited) continue;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r = waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && si.si_pid == c->pid) {
      on_exit_status(c, wait_status(&si));
    } else if (r < 0 && errno == ECHILD) {
      c->leader_reaped = 1; /* gone without a status: its number is no longer ours */
      on_exit_status(c, -1);
    }
  }
  for (;;) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0) return;
    if (live_leader(si.si_pid) != NULL || waitpid(si.si_pid, NULL, WNOHANG) != si.si_pid) {
      reap_listed_orphans();
      return;
    }
  }
}

/* Orphans reparented to us (we are their subreaper); zombies among them are reaped on the way. */
static void adopted_orphans(procs *out) {
  ints pids = {0};
  own_children(self_pid, &pids);
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
  if (group_signal) signal_command_group(c, group_signal);
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
    if (group_signal) signal_command_group(c, group_signal);
    return;
  }
  collected found = {0};
  collect(c, &found);
  if (group_signal) signal_command_group(c, group_signal);
  signal_all(c, &found, sig);
  collected_free(&found);
}

void stop_descendants(command *c, int group_signal) {
  if (c->ended) {
    if (group_signal) signal_command_group(c, group_signal);
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

static void free_command(command *c) {
  free(c->sids.v);
  free(c->stopped_pid.v);
  free(c->stopped_start);
  free(c->reported.v);
  free(c->own_job.v);
  free(c->in_data.v);
  free(c->out_store.v);
  free(c->err_store.v);
  free(c);
}

/* Forget the commands that are finished (their done frame went out). */
void drop_finished(void) {
  command **link = &commands;
  while (*link) {
    command *c = *link;
    if (c->done) {
      *link = c->next;
      free_command(c);
    } else {
      link = &c->next;
    }
  }
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
