/*
 * A fixed-rate load generator that does not hide coordinated omission, as wrk2 schedules its
 * requests: request k is due at start + k / RATE whatever happened before it, goes out on
 * connection k % CONNS as soon as that connection has no request outstanding, and its latency
 * is measured from the time it was due, not from the time it was sent. A server that stalls
 * for 50 ms therefore shows the 50 ms in every request that fell due meanwhile.
 * bench/single-beside-bulk.ts builds it with the system gcc and runs it.
 *
 * usage: fixed-rate http|udp PORT TARGET RATE SECONDS CONNS WARMUP_S
 *   http  TARGET is a path: GET TARGET over CONNS keep-alive connections to 127.0.0.1:PORT;
 *         a reply is a success when its status is 200
 *   udp   TARGET is a rule or tag name: {"action":"get","rule_name":TARGET,"app_name":"bench",
 *         "seq":"k"} over CONNS sockets; a success has code 0 and the request's seq
 * Requests due in the first WARMUP_S seconds are sent but not counted. A reply that does not
 * come within 2 s is a failure (its connection is then reopened). Prints one line:
 *   # sent ok fail p50_ms p90_ms p99_ms p999_ms max_ms wake_p99_ms
 * wake is how late the generator itself woke for a request, past the time it fell due (the
 * scheduler of the generator's own CPU, not the server): a request's latency counts it too, so
 * a case where it grows measures the generator's CPU as much as the server.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_S 2.0
/* The epoll tag of the timer that wakes the loop when the next request falls due. */
#define TIMER UINT64_MAX

typedef struct {
  int fd;
  long outstanding; /* the request in flight, -1 for none */
  double sent_at;
  long *due; /* requests due on this connection, not yet sent (FIFO) */
  long head, tail, cap;
  char buf[65536];
  size_t have;
} conn_t;

static int http_mode;
static struct sockaddr_in addr;
static const char *target;
static double rate, start;
static double warmup;
static double *latency;
static long counted, ok, fail;
/* How late the loop woke for each counted request, past its due time. */
static double *woke;
static long woken;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int open_conn(int ep, long index) {
  int fd = socket(AF_INET, (http_mode ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    perror("socket");
    exit(2);
  }
  if (http_mode) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) {
    perror("connect");
    exit(2);
  }
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)index};
  epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  return fd;
}

static void push(conn_t *c, long k) {
  if (c->tail == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 1024;
    c->due = realloc(c->due, c->cap * sizeof(long));
  }
  c->due[c->tail++] = k;
}

static void send_next(conn_t *c) {
  if (c->outstanding >= 0 || c->head == c->tail) return;
  long k = c->due[c->head++];
  char msg[512];
  int len = http_mode ? snprintf(msg, sizeof msg, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", target)
                      : snprintf(msg, sizeof msg, "{\"action\":\"get\",\"rule_name\":\"%s\",\"app_name\":\"bench\",\"seq\":\"%ld\"}", target, k);
  c->outstanding = k;
  c->sent_at = now();
  c->have = 0;
  /* A short write on a fresh loopback socket does not happen for a request this small. */
  if (send(c->fd, msg, len, MSG_NOSIGNAL) != len) c->sent_at = -TIMEOUT_S * 2;
}

static void done(conn_t *c, int success) {
  long k = c->outstanding;
  double due = start + k / rate;
  if (due >= start + warmup) {
    if (success) {
      latency[counted++] = now() - due;
      ok++;
    } else
      fail++;
  }
  c->outstanding = -1;
  send_next(c);
}

/* An HTTP response is complete: its headers and Content-Length bytes of body are in. */
static int http_complete(conn_t *c, int *status) {
  c->buf[c->have] = 0;
  char *end = strstr(c->buf, "\r\n\r\n");
  if (!end) return 0;
  char *cl = strcasestr(c->buf, "content-length:");
  long body = cl && cl < end ? atol(cl + 15) : 0;
  if ((size_t)(end + 4 - c->buf) + body > c->have) return 0;
  *status = atoi(c->buf + 9);
  return 1;
}

static void on_readable(conn_t *c) {
  for (;;) {
    ssize_t n = recv(c->fd, c->buf + c->have, sizeof c->buf - 1 - c->have, 0);
    if (n <= 0) return;
    if (c->outstanding < 0) continue; /* a late UDP reply to a request given up on */
    if (!http_mode) {
      c->buf[n] = 0;
      char seq[48];
      snprintf(seq, sizeof seq, "\"seq\":\"%ld\"", c->outstanding);
      done(c, (strstr(c->buf, "\"code\":0,") || strstr(c->buf, "\"code\":0}")) && strstr(c->buf, seq));
      continue;
    }
    c->have += n;
    int status;
    if (http_complete(c, &status)) done(c, status == 200);
  }
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The p-th quantile of n sorted values, ms. */
static double quantile(const double *sorted, long n, double p) {
  if (n == 0) return 0;
  long i = (long)(p * n);
  if (i >= n) i = n - 1;
  return sorted[i] * 1000;
}

static double pct(double p) { return quantile(latency, counted, p); }

int main(int argc, char **argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: fixed-rate http|udp PORT TARGET RATE SECONDS CONNS WARMUP_S\n");
    return 2;
  }
  http_mode = strcmp(argv[1], "http") == 0;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons(atoi(argv[2]));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  target = argv[3];
  rate = atof(argv[4]);
  double seconds = atof(argv[5]);
  int conns = atoi(argv[6]);
  warmup = atof(argv[7]);
  long total = (long)(rate * seconds);
  latency = malloc(sizeof(double) * (total + 1));
  woke = malloc(sizeof(double) * (total + 1));
  int ep = epoll_create1(0);
  conn_t *cs = calloc(conns, sizeof(conn_t));
  for (int i = 0; i < conns; i++) {
    cs[i].fd = open_conn(ep, i);
    cs[i].outstanding = -1;
  }
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  struct epoll_event tev = {.events = EPOLLIN, .data.u64 = TIMER};
  epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &tev);
  start = now() + 0.05; /* connections settle first */
  long next = 0;
  struct epoll_event evs[64];
  for (;;) {
    double t = now();
    while (next < total && start + next / rate <= t) {
      if (next / rate >= warmup) woke[woken++] = t - (start + next / rate);
      push(&cs[next % conns], next);
      next++;
    }
    int busy = 0;
    for (int i = 0; i < conns; i++) {
      conn_t *c = &cs[i];
      if (c->outstanding >= 0 && t - c->sent_at > TIMEOUT_S) {
        /* Given up: a new connection, so a late reply cannot be taken for the next one's. */
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = open_conn(ep, i);
        done(c, 0);
      }
      send_next(c);
      if (c->outstanding >= 0 || c->head < c->tail) busy = 1;
    }
    if (next >= total && !busy) break;
    if (next < total) {
      double due = start + next / rate;
      struct itimerspec at = {.it_value = {.tv_sec = (time_t)due, .tv_nsec = (long)((due - (time_t)due) * 1e9)}};
      timerfd_settime(tfd, TFD_TIMER_ABSTIME, &at, NULL);
    }
    /* Past the schedule, wake now and then to give up on replies that do not come. */
    int n = epoll_wait(ep, evs, 64, next < total ? 1000 : 10);
    for (int i = 0; i < n; i++) {
      if (evs[i].data.u64 == TIMER) {
        uint64_t fired;
        if (read(tfd, &fired, sizeof fired) < 0) continue;
      } else
        on_readable(&cs[evs[i].data.u64]);
    }
  }
  qsort(latency, counted, sizeof(double), cmp);
  qsort(woke, woken, sizeof(double), cmp);
  printf("# %ld %ld %ld %.3f %.3f %.3f %.3f %.3f %.3f\n", next, ok, fail, pct(0.5), pct(0.9), pct(0.99), pct(0.999),
         counted ? latency[counted - 1] * 1000 : 0, quantile(woke, woken, 0.99));
  return 0;
}
