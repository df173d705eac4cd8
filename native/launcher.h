/*
 * Shared by the parts of the native process launcher (ADR 0031): util.c (memory, time, small
 * sets), proc.c (what /proc says, signals; as src/proc/stat.ts, tree.ts, signal.ts),
 * subreaper.c (what a command left running, and reaping; as src/proc/subreaper.ts), frames.c
 * (the protocol's frames), spawn.c (starting a command; as src/exec/native-spawn.ts) and
 * launcher.c (the supervision and the loop; as src/exec/supervise.ts and launcher-host.ts).
 */
#ifndef RELAY_LAUNCHER_H
#define RELAY_LAUNCHER_H

#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>

/*
 * The launcher's own hard bounds. The timings of a command (its timeout, kill grace, pipe grace and
 * reap wait) are not here: the server sends them in each run frame (src/core/limits.ts holds them,
 * docs/adr/0039-process-limits-in-one-place-told-to-the-launcher.md). What stays bounds the
 * launcher's memory and its own lifetime whatever a frame says; the same numbers are in
 * src/core/limits.ts, and src/core/limits.test.ts fails when the two differ.
 */
/* The most processes one walk collects; the rest is found by the next walk. */
#define WALK_LIMIT 4096
/* The largest request frame read (256 MiB); a longer one means the server is out of step (exit 70). */
#define MAX_FRAME 268435456u
/*
 * The largest output budget a command gets, whatever a run frame asks for: the highest
 * RELAY_SHELL_MAX_OUTPUT_HARD allows (128 MiB). It bounds the launcher's memory per command and
 * keeps a done frame (its kept bytes and 54 bytes more) well inside the u32 lengths of the protocol;
 * src/exec/native-link.ts refuses a longer reply.
 */
#define MAX_BUDGET 134217728u
/* After a close request, the launcher exits within this many ms even if a killed command never ends. */
#define CLOSE_DEADLINE_MS 5000
/* Delays of the follow-up passes after a stop (ms): reap what was killed, kill what it forked
   meanwhile; after the last one nothing more is chased. */
#define FOLLOW_UP_DELAYS_MS 10, 40, 150, 400, 1000

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
void own_children(int self, ints *into);
void signal_pid(int pid, int sig);
void signal_group(int pgid, int sig);

/* ---------- frames (frames.c) ---------- */

/* Stop every command and everything adopted (launcher.c): also when a reply cannot be sent. */
void stop_all(void);

void put_u8(bytes *b, uint8_t v);
void put_u32(bytes *b, uint32_t v);
void put_u64(bytes *b, uint64_t v);
void put_f64(bytes *b, double v);
/* One frame made of parts, written whole; the server gone (EPIPE) ends everything. */
void send_frame(const bytes *const *parts, size_t nparts);
void send_payload(const bytes *payload);

typedef struct {
  const unsigned char *p;
  size_t n, off;
  int bad;
} reader;

uint8_t get_u8(reader *r);
uint32_t get_u32(reader *r);

/* A run request as it came ('R' frame). */
typedef struct {
  uint32_t id;
  uint8_t flags; /* 1 traced, 2 stderr merged into stdout */
  uint64_t timeout_ms, grace_ms, pipe_grace_ms, reap_wait_ms, budget;
  char *file, *cwd;
  char **argv, **envp; /* NULL-terminated */
  uint32_t argc, envc; /* how many strings each holds */
  int has_stdin;
  unsigned char *stdin_data;
  uint32_t stdin_len;
} run_request;

/* 1 when the frame held a whole, well-formed request; run_request_free either way. */
int parse_run(reader *r, run_request *rq);
void run_request_free(run_request *rq);

/* Reads what stdin has and hands each whole frame to handle: 0 on, 1 stdin ended, 2 oversized. */
int read_requests(bytes *in, void (*handle)(const unsigned char *p, size_t n));

/* ---------- starting a command (spawn.c) ---------- */

typedef struct {
  int pid;
  int in_fd, out_fd, err_fd; /* our ends, non-blocking; in_fd -1 without stdin */
  double spawn_us, spawned_at;
} spawned;

/* Starts the command's leader, or says why not: an errno, as a failed posix_spawn gives it. */
int spawn_leader(const run_request *rq, spawned *out);
int set_nonblock(int fd);

typedef struct command {
  uint32_t id;
  int pid;
  unsigned long long leader_start;
  /* The leader's zombie is gone (finish() reaped it, or someone else did): its pid, and the number
     of its process group, may now belong to another process and are never signalled again. */
  int leader_reaped;
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
  /* the timings the run frame gave */
  double kill_grace_ms, pipe_grace_ms, reap_wait_ms;
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
void drop_finished(void);
/* The leader's group, only while the number is still reserved by the leader (see reap_children). */
void signal_command_group(command *c, int sig);
/* On SIGCHLD: note leaders' exits (their zombies kept), reap every other child that exited. */
void reap_children(void);
/* Reap the leader's zombie once nothing will signal its group again. */
void release_leader(command *c);
/* Called by reap_children: the leader exited with this wait status (-1: without one). */
void on_exit_status(command *c, int status);
void signal_descendants(command *c, int sig, int group_signal);
void stop_descendants(command *c, int group_signal);
size_t end_command(command *c);
void kill_strays(void);
/* When the follow-up passes are due next (INFINITY: none), and running them when they are. */
double follow_up_due(void);
void run_follow_up(void);

#endif
