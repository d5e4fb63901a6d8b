/* Shared loans benchmark (issue 23's goal): 50 callers, each asking its
 * next request the moment its reply is in, on the pool over the TCP
 * factory against one echo server of the multiplexed echo protocol
 * (tests/chaos/mux.c, compiled in: the same server and protocol layer the
 * chaos phases prove), on loopback:
 *
 *   (a) limits.streams 16, size 16: up to 16 callers a connection;
 *   (b) limits.streams 1, size 4: one caller a connection, 4 at once.
 *
 * Both in one run, each after a warm-up: loans per second (one loan: an
 * acquire, a request, its reply, a release), connections live over the
 * measured span (sampled every 10 ms: the most and the last), and their
 * ratio. Goals: (a) holds at most 4 connections; (a) >= 3x (b).
 *
 * The server is a child process pinned to CPU 0 and the pool to CPU 1
 * (sched_setaffinity, what taskset does), when there are two CPUs:
 *   build/bench/bench_shared [--quick]
 */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <tidepool/evloop.h>
#include <tidepool/tls.h>

#include "harness.h"
#include "mux.h"

#define CALLERS 50

static void die(const char *what)
{
    fprintf(stderr, "bench_shared: %s\n", what);
    exit(1);
}

static bool pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0;
}

/* ---- the server: a child of its own ---- */

static void on_parent_gone(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    event_base_loopbreak(arg);
}

/* Starts the server in a child; returns its port. The child ends when
 * the pipe's write end (held by the parent) closes. */
static uint16_t server_start(pid_t *child, int *keep, bool pinned)
{
    int ports[2], life[2];
    if (pipe(ports) != 0 || pipe(life) != 0)
        die("pipe failed");
    pid_t pid = fork();
    if (pid < 0)
        die("fork failed");
    if (pid == 0) {
        close(ports[0]);
        close(life[1]);
        if (pinned)
            (void)pin(0);
        struct event_base *base = event_base_new();
        struct mux_server *s = mux_server_new(base, NULL, false, 0);
        if (!base || !s)
            _exit(1);
        uint16_t port = mux_server_port(s);
        if (write(ports[1], &port, sizeof port) != sizeof port)
            _exit(1);
        struct event *gone =
            event_new(base, life[0], EV_READ, on_parent_gone, base);
        event_add(gone, NULL);
        event_base_dispatch(base);
        event_free(gone);
        mux_server_free(s);
        event_base_free(base);
        _exit(0);
    }
    close(ports[1]);
    close(life[0]);
    uint16_t port = 0;
    if (read(ports[0], &port, sizeof port) != sizeof port)
        die("the server did not start");
    close(ports[0]);
    *child = pid;
    *keep = life[1];
    return port;
}

/* ---- the callers ---- */

struct run;

struct caller {
    struct run *r;
    int index;
    uint64_t id;
};

struct run {
    struct event_base *base;
    struct tide_evpool *pool;
    struct mux_client *mux;
    struct caller callers[CALLERS];
    bool measuring;
    bool stopping;
    uint64_t loans;   /* replies while measuring */
    uint64_t errors;  /* anything but a good reply */
    int64_t most_live; /* connections, while measuring */
    int64_t last_live;
    int64_t most_loans_one; /* the busiest connection's loans */
    uint64_t next_id;
};

static void caller_go(struct caller *c);

static bool on_reply(int status, const char *frame, void *arg)
{
    struct caller *c = arg;
    struct run *r = c->r;
    char want[17];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)c->id);
    bool good = status == 0 && memcmp(frame + 1, want, 16) == 0;
    if (!good)
        r->errors++;
    else if (r->measuring)
        r->loans++;
    caller_go(c);
    return good;
}

static void on_acquired(struct tide_evpool *pool, int status, void *resource,
                        const struct tide_why *why, void *arg)
{
    (void)pool, (void)why;
    struct caller *c = arg;
    struct run *r = c->r;
    if (status != 0) {
        if (!r->stopping)
            r->errors++;
        return;
    }
    c->id = ++r->next_id;
    char frame[MUX_FRAME];
    int n = snprintf(frame, sizeof frame, "#%016llx:%04x:",
                     (unsigned long long)c->id, (unsigned)c->index);
    memset(frame + n, '.', (size_t)(MUX_FRAME - 1 - n));
    frame[MUX_FRAME - 1] = '\n';
    mux_send(r->mux, resource, c->id, frame, on_reply, c);
}

static void caller_go(struct caller *c)
{
    if (c->r->stopping)
        return;
    if (tide_evpool_acquire(c->r->pool, TIDE_SEC(5), on_acquired, c, NULL))
        c->r->errors++;
}

static void on_sample(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct run *r = arg;
    if (!r->measuring)
        return;
    struct tide_evpool_stats st;
    tide_evpool_stats(r->pool, &st);
    r->last_live = st.live;
    if (st.live > r->most_live)
        r->most_live = st.live;
    if (st.busiest > r->most_loans_one)
        r->most_loans_one = st.busiest;
}

static void on_phase(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct run *r = arg;
    if (!r->measuring) {
        r->measuring = true;
        return;
    }
    r->measuring = false;
    r->stopping = true;
    event_base_loopbreak(r->base);
}

struct figures {
    double loans_per_sec;
    int64_t most_live;
    int64_t last_live;
    int64_t busiest;
    uint64_t errors;
};

static void on_closed(struct tide_evpool *pool, void *arg)
{
    (void)pool;
    event_base_loopbreak(arg);
}

static struct figures run(uint16_t port, int64_t streams, int64_t size,
                          int warm_ms, int measure_ms)
{
    struct run r;
    memset(&r, 0, sizeof r);
    r.base = event_base_new();
    struct evdns_base *dns =
        evdns_base_new(r.base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    struct tide_tcp_options tcp = {
        .host = "127.0.0.1",
        .port = port,
        .dns = dns,
        .connect_timeout = TIDE_SEC(1),
    };
    struct tide_tcp_factory *f = NULL;
    struct tide_factory table;
    if (!r.base || !dns || tide_tcp_factory_new(r.base, &tcp, &f) != 0)
        die("the TCP factory could not be made");
    tide_tcp_factory_bind(f, &table);
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = size, .streams = streams),
        .acquire_timeout = TIDE_SEC(5),
        .seed = 1,
    };
    if (tide_evpool_new(r.base, &table, &o, &r.pool) != 0)
        die("the pool could not be made");
    r.mux = mux_client_new(r.pool, true);
    for (int i = 0; i < CALLERS; i++) {
        r.callers[i] = (struct caller){.r = &r, .index = i};
        caller_go(&r.callers[i]);
    }
    struct event *sample = event_new(r.base, -1, EV_PERSIST, on_sample, &r);
    struct timeval every = {0, 10000};
    event_add(sample, &every);
    struct event *phase = event_new(r.base, -1, EV_PERSIST, on_phase, &r);
    struct timeval warm = {warm_ms / 1000, (warm_ms % 1000) * 1000};
    event_add(phase, &warm);
    event_base_dispatch(r.base); /* the warm-up */
    event_del(phase);
    r.measuring = true;
    struct timeval span = {measure_ms / 1000, (measure_ms % 1000) * 1000};
    event_add(phase, &span);
    int64_t t0 = bench_mono_ns();
    event_base_dispatch(r.base);
    int64_t ns = bench_mono_ns() - t0;
    struct figures out = {
        .loans_per_sec = (double)r.loans * 1e9 / (double)ns,
        .most_live = r.most_live,
        .last_live = r.last_live,
        .busiest = r.most_loans_one,
        .errors = r.errors,
    };
    event_free(phase);
    event_free(sample);
    /* the loans in flight come back as their replies do; then done */
    (void)tide_evpool_close(r.pool, on_closed, r.base);
    event_base_dispatch(r.base);
    tide_evpool_free(r.pool);
    mux_client_free(r.mux);
    tide_tcp_factory_free(f);
    evdns_base_free(dns, 0);
    event_base_free(r.base);
    return out;
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (argc > 1 && !quick) {
        fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    bool pinned = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
    pid_t child;
    int keep;
    uint16_t port = server_start(&child, &keep, pinned);
    if (pinned && !pin(1))
        pinned = false;
    int warm = quick ? 200 : 500, span = quick ? 1000 : 3000;
    int reps = quick ? 1 : 3;
    double a_v[BENCH_REPS_MAX], b_v[BENCH_REPS_MAX];
    struct figures a = {0}, b = {0};
    for (int k = 0; k < reps; k++) { /* interleaved: drift hits both */
        a = run(port, 16, 16, warm, span);
        b = run(port, 1, 4, warm, span);
        a_v[k] = a.loans_per_sec;
        b_v[k] = b.loans_per_sec;
        if (a.errors || b.errors)
            die("a caller got an error: the figures would not be loans");
    }
    double am = bench_median(a_v, (size_t)reps);
    double bm = bench_median(b_v, (size_t)reps);
    close(keep);
    waitpid(child, NULL, 0);
    printf("tidepool shared-loans bench: %d callers, one echo server of "
           "tests/chaos/mux.c over TCP on loopback%s; median of %d\n",
           CALLERS,
           pinned ? ", server on CPU 0, pool on CPU 1" : " (not pinned)",
           reps);
    printf("  %-34s %12s %14s %14s\n", "", "loans/s", "connections", "busiest");
    printf("  %-34s %12.0f %8lld (%lld) %14lld\n",
           "(a) streams 16, size 16", am, (long long)a.most_live,
           (long long)a.last_live, (long long)a.busiest);
    printf("  %-34s %12.0f %8lld (%lld) %14lld\n", "(b) streams 1, size 4", bm,
           (long long)b.most_live, (long long)b.last_live,
           (long long)b.busiest);
    printf("  connections: the most while measuring (the last sample)\n");
    printf("  (a) / (b) loans/s: %.2fx   goal >= 3x: %s\n", am / bm,
           am / bm >= 3 ? "met" : "NOT met");
    printf("  (a) connections at most %lld   goal <= 4: %s\n",
           (long long)a.most_live, a.most_live <= 4 ? "met" : "NOT met");
    return 0;
}
