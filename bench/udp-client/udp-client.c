/*
 * The load generator of `npm run bench:udp`: one client process of the id_server protocol, as
 * id_server's own client behaves, written in C so that the clients are not the limit of what
 * they measure. bench/udp/c-client.ts builds it with the system gcc and starts several.
 *
 * usage: udp-client PORT RULE REQUESTS INDEX WORKLOAD COLLECT
 *   WORKLOAD idserver: a new socket per request (socket, sendto, recvfrom, close), action
 *            create, salt u<i % 1000>, app name app<INDEX>
 *            reuse: one socket for all requests, action get, app name bench
 *   COLLECT  1: print each reply's data (the ID), one a line
 * Requests go one at a time to 127.0.0.1:PORT; a reply that does not come within 2 s, or whose
 * code is not 0 or whose seq is not the request's, is a failure. The last line printed is
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

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: udp-client PORT RULE REQUESTS INDEX idserver|reuse COLLECT\n");
    return 2;
  }
  int port = atoi(argv[1]);
  const char *rule = argv[2];
  long n = atol(argv[3]);
  int index = atoi(argv[4]);
  int per_request = strcmp(argv[5], "idserver") == 0;
  int collect = strcmp(argv[6], "1") == 0;

  struct sockaddr_in to;
  memset(&to, 0, sizeof to);
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

  start_alarm();
  int shared = per_request ? -1 : open_socket();
  char app[32];
  if (per_request) snprintf(app, sizeof app, "app%d", index);
  else snprintf(app, sizeof app, "bench");

  char msg[512], reply[65536], seq[48], id[128];
  long fail = 0;
  double min = 1e9, max = 0, sum = 0;
  double started = now();
  for (long i = 0; i < n; i++) {
    int len = per_request
                  ? snprintf(msg, sizeof msg, "{\"action\":\"create\",\"rule_name\":\"%s\",\"app_name\":\"%s\",\"salt\":\"u%ld\",\"seq\":\"%ld\"}", rule, app,
                             i % 1000, i)
                  : snprintf(msg, sizeof msg, "{\"action\":\"get\",\"rule_name\":\"%s\",\"app_name\":\"%s\",\"seq\":\"%ld\"}", rule, app, i);
    snprintf(seq, sizeof seq, "\"seq\":\"%ld\"", i);
    double t0 = now();
    int fd = per_request ? open_socket() : shared;
    ssize_t got = -1;
    if (sendto(fd, msg, len, 0, (struct sockaddr *)&to, sizeof to) == len) got = receive(fd, reply, sizeof reply - 1, t0);
    if (per_request) close(fd);
    double s = now() - t0;
    if (s < min) min = s;
    if (s > max) max = s;
    sum += s;
    if (got < 0) {
      fail++;
      continue;
    }
    reply[got] = 0;
    if (!check(reply, seq, id, sizeof id)) fail++;
    else if (collect) puts(id);
  }
  double seconds = now() - started;
  if (shared >= 0) close(shared);
  printf("# %ld %ld %.9f %.9f %.9f %.6f\n", n, fail, min, max, n > 0 ? sum / n : 0, seconds);
  return 0;
}
