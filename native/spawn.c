/*
 * Starting a command's leader like a detached libuv child (as src/exec/native-spawn.ts does): its own
 * session, every signal at its default, an empty mask, stdin from a pipe or /dev/null, stdout and
 * stderr on pipes, nothing else inherited, in the planned working directory.
 *
 * Each step of the plan is checked. posix_spawn_file_actions_* and posix_spawnattr_* can fail
 * (ENOMEM), and a step silently missing would start a child that writes onto the protocol pipe
 * (fd 1 not replaced), keeps the launcher's descriptors, or runs in the wrong directory. A failed
 * step is reported exactly as a failed posix_spawn is, by its errno, and nothing is left open.
 */
#include "launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

/* 0, or the errno of the fcntl that failed. */
int set_nonblock(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return errno;
  return 0;
}

static int plan_files(posix_spawn_file_actions_t *fa, const run_request *rq, int in, int out, int err) {
  int rc = in >= 0 ? posix_spawn_file_actions_adddup2(fa, in, 0)
                   : posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(fa, out, 1);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(fa, err, 2);
  if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(fa, 3);
  if (rc == 0 && rq->cwd[0] != 0) rc = posix_spawn_file_actions_addchdir_np(fa, rq->cwd);
  return rc;
}

static int plan_attrs(posix_spawnattr_t *attr) {
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  int rc = posix_spawnattr_setsigdefault(attr, &all);
  if (rc == 0) rc = posix_spawnattr_setsigmask(attr, &none);
  if (rc == 0)
    rc = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  return rc;
}

/* The child's ends are in, out and err; 0 and the pid, or an errno and no child. */
static int spawn_with(const run_request *rq, int in, int out, int err, spawned *s) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  int rc = posix_spawn_file_actions_init(&fa);
  if (rc != 0) return rc;
  rc = posix_spawnattr_init(&attr);
  if (rc != 0) {
    posix_spawn_file_actions_destroy(&fa);
    return rc;
  }
  rc = plan_files(&fa, rq, in, out, err);
  if (rc == 0) rc = plan_attrs(&attr);
  if (rc == 0) {
    double before = now_ms();
    pid_t pid;
    rc = posix_spawn(&pid, rq->file, &fa, &attr, rq->argv, rq->envp);
    s->spawned_at = now_ms();
    s->spawn_us = (s->spawned_at - before) * 1000.0;
    s->pid = pid;
  }
  /* Destroying only frees what init allocated; it has nothing to report. */
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return rc;
}

static void close_both(int p[2]) {
  for (int i = 0; i < 2; i++)
    if (p[i] >= 0) close(p[i]);
}

int spawn_leader(const run_request *rq, spawned *s) {
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  int rc = 0;
  if ((rq->has_stdin && pipe2(in_pipe, O_CLOEXEC) != 0) || pipe2(out_pipe, O_CLOEXEC) != 0 ||
      pipe2(err_pipe, O_CLOEXEC) != 0)
    rc = errno;
  /* Only our ends are non-blocking, and before the child exists: a failure here starts nothing.
     The child's ends stay blocking, as any stdout it could inherit would be. */
  if (rc == 0) rc = set_nonblock(out_pipe[0]);
  if (rc == 0) rc = set_nonblock(err_pipe[0]);
  if (rc == 0 && in_pipe[1] >= 0) rc = set_nonblock(in_pipe[1]);
  if (rc == 0) rc = spawn_with(rq, in_pipe[0], out_pipe[1], err_pipe[1], s);
  /* The child holds its own copies now (or there is no child). */
  if (in_pipe[0] >= 0) close(in_pipe[0]);
  if (out_pipe[1] >= 0) close(out_pipe[1]);
  if (err_pipe[1] >= 0) close(err_pipe[1]);
  in_pipe[0] = out_pipe[1] = err_pipe[1] = -1;
  if (rc != 0) {
    close_both(in_pipe);
    close_both(out_pipe);
    close_both(err_pipe);
    return rc;
  }
  s->in_fd = in_pipe[1];
  s->out_fd = out_pipe[0];
  s->err_fd = err_pipe[0];
  return 0;
}
