/* What /proc says about processes, and signals (as src/proc/stat.ts, tree.ts and signal.ts). */
#include "launcher.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void procs_push(procs *s, proc_info p) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 16;
    s->v = xrealloc(s->v, s->cap * sizeof *s->v);
  }
  s->v[s->n++] = p;
}

/* What /proc/<pid>/stat says, or 0 when it says nothing (gone, unreadable). */
int read_proc(int pid, proc_info *out) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  char *close_paren = strrchr(buf, ')');
  if (close_paren == NULL || close_paren[1] != ' ') return 0;
  char *p = close_paren + 2;
  /* state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime
     cstime priority nice num_threads itrealvalue starttime */
  char state = *p;
  long long f[20];
  int count = 0;
  p++;
  while (*p && count < 20) {
    while (*p == ' ') p++;
    char *end;
    f[count++] = strtoll(p, &end, 10);
    if (end == p) return 0;
    p = end;
  }
  if (count < 20) return 0;
  out->pid = pid;
  out->state = state;
  out->ppid = (int)f[0];
  out->pgid = (int)f[1];
  out->sid = (int)f[2];
  out->start = (unsigned long long)f[18];
  return 1;
}

int same_process(int pid, unsigned long long start) {
  proc_info info;
  return read_proc(pid, &info) && info.start == start;
}

static void parse_pids(const char *text, ints *into) {
  const char *p = text;
  while (*p) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p) {
      p++;
      continue;
    }
    if (v > 0) ints_push(into, (int)v);
    p = end;
  }
}

/* Appends the children listed in one children file; 0 when the file cannot be read. */
int read_children(const char *path, ints *into) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t cap = 4096, len = 0;
  char *buf = xrealloc(NULL, cap);
  for (;;) {
    if (len + 1 >= cap) buf = xrealloc(buf, cap *= 2);
    ssize_t n = read(fd, buf + len, cap - len - 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  close(fd);
  buf[len] = 0;
  parse_pids(buf, into);
  free(buf);
  return 1;
}

/* Children of every thread of pid. */
static void all_children(int pid, ints *into) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", pid);
  DIR *dir = opendir(path);
  if (dir == NULL) return;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char file[320];
    snprintf(file, sizeof file, "/proc/%d/task/%s/children", pid, e->d_name);
    read_children(file, into);
  }
  closedir(dir);
}

/* The children of self (single-threaded: its main thread's), by its children file or else a walk. */
void own_children(int self, ints *into) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", self, self);
  if (!read_children(path, into)) children_by_scan(self, into);
}

/* Children of pid by a walk of all of /proc: the fallback without children files. */
void children_by_scan(int pid, ints *into) {
  DIR *dir = opendir("/proc");
  if (dir == NULL) return;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    proc_info info;
    if (read_proc(atoi(e->d_name), &info) && info.ppid == pid) ints_push(into, info.pid);
  }
  closedir(dir);
}

/* roots and everything below them, parents before children, at most WALK_LIMIT. */
void descendants(const proc_info *roots, size_t nroots, procs *out) {
  ints seen = {0};
  for (size_t i = 0; i < nroots; i++) {
    procs_push(out, roots[i]);
    ints_push(&seen, roots[i].pid);
  }
  size_t first = out->n - nroots;
  for (size_t i = first; i < out->n && out->n - first < WALK_LIMIT; i++) {
    int parent = out->v[i].pid;
    ints kids = {0};
    all_children(parent, &kids);
    for (size_t k = 0; k < kids.n; k++) {
      if (ints_has(&seen, kids.v[k])) continue;
      ints_push(&seen, kids.v[k]);
      proc_info info;
      if (read_proc(kids.v[k], &info) && info.ppid == parent) procs_push(out, info);
    }
    free(kids.v);
  }
  free(seen.v);
}

void signal_pid(int pid, int sig) {
  if (pid > 1) kill(pid, sig);
}

void signal_group(int pgid, int sig) {
  if (pgid > 1) kill(-pgid, sig);
}
