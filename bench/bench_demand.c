/* Connections by demand: a square-wave trace replayed through tidepool's
 * adapter with the knobs (limits.demand, limits.preconnect) on and off, in
 * one run, over real TCP to an echo server in a child process on
 * 127.0.0.1. Run it pinned (client and server on one CPU), as the other
 * benches:
 *
 *   taskset -c 1 ./build/bench/bench_demand [--waves N] [--after S]
 *
 * The trace: callers in a closed loop (acquire, write a line, read its
 * echo, release, again), 100 of them for 2 s and 10 for 2 s by turns,
 * --waves times (10), then 10 for --after seconds (30). Per variant it
 * prints, against the goals of issue 27:
 *   new connections per 1,000 requests over the square wave (goal <= 0.2);
 *   the share of acquires served without waiting for a connect, from the
 *     second burst on (goal >= 99%);
 *   live connections --after seconds after the bursts stop, against what
 *     the quiet load needs (its 10 loans at once; goal <= 2x);
 *   the request latency's p99 over the trace (acquire to echo), and its
 *     ratio to the knobs-off run's (goal <= 0.8);
 *   the p50 of the requests started in bursts and in quiet spells apart,
 *     and the bursts' share of the requests: the two modes are 4-5x apart
 *     (100 callers queue for one CPU, 10 hardly do) and each holds about
 *     half the requests, so the p50 over the whole trace is one mode or
 *     the other as that share falls either side of a half, and says
 *     little about a variant on its own (p45 and p55 show the cliff).
 * Figures, not assertions: the tests assert the behaviour. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tidepool/tls.h>

#include "harness.h"

#define CALLERS  100
#define QUIET    10
#define SPELL_MS 2000
#define LAT_MAX  (1 << 23)

/* ---- the echo server, in a child process ---- */

static void echo_read(struct bufferevent *bev, void *arg)
{
    (void)arg;
    bufferevent_write_buffer(bev, bufferevent_get_input(bev));
}

static void echo_event(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    (void)arg;
    bufferevent_free(bev);
}

static void echo_accept(struct evconnlistener *l, evutil_socket_t fd,
                        struct sockaddr *sa, int len, void *arg)
{
    (void)sa;
    (void)len;
    (void)arg;
    struct bufferevent *bev = bufferevent_socket_new(evconnlistener_get_base(l),
                                                     fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(bev, echo_read, NULL, echo_event, NULL);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

/* Listens on 127.0.0.1 (a port the kernel picks), forks a child that
 * serves it, and returns the port; the child's pid in *pid. */
static int echo_fork(pid_t *pid)
{
    struct event_base *base = event_base_new();
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct evconnlistener *l = evconnlistener_new_bind(
        base, echo_accept, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
        4096, (struct sockaddr *)&sin, sizeof sin);
    if (!l) {
        perror("bench_demand: listen on 127.0.0.1");
        exit(1);
    }
    struct sockaddr_in bound;
    socklen_t n = sizeof bound;
    getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&bound, &n);
    *pid = fork();
    if (*pid == 0) {
        event_reinit(base);
        event_base_dispatch(base);
        _exit(0);
    }
    evconnlistener_free(l);
    event_base_free(base);
    return ntohs(bound.sin_port);
}

/* ---- the callers ---- */

struct run;

struct caller {
    struct run *run;
    struct bufferevent *bev;
    int64_t started; /* this request's acquire */
    bool in_burst;   /* this request started in a burst */
    bool active;
    bool busy;
};

struct run {
    struct event_base *base;
    struct tide_tcp_factory *factory;
    struct tide_evpool *pool;
    struct caller callers[CALLERS];
    int64_t *lat;    /* ns, one a request */
    bool *lat_burst; /* whether that request started in a burst */
    size_t n_lat;
    bool bursting; /* the spell now is a burst */
    long failed;
};

static void go(struct caller *c);

static void on_echo(struct bufferevent *bev, void *arg)
{
    struct caller *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF).pos < 0)
        return;
    evbuffer_drain(in, evbuffer_get_length(in));
    struct run *r = c->run;
    if (r->n_lat < LAT_MAX) {
        r->lat_burst[r->n_lat] = c->in_burst;
        r->lat[r->n_lat++] = bench_mono_ns() - c->started;
    }
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    c->bev = NULL;
    c->busy = false;
    tide_evpool_release(r->pool, bev);
    if (c->active)
        go(c);
}

static void on_broken(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    struct caller *c = arg;
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    c->bev = NULL;
    c->busy = false;
    c->run->failed++;
    tide_evpool_discard(c->run->pool, bev);
}

static void on_acquired(struct tide_evpool *pool, int status, void *resource,
                        const struct tide_why *why, void *arg)
{
    (void)pool;
    (void)why;
    struct caller *c = arg;
    if (status != 0) {
        c->busy = false;
        c->run->failed++;
        return;
    }
    c->bev = resource;
    bufferevent_setcb(c->bev, on_echo, NULL, on_broken, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    bufferevent_write(c->bev, "ping\n", 5);
}

static void go(struct caller *c)
{
    c->busy = true;
    c->started = bench_mono_ns();
    c->in_burst = c->run->bursting;
    if (tide_evpool_acquire(c->run->pool, TIDE_SEC(5), on_acquired, c, NULL))
        c->busy = false;
}

static void set_active(struct run *r, int n)
{
    for (int i = 0; i < CALLERS; i++) {
        struct caller *c = &r->callers[i];
        c->active = i < n;
        if (c->active && !c->busy)
            go(c);
    }
}

static void run_ms(struct run *r, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(r->base, &tv);
    event_base_dispatch(r->base);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

struct figures {
    uint64_t requests;
    uint64_t made;
    double per_1000;
    double served_ready; /* from the second burst on */
    int64_t live_after;
    uint64_t preconnects;
    uint64_t retired;
    int64_t p99;
    int64_t p50;
    int64_t p45, p55;   /* the trace's, either side of its p50 */
    int64_t p50_burst;  /* of the requests started in bursts */
    int64_t p50_quiet;  /* of those started in the quiet spells */
    double burst_share; /* of the square wave's requests */
};

/* The median of the first n latencies whose burst flag is `burst`. */
static int64_t median_of(const struct run *r, size_t n, bool burst,
                         size_t *count)
{
    int64_t *v = malloc(sizeof *v * (n + 1));
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (r->lat_burst[i] == burst)
            v[k++] = r->lat[i];
    qsort(v, k, sizeof *v, cmp_i64);
    int64_t m = k ? v[k / 2] : 0;
    free(v);
    *count = k;
    return m;
}

static struct figures replay(int port, struct tide_limits limits, int waves,
                             int after_s)
{
    struct run r = {0};
    r.base = event_base_new();
    r.lat = malloc(sizeof *r.lat * LAT_MAX);
    r.lat_burst = malloc(sizeof *r.lat_burst * LAT_MAX);
    struct tide_tcp_options to = {.host = "127.0.0.1", .port = port};
    if (!r.lat || !r.lat_burst ||
        tide_tcp_factory_new(r.base, &to, &r.factory) != 0) {
        fprintf(stderr, "bench_demand: setup failed\n");
        exit(1);
    }
    struct tide_factory f;
    tide_tcp_factory_bind(r.factory, &f);
    struct tide_evpool_options o = {
        .limits = limits, .queue_max = 4096, .seed = 1};
    if (tide_evpool_new(r.base, &f, &o, &r.pool) != 0) {
        fprintf(stderr, "bench_demand: pool refused its options\n");
        exit(1);
    }
    for (int i = 0; i < CALLERS; i++)
        r.callers[i].run = &r;
    struct tide_evpool_stats first = {0}, end_wave;
    for (int w = 0; w < waves; w++) {
        r.bursting = true;
        set_active(&r, CALLERS);
        run_ms(&r, SPELL_MS);
        r.bursting = false;
        set_active(&r, QUIET);
        run_ms(&r, SPELL_MS);
        if (w == 0)
            tide_evpool_stats(r.pool, &first);
    }
    tide_evpool_stats(r.pool, &end_wave);
    size_t wave_requests = r.n_lat;
    run_ms(&r, after_s * 1000);
    struct tide_evpool_stats s;
    tide_evpool_stats(r.pool, &s);
    struct figures out = {
        .requests = wave_requests,
        .made = end_wave.made,
        .per_1000 = 1000.0 * (double)end_wave.made / (double)wave_requests,
        .served_ready =
            1.0 - (double)(end_wave.connect_waits - first.connect_waits) /
                      (double)(end_wave.acquires - first.acquires),
        .live_after = s.live,
        .preconnects = s.preconnects,
        .retired = s.demand_retired,
    };
    size_t n_burst, n_quiet;
    out.p50_burst = median_of(&r, wave_requests, true, &n_burst);
    out.p50_quiet = median_of(&r, wave_requests, false, &n_quiet);
    out.burst_share = (double)n_burst / (double)(n_burst + n_quiet);
    qsort(r.lat, wave_requests, sizeof *r.lat, cmp_i64);
    out.p99 = r.lat[wave_requests * 99 / 100];
    out.p50 = r.lat[wave_requests / 2];
    out.p45 = r.lat[wave_requests * 45 / 100];
    out.p55 = r.lat[wave_requests * 55 / 100];
    set_active(&r, 0);
    run_ms(&r, 200);
    tide_evpool_free(r.pool);
    tide_tcp_factory_free(r.factory);
    event_base_free(r.base);
    free(r.lat);
    free(r.lat_burst);
    if (r.failed)
        fprintf(stderr, "bench_demand: %ld requests failed\n", r.failed);
    return out;
}

static void print(const char *name, const struct figures *f,
                  const struct figures *off)
{
    printf("%-22s %9llu %6llu %8.3f %9.3f%% %6lld %6.1fx %8.1f %8.1f %6.2f "
           "%5llu %5llu %8.1f %8.1f %6.3f %8.1f %8.1f\n",
           name, (unsigned long long)f->requests, (unsigned long long)f->made,
           f->per_1000, 100.0 * f->served_ready, (long long)f->live_after,
           (double)f->live_after / QUIET, (double)f->p50 / 1e3,
           (double)f->p99 / 1e3, (double)f->p99 / (double)off->p99,
           (unsigned long long)f->preconnects, (unsigned long long)f->retired,
           (double)f->p50_burst / 1e3, (double)f->p50_quiet / 1e3,
           f->burst_share, (double)f->p45 / 1e3, (double)f->p55 / 1e3);
}

int main(int argc, char **argv)
{
    int waves = 10;
    int after = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--waves"))
            waves = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--after"))
            after = atoi(argv[i + 1]);
    }
    if (waves < 2 || after < 0) {
        fprintf(stderr, "usage: %s [--waves N>=2] [--after S]\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    pid_t server;
    int port = echo_fork(&server);
    printf("square wave: %d and %d callers by turns, %d ms each, %d waves; "
           "then %d callers for %d s; echo on 127.0.0.1:%d\n",
           CALLERS, QUIET, SPELL_MS, waves, QUIET, after, port);
    struct tide_limits off_limits = TIDE_LIMITS(.size = 256);
    struct tide_limits on_limits =
        TIDE_LIMITS(.size = 256, .demand = TIDE_SEC(5), .preconnect = 0.9);
    struct figures off = replay(port, off_limits, waves, after);
    struct figures on = replay(port, on_limits, waves, after);
    printf("%-22s %9s %6s %8s %10s %6s %7s %8s %8s %6s %5s %5s %8s %8s "
           "%6s %8s %8s\n",
           "variant", "requests", "made", "new/1k", "ready", "live", "xquiet",
           "p50us", "p99us", "p99/off", "ahead", "shrunk", "p50burst",
           "p50quiet", "bursts", "p45us", "p55us");
    print("tidepool knobs off", &off, &off);
    print("tidepool demand+pre", &on, &off);
    printf("goals: new/1k <= 0.2; ready >= 99%% from the second burst; "
           "live %d s after <= 2x quiet (%d); p99/off <= 0.8\n",
           after, 2 * QUIET);
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
    return 0;
}
