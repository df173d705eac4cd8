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
 * (frames.c; src/exec/native-link.ts is the other side). A malformed run
 * request is answered as failed (EINVAL); an unknown kind is ignored.
 *
 * Exit status: 0 when the server closed it or its stdin ended; 70 when the
 * server is out of step (a request longer than MAX_FRAME) or poll failed, or
 * memory ran out; 71 when it could not set itself up; 128 + the signal for
 * SIGTERM and SIGHUP. Everything it started is stopped first in each case.
 */
#include "launcher.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

static int closing;
static double close_deadline = INFINITY;

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
  if (c->term_sent || c->kill_sent) signal_command_group(c, SIGKILL);
  /* The last signal to its group has gone: the leader's zombie may go too. */
  release_leader(c);
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
  bytes p = {0}, err_len = {0};
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
  put_u32(&err_len, (uint32_t)c->err_store.n);
  /* The kept output (at most MAX_BUDGET) goes out from where it was kept, not copied. */
  const bytes *parts[] = {&p, &c->out_store, &err_len, &c->err_store};
  send_frame(parts, 4);
  free(p.v);
  free(err_len.v);
}

static void kill_command(command *c) {
  if (c->kill_sent || c->done) return;
  c->kill_sent = 1;
  /* A process that escaped the group may be what holds the pipes open. */
  stop_descendants(c, SIGKILL);
  c->t_reap_wait = now_ms() + c->reap_wait_ms;
}

static void terminate(command *c) {
  if (c->term_sent || c->kill_sent || c->done) return;
  c->term_sent = 1;
  signal_descendants(c, SIGTERM, SIGTERM);
  c->t_term_grace = now_ms() + c->kill_grace_ms;
}

void on_exit_status(command *c, int status) {
  if (c->done) {
    release_leader(c); /* finished while it ran (the reap wait ran out): nothing signals it now */
    return;
  }
  c->exited = 1;
  c->status = status;
  c->t_timeout = INFINITY;
  if (c->open_pipes == 0) finish(c);
  else c->t_pipe_grace = now_ms() + c->pipe_grace_ms;
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

void stop_all(void) {
  for (command *c = commands; c; c = c->next) kill_command(c);
  kill_strays();
}

/* ---------- requests ---------- */

static void reply_failed(uint32_t id, int err) {
  bytes p = {0};
  put_u8(&p, 'F');
  put_u32(&p, id);
  put_u32(&p, (uint32_t)err);
  send_payload(&p);
  free(p.v);
}

static void start_command(reader *r) {
  run_request rq;
  if (!parse_run(r, &rq)) {
    reply_failed(rq.id, EINVAL);
    goto out;
  }
  if (closing) {
    reply_failed(rq.id, ESHUTDOWN);
    goto out;
  }
  spawned s;
  int rc = spawn_leader(&rq, &s);
  if (rc != 0) {
    reply_failed(rq.id, rc);
    goto out;
  }
  command *c = xrealloc(NULL, sizeof *c);
  memset(c, 0, sizeof *c);
  c->id = rq.id;
  c->pid = s.pid;
  subreaper_track(c);
  c->out_fd = s.out_fd;
  c->err_fd = s.err_fd;
  c->in_fd = s.in_fd;
  c->open_pipes = 2;
  if (c->in_fd >= 0) {
    bytes_put(&c->in_data, rq.stdin_data, rq.stdin_len);
    if (rq.stdin_len == 0) close_fd(&c->in_fd);
  }
  c->merged = (rq.flags & 2) != 0;
  c->trace = (rq.flags & 1) != 0;
  /* The server asks for at most RELAY_SHELL_MAX_OUTPUT_HARD; whatever a frame says, no more is kept. */
  c->budget = rq.budget < MAX_BUDGET ? rq.budget : MAX_BUDGET;
  /* The server owns the timings (src/core/limits.ts) and sends each command's in its frame. */
  c->kill_grace_ms = (double)rq.grace_ms;
  c->pipe_grace_ms = (double)rq.pipe_grace_ms;
  c->reap_wait_ms = (double)rq.reap_wait_ms;
  c->t_timeout = s.spawned_at + (double)rq.timeout_ms;
  c->t_term_grace = c->t_pipe_grace = c->t_reap_wait = INFINITY;
  c->spawn_us = s.spawn_us;
  c->spawned_at = s.spawned_at;
  c->next = commands;
  commands = c;
out:
  run_request_free(&rq);
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
      uint32_t id = get_u32(&r);
      command *c = r.bad ? NULL : find_command(id);
      if (c) terminate(c);
      break;
    }
    case 'K':
      stop_all();
      break;
    case 'C':
      closing = 1;
      stop_all();
      close_deadline = now_ms() + (double)CLOSE_DEADLINE_MS;
      break;
    default:
      fprintf(stderr, "relay-launcher: unknown request kind %u\n", kind);
      break;
  }
}

/* ---------- the loop ---------- */

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
  errno = set_nonblock(0);
  if (errno != 0) {
    perror("relay-launcher: stdin");
    return 71;
  }
  bytes in = {0};

  bytes ready = {0};
  put_u8(&ready, 'Y');
  send_payload(&ready);
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
        if (got_chld) reap_children();
      }
      if (fds[0].revents) {
        int end = read_requests(&in, handle_frame);
        if (end != 0) {
          stop_all();
          return end == 2 ? 70 : 0;
        }
      }
    }
    run_timers();
    drop_finished();
  }
}
