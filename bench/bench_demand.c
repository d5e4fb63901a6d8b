/* Connections by demand: a square-wave trace replayed through tidepool's
 * adapter with the knobs (limits.demand, limits.preconnect) on and off, in
 * one run, over real TCP to an echo server in a child process on
 * 127.0.0.1. Run it pinned (client and server on one CPU), as the other
 * benches:
 *
 *   taskset -c 1 ./build/bench/bench_demand [--waves N] [--after S]
 *                                           [--idle S] [--repeat N]
 *
 * The trace: callers in a closed loop (acquire, write a line, read its
 * echo, release, again), 100 of them for 2 s and 10 for 2 s by turns,
 * --waves times (10), then 10 for --after seconds (30), then none for
 * --idle seconds (30). --repeat N (1) runs the pair N times, in turns
 * knobs off first and knobs on first, and prints the median of the paired
 * p99 ratios: one run's p99 moves with whatever else the CPU ran. Per
 * variant it prints, against the goals of issue 27:
 *   new connections per 1,000 requests over the square wave (goal <= 0.2),
 *     over the whole trace and from the second burst on (the cold start,
 *     the first wave, apart: every pool opens its first 100 there);
 *   the share of acquires served without waiting for a connect, from the
 *     second burst on (goal >= 99%);
 *   live connections --after seconds into the quiet spell after the
 *     bursts, and --idle seconds after all load stopped (the goal's "idle
 *     30 s after the load stops"), against what the quiet load needs (its
 *     10 loans at once; goal <= 2x);
 *   the request latency's p99 over the trace (acquire to echo), and its
 *     ratio to the knobs-off run's (goal <= 0.8), and from the second
 *     burst on;
 *   where the p99 comes from: the requests at or above it that were in
 *     the first wave (cold start), the first ONSET_MS of a later burst
 *     (its onset) or later, against the acquires that waited for a
 *     connect over the whole trace (at most that many of them can owe
 *     their latency to a connect), and the bursts' mean latency beside
 *     what Little's law gives for 100 callers at the bursts' rate;
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

#define CALLERS    100
#define QUIET      10
#define SPELL_MS   2000
#define LAT_MAX    (1 << 23)
#define ONSET_MS   100
#define REPEAT_MAX 9

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
    int phase;       /* of this request: 2k wave k's burst, 2k+1 its quiet */
    int32_t at;      /* us into its spell it started */
    bool active;
    bool busy;
};

struct run {
    struct event_base *base;
    struct tide_tcp_factory *factory;
    struct tide_evpool *pool;
    struct caller callers[CALLERS];
    int64_t *lat;    /* ns, one a request */
    int *lat_phase;  /* the phase that request started in */
    int32_t *lat_at; /* and us into that spell */
    size_t n_lat;
    int phase;           /* the spell now */
    int64_t spell_start; /* ns, its start */
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
        r->lat_phase[r->n_lat] = c->phase;
        r->lat_at[r->n_lat] = c->at;
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
    c->phase = c->run->phase;
    c->at = (int32_t)((c->started - c->run->spell_start) / 1000);
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

struct figures {
    uint64_t requests;
    uint64_t made;
    double per_1000;
    uint64_t made_cold;  /* in the first wave */
    double per_1000_2;   /* from the second burst on */
    double served_ready; /* from the second burst on */
    uint64_t waits_all;  /* acquires that waited for a connect, all trace */
    int64_t live_after;  /* after_s into the quiet spell after the wave */
    int64_t idle_after;  /* idle_s after all load stopped */
    uint64_t preconnects;
    uint64_t retired;
    int64_t p99;
    int64_t p99_2; /* from the second burst on */
    int64_t p50;
    int64_t p45, p55;   /* the trace's, either side of its p50 */
    int64_t p50_burst;  /* of the requests started in bursts */
    int64_t p50_quiet;  /* of those started in the quiet spells */
    double burst_share; /* of the square wave's requests */
    /* the requests at or above the p99: in the first wave, in a later
     * burst's first ONSET_MS, later in one, in a quiet spell */
    long slow, slow_cold, slow_onset, slow_burst, slow_quiet;
    double mean_burst;  /* us */
    double queue_burst; /* us: 100 callers / the bursts' rate */
};

/* The p-th percentile (0-100) of the first n latencies whose phase is
 * even (bursts, parity 0), odd (1) or any (-1), from phase `from` on. */
static int64_t pct_of(const struct run *r, size_t n, int parity, int from,
                      int p, size_t *count)
{
    return bench_pct_phases(r->lat, r->lat_phase, n, from, parity, p, count);
}

static struct figures replay(int port, struct tide_limits limits, int waves,
                             int after_s, int idle_s)
{
    struct run r = {0};
    r.base = event_base_new();
    r.lat = malloc(sizeof *r.lat * LAT_MAX);
    r.lat_phase = malloc(sizeof *r.lat_phase * LAT_MAX);
    r.lat_at = malloc(sizeof *r.lat_at * LAT_MAX);
    struct tide_tcp_options to = {.host = "127.0.0.1", .port = port};
    if (!r.lat || !r.lat_phase || !r.lat_at ||
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
        for (int b = 0; b < 2; b++) {
            r.phase = 2 * w + b;
            r.spell_start = bench_mono_ns();
            set_active(&r, b ? QUIET : CALLERS);
            run_ms(&r, SPELL_MS);
        }
        if (w == 0)
            tide_evpool_stats(r.pool, &first);
    }
    tide_evpool_stats(r.pool, &end_wave);
    size_t wave_requests = r.n_lat;
    r.phase = 2 * waves;
    run_ms(&r, after_s * 1000);
    struct tide_evpool_stats s;
    tide_evpool_stats(r.pool, &s);
    /* the load stops: the callers' last answers, then idle_s of nothing
     * (200 ms at least, so no answer is out when the pool is freed) */
    set_active(&r, 0);
    run_ms(&r, idle_s * 1000 > 200 ? idle_s * 1000 : 200);
    struct tide_evpool_stats idle;
    tide_evpool_stats(r.pool, &idle);
    size_t n2 = 0;
    for (size_t i = 0; i < wave_requests; i++)
        n2 += r.lat_phase[i] >= 2;
    struct figures out = {
        .requests = wave_requests,
        .made = end_wave.made,
        .per_1000 = 1000.0 * (double)end_wave.made / (double)wave_requests,
        .made_cold = first.made,
        .per_1000_2 = 1000.0 * (double)(end_wave.made - first.made) /
                      (double)(n2 ? n2 : 1),
        .served_ready =
            1.0 - (double)(end_wave.connect_waits - first.connect_waits) /
                      (double)(end_wave.acquires - first.acquires),
        .waits_all = end_wave.connect_waits,
        .live_after = s.live,
        .idle_after = idle.live,
        .preconnects = s.preconnects,
        .retired = idle.demand_retired,
    };
    size_t n_burst, n_quiet;
    size_t n = wave_requests;
    out.p50_burst = pct_of(&r, n, 0, 0, 50, &n_burst);
    out.p50_quiet = pct_of(&r, n, 1, 0, 50, &n_quiet);
    out.burst_share = (double)n_burst / (double)(n_burst + n_quiet);
    out.p99 = pct_of(&r, n, -1, 0, 99, NULL);
    out.p99_2 = pct_of(&r, n, -1, 2, 99, NULL);
    out.p50 = pct_of(&r, n, -1, 0, 50, NULL);
    out.p45 = pct_of(&r, n, -1, 0, 45, NULL);
    out.p55 = pct_of(&r, n, -1, 0, 55, NULL);
    double sum_burst = 0;
    for (size_t i = 0; i < n; i++) {
        int ph = r.lat_phase[i];
        if (ph % 2 == 0)
            sum_burst += (double)r.lat[i] / 1e3;
        if (r.lat[i] < out.p99)
            continue;
        out.slow++;
        if (ph < 2)
            out.slow_cold++;
        else if (ph % 2)
            out.slow_quiet++;
        else if (r.lat_at[i] < ONSET_MS * 1000)
            out.slow_onset++;
        else
            out.slow_burst++;
    }
    double rate = (double)n_burst / (waves * SPELL_MS / 1e3);
    out.mean_burst = n_burst ? sum_burst / (double)n_burst : 0;
    out.queue_burst = rate > 0 ? CALLERS / rate * 1e6 : 0;
    tide_evpool_free(r.pool);
    tide_tcp_factory_free(r.factory);
    event_base_free(r.base);
    free(r.lat);
    free(r.lat_phase);
    free(r.lat_at);
    if (r.failed)
        fprintf(stderr, "bench_demand: %ld requests failed\n", r.failed);
    return out;
}

static void print(const char *name, const struct figures *f,
                  const struct figures *off)
{
    printf("%-12s %9llu %6llu %8.3f %6llu %8.3f %9.3f%% %6lld %6lld %6.1fx "
           "%8.1f %8.1f %8.1f %6.2f %5llu %5llu %8.1f %8.1f %6.3f %8.1f "
           "%8.1f\n",
           name, (unsigned long long)f->requests, (unsigned long long)f->made,
           f->per_1000, (unsigned long long)f->made_cold, f->per_1000_2,
           100.0 * f->served_ready, (long long)f->live_after,
           (long long)f->idle_after, (double)f->idle_after / QUIET,
           (double)f->p50 / 1e3, (double)f->p99 / 1e3, (double)f->p99_2 / 1e3,
           (double)f->p99 / (double)off->p99,
           (unsigned long long)f->preconnects, (unsigned long long)f->retired,
           (double)f->p50_burst / 1e3, (double)f->p50_quiet / 1e3,
           f->burst_share, (double)f->p45 / 1e3, (double)f->p55 / 1e3);
}

static void print_slow(const char *name, const struct figures *f)
{
    printf("%-12s %6ld %6ld %6ld %6ld %6ld %9llu %10.1f %10.1f\n", name,
           f->slow, f->slow_cold, f->slow_onset, f->slow_burst, f->slow_quiet,
           (unsigned long long)f->waits_all, f->mean_burst, f->queue_burst);
}

int main(int argc, char **argv)
{
    int waves = 10;
    int after = 30;
    int idle = 30;
    int repeat = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--waves"))
            waves = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--after"))
            after = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--idle"))
            idle = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeat"))
            repeat = atoi(argv[i + 1]);
    }
    if (waves < 2 || waves > 999 || after < 0 || idle < 0 || repeat < 1 ||
        repeat > REPEAT_MAX) {
        fprintf(stderr,
                "usage: %s [--waves N>=2] [--after S] [--idle S] "
                "[--repeat 1-%d]\n",
                argv[0], REPEAT_MAX);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    pid_t server;
    int port = echo_fork(&server);
    printf("square wave: %d and %d callers by turns, %d ms each, %d waves; "
           "then %d callers for %d s; then none for %d s; %d pair(s), "
           "knobs off first in odd ones; echo on 127.0.0.1:%d\n",
           CALLERS, QUIET, SPELL_MS, waves, QUIET, after, idle, repeat, port);
    struct tide_limits off_limits = TIDE_LIMITS(.size = 256);
    struct tide_limits on_limits =
        TIDE_LIMITS(.size = 256, .demand = TIDE_SEC(5), .preconnect = 0.9);
    struct figures off[REPEAT_MAX], on[REPEAT_MAX];
    for (int k = 0; k < repeat; k++) {
        if (k % 2 == 0) {
            off[k] = replay(port, off_limits, waves, after, idle);
            on[k] = replay(port, on_limits, waves, after, idle);
        } else {
            on[k] = replay(port, on_limits, waves, after, idle);
            off[k] = replay(port, off_limits, waves, after, idle);
        }
    }
    printf("%-12s %9s %6s %8s %6s %8s %10s %6s %6s %7s %8s %8s %8s %6s %5s "
           "%5s %8s %8s %6s %8s %8s\n",
           "variant", "requests", "made", "new/1k", "cold", "/1k 2nd+", "ready",
           "live", "idle", "xquiet", "p50us", "p99us", "p99 2nd+", "p99/off",
           "ahead", "shrunk", "p50burst", "p50quiet", "bursts", "p45us",
           "p55us");
    char name[32];
    for (int k = 0; k < repeat; k++) {
        snprintf(name, sizeof name, "off.%d", k + 1);
        print(name, &off[k], &off[k]);
        snprintf(name, sizeof name, "on.%d", k + 1);
        print(name, &on[k], &off[k]);
    }
    printf("where the p99 comes from: the requests at or above it (slow), in "
           "the first wave (cold), a later burst's first %d ms (onset), later "
           "in a burst, in a quiet spell; acquires that waited for a connect "
           "over the whole trace; the bursts' mean latency (us) and 100 "
           "callers / their rate (Little's law)\n",
           ONSET_MS);
    printf("%-12s %6s %6s %6s %6s %6s %9s %10s %10s\n", "variant", "slow",
           "cold", "onset", "burst", "quiet", "waits", "mean burst",
           "100/rate");
    for (int k = 0; k < repeat; k++) {
        snprintf(name, sizeof name, "off.%d", k + 1);
        print_slow(name, &off[k]);
        snprintf(name, sizeof name, "on.%d", k + 1);
        print_slow(name, &on[k]);
    }
    double ratio[REPEAT_MAX], ratio2[REPEAT_MAX];
    printf("p99 knobs on / off, pair by pair:");
    for (int k = 0; k < repeat; k++) {
        ratio[k] = (double)on[k].p99 / (double)off[k].p99;
        ratio2[k] = (double)on[k].p99_2 / (double)off[k].p99_2;
        printf(" %.2f", ratio[k]);
    }
    printf("; median %.2f; from the second burst on, median %.2f\n",
           bench_median(ratio, (size_t)repeat),
           bench_median(ratio2, (size_t)repeat));
    printf("goals: new/1k <= 0.2 (judged from the second burst on: the cold "
           "start's are every pool's); ready >= 99%% from the second burst; "
           "idle %d s after the load stops <= 2x quiet (%d); p99/off <= 0.8\n",
           idle, 2 * QUIET);
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
    return 0;
}
