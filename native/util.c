/* Memory, time and small sets for the native process launcher. */
#include "launcher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (q == NULL) {
    fputs("relay-launcher: out of memory\n", stderr);
    _exit(70);
  }
  return q;
}

double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

int ints_has(const ints *s, int x) {
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i] == x) return 1;
  return 0;
}

void ints_push(ints *s, int x) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 8;
    s->v = xrealloc(s->v, s->cap * sizeof *s->v);
  }
  s->v[s->n++] = x;
}

void ints_add(ints *s, int x) {
  if (!ints_has(s, x)) ints_push(s, x);
}

/* Nothing to add is a no-op: an empty buffer's v is NULL, and memcpy with a NULL pointer is undefined
   behaviour even for 0 bytes (the compiler may assume both pointers valid). */
void bytes_put(bytes *b, const void *p, size_t n) {
  if (n == 0) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n) cap *= 2;
    b->v = xrealloc(b->v, cap);
    b->cap = cap;
  }
  memcpy(b->v + b->n, p, n);
  b->n += n;
}
