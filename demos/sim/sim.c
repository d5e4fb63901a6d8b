/* The simulator: a synthetic client drives a real pool over real loopback
 * TCP connections to an echo server it starts itself, and prints one row a
 * second, named as the API names it. The traffic has a calm phase, a burst
 * past the pool's size (callers queue, then the queue drains), and a
 * backend outage (connections refused: makes fail, backoff holds them, the
 * breaker opens (INACTIVE), probes (RECOVERING) and recovers (ACTIVE)).
 *
 *   sim [--seconds N] [--seed S] [--square] [--check] [--help]
 *
 * --square runs a square wave instead (36 s by default): bursts of 700
 * requests a second (about 11 connections busy) and calm spells of 60, 3 s
 * each, for the first two thirds, then calm to the end; its pool keeps
 * connections by demand (a window of 6 s) and preconnects at 0.8, so the
 * rows show the bursts served by connections kept from the one before
 * (nothing made, nobody waiting for a connect), the preconnects ahead of
 * callers, and once the bursts stop, the pool stepping down to what the
 * calm needs (retired); --check verifies each of those.
 *
 * --seconds scales the whole run (24 by default, a whole number from 5 to
 * 120: one row a second, so a fraction would print a run it does not make);
 * --check verifies that each phase showed what it should and exits 1
 * otherwise (CI runs it so). A value the simulator cannot use, a missing
 * value or an unknown option is refused by name, exit 2; --help prints the
 * usage on stdout, exit 0. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tidepool/tls.h>

#include "check.h"
#include "number.h"
#include "echo_server.h"
#include "row.h"
#include "tap.h"

#define SERVICE_MS  15
#define POOL_SIZE   8
#define MAX_SECONDS 120

/* requests per second in each phase; the burst needs about 11 connections
 * busy at 15 ms each, more than the pool has */
static const double phase_rate[PHASES] = {60, 700, 60, 60, 60, 60};
/* the phased run's phases (the square wave has its own: AFTER) */
#define RUN_PHASES (RECOVERY + 1)
/* where each phase starts, as a share of the run */
static const double phase_share[RUN_PHASES] = {0, 0.25, 0.42, 0.58, 0.75};
/* The pool's limits, printed in the header by name as the core spells
 * them. */
static const struct tide_limits sim_limits =
    TIDE_LIMITS_INIT(.size = POOL_SIZE, .keep = TIDE_SEC(5));
/* The square wave's: keep left at its 30 minutes, so what retires the
 * burst's connections is demand; room for a burst and its headroom. */
#define SQUARE_SIZE   24
#define SQUARE_SPELL  TIDE_SEC(3)
#define SQUARE_WINDOW TIDE_SEC(6)
static const struct tide_limits square_limits =
    TIDE_LIMITS_INIT(.size = SQUARE_SIZE, .demand = SQUARE_WINDOW,
                     .preconnect = 0.8);

/* Each phase starts this long after a whole second, so the row closed at
 * each whole second (by the first tick past it) covers one phase only. */
#define PHASE_OFFSET TIDE_MS(50)

struct sim {
    struct event_base *base;
    struct echo_server *server;
    struct tide_tcp_factory *client;
    struct tap tap; /* the TCP factory, tapped to see each make start */
    struct tide_evpool *pool;
    struct event *tick; /* every 10 ms: close a second's row, issue requests */
    int64_t started;    /* ns */
    double seconds;
    bool square;                /* the square wave, not the phased run */
    int64_t starts[RUN_PHASES]; /* ns from started */
    enum phase phase;
    double owed; /* requests due but not yet issued */
    /* what the pool did so far; each row is the difference */
    struct tide_evpool_stats last;
    /* failed makes: how many were seen, when the newest was first seen,
     * and whether a make has started since */
    uint64_t failures_seen;
    int64_t failed_at;
    bool failure_pending;
    struct row row; /* the second in progress */
    struct row rows[MAX_SECONDS];
    int n_rows;
    bool closing;
};

struct request {
    struct sim *sim;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- what the pool shows between rows ---- */

/* Notes the breaker's state and any new failed make. Called from every
 * callback the simulator gets (each tick, answer and make start), so the
 * row shows every state the breaker passed through, and a failed make is
 * seen within a tick (10 ms) of it: a pause measured from then is never
 * longer than the one backoff really held. */
static void observe(struct sim *s, struct tide_evpool_stats *st)
{
    tide_evpool_stats(s->pool, st);
    row_see(&s->row, st->breaker);
    if (st->make_failures > s->failures_seen) {
        s->failures_seen = st->make_failures;
        s->failed_at = now_ns();
        s->failure_pending = true;
    }
}

/* A make starts (the tap tells). One started while RECOVERING is the
 * breaker's probe; the first one after a failed make while ACTIVE shows how
 * long backoff held makes: a failure first seen only now was not held at
 * all. */
static void on_make_started(struct tide_evpool *pool, void *arg)
{
    (void)pool;
    struct sim *s = arg;
    struct tide_evpool_stats st;
    observe(s, &st);
    if (st.breaker == TIDE_BREAKER_RECOVERING)
        s->row.probes++;
    else if (st.breaker == TIDE_BREAKER_ACTIVE && s->failure_pending)
        row_held(&s->row, now_ns() - s->failed_at);
    s->failure_pending = false;
}

/* ---- one request: acquire, write a line, read the echo, release ---- */

static void on_reply(struct bufferevent *bev, void *arg)
{
    struct request *r = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF).pos < 0)
        return; /* not a whole line yet */
    evbuffer_drain(in, evbuffer_get_length(in));
    r->sim->row.served++;
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    tide_evpool_release(r->sim->pool, bev);
    free(r);
}

/* The server closed it mid-request (the outage): broken, not reusable. */
static void on_broken(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    struct request *r = arg;
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    tide_evpool_discard(r->sim->pool, bev);
    free(r);
}

/* A refusal needs no count here: the pool's stats say which it was. */
static void on_acquired(struct tide_evpool *pool, int status, void *resource,
                        const struct tide_why *why, void *arg)
{
    (void)pool;
    (void)why;
    struct request *r = arg;
    struct tide_evpool_stats st;
    observe(r->sim, &st);
    if (status != 0) {
        free(r);
        return;
    }
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
    if (tide_evpool_acquire(s->pool, TIDE_MS(500), on_acquired, r, NULL) != 0)
        free(r); /* the queue is full: stats.queue_full counts it */
}

/* ---- the run ---- */

/* Each phase starts on a whole second, rounded from its share of the run
 * and at least one after the phase before (so a short run still has every
 * phase), then PHASE_OFFSET later. */
static void plan_phases(struct sim *s)
{
    int64_t second = 0;
    for (int i = 1; i < RUN_PHASES; i++) {
        int64_t at = (int64_t)(phase_share[i] * s->seconds + 0.5);
        second = at > second ? at : second + 1;
        s->starts[i] = TIDE_SEC(second) + PHASE_OFFSET;
    }
}

/* The phase in force `t` ns into the run. */
static enum phase phase_at(const struct sim *s, int64_t t)
{
    if (s->square) {
        /* spells of SQUARE_SPELL from PHASE_OFFSET on, calm first; the
         * last third calm (AFTER) */
        int64_t at = t - PHASE_OFFSET;
        if (at < 0)
            return CALM;
        if (at >= TIDE_SEC(1) * (int64_t)(s->seconds * 2 / 3))
            return AFTER;
        return at / SQUARE_SPELL % 2 ? BURST : CALM;
    }
    enum phase p = CALM;
    for (int i = 1; i < RUN_PHASES; i++)
        if (t >= s->starts[i])
            p = (enum phase)i;
    return p;
}

static void enter_phase(struct sim *s, enum phase p)
{
    if (p == OUTAGE)
        echo_server_down(s->server);
    if (p == RECOVERY && !echo_server_up(s->server))
        fprintf(stderr, "sim: the echo server could not come back\n");
    s->phase = p;
}

static void on_closed(struct tide_evpool *pool, void *arg)
{
    (void)pool;
    event_base_loopbreak(arg);
}

/* Closes the second: the stats at its end, and its counters' moves. */
static void close_row(struct sim *s, const struct tide_evpool_stats *st)
{
    struct row *r = &s->row;
    /* named for its middle, safely inside one phase */
    r->phase = phase_at(s, TIDE_SEC(s->n_rows + 1) - TIDE_MS(500));
    r->lent = st->lent;
    r->idle = st->idle;
    r->waiting = st->waiting;
    r->p99 = st->recent_p99;
    r->made = (int64_t)(st->made - s->last.made);
    r->make_failures = (int64_t)(st->make_failures - s->last.make_failures);
    r->timeouts = (int64_t)(st->timeouts - s->last.timeouts);
    r->queue_full = (int64_t)(st->queue_full - s->last.queue_full);
    /* refused at once: shed by the breaker or the shedder, or told that
     * makes are held after a failed make (stats.held) */
    r->shed = (int64_t)(st->shed + st->held - s->last.shed - s->last.held);
    r->demand = s->square;
    r->ahead = (int64_t)(st->preconnects - s->last.preconnects);
    r->retired = (int64_t)(st->demand_retired - s->last.demand_retired);
    r->waited = (int64_t)(st->connect_waits - s->last.connect_waits);
    s->last = *st;
}

/* Prints the second that just ended and starts the next; after the last,
 * closes the pool. */
static void close_second(struct sim *s)
{
    struct tide_evpool_stats st;
    observe(s, &st);
    close_row(s, &st);
    s->rows[s->n_rows++] = s->row;
    row_print(stdout, &s->row, s->n_rows);
    row_start(&s->row, st.breaker);
    if (s->n_rows >= (int)s->seconds) {
        s->closing = true;
        event_del(s->tick);
        tide_evpool_close(s->pool, on_closed, s->base);
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sim *s = arg;
    if (s->closing)
        return;
    /* A second's row closes here, before this tick's requests: an acquire
     * is answered from the loop, on its next pass, so a row taken by a
     * timer of its own just after a tick showed that tick's request as a
     * caller waiting beside idle connections. */
    int64_t t = now_ns() - s->started;
    if (t >= TIDE_SEC(s->n_rows + 1)) {
        close_second(s);
        if (s->closing)
            return;
    }
    struct tide_evpool_stats st;
    observe(s, &st);
    enum phase p = phase_at(s, t);
    if (p != s->phase)
        enter_phase(s, p);
    s->owed += phase_rate[p] / 100.0;
    for (; s->owed >= 1.0; s->owed -= 1.0)
        ask(s);
}

/* The pool's connections: plain TCP to the echo server, by number so no
 * DNS is asked, tapped so the simulator sees each make start.
 *
 * Five failed outcomes in a row open the breaker; after a second it probes
 * with one connect, and a success (the connection's first loan) closes it
 * again. Backoff holds makes between failed ones; the shedder watches the
 * loop's lag. */
static int open_pool(struct sim *s, uint64_t seed)
{
    struct tide_tcp_options tcp = {.host = "127.0.0.1",
                                   .port = echo_server_port(s->server)};
    int rc = tide_tcp_factory_new(s->base, &tcp, &s->client);
    if (rc)
        return rc;
    tide_tcp_factory_bind(s->client, &s->tap.inner);
    s->tap.started = on_make_started;
    s->tap.arg = s;
    struct tide_factory factory;
    tap_bind(&s->tap, &factory);

    struct tide_breaker_options breaker = {
        .policy = TIDE_BREAKER_STRIKES, .strikes = 5, .cooldown = TIDE_SEC(1)};
    struct tide_backoff backoff = {0};
    struct tide_shedder_options shedder = {0};
    struct tide_evpool_options o = {
        .limits = s->square ? square_limits : sim_limits,
        .ward = {.breaker = &breaker, .backoff = &backoff, .shedder = &shedder},
        .min = 2,
        .make_timeout = TIDE_MS(500),
        .queue_max = 256,
        .seed = seed,
    };
    return tide_evpool_new(s->base, &factory, &o, &s->pool);
}

static int run(struct sim *s, uint64_t seed)
{
    s->base = event_base_new();
    s->server = s->base ? echo_server_new(s->base, SERVICE_MS) : NULL;
    if (!s->server) {
        perror("sim: echo server on 127.0.0.1");
        return 1;
    }
    int rc = open_pool(s, seed);
    if (rc) {
        fprintf(stderr, "sim: %s\n", tide_strerror(rc));
        return 1;
    }
    char limits[TIDE_LIMITS_TEXT];
    (void)tide_limits_format(s->square ? &square_limits : &sim_limits, limits,
                             sizeof limits);
    printf("tidepool simulator: a pool (%s) on 127.0.0.1:%u, echo in %d ms, "
           "%.0f s\n",
           limits, echo_server_port(s->server), SERVICE_MS, s->seconds);
    row_print_legend(stdout, s->square);
    plan_phases(s);
    s->started = now_ns();
    row_start(&s->row, TIDE_BREAKER_ACTIVE);
    s->tick = event_new(s->base, -1, EV_PERSIST, on_tick, s);
    struct timeval ten_ms = {0, 10000};
    event_add(s->tick, &ten_ms);
    event_base_dispatch(s->base);
    return 0;
}

static void dispose(struct sim *s)
{
    tide_evpool_free(s->pool);
    if (s->tick)
        event_free(s->tick);
    tide_tcp_factory_free(s->client);
    if (s->server)
        echo_server_free(s->server);
    if (s->base)
        event_base_free(s->base);
}

/* v read whole as --seconds: a whole number within [5, MAX_SECONDS] (strtod
 * took "5x" as 5 and "abc" as 0, and "5.5" printed a run of 6 s that made
 * 5 rows); false, said on stderr, when it is not one. */
static bool read_seconds(const char *v, double *out)
{
    long long x;
    if (!tide_demo_whole_number(v, 5, MAX_SECONDS, &x)) {
        fprintf(stderr,
                "sim: --seconds: '%s' is not a whole number from 5 to %d\n", v,
                MAX_SECONDS);
        return false;
    }
    *out = (double)x;
    return true;
}

/* v read whole as --seed: decimal digits only (strtoull alone takes "abc"
 * as 0, "-1" as the largest seed and clamps an overflow). */
static bool read_seed(const char *v, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long x =
        isdigit((unsigned char)v[0]) ? strtoull(v, &end, 10) : 0;
    if (!end || *end != '\0' || errno == ERANGE) {
        fprintf(stderr,
                "sim: --seed: '%s' is not a whole number from 0 to "
                "%llu\n",
                v, (unsigned long long)UINT64_MAX);
        return false;
    }
    *out = x;
    return true;
}

static void usage(FILE *out, const char *argv0)
{
    fprintf(out,
            "usage: %s [--seconds N] [--seed S] [--square] [--check] "
            "[--help]\n",
            argv0);
}

int main(int argc, char **argv)
{
    double seconds = 0; /* 24, or 36 for --square */
    uint64_t seed = 0;
    bool check = false;
    bool square = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool valued = !strcmp(a, "--seconds") || !strcmp(a, "--seed");
        if (valued && i + 1 >= argc) {
            fprintf(stderr, "sim: %s needs a value\n", a);
            usage(stderr, argv[0]);
            return 2;
        }
        if (!strcmp(a, "--seconds")) {
            if (!read_seconds(argv[++i], &seconds))
                return 2;
        } else if (!strcmp(a, "--seed")) {
            if (!read_seed(argv[++i], &seed))
                return 2;
        } else if (!strcmp(a, "--check")) {
            check = true;
        } else if (!strcmp(a, "--square")) {
            square = true;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout, argv[0]);
            return 0;
        } else {
            fprintf(stderr, "sim: unknown option '%s'\n", a);
            usage(stderr, argv[0]);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    static struct sim s; /* large (a row per second): not on the stack */
    s.seconds = seconds > 0 ? seconds : square ? 36 : 24;
    s.square = square;
    int rc = run(&s, seed);
    bool ok =
        rc == 0 &&
        (!check || (square ? check_square(s.rows, s.n_rows, stdout)
                           : check_run(s.rows, s.n_rows, POOL_SIZE, stdout)));
    dispose(&s);
    return ok ? 0 : 1;
}
