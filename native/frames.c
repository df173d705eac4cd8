/*
 * The frames between the server and the launcher: a 32-bit little-endian length, then the payload,
 * whose first byte is its kind (src/exec/native-link.ts is the other side). Everything read here
 * comes from another process and is checked before it is used: a short or inconsistent request is
 * refused, never read past.
 */
#include "launcher.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---------- replies ---------- */

void put_u8(bytes *b, uint8_t v) { bytes_put(b, &v, 1); }
void put_u32(bytes *b, uint32_t v) {
  unsigned char p[4] = {v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, (v >> 24) & 0xff};
  bytes_put(b, p, 4);
}
void put_u64(bytes *b, uint64_t v) {
  put_u32(b, (uint32_t)(v & 0xffffffffu));
  put_u32(b, (uint32_t)(v >> 32));
}
void put_f64(bytes *b, double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  put_u64(b, u);
}

/* The parts go out as they are (writev), so a done frame's kept output is never copied again. */
void send_frame(const bytes *const *parts, size_t nparts) {
  struct iovec iov[8];
  size_t total = 0, n = 0;
  bytes head = {0};
  for (size_t i = 0; i < nparts; i++) total += parts[i]->n;
  put_u32(&head, (uint32_t)total);
  iov[n++] = (struct iovec){head.v, head.n};
  for (size_t i = 0; i < nparts && n < 8; i++)
    if (parts[i]->n > 0) iov[n++] = (struct iovec){parts[i]->v, parts[i]->n};
  struct iovec *at = iov;
  while (n > 0) {
    ssize_t w = writev(1, at, (int)n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      stop_all();
      _exit(0);
    }
    size_t done = (size_t)w;
    while (n > 0 && done >= at->iov_len) {
      done -= at->iov_len;
      at++;
      n--;
    }
    if (n > 0) {
      at->iov_base = (char *)at->iov_base + done;
      at->iov_len -= done;
    }
  }
  free(head.v);
}

void send_payload(const bytes *payload) {
  const bytes *parts[] = {payload};
  send_frame(parts, 1);
}

/* ---------- requests ---------- */

uint32_t get_u32(reader *r) {
  if (r->n - r->off < 4) {
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
uint8_t get_u8(reader *r) {
  if (r->n - r->off < 1) {
    r->bad = 1;
    return 0;
  }
  return r->p[r->off++];
}
/* A length-prefixed string, copied and NUL-terminated. */
static char *get_str(reader *r) {
  uint32_t len = get_u32(r);
  if (r->bad || r->n - r->off < len) {
    r->bad = 1;
    return NULL;
  }
  char *s = xrealloc(NULL, (size_t)len + 1);
  memcpy(s, r->p + r->off, len);
  s[len] = 0;
  r->off += len;
  return s;
}

/* count strings, each at least its 4-byte length: more than the frame can hold is refused before
   anything is allocated for them. */
static char **get_strs(reader *r, uint32_t *got) {
  uint32_t count = get_u32(r);
  if (r->bad || count > (r->n - r->off) / 4) {
    r->bad = 1;
    return NULL;
  }
  char **v = xrealloc(NULL, ((size_t)count + 1) * sizeof *v);
  for (*got = 0; *got < count && !r->bad; (*got)++) v[*got] = get_str(r);
  v[*got] = NULL;
  return v;
}

/*
 * 'R': id u32, flags u8, then the command's timings as u64 milliseconds (timeout, kill grace, pipe
 * grace, reap wait: the server's, never defaults of ours), the budget u64, file, cwd, argc and argv,
 * envc and env, and a stdin flag u8 with its bytes. Exactly that long, or refused.
 */
int parse_run(reader *r, run_request *rq) {
  memset(rq, 0, sizeof *rq);
  rq->id = get_u32(r);
  rq->flags = get_u8(r);
  rq->timeout_ms = get_u64(r);
  rq->grace_ms = get_u64(r);
  rq->pipe_grace_ms = get_u64(r);
  rq->reap_wait_ms = get_u64(r);
  rq->budget = get_u64(r);
  rq->file = get_str(r);
  rq->cwd = get_str(r);
  if (!r->bad) rq->argv = get_strs(r, &rq->argc);
  if (!r->bad) rq->envp = get_strs(r, &rq->envc);
  rq->has_stdin = r->bad ? 0 : get_u8(r) != 0;
  if (rq->has_stdin && !r->bad) {
    rq->stdin_len = get_u32(r);
    if (!r->bad && r->n - r->off >= rq->stdin_len) {
      rq->stdin_data = xrealloc(NULL, rq->stdin_len);
      if (rq->stdin_len > 0) memcpy(rq->stdin_data, r->p + r->off, rq->stdin_len);
      r->off += rq->stdin_len;
    } else {
      r->bad = 1;
    }
  }
  /* Trailing bytes mean the two sides disagree on the layout: refuse rather than guess. */
  return !r->bad && r->off == r->n && rq->argc >= 1;
}

static void free_strs(char **v, uint32_t n) {
  if (v == NULL) return;
  for (uint32_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

void run_request_free(run_request *rq) {
  free(rq->file);
  free(rq->cwd);
  free_strs(rq->argv, rq->argc);
  free_strs(rq->envp, rq->envc);
  free(rq->stdin_data);
}

int read_requests(bytes *in, void (*handle)(const unsigned char *p, size_t n)) {
  /* One read per wake-up (poll says again if more is there), so frames are handled as they come. */
  if (in->cap - in->n < 65536) {
    in->cap = in->cap ? in->cap * 2 : 65536;
    while (in->cap - in->n < 65536) in->cap *= 2;
    in->v = xrealloc(in->v, in->cap);
  }
  ssize_t r = read(0, in->v + in->n, in->cap - in->n);
  if (r > 0) in->n += (size_t)r;
  /* The server closed our stdin or died (even by SIGKILL, the kernel closes its end). */
  else if (r == 0 || (errno != EINTR && errno != EAGAIN)) return 1;
  size_t off = 0;
  while (in->n - off >= 4) {
    const unsigned char *h = in->v + off;
    uint32_t len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
    if (len > MAX_FRAME) {
      fputs("relay-launcher: oversized request\n", stderr);
      return 2;
    }
    if (in->n - off - 4 < len) break;
    handle(in->v + off + 4, len);
    off += 4 + (size_t)len;
  }
  if (off > 0) {
    memmove(in->v, in->v + off, in->n - off);
    in->n -= off;
  }
  return 0;
}
