/* Callers that retry against a backend that kills every connection before
 * it can be used, with every pool option at its preset (no ward, no
 * minimum): a server that accepts and closes at once (Redis at maxclients)
 * and one that speaks first (an SMTP greeting, bytes nobody asked for).
 * Two callers each acquire, try one exchange on what they are lent, and
 * acquire again 20 ms after each error, for five seconds. Each connection
 * fails before it serves, so each make is a failed make: the pool holds
 * makes for its preset backoff (100 ms doubling to 1 s, jittered) and lets
 * one make (a probe) through at a time while they fail, so the server sees
 * a few dozen connects at most, not hundreds; and every caller refused
 * meanwhile is told why (the failure) and when to come back. Against a
 * healthy server, whose connections each serve one exchange and are
 * retired (a server that closes after its answer), no make is held: each
 * acquire is answered as soon as its connect is done. And a fresh
 * connection with the greeting already in it is never lent. */
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>

#include "fixture.h"
#include "loop.h"

#define STORM_MS     5000
#define RETRY_MS     20
#define MAX_CONNECTS 25 /* in STORM_MS, with two callers */
#define CALLERS      2
#define EXCHANGE_MS  500
#define PING         "ping\r\n"
#define HEALTHY_MS   5 /* a healthy caller's pause between exchanges */
#define GREETING     "220 ready\r\n"

struct retry_run;

struct caller {
    struct retry_run *run;
    struct event *again;     /* the next acquire */
    struct bufferevent *bev; /* lent, in its exchange */
    int64_t asked;           /* ms: when the pending acquire was made */
    int acquires;
    int answers;
    int lent;
    int served;       /* exchanges that came back whole */
    int refused;      /* acquires answered with an error */
    int without_why;  /* ... that did not say why or when to retry */
    int timeouts;     /* ... that were its own deadline */
    int greeted;      /* loans that began with bytes nobody asked for */
    int64_t wait_max; /* ms */
    char last[320];
};

struct retry_run {
    struct test_server s;
    struct tide_tcp_factory *f;
    struct tide_evpool *pool;
    struct caller callers[CALLERS];
    bool healthy; /* exchanges succeed: retire and acquire again at once */
    bool stopping;
};

/* Whether bytes nobody asked for are there as bev is lent: in its input
 * buffer or still in the socket. */
static bool bytes_waiting(struct bufferevent *bev)
{
    char byte;
    return evbuffer_get_length(bufferevent_get_input(bev)) > 0 ||
           recv(bufferevent_getfd(bev), &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

static void call_again(struct caller *c, int ms)
{
    if (c->run->stopping)
        return;
    struct timeval tv = {0, ms * 1000};
    event_add(c->again, &tv);
}

/* The exchange ended: a connection that served is retired (the healthy
 * server's answer is its last), one that did not is discarded. */
static void exchange_done(struct caller *c, bool ok)
{
    struct bufferevent *bev = c->bev;
    c->bev = NULL;
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    if (ok) {
        c->served++;
        ck_assert_int_eq(tide_evpool_retire(c->run->pool, bev), 0);
        call_again(c, HEALTHY_MS);
    } else {
        ck_assert_int_eq(tide_evpool_discard(c->run->pool, bev), 0);
        call_again(c, RETRY_MS);
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct caller *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n = evbuffer_get_length(in);
    if (n < strlen(PING))
        return;
    char got[sizeof PING];
    evbuffer_copyout(in, got, strlen(PING));
    bool ok = n == strlen(PING) && memcmp(got, PING, strlen(PING)) == 0;
    evbuffer_drain(in, n);
    exchange_done(c, ok);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what; /* EOF, reset or the exchange's timeout */
    exchange_done(arg, false);
}

static void on_answer(struct tide_evpool *pool, int status, void *resource,
                      const struct tide_why *why, void *arg)
{
    (void)pool;
    struct caller *c = arg;
    c->answers++;
    int64_t waited = tide_test_now_ms() - c->asked;
    if (waited > c->wait_max)
        c->wait_max = waited;
    if (status != 0) {
        c->refused++;
        snprintf(c->last, sizeof c->last, "%s (guard %d, retry in %lld ms): %s",
                 tide_err_name(status), why->guard,
                 (long long)(why->retry_after / TIDE_MS(1)), why->message);
        /* the cause: a make's own code, or a refusal naming the failed
         * make it holds makes for; and when to come back. A timeout is
         * the caller's own deadline, run out while it waited for a probe
         * (a make let through while makes fail): it names the failure it
         * waited on, and no time to retry when no hold runs (the probe's
         * outcome decides) */
        bool cause =
            (status != TIDE_EUNAVAILABLE && status != TIDE_ETIMEDOUT) ||
            why->make_error != 0;
        bool when = why->retry_after > 0 || status == TIDE_ETIMEDOUT;
        if (!cause || !when || !why->message[0])
            c->without_why++;
        if (status == TIDE_ETIMEDOUT)
            c->timeouts++;
        call_again(c, RETRY_MS);
        return;
    }
    c->lent++;
    c->bev = resource;
    if (bytes_waiting(c->bev))
        c->greeted++;
    struct timeval tv = {0, EXCHANGE_MS * 1000};
    bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
    bufferevent_set_timeouts(c->bev, &tv, &tv);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    bufferevent_write(c->bev, PING, strlen(PING));
}

static void on_again(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct caller *c = arg;
    c->acquires++;
    c->asked = tide_test_now_ms();
    ck_assert_int_eq(
        tide_evpool_acquire(c->run->pool, TIDE_SEC(1), on_answer, c, NULL), 0);
}

/* Every pool option at its preset (the seed fixed, for a run that can be
 * repeated). */
static void run_start(struct retry_run *r)
{
    struct tide_tcp_options o = {.host = "127.0.0.1", .port = r->s.port};
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &r->f), 0);
    struct tide_factory table;
    tide_tcp_factory_bind(r->f, &table);
    struct tide_evpool_options po = {.seed = 1};
    ck_assert_int_eq(tide_evpool_new(fx->base, &table, &po, &r->pool), 0);
    for (int k = 0; k < CALLERS; k++) {
        struct caller *c = &r->callers[k];
        c->run = r;
        c->again = event_new(fx->base, -1, 0, on_again, c);
        call_again(c, 0);
    }
}

static bool all_settled(void *arg)
{
    struct retry_run *r = arg;
    for (int k = 0; k < CALLERS; k++) {
        const struct caller *c = &r->callers[k];
        if (c->answers < c->acquires || c->bev)
            return false;
    }
    return true;
}

static void run_stop(struct retry_run *r)
{
    r->stopping = true;
    for (int k = 0; k < CALLERS; k++)
        event_del(r->callers[k].again);
    /* the acquires out are answered within their 1 s timeout, and the
     * exchanges end within theirs */
    ck_assert(run_until(all_settled, r, 3000));
    for (int k = 0; k < CALLERS; k++) {
        const struct caller *c = &r->callers[k];
        ck_assert_int_eq(c->answers, c->acquires);
        event_free(c->again);
    }
    tide_evpool_free(r->pool);
    struct tide_net_stats ns;
    tide_tcp_factory_stats(r->f, &ns);
    ck_assert_int_eq(ns.live, 0);
    ck_assert_int_eq(ns.pending, 0);
    tide_tcp_factory_free(r->f);
    server_stop(&r->s);
}

/* Runs the storm; returns the connects the server saw in STORM_MS. */
static int storm(struct retry_run *r, const char *name)
{
    run_start(r);
    run_ms(STORM_MS);
    int connects = r->s.accepted;
    struct tide_evpool_stats ps;
    tide_evpool_stats(r->pool, &ps);
    int acquires = 0, lent = 0, served = 0, refused = 0, greeted = 0,
        timeouts = 0;
    for (int k = 0; k < CALLERS; k++) {
        acquires += r->callers[k].acquires;
        lent += r->callers[k].lent;
        served += r->callers[k].served;
        refused += r->callers[k].refused;
        greeted += r->callers[k].greeted;
        timeouts += r->callers[k].timeouts;
    }
    fprintf(stderr,
            "%s: %d connects in %d ms; %d acquires, %d lent, %d served, %d "
            "refused (%d timed out), %d lent greeted; pool: made %llu, failed "
            "%llu, held %llu\n",
            name, connects, STORM_MS, acquires, lent, served, refused, timeouts,
            greeted, (unsigned long long)ps.made,
            (unsigned long long)ps.make_failures, (unsigned long long)ps.held);
    for (int k = 0; k < CALLERS; k++)
        if (r->callers[k].last[0])
            fprintf(stderr, "  caller %d, last refusal: %s\n", k,
                    r->callers[k].last);
    return connects;
}

static void failing_storm(struct retry_run *r, const char *name)
{
    int connects = storm(r, name);
    ck_assert_msg(connects <= MAX_CONNECTS, "%d connects in %d ms", connects,
                  STORM_MS);
    for (int k = 0; k < CALLERS; k++) {
        const struct caller *c = &r->callers[k];
        ck_assert_int_eq(c->served, 0);
        ck_assert_msg(c->refused > 0, "caller %d never refused", k);
        ck_assert_msg(c->without_why == 0,
                      "caller %d: %d refusals without a cause or a retry time",
                      k, c->without_why);
        /* a fresh connection is checked before its first loan */
        ck_assert_int_eq(c->greeted, 0);
    }
    run_stop(r);
}

START_TEST(closing_server_is_not_stormed_by_retrying_callers)
{
    struct retry_run r;
    memset(&r, 0, sizeof r);
    ck_assert(server_start(&r.s, fx->base, AF_INET, 0, NULL));
    r.s.close_at_once = true;
    failing_storm(&r, "close at once");
}
END_TEST

START_TEST(greeting_server_is_not_stormed_by_retrying_callers)
{
    struct retry_run r;
    memset(&r, 0, sizeof r);
    ck_assert(server_start(&r.s, fx->base, AF_INET, 0, NULL));
    r.s.greeting = GREETING;
    failing_storm(&r, "greets first");
}
END_TEST

/* Each connection serves one exchange and is retired, so every acquire
 * needs a make: none is held, and none waits on another caller's. */
START_TEST(healthy_server_makes_are_never_held)
{
    struct retry_run r;
    memset(&r, 0, sizeof r);
    r.healthy = true;
    ck_assert(server_start(&r.s, fx->base, AF_INET, 0, NULL));
    run_start(&r);
    run_ms(1000);
    int connects = r.s.accepted;
    struct tide_evpool_stats ps;
    tide_evpool_stats(r.pool, &ps);
    int64_t wait_max = 0;
    for (int k = 0; k < CALLERS; k++) {
        const struct caller *c = &r.callers[k];
        fprintf(stderr,
                "healthy: caller %d: %d acquires, %d served, %d refused, "
                "longest wait %lld ms\n",
                k, c->acquires, c->served, c->refused, (long long)c->wait_max);
        ck_assert_int_eq(c->refused, 0);
        ck_assert_int_gt(c->served, 50);
        if (c->wait_max > wait_max)
            wait_max = c->wait_max;
    }
    fprintf(stderr, "healthy: %d connects in 1000 ms; held %llu\n", connects,
            (unsigned long long)ps.held);
    ck_assert_uint_eq(ps.held, 0);
    ck_assert_uint_eq(ps.make_failures, 0);
    /* a loopback connect takes well under a millisecond: a make held for
     * a backoff (100 ms at least) or behind another would show */
    ck_assert_msg(wait_max < 50, "an acquire waited %lld ms",
                  (long long)wait_max);
    run_stop(&r);
}
END_TEST

/* ---- a fresh connection is checked before its first loan ---- */

struct slow_setup {
    struct tide_net_setup *token;
    struct event *done;
};

static void on_setup_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct slow_setup *ss = arg;
    tide_net_setup_done(ss->token);
}

/* A setup that reads nothing and takes 50 ms: the server's greeting is in
 * the socket, unread, when the connection is handed to the pool. */
static void slow(struct tide_net_setup *setup, struct bufferevent *bev,
                 void *arg)
{
    struct slow_setup *ss = arg;
    bufferevent_disable(bev, EV_READ);
    ss->token = setup;
    struct timeval tv = {0, 50000};
    event_add(ss->done, &tv);
}

struct first_answer {
    int answers;
    int status;
    int64_t retry_after;
    bool greeted;
};

static void on_first(struct tide_evpool *pool, int status, void *resource,
                     const struct tide_why *why, void *arg)
{
    struct first_answer *a = arg;
    a->answers++;
    a->status = status;
    a->retry_after = why->retry_after;
    if (status == 0) {
        a->greeted = bytes_waiting(resource);
        ck_assert_int_eq(tide_evpool_discard(pool, resource), 0);
    }
}

static bool first_answered(void *arg)
{
    return ((struct first_answer *)arg)->answers > 0;
}

START_TEST(fresh_connection_with_a_greeting_is_never_lent)
{
    struct test_server s;
    memset(&s, 0, sizeof s);
    ck_assert(server_start(&s, fx->base, AF_INET, 0, NULL));
    s.greeting = GREETING;
    struct slow_setup ss = {0};
    ss.done = evtimer_new(fx->base, on_setup_timer, &ss);
    struct tide_tcp_options o = {
        .host = "127.0.0.1", .port = s.port, .setup = slow, .setup_arg = &ss};
    struct tide_tcp_factory *f;
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), 0);
    struct tide_factory table;
    tide_tcp_factory_bind(f, &table);
    struct tide_evpool *pool;
    struct tide_evpool_options po = {.seed = 1};
    ck_assert_int_eq(tide_evpool_new(fx->base, &table, &po, &pool), 0);
    struct first_answer a = {0};
    ck_assert_int_eq(tide_evpool_acquire(pool, TIDE_SEC(2), on_first, &a, NULL),
                     0);
    ck_assert(run_until(first_answered, &a, 2000));
    ck_assert_int_eq(s.accepted, 1);
    ck_assert_msg(!a.greeted, "lent with the greeting waiting in it");
    /* a failed make, answered with its cause and the hold's time */
    ck_assert_int_eq(a.status, TIDE_EUNPROVEN);
    ck_assert_int_gt(a.retry_after, 0);
    struct tide_evpool_stats ps;
    tide_evpool_stats(pool, &ps);
    ck_assert_uint_eq(ps.make_failures, 1);
    ck_assert_int_eq(ps.live, 0);
    tide_evpool_free(pool);
    tide_tcp_factory_free(f);
    event_free(ss.done);
    server_stop(&s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("retry_storm");
    TCase *tc = tcase_create("retry_storm");
    fixture_add(tc);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, closing_server_is_not_stormed_by_retrying_callers);
    tcase_add_test(tc, greeting_server_is_not_stormed_by_retrying_callers);
    tcase_add_test(tc, healthy_server_makes_are_never_held);
    tcase_add_test(tc, fresh_connection_with_a_greeting_is_never_lent);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
