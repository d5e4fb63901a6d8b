/* The simulator: a synthetic client drives a real pool over real loopback
 * TCP connections to an echo server it starts itself, and prints one row a
 * second. The traffic has a calm phase, a burst past the pool's size
 * (callers wait, then the queue drains), and a backend outage (connections
 * refused: backoff holds makes, the breaker sheds, then it recovers).
 *
 *   sim [--seconds N] [--seed S] [--check]
 *
 * --seconds scales the whole run (24 by default); --check verifies that each
 * phase showed what it should and exits 1 otherwise (CI runs it so). */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tidepool/tls.h>

#include "echo_server.h"

#define SERVICE_MS 15
#define POOL_SIZE  8
#define MAX_WAITS  20000

enum phase { CALM, BURST, DRAIN, OUTAGE, RECOVERY, PHASES };

static const char *const phase_names[PHASES] = {"calm", "burst", "drain",
                                                "outage", "recovery"};
/* requests per second in each phase; the burst needs about 11 connections
 * busy at 15 ms each, more than the pool has */
static const double phase_rate[PHASES] = {60, 700, 60, 60, 60};
/* where each phase starts, as a share of the run */
static const double phase_start[PHASES] = {0, 0.25, 0.42, 0.58, 0.75};

struct second {
    int64_t lent, idle, waiting, made, refused, served;
    int64_t p99;
    enum tide_breaker_state breaker;
    enum phase phase;
};

struct sim {
    struct event_base *base;
    struct echo_server *server;
    struct tide_tcp_factory *client;
    struct tide_evpool *pool;
    struct event *tick;   /* every 10 ms: issue requests */
    struct event *report; /* every second: print a row */
    int64_t started;      /* ns */
    double seconds;
    int row;
    enum phase phase;
    double owed; /* requests due but not yet issued */
    /* this second */
    int64_t refused;
    int64_t served;
    int64_t waits[MAX_WAITS];
    int n_waits;
    uint64_t made_before;
    struct second rows[128];
    bool closing;
};

struct request {
    struct sim *sim;
    int64_t asked; /* ns */
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- one request: acquire, write a line, read the echo, release ---- */

static void on_reply(struct bufferevent *bev, void *arg)
{
    struct request *r = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF).pos < 0)
        return; /* not a whole line yet */
    evbuffer_drain(in, evbuffer_get_length(in));
    r->sim->served++;
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    tide_evpool_release(r->sim->pool, bev);
    free(r);
}

static void on_broken(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    struct request *r = arg;
    r->sim->refused++;
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    tide_evpool_discard(r->sim->pool, bev);
    free(r);
}

static void on_acquired(struct tide_evpool *pool, int status, void *resource,
                        const struct tide_why *why, void *arg)
{
    (void)pool;
    (void)why;
    struct request *r = arg;
    struct sim *s = r->sim;
    if (status != 0) {
        s->refused++;
        free(r);
        return;
    }
    if (s->n_waits < MAX_WAITS)
        s->waits[s->n_waits++] = now_ns() - r->asked;
    struct bufferevent *bev = resource;
    bufferevent_setcb(bev, on_reply, NULL, on_broken, r);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    bufferevent_write(bev, "ping\n", 5);
}

static void ask(struct sim *s)
{
    struct request *r = malloc(sizeof *r);
    if (!r)
        return;
    r->sim = s;
    r->asked = now_ns();
    if (tide_evpool_acquire(s->pool, TIDE_MS(500), on_acquired, r, NULL) != 0) {
        s->refused++; /* queue full */
        free(r);
    }
}

/* ---- the run ---- */

static enum phase phase_at(const struct sim *s, double t)
{
    enum phase p = CALM;
    for (int i = 0; i < PHASES; i++)
        if (t >= phase_start[i] * s->seconds)
            p = (enum phase)i;
    return p;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sim *s = arg;
    if (s->closing)
        return;
    double t = (double)(now_ns() - s->started) / 1e9;
    enum phase p = phase_at(s, t);
    if (p != s->phase) {
        if (p == OUTAGE)
            echo_server_down(s->server);
        if (p == RECOVERY && !echo_server_up(s->server))
            fprintf(stderr, "sim: the echo server could not come back\n");
        s->phase = p;
    }
    s->owed += phase_rate[p] / 100.0;
    for (; s->owed >= 1.0; s->owed -= 1.0)
        ask(s);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static const char *breaker_name(enum tide_breaker_state b)
{
    return b == TIDE_BREAKER_ACTIVE     ? "active"
           : b == TIDE_BREAKER_INACTIVE ? "open"
                                        : "probing";
}

static void on_closed(struct tide_evpool *pool, void *arg)
{
    (void)pool;
    event_base_loopbreak(arg);
}

static void on_report(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sim *s = arg;
    struct tide_evpool_stats st;
    tide_evpool_stats(s->pool, &st);
    qsort(s->waits, (size_t)s->n_waits, sizeof s->waits[0], cmp_i64);
    int64_t p99 = s->n_waits ? s->waits[(s->n_waits * 99) / 100] : 0;
    struct second *row = &s->rows[s->row < 128 ? s->row : 127];
    *row = (struct second){.lent = st.lent,
                           .idle = st.idle,
                           .waiting = st.waiting,
                           .made = (int64_t)(st.made - s->made_before),
                           .refused = s->refused,
                           .served = s->served,
                           .p99 = p99,
                           .breaker = st.breaker,
                           .phase = s->phase};
    printf("%4d  %-8s  %4lld  %4lld  %4lld  %5lld  %7lld  %6lld  %8.1f  %s\n",
           s->row + 1, phase_names[s->phase], (long long)row->lent,
           (long long)row->idle, (long long)row->waiting, (long long)row->made,
           (long long)row->refused, (long long)row->served, (double)p99 / 1e6,
           breaker_name(st.breaker));
    fflush(stdout);
    s->made_before = st.made;
    s->refused = s->served = 0;
    s->n_waits = 0;
    if (++s->row >= (int)s->seconds) {
        s->closing = true;
        event_del(s->tick);
        event_del(s->report);
        tide_evpool_close(s->pool, on_closed, s->base);
    }
}

/* ---- --check: did each phase show what it should? ---- */

static bool check_rows(const struct sim *s)
{
    bool calm_served = false, burst_waited = false, outage_refused = false,
         recovered = false;
    for (int i = 0; i < s->row && i < 128; i++) {
        const struct second *r = &s->rows[i];
        calm_served |= r->phase == CALM && r->served > 0;
        burst_waited |= r->phase == BURST && r->waiting > 0;
        outage_refused |= r->phase == OUTAGE && r->refused > 0;
        recovered |= r->phase == RECOVERY && r->served > 0 &&
                     r->breaker == TIDE_BREAKER_ACTIVE;
    }
    printf("check: calm served %s, burst queued %s, outage refused %s, "
           "recovered %s\n",
           calm_served ? "yes" : "NO", burst_waited ? "yes" : "NO",
           outage_refused ? "yes" : "NO", recovered ? "yes" : "NO");
    return calm_served && burst_waited && outage_refused && recovered;
}

int main(int argc, char **argv)
{
    double seconds = 24;
    uint64_t seed = 0;
    bool check = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--check"))
            check = true;
        else {
            fprintf(stderr, "usage: %s [--seconds N] [--seed S] [--check]\n",
                    argv[0]);
            return 2;
        }
    }
    if (seconds < 5 || seconds > 120) {
        fprintf(stderr, "sim: --seconds must be within [5, 120]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    static struct sim s;
    s.seconds = seconds;
    s.base = event_base_new();
    s.server = echo_server_new(s.base, SERVICE_MS);
    if (!s.base || !s.server) {
        perror("sim: echo server on 127.0.0.1");
        return 1;
    }
    /* The pool's connections: plain TCP to the echo server, by number so
     * no DNS is asked; idle ones are watched for the server closing them. */
    struct tide_tcp_options tcp = {.host = "127.0.0.1",
                                   .port = echo_server_port(s.server)};
    int rc = tide_tcp_factory_new(s.base, &tcp, &s.client);
    if (rc) {
        fprintf(stderr, "sim: %s\n", tide_strerror(rc));
        return 1;
    }

    /* Five failed connects in a row open the breaker; after a second it
     * probes with one connect, and a success closes it again. Backoff holds
     * makes between failures; the shedder watches the loop's lag. */
    struct tide_breaker_options breaker = {
        .policy = TIDE_BREAKER_STRIKES, .strikes = 5, .cooldown = TIDE_SEC(1)};
    struct tide_backoff backoff = {0};
    struct tide_shedder_options shedder = {0};
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = POOL_SIZE, .keep = TIDE_SEC(5)),
        .ward = {.breaker = &breaker, .backoff = &backoff, .shedder = &shedder},
        .min = 2,
        .make_timeout = TIDE_MS(500),
        .queue_max = 256,
        .seed = seed,
    };
    struct tide_factory factory;
    tide_tcp_factory_bind(s.client, &factory);
    rc = tide_evpool_new(s.base, &factory, &o, &s.pool);
    if (rc) {
        fprintf(stderr, "sim: %s\n", tide_strerror(rc));
        return 1;
    }
    printf("tidepool simulator: pool of %d on 127.0.0.1:%u, echo in %d ms, "
           "%.0f s\n",
           POOL_SIZE, echo_server_port(s.server), SERVICE_MS, seconds);
    printf("   t  phase     lent  idle  wait   made  refused  served  "
           "p99(ms)  breaker\n");
    s.started = now_ns();
    s.tick = event_new(s.base, -1, EV_PERSIST, on_tick, &s);
    s.report = event_new(s.base, -1, EV_PERSIST, on_report, &s);
    struct timeval ten_ms = {0, 10000}, one_s = {1, 0};
    event_add(s.tick, &ten_ms);
    event_add(s.report, &one_s);
    event_base_dispatch(s.base);

    bool ok = !check || check_rows(&s);
    tide_evpool_free(s.pool);
    event_free(s.tick);
    event_free(s.report);
    tide_tcp_factory_free(s.client);
    echo_server_free(s.server);
    event_base_free(s.base);
    return ok ? 0 : 1;
}
