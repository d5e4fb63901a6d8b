/* What a message's header fields cost demos/proxy: its own CPU time per
 * request (the loop thread's clock, read from the client's thread between
 * batches, so neither the client nor the origin is counted) for responses
 * of 1,000, 2,000 and 4,000 header fields and a Connection header that
 * names one of them (the case that was quadratic: each field was looked
 * up in every Connection header), and for a request at the proxy's count
 * of fields (100: past it a request gets 431). With a cost per field, 4,000
 * fields cost four times 1,000; the ratio of the two is printed, beside
 * the ratio a quadratic cost would give (16), and past 8 the run fails.
 *
 * The proxy is built from its sources as the tests build it (config.c's
 * defaults, one TCP upstream), on a loop in the main thread; the origin
 * (blocking, one connection at a time, a fixed response a path) and the
 * client (one kept connection, requests one after another) are threads.
 *
 *   bench_proxy_headers [--quick]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "harness.h"
#include "proxy.h"

static void die(const char *what)
{
    fprintf(stderr, "bench_proxy_headers: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* ---- messages ---- */

static const int field_counts[] = {1000, 2000, 4000};
#define N_COUNTS       (sizeof field_counts / sizeof field_counts[0])
#define REQUEST_FIELDS 100 /* the proxy's count (FIELDS_MAX) */

/* A head with `n` header fields: a Connection header naming the last,
 * then n - 1 others ("x0000: v"), short so 4,000 fit libhttp-parser's
 * 80 KiB head. */
static char *fields(const char *first_line, int n, const char *tail)
{
    size_t cap = strlen(first_line) + strlen(tail) + 64 + (size_t)n * 16;
    char *s = malloc(cap);
    if (!s)
        die("malloc");
    size_t len =
        (size_t)snprintf(s, cap, "%sConnection: x%04d\r\n", first_line, n - 2);
    for (int i = 0; i < n - 1; i++)
        len += (size_t)snprintf(s + len, cap - len, "x%04d: v\r\n", i);
    snprintf(s + len, cap - len, "%s", tail);
    return s;
}

/* ---- the origin ---- */

struct origin {
    int fd;
    int port;
    char *responses[N_COUNTS]; /* for /N, by index of N in field_counts */
    pthread_t thread;
};

/* Answers each request on the connection: /fN gets responses[N's index]
 * ("ok" by length), any other path a small "ok". */
static void origin_serve(struct origin *o, int fd)
{
    static char buf[256 * 1024];
    size_t have = 0;
    for (;;) {
        char *end;
        while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
            if (have == sizeof buf)
                return;
            ssize_t n = recv(fd, buf + have, sizeof buf - have, 0);
            if (n <= 0)
                return;
            have += (size_t)n;
        }
        const char *reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        for (size_t i = 0; i < N_COUNTS; i++) {
            char path[32];
            int pl = snprintf(path, sizeof path, "GET /f%d ", field_counts[i]);
            if (strncmp(buf, path, (size_t)pl) == 0)
                reply = o->responses[i];
        }
        size_t used = (size_t)(end - buf) + 4;
        memmove(buf, buf + used, have - used);
        have -= used;
        for (size_t off = 0, len = strlen(reply); off < len;) {
            ssize_t n = send(fd, reply + off, len - off, MSG_NOSIGNAL);
            if (n <= 0)
                return;
            off += (size_t)n;
        }
    }
}

static void *origin_main(void *arg)
{
    struct origin *o = arg;
    for (;;) {
        int fd = accept(o->fd, NULL, NULL);
        if (fd < 0)
            return NULL; /* shut down */
        origin_serve(o, fd);
        close(fd);
    }
}

static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(fd, 8) != 0)
        die("the origin cannot listen");
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    *port = ntohs(a.sin_port);
    return fd;
}

/* ---- the client ---- */

struct client_run {
    int port;
    pthread_t loop_thread;
    int reps;
    struct event_base *base;
    atomic_bool done; /* the loop polls it: libevent's base is the loop's */
    double ms[N_COUNTS + 1]; /* per request; the last: the request side */
    bool failed;
};

/* Reads one response whose body is "ok" by length. */
static bool read_response(int fd)
{
    static char buf[256 * 1024];
    size_t have = 0;
    for (;;) {
        char *end = memmem(buf, have, "\r\n\r\n", 4);
        if (end && have - (size_t)(end + 4 - buf) >= 2)
            return strncmp(buf, "HTTP/1.1 200 ", 13) == 0;
        if (have == sizeof buf)
            return false;
        ssize_t n = recv(fd, buf + have, sizeof buf - have, 0);
        if (n <= 0)
            return false;
        have += (size_t)n;
    }
}

static int64_t loop_cpu_ns(const struct client_run *r)
{
    clockid_t id;
    if (pthread_getcpuclockid(r->loop_thread, &id) != 0)
        return 0;
    return bench_clock(id);
}

/* ms of the loop's CPU per request for `reps` of req on fd. */
static double batch(struct client_run *r, int fd, const char *req)
{
    int64_t t0 = loop_cpu_ns(r);
    for (int i = 0; i < r->reps; i++) {
        size_t len = strlen(req);
        if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len ||
            !read_response(fd)) {
            r->failed = true;
            return 0;
        }
    }
    return (double)(loop_cpu_ns(r) - t0) / 1e6 / r->reps;
}

/* Every 50 ms: the loop ends once the client is done. */
static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct client_run *r = arg;
    if (atomic_load(&r->done))
        event_base_loopbreak(r->base);
}

static void *client_main(void *arg)
{
    struct client_run *r = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)r->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        r->failed = true;
    } else {
        char *req = fields("GET /small HTTP/1.1\r\nHost: b\r\n",
                           REQUEST_FIELDS - 1, "\r\n");
        batch(r, fd, "GET /warm HTTP/1.1\r\nHost: b\r\n\r\n"); /* connects */
        /* the median of 5, each batch alternating with the others */
        double runs[N_COUNTS + 1][5];
        for (int k = 0; k < 5 && !r->failed; k++) {
            for (size_t i = 0; i < N_COUNTS; i++) {
                char line[64];
                snprintf(line, sizeof line,
                         "GET /f%d HTTP/1.1\r\nHost: b\r\n\r\n",
                         field_counts[i]);
                runs[i][k] = batch(r, fd, line);
            }
            runs[N_COUNTS][k] = batch(r, fd, req);
        }
        for (size_t i = 0; i <= N_COUNTS && !r->failed; i++)
            r->ms[i] = bench_median(runs[i], 5);
        free(req);
    }
    if (fd >= 0)
        close(fd);
    atomic_store(&r->done, true);
    return NULL;
}

int main(int argc, char **argv)
{
    int reps = 40;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            reps = 4;
        } else {
            fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    struct origin o = {0};
    o.fd = listen_any(&o.port);
    for (size_t i = 0; i < N_COUNTS; i++)
        o.responses[i] = fields("HTTP/1.1 200 OK\r\n", field_counts[i],
                                "Content-Length: 2\r\n\r\nok");
    if (pthread_create(&o.thread, NULL, origin_main, &o) != 0)
        die("pthread_create");

    struct event_base *base = event_base_new();
    char up[32];
    snprintf(up, sizeof up, "127.0.0.1:%d", o.port);
    const char *args[] = {"proxy", "--listen", "127.0.0.1:0", "--upstream", up};
    struct px_config cfg;
    px_config_init(&cfg);
    char err[512];
    struct px_upstreams ups;
    if (px_config_parse(&cfg, 5, (char *const *)args, err, sizeof err) != 0 ||
        px_upstreams_open(&ups, base, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "bench_proxy_headers: %s\n", err);
        return 1;
    }
    struct px_options po;
    px_config_proxy_options(&cfg, &po);
    struct px *proxy;
    if (px_new(base, ups.group, &po, &proxy) != 0)
        die("px_new");

    struct client_run r = {.port = px_port(proxy),
                           .loop_thread = pthread_self(),
                           .base = base,
                           .reps = reps};
    struct event *poll = event_new(base, -1, EV_PERSIST, on_poll, &r);
    struct timeval tv = {.tv_usec = 50000};
    event_add(poll, &tv);
    pthread_t client;
    if (pthread_create(&client, NULL, client_main, &r) != 0)
        die("pthread_create");
    event_base_dispatch(base);
    pthread_join(client, NULL);
    event_free(poll);

    px_free(proxy);
    px_upstreams_dispose(&ups);
    event_base_free(base);
    shutdown(o.fd, SHUT_RDWR);
    pthread_join(o.thread, NULL);
    close(o.fd);
    for (size_t i = 0; i < N_COUNTS; i++)
        free(o.responses[i]);
    if (r.failed) {
        fprintf(stderr, "bench_proxy_headers: a request failed\n");
        return 1;
    }

    printf("demos/proxy, its loop's CPU per request (median of 5 batches of "
           "%d), a Connection header naming a field:\n",
           reps);
    for (size_t i = 0; i < N_COUNTS; i++)
        printf("  response of %5d fields   %8.3f ms\n", field_counts[i],
               r.ms[i]);
    printf("  request of %5d fields    %8.3f ms\n", REQUEST_FIELDS,
           r.ms[N_COUNTS]);
    double ratio = r.ms[N_COUNTS - 1] / r.ms[0];
    printf("  %d / %d fields: %.1fx (linear: 4x, quadratic: 16x)\n",
           field_counts[N_COUNTS - 1], field_counts[0], ratio);
    /* halfway (in log) between the two: a cost that grows faster than
     * the fields fails the benchmark run */
    if (ratio > 8) {
        fprintf(stderr, "bench_proxy_headers: the cost of header fields is "
                        "not linear\n");
        return 1;
    }
    return 0;
}
