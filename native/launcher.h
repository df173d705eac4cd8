/*
 * Shared by the parts of the native process launcher (ADR 0031): util.c (memory, time, small
 * sets), proc.c (what /proc says, signals; as src/proc/stat.ts, tree.ts, signal.ts),
 * subreaper.c (what a command left running; as src/proc/subreaper.ts) and launcher.c (the
 * protocol, the supervision and the loop; as src/exec/supervise.ts and launcher-host.ts).
 */
#ifndef RELAY_LAUNCHER_H
#define RELAY_LAUNCHER_H

#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>

/* The most processes one walk collects; the rest is found by the next walk. */
#define WALK_LIMIT 4096

void *xrealloc(void *p, size_t n);
double now_ms(void);

typedef struct {
  int *v;
  size_t n, cap;
} ints;

int ints_has(const ints *s, int x);
void ints_push(ints *s, int x);
void ints_add(ints *s, int x);

typedef struct {
  unsigned char *v;
  size_t n, cap;
} bytes;

void bytes_put(bytes *b, const void *p, size_t n);

typedef struct {
  int pid, ppid, pgid, sid;
  char state;
  unsigned long long start;
} proc_info;

typedef struct {
  proc_info *v;
  size_t n, cap;
} procs;

void procs_push(procs *s, proc_info p);
int read_proc(int pid, proc_info *out);
int same_process(int pid, unsigned long long start);
int read_children(const char *path, ints *into);
void children_by_scan(int pid, ints *into);
void descendants(const proc_info *roots, size_t nroots, procs *out);
void signal_pid(int pid, int sig);
void signal_group(int pgid, int sig);

typedef struct command {
  uint32_t id;
  int pid;
  unsigned long long leader_start;
  int leader_reaped; /* our waitpid collected its status: the pid is no longer ours to protect */
  int ended;         /* the attribution's end() ran */
  ints sids;
  ints stopped_pid;
  unsigned long long *stopped_start;
  ints reported;
  /* Members of its own job seen below the leader: found again as orphans, still its own job. */
  ints own_job;
  /* supervision */
  int out_fd, err_fd, in_fd;
  bytes in_data;
  size_t in_off;
  int open_pipes;
  int exited, status;
  int timed_out, term_sent, kill_sent, done;
  double t_timeout, t_term_grace, t_pipe_grace, t_reap_wait;
  double kill_grace_ms;
  /* output under one budget */
  int merged;
  uint64_t budget, kept, total;
  bytes out_store, err_store;
  /* stage trace */
  int trace;
  double spawn_us, spawned_at;
  struct command *next;
} command;

/* Every command not finished yet (the supervision’s list, which the attribution reads). */
extern command *commands;

void subreaper_init(void);
void subreaper_track(command *c);
void signal_descendants(command *c, int sig, int group_signal);
void stop_descendants(command *c, int group_signal);
size_t end_command(command *c);
void kill_strays(void);
/* When the follow-up passes are due next (INFINITY: none), and running them when they are. */
double follow_up_due(void);
void run_follow_up(void);

#endif
