/*
 * The spawn floor: the least a one-shot command can cost. A minimal C process
 * that posix_spawns `/bin/sh -c true` (what shell_exec runs for `true`) with
 * its output on a pipe it drains, as the launcher does, and waits for it.
 * Built by the bench with the launcher's flags. Prints one JSON line, the
 * shape of the Node floors (bench/floors/sample.mjs):
 *   {"times": [ms of each sequential spawn], "rate": spawns/s with IN_FLIGHT
 *    at once, "cpuMs": machine CPU per spawn meanwhile, "busy": busy share}
 * Usage: spawn-floor SEQUENTIAL TOTAL IN_FLIGHT WARMUP
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_IN_FLIGHT 64

struct child {
  pid_t pid;
  int out; /* read end of its output pipe, -1 once drained */
  int exited;
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* Busy and total milliseconds the machine has spent, from the first line of /proc/stat. */
static int machine_cpu(double *busy, double *total) {
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return -1;
  unsigned long long v[8] = {0};
  int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                 &v[6], &v[7]);
  fclose(f);
  if (n != 8) return -1;
  unsigned long long all = 0;
  for (int i = 0; i < 8; i++) all += v[i];
  /* USER_HZ is 100 on Linux: ten milliseconds a tick. */
  *total = (double)all * 10.0;
  *busy = (double)(all - v[3] - v[4]) * 10.0;
  return 0;
}

static int start(struct child *c) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa) != 0) return -1;
  int rc = posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  char *argv[] = {"/bin/sh", "-c", "true", NULL};
  if (rc == 0) rc = posix_spawn(&c->pid, "/bin/sh", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    errno = rc;
    return -1;
  }
  c->out = fds[0];
  c->exited = 0;
  return 0;
}

/* Read what is there; close the pipe at its end. */
static void drain(struct child *c) {
  char buf[4096];
  ssize_t n = read(c->out, buf, sizeof buf);
  if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
    close(c->out);
    c->out = -1;
  }
}

static int finish(struct child *c) {
  while (c->out >= 0) drain(c);
  int status;
  while (waitpid(c->pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return 0;
}

static int once(void) {
  struct child c;
  if (start(&c) != 0) return -1;
  return finish(&c);
}

/* `total` spawns with `in_flight` running at once, each drained and reaped as it ends. */
static int in_flight_run(int total, int in_flight) {
  struct child kids[MAX_IN_FLIGHT];
  struct pollfd pfds[MAX_IN_FLIGHT];
  int started = 0, done = 0, running = 0;
  while (done < total) {
    while (running < in_flight && started < total) {
      if (start(&kids[running]) != 0) return -1;
      running++;
      started++;
    }
    for (int i = 0; i < running; i++) pfds[i] = (struct pollfd){.fd = kids[i].out, .events = POLLIN};
    if (poll(pfds, (nfds_t)running, -1) < 0 && errno != EINTR) return -1;
    for (int i = 0; i < running;) {
      if (pfds[i].revents != 0) drain(&kids[i]);
      if (kids[i].out < 0) {
        if (finish(&kids[i]) != 0) return -1;
        kids[i] = kids[running - 1];
        pfds[i] = pfds[running - 1];
        running--;
        done++;
      } else {
        i++;
      }
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  int sequential = argc > 1 ? atoi(argv[1]) : 100;
  int total = argc > 2 ? atoi(argv[2]) : 200;
  int in_flight = argc > 3 ? atoi(argv[3]) : 8;
  int warmup = argc > 4 ? atoi(argv[4]) : 20;
  if (sequential < 1 || total < 1 || in_flight < 1 || in_flight > MAX_IN_FLIGHT || warmup < 0) {
    fprintf(stderr, "usage: spawn-floor SEQUENTIAL TOTAL IN_FLIGHT(1..%d) WARMUP\n", MAX_IN_FLIGHT);
    return 2;
  }
  for (int i = 0; i < warmup; i++)
    if (once() != 0) return perror("spawn"), 1;
  double *times = calloc((size_t)sequential, sizeof *times);
  if (!times) return 1;
  for (int i = 0; i < sequential; i++) {
    double t = now_ms();
    if (once() != 0) return perror("spawn"), 1;
    times[i] = now_ms() - t;
  }
  double busy0 = 0, total0 = 0, busy1 = 0, total1 = 0;
  int cpu = machine_cpu(&busy0, &total0);
  double t = now_ms();
  if (in_flight_run(total, in_flight) != 0) return perror("spawn"), 1;
  double seconds = (now_ms() - t) / 1000.0;
  if (cpu == 0) cpu = machine_cpu(&busy1, &total1);
  printf("{\"times\":[");
  for (int i = 0; i < sequential; i++) printf("%s%.4f", i ? "," : "", times[i]);
  /* A run shorter than one clock tick of /proc/stat sees no ticks at all: no share to give. */
  if (cpu == 0 && total1 > total0)
    printf("],\"rate\":%.3f,\"cpuMs\":%.4f,\"busy\":%.4f}\n", total / seconds, (busy1 - busy0) / total,
           (busy1 - busy0) / (total1 - total0));
  else
    printf("],\"rate\":%.3f,\"cpuMs\":null,\"busy\":null}\n", total / seconds);
  free(times);
  return 0;
}
