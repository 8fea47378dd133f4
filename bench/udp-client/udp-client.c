/*
 * The load generator of `npm run bench:udp`: one client process of the id_server protocol, as
 * id_server's own client behaves, written in C so that the clients are not the limit of what
 * they measure. bench/udp/c-client.ts builds it with the system gcc and starts several.
 *
 * usage: udp-client PORT RULE REQUESTS INDEX WORKLOAD COLLECT [IN_FLIGHT]
 *   WORKLOAD  idserver: a new socket per request (socket, sendto, recvfrom, close), action
 *             create, salt u<i % 1000>, app name app<INDEX> (app<INDEX>-<slot> with IN_FLIGHT)
 *             reuse: one socket for all requests, action get, app name bench
 *   COLLECT   1: print each reply's app name and data (the ID), one reply a line
 *   IN_FLIGHT requests outstanding at once (default 1, id_server's client), idserver only: the
 *             process is IN_FLIGHT id_server clients in one, each slot with its own app name
 *             (its own counter, so concurrent requests never share one) and one request at a
 *             time, each on a socket of its own; replies are awaited in the order sent, so the
 *             process is woken once for several replies instead of once per reply
 * Requests go to 127.0.0.1:PORT; a reply that does not come within 2 s of its request, or
 * whose code is not 0 or whose seq is not the request's, is a failure. The last line printed is
 *   # total fail min_s max_s avg_s seconds
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int open_socket(void) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) {
    perror("socket");
    exit(2);
  }
  return fd;
}

static void on_alarm(int sig) { (void)sig; }

/*
 * A reply that does not come is given up on after 2 s without a receive timeout on every new
 * socket (one system call less per request): a timer interrupts a waiting recvfrom every
 * 250 ms (no SA_RESTART), which waits again until the request is 2 s old.
 */
static void start_alarm(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 250000}, {0, 250000}};
  setitimer(ITIMER_REAL, &it, NULL);
}

static ssize_t receive(int fd, char *buf, size_t size, double sent) {
  for (;;) {
    ssize_t got = recvfrom(fd, buf, size, 0, NULL, NULL);
    if (got >= 0 || errno != EINTR || now() - sent >= 2.0) return got;
  }
}

/* The reply is a success to request `seq`: code 0 and the seq echoed. Writes the ID to id. */
static int check(const char *reply, const char *seq, char *id, size_t idsize) {
  if (!strstr(reply, "\"code\":0,") && !strstr(reply, "\"code\":0}")) return 0;
  if (!strstr(reply, seq)) return 0;
  const char *d = strstr(reply, "\"data\":\"");
  if (!d) return 0;
  d += 8;
  const char *e = strchr(d, '"');
  if (!e || (size_t)(e - d) >= idsize) return 0;
  memcpy(id, d, e - d);
  id[e - d] = 0;
  return 1;
}

/* One request outstanding: its app name, socket, seq, when it was sent and whether it went out. */
struct slot {
  char app[40];
  int fd;
  long seq;
  double sent;
  int went;
};

struct totals {
  long fail;
  double min, max, sum;
};

struct target {
  struct sockaddr_in to;
  const char *rule;
  int per_request;
};

/* Sends request i on a socket of its own (idserver) or the shared one; went is 0 when it was not sent. */
static void send_request(const struct target *t, struct slot *s, long i, int shared) {
  char msg[512];
  int len = t->per_request
                ? snprintf(msg, sizeof msg, "{\"action\":\"create\",\"rule_name\":\"%s\",\"app_name\":\"%s\",\"salt\":\"u%ld\",\"seq\":\"%ld\"}",
                           t->rule, s->app, i % 1000, i)
                : snprintf(msg, sizeof msg, "{\"action\":\"get\",\"rule_name\":\"%s\",\"app_name\":\"%s\",\"seq\":\"%ld\"}", t->rule, s->app, i);
  s->seq = i;
  s->sent = now();
  s->fd = t->per_request ? open_socket() : shared;
  s->went = sendto(s->fd, msg, len, 0, (const struct sockaddr *)&t->to, sizeof t->to) == len;
}

/*
 * Awaits the reply to the request in slot s, checks it and counts it. Each slot's request has a
 * socket of its own in the idserver workload; reuse shares one socket, so it runs one at a time.
 */
static void await_reply(const struct target *t, struct slot *s, int collect, struct totals *tot) {
  char reply[65536], seq[48], id[128];
  ssize_t got = s->went ? receive(s->fd, reply, sizeof reply - 1, s->sent) : -1;
  if (t->per_request) close(s->fd);
  s->fd = -1;
  double took = now() - s->sent;
  if (took < tot->min) tot->min = took;
  if (took > tot->max) tot->max = took;
  tot->sum += took;
  if (got < 0) {
    tot->fail++;
    return;
  }
  reply[got] = 0;
  snprintf(seq, sizeof seq, "\"seq\":\"%ld\"", s->seq);
  if (!check(reply, seq, id, sizeof id)) tot->fail++;
  else if (collect) printf("%s %s\n", s->app, id);
}

int main(int argc, char **argv) {
  if (argc != 7 && argc != 8) {
    fprintf(stderr, "usage: udp-client PORT RULE REQUESTS INDEX idserver|reuse COLLECT [IN_FLIGHT]\n");
    return 2;
  }
  struct target t;
  memset(&t, 0, sizeof t);
  t.to.sin_family = AF_INET;
  t.to.sin_port = htons(atoi(argv[1]));
  t.to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  t.rule = argv[2];
  long n = atol(argv[3]);
  int index = atoi(argv[4]);
  t.per_request = strcmp(argv[5], "idserver") == 0;
  int collect = strcmp(argv[6], "1") == 0;
  int in_flight = argc == 8 ? atoi(argv[7]) : 1;
  if (in_flight < 1 || in_flight > 256 || (!t.per_request && in_flight != 1)) {
    fprintf(stderr, "IN_FLIGHT is 1 to 256, and 1 for the reuse workload\n");
    return 2;
  }
  struct slot slots[256];
  for (int k = 0; k < in_flight; k++) {
    if (!t.per_request) snprintf(slots[k].app, sizeof slots[k].app, "bench");
    else if (in_flight == 1) snprintf(slots[k].app, sizeof slots[k].app, "app%d", index);
    else snprintf(slots[k].app, sizeof slots[k].app, "app%d-%d", index, k);
  }

  start_alarm();
  int shared = t.per_request ? -1 : open_socket();
  struct totals tot = {0, 1e9, 0, 0};
  double started = now();
  /* Request i goes into slot i % in_flight once the reply to the request before it there came. */
  for (long i = 0; i < n + in_flight; i++) {
    struct slot *s = &slots[i % in_flight];
    if (i >= in_flight) await_reply(&t, s, collect, &tot);
    if (i < n) send_request(&t, s, i, shared);
  }
  double ended = now();
  if (shared >= 0) close(shared);
  /* ended: when the last reply came, on the monotonic clock (the bench's windows end before it). */
  printf("# %ld %ld %.9f %.9f %.9f %.6f %.9f\n", n, tot.fail, tot.min, tot.max, n > 0 ? tot.sum / n : 0,
         ended - started, ended);
  return 0;
}
