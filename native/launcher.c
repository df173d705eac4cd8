/*
 * relay-launcher: the process launcher of relay-shell as a small native program
 * (docs/adr/0031-the-process-launcher-is-a-native-program.md).
 *
 * It starts one-shot commands for the server, drains their output under a byte
 * budget, enforces their timeouts and aborts, and when a command ends stops
 * everything it left running, by the rules of
 * docs/adr/0019-one-shot-commands-stop-what-they-start.md, which
 * src/proc/subreaper.ts and src/exec/supervise.ts implement for the Node
 * launcher: this file follows supervise.ts step by step, subreaper.c follows
 * subreaper.ts. It is the child subreaper of
 * everything it starts, and when the server goes away (its end of our stdin
 * closes, even after a SIGKILL) it kills all of it and exits.
 *
 * The server speaks to it over stdin and stdout in frames: a 32-bit
 * little-endian length, then the payload, whose first byte is its kind
 * (src/exec/native-link.ts is the other side).
 */
#include "launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define PIPE_GRACE_MS 100.0
#define REAP_WAIT_MS 3000.0
#define CLOSE_DEADLINE_MS 5000.0
#define MAX_FRAME (256u * 1024u * 1024u)

static int closing;
static double close_deadline = INFINITY;

/* ---------- replies ---------- */

static void put_u8(bytes *b, uint8_t v) { bytes_put(b, &v, 1); }
static void put_u32(bytes *b, uint32_t v) {
  unsigned char p[4] = {v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, (v >> 24) & 0xff};
  bytes_put(b, p, 4);
}
static void put_u64(bytes *b, uint64_t v) {
  put_u32(b, (uint32_t)(v & 0xffffffffu));
  put_u32(b, (uint32_t)(v >> 32));
}
static void put_f64(bytes *b, double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  put_u64(b, u);
}

static void stop_all(void);

/* Send one frame; the server gone (EPIPE) ends everything. */
static void send_frame(const bytes *payload) {
  bytes frame = {0};
  put_u32(&frame, (uint32_t)payload->n);
  bytes_put(&frame, payload->v, payload->n);
  size_t off = 0;
  while (off < frame.n) {
    ssize_t w = write(1, frame.v + off, frame.n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      stop_all();
      _exit(0);
    }
    off += (size_t)w;
  }
  free(frame.v);
}

/* ---------- supervision ---------- */

static void close_fd(int *fd) {
  if (*fd >= 0) {
    close(*fd);
    *fd = -1;
  }
}

static void finish(command *c) {
  if (c->done) return;
  c->done = 1;
  /* Background jobs, setsid and double-forked daemons alike: one scan, then everything goes. */
  size_t stopped = end_command(c);
  /* A group we had to stop may still hold members that ignored TERM or never held our pipes. */
  if (c->term_sent || c->kill_sent) signal_group(c->pid, SIGKILL);
  close_fd(&c->in_fd);
  close_fd(&c->out_fd);
  close_fd(&c->err_fd);
  int null_code = c->timed_out || !c->exited || c->status == -1;
  int32_t code = 0;
  if (!null_code) {
    if (WIFEXITED(c->status)) code = WEXITSTATUS(c->status);
    else if (WIFSIGNALED(c->status)) code = -WTERMSIG(c->status);
    else null_code = 1;
  }
  bytes p = {0};
  put_u8(&p, 'D');
  put_u32(&p, c->id);
  put_u32(&p, (uint32_t)code);
  put_u8(&p, (uint8_t)((null_code ? 1 : 0) | (c->timed_out ? 2 : 0) | (c->trace ? 4 : 0)));
  put_u64(&p, c->total);
  put_u64(&p, c->total - c->kept);
  put_u32(&p, (uint32_t)stopped);
  put_f64(&p, c->spawn_us);
  put_f64(&p, (now_ms() - c->spawned_at) * 1000.0);
  put_u32(&p, (uint32_t)c->out_store.n);
  bytes_put(&p, c->out_store.v, c->out_store.n);
  put_u32(&p, (uint32_t)c->err_store.n);
  bytes_put(&p, c->err_store.v, c->err_store.n);
  send_frame(&p);
  free(p.v);
}

static void kill_command(command *c) {
  if (c->kill_sent || c->done) return;
  c->kill_sent = 1;
  /* A process that escaped the group may be what holds the pipes open. */
  stop_descendants(c, SIGKILL);
  c->t_reap_wait = now_ms() + REAP_WAIT_MS;
}

static void terminate(command *c) {
  if (c->term_sent || c->kill_sent || c->done) return;
  c->term_sent = 1;
  signal_descendants(c, SIGTERM, SIGTERM);
  c->t_term_grace = now_ms() + c->kill_grace_ms;
}

static void on_exit_status(command *c, int status) {
  c->leader_reaped = 1;
  if (c->done) return;
  c->exited = 1;
  c->status = status;
  c->t_timeout = INFINITY;
  if (c->open_pipes == 0) finish(c);
  else c->t_pipe_grace = now_ms() + PIPE_GRACE_MS;
}

static void on_pipe_closed(command *c, int *fd) {
  close_fd(fd);
  c->open_pipes--;
  if (c->open_pipes == 0 && c->exited) finish(c);
}

static void sink_write(command *c, int from_err, const unsigned char *p, size_t n) {
  c->total += n;
  if (c->kept >= c->budget) return;
  size_t room = (size_t)(c->budget - c->kept);
  size_t take = n <= room ? n : room;
  c->kept += take;
  bytes_put(from_err && !c->merged ? &c->err_store : &c->out_store, p, take);
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

static void stop_all(void) {
  for (command *c = commands; c; c = c->next) kill_command(c);
  kill_strays();
}

/* ---------- requests ---------- */

typedef struct {
  const unsigned char *p;
  size_t n, off;
  int bad;
} reader;

static uint32_t get_u32(reader *r) {
  if (r->off + 4 > r->n) {
    r->bad = 1;
    return 0;
  }
  const unsigned char *p = r->p + r->off;
  r->off += 4;
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(reader *r) {
  uint64_t lo = get_u32(r);
  return lo | (uint64_t)get_u32(r) << 32;
}
static uint8_t get_u8(reader *r) {
  if (r->off + 1 > r->n) {
    r->bad = 1;
    return 0;
  }
  return r->p[r->off++];
}
/* A length-prefixed string, copied and NUL-terminated. */
static char *get_str(reader *r) {
  uint32_t len = get_u32(r);
  if (r->bad || r->off + len > r->n) {
    r->bad = 1;
    return NULL;
  }
  char *s = xrealloc(NULL, (size_t)len + 1);
  memcpy(s, r->p + r->off, len);
  s[len] = 0;
  r->off += len;
  return s;
}

static void reply_failed(uint32_t id, int err) {
  bytes p = {0};
  put_u8(&p, 'F');
  put_u32(&p, id);
  put_u32(&p, (uint32_t)err);
  send_frame(&p);
  free(p.v);
}

static void free_strs(char **v, uint32_t n) {
  if (v == NULL) return;
  for (uint32_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

static void set_nonblock(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

static void start_command(reader *r) {
  uint32_t id = get_u32(r);
  uint8_t flags = get_u8(r);
  uint64_t timeout_ms = get_u64(r);
  uint64_t grace_ms = get_u64(r);
  uint64_t budget = get_u64(r);
  char *file = get_str(r);
  char *cwd = get_str(r);
  uint32_t argc = get_u32(r);
  char **argv = NULL;
  uint32_t got_args = 0, got_env = 0, envc = 0;
  char **envp = NULL;
  if (!r->bad && argc < 1u << 20) {
    argv = xrealloc(NULL, ((size_t)argc + 1) * sizeof *argv);
    for (; got_args < argc && !r->bad; got_args++) argv[got_args] = get_str(r);
    argv[got_args] = NULL;
  } else {
    r->bad = 1;
  }
  if (!r->bad) envc = get_u32(r);
  if (!r->bad && envc < 1u << 20) {
    envp = xrealloc(NULL, ((size_t)envc + 1) * sizeof *envp);
    for (; got_env < envc && !r->bad; got_env++) envp[got_env] = get_str(r);
    envp[got_env] = NULL;
  } else {
    r->bad = 1;
  }
  uint8_t has_stdin = r->bad ? 0 : get_u8(r);
  char *stdin_data = NULL;
  uint32_t stdin_len = 0;
  if (has_stdin && !r->bad) {
    stdin_len = get_u32(r);
    if (!r->bad && r->off + stdin_len <= r->n) {
      stdin_data = xrealloc(NULL, stdin_len ? stdin_len : 1);
      memcpy(stdin_data, r->p + r->off, stdin_len);
      r->off += stdin_len;
    } else {
      r->bad = 1;
    }
  }
  if (r->bad || file == NULL || cwd == NULL || argc < 1) {
    reply_failed(id, EINVAL);
    goto out;
  }
  if (closing) {
    reply_failed(id, ESHUTDOWN);
    goto out;
  }

  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if ((has_stdin && pipe2(in_pipe, O_CLOEXEC) != 0) || pipe2(out_pipe, O_CLOEXEC) != 0 ||
      pipe2(err_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    for (int i = 0; i < 2; i++) {
      if (in_pipe[i] >= 0) close(in_pipe[i]);
      if (out_pipe[i] >= 0) close(out_pipe[i]);
      if (err_pipe[i] >= 0) close(err_pipe[i]);
    }
    reply_failed(id, err);
    goto out;
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  if (has_stdin) posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  else posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  if (cwd[0] != 0) posix_spawn_file_actions_addchdir_np(&fa, cwd);
  /* Like a detached libuv child: its own session, every signal at its default, an empty mask. */
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  double before = now_ms();
  pid_t pid;
  int rc = posix_spawn(&pid, file, &fa, &attr, argv, envp);
  double after = now_ms();
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (in_pipe[0] >= 0) close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    if (in_pipe[1] >= 0) close(in_pipe[1]);
    close(out_pipe[0]);
    close(err_pipe[0]);
    reply_failed(id, rc);
    goto out;
  }
  command *c = xrealloc(NULL, sizeof *c);
  memset(c, 0, sizeof *c);
  c->id = id;
  c->pid = pid;
  subreaper_track(c);
  c->out_fd = out_pipe[0];
  c->err_fd = err_pipe[0];
  c->in_fd = in_pipe[1];
  set_nonblock(c->out_fd);
  set_nonblock(c->err_fd);
  c->open_pipes = 2;
  if (c->in_fd >= 0) {
    set_nonblock(c->in_fd);
    bytes_put(&c->in_data, stdin_data, stdin_len);
    if (stdin_len == 0) close_fd(&c->in_fd);
  }
  c->merged = (flags & 2) != 0;
  c->trace = (flags & 1) != 0;
  c->budget = budget;
  c->kill_grace_ms = (double)grace_ms;
  c->t_timeout = after + (double)timeout_ms;
  c->t_term_grace = c->t_pipe_grace = c->t_reap_wait = INFINITY;
  c->spawn_us = (after - before) * 1000.0;
  c->spawned_at = after;
  c->next = commands;
  commands = c;
out:
  free(file);
  free(cwd);
  free_strs(argv, got_args);
  free_strs(envp, got_env);
  free(stdin_data);
}

static command *find_command(uint32_t id) {
  for (command *c = commands; c; c = c->next)
    if (c->id == id && !c->done) return c;
  return NULL;
}

static void handle_frame(const unsigned char *p, size_t n) {
  reader r = {p, n, 0, 0};
  uint8_t kind = get_u8(&r);
  switch (kind) {
    case 'R':
      start_command(&r);
      break;
    case 'A': {
      command *c = find_command(get_u32(&r));
      if (c) terminate(c);
      break;
    }
    case 'K':
      stop_all();
      break;
    case 'C':
      closing = 1;
      stop_all();
      close_deadline = now_ms() + CLOSE_DEADLINE_MS;
      break;
    default:
      fprintf(stderr, "relay-launcher: unknown request kind %u\n", kind);
      break;
  }
}

/* ---------- the loop ---------- */

static void drop_finished(void) {
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

static void reap_leaders(void) {
  for (command *c = commands; c; c = c->next) {
    if (c->leader_reaped) continue;
    int status;
    pid_t r = waitpid(c->pid, &status, WNOHANG);
    if (r == c->pid) on_exit_status(c, status);
    else if (r < 0 && errno == ECHILD) on_exit_status(c, -1); /* gone without a status */
  }
}

static void read_output(command *c, int *fd, int from_err) {
  unsigned char buf[65536];
  for (;;) {
    ssize_t n = read(*fd, buf, sizeof buf);
    if (n > 0) {
      sink_write(c, from_err, buf, (size_t)n);
      if ((size_t)n < sizeof buf) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    on_pipe_closed(c, fd);
    return;
  }
}

static void write_stdin(command *c) {
  while (c->in_off < c->in_data.n) {
    ssize_t w = write(c->in_fd, c->in_data.v + c->in_off, c->in_data.n - c->in_off);
    if (w > 0) {
      c->in_off += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) return;
    break; /* EPIPE: the child closed stdin or exited without reading it all, which is its choice */
  }
  close_fd(&c->in_fd);
}

static void run_timers(void) {
  double now = now_ms();
  for (command *c = commands; c; c = c->next) {
    if (c->done) continue;
    if (now >= c->t_timeout) {
      c->t_timeout = INFINITY;
      if (!c->exited) {
        c->timed_out = 1;
        terminate(c);
      }
    }
    if (now >= c->t_term_grace) {
      c->t_term_grace = INFINITY;
      kill_command(c);
    }
    if (now >= c->t_pipe_grace) {
      c->t_pipe_grace = INFINITY;
      kill_command(c);
    }
    if (now >= c->t_reap_wait) {
      c->t_reap_wait = INFINITY;
      finish(c);
    }
  }
  if (now >= follow_up_due()) run_follow_up();
}

static int next_timeout(void) {
  double next = follow_up_due();
  for (command *c = commands; c; c = c->next) {
    if (c->done) continue;
    double t[] = {c->t_timeout, c->t_term_grace, c->t_pipe_grace, c->t_reap_wait};
    for (int i = 0; i < 4; i++)
      if (t[i] < next) next = t[i];
  }
  if (closing && close_deadline < next) next = close_deadline;
  if (isinf(next)) return -1;
  double wait = next - now_ms();
  if (wait <= 0) return 0;
  if (wait > 2147483647.0) return 2147483647;
  return (int)ceil(wait);
}

static int any_live(void) {
  for (command *c = commands; c; c = c->next)
    if (!c->done) return 1;
  return 0;
}

int main(void) {
  /* Every orphan a command leaves comes back here, however it detached (ADR 0019). */
  subreaper_init();
  signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);
  /* Ctrl-C in a terminal reaches the launcher too; the server handles it and closes us. */
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    perror("relay-launcher: signalfd");
    return 71;
  }
  /* The parent's death arrives as SIGTERM through the signalfd, as a stop does: everything goes.
     Closed stdin says the same; this does not depend on nobody else holding the pipe's write end. */
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) {
    perror("relay-launcher: prctl");
    return 71;
  }
  set_nonblock(0);
  bytes in = {0};
  size_t in_off = 0;

  bytes ready = {0};
  put_u8(&ready, 'Y');
  send_frame(&ready);
  free(ready.v);

  size_t cap = 16;
  struct pollfd *fds = xrealloc(NULL, cap * sizeof *fds);
  for (;;) {
    if (closing && (!any_live() || now_ms() >= close_deadline)) return 0;
    size_t n = 0, live = 0;
    for (command *c = commands; c; c = c->next) live++;
    if (cap < live * 3 + 2) {
      cap = live * 3 + 2;
      fds = xrealloc(fds, cap * sizeof *fds);
    }
    fds[n++] = (struct pollfd){0, POLLIN, 0};
    fds[n++] = (struct pollfd){sfd, POLLIN, 0};
    for (command *c = commands; c; c = c->next) {
      fds[n++] = (struct pollfd){c->out_fd, POLLIN, 0};
      fds[n++] = (struct pollfd){c->err_fd, POLLIN, 0};
      fds[n++] = (struct pollfd){c->in_fd, POLLOUT, 0};
    }
    int ready_count = poll(fds, n, next_timeout());
    if (ready_count < 0 && errno != EINTR) {
      perror("relay-launcher: poll");
      stop_all();
      return 70;
    }
    if (ready_count > 0) {
      size_t i = 2;
      for (command *c = commands; c; c = c->next, i += 3) {
        if (fds[i].revents && c->out_fd >= 0) read_output(c, &c->out_fd, 0);
        if (fds[i + 1].revents && c->err_fd >= 0) read_output(c, &c->err_fd, 1);
        if (fds[i + 2].revents && c->in_fd >= 0) write_stdin(c);
      }
      if (fds[1].revents) {
        struct signalfd_siginfo si;
        int got_chld = 0;
        while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
          if (si.ssi_signo == SIGCHLD) got_chld = 1;
          else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP) {
            stop_all();
            return 128 + (int)si.ssi_signo;
          }
        }
        if (got_chld) reap_leaders();
      }
      if (fds[0].revents) {
        /* One read per wake-up (poll says again if more is there), so frames are handled as they come. */
        if (in.cap - in.n < 65536) {
          in.cap = in.cap ? in.cap * 2 : 65536;
          while (in.cap - in.n < 65536) in.cap *= 2;
          in.v = xrealloc(in.v, in.cap);
        }
        ssize_t r = read(0, in.v + in.n, in.cap - in.n);
        if (r > 0) {
          in.n += (size_t)r;
        } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
          /* The server closed our stdin or died (even by SIGKILL, the kernel closes its end). */
          stop_all();
          return 0;
        }
        while (in.n - in_off >= 4) {
          const unsigned char *h = in.v + in_off;
          uint32_t len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
          if (len > MAX_FRAME) {
            fputs("relay-launcher: oversized request\n", stderr);
            stop_all();
            return 70;
          }
          if (in.n - in_off - 4 < len) break;
          handle_frame(in.v + in_off + 4, len);
          in_off += 4 + (size_t)len;
        }
        if (in_off > 0) {
          memmove(in.v, in.v + in_off, in.n - in_off);
          in.n -= in_off;
          in_off = 0;
        }
      }
    }
    run_timers();
    drop_finished();
  }
}
