/* evloop/demand.c: connections by demand on a real loop, over real TCP
 * connections (the TCP factory) to an echo server on 127.0.0.1 in the test
 * process. Callers loop: acquire, write a line, read its echo, hold the
 * connection a little, release, and go again while they are active. The
 * load is a square wave (10 and 100 callers), a cold ramp (0 to 200 over
 * 2 s), and a long quiet spell after a burst, many windows long; each run
 * compared with the same load through a pool with both knobs off. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tidepool/tls.h>

#include "loop.h"
#include "runner.h"

#define CALLERS_MAX 256
#define HOLD_MS     2 /* a request's own time, beyond the echo */

/* ---- the echo server ---- */

struct echo {
    struct evconnlistener *listener;
    int port;
    int accepted;
};

static void echo_read(struct bufferevent *bev, void *arg)
{
    (void)arg;
    bufferevent_write_buffer(bev, bufferevent_get_input(bev));
}

static void echo_event(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    (void)arg;
    bufferevent_free(bev); /* the client closed it */
}

static void echo_accept(struct evconnlistener *l, evutil_socket_t fd,
                        struct sockaddr *sa, int len, void *arg)
{
    (void)sa;
    (void)len;
    struct echo *e = arg;
    e->accepted++;
    struct bufferevent *bev = bufferevent_socket_new(evconnlistener_get_base(l),
                                                     fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(bev, echo_read, NULL, echo_event, e);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void echo_start(struct echo *e, struct event_base *base)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    e->listener = evconnlistener_new_bind(
        base, echo_accept, e, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 1024,
        (struct sockaddr *)&sin, sizeof sin);
    ck_assert_ptr_nonnull(e->listener);
    struct sockaddr_in bound;
    socklen_t n = sizeof bound;
    getsockname(evconnlistener_get_fd(e->listener), (struct sockaddr *)&bound,
                &n);
    e->port = ntohs(bound.sin_port);
}

/* ---- the callers ---- */

struct load;

struct caller {
    struct load *load;
    struct event *hold;
    struct bufferevent *bev; /* lent, or NULL */
    bool active;
    bool busy; /* an acquire or a loan under way */
};

struct load {
    struct event_base *base;
    struct echo echo;
    struct tide_tcp_factory *factory;
    struct tide_evpool *pool;
    struct caller callers[CALLERS_MAX];
    long served;
    long failed;
};

static void go(struct caller *c);

static void on_hold_done(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct caller *c = arg;
    struct bufferevent *bev = c->bev;
    c->bev = NULL;
    c->busy = false;
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    ck_assert_int_eq(tide_evpool_release(c->load->pool, bev), 0);
    c->load->served++;
    if (c->active)
        go(c);
}

static void on_echo(struct bufferevent *bev, void *arg)
{
    struct caller *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF).pos < 0)
        return;
    evbuffer_drain(in, evbuffer_get_length(in));
    struct timeval tv = {0, HOLD_MS * 1000};
    event_add(c->hold, &tv);
}

static void on_broken(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    struct caller *c = arg;
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    c->bev = NULL;
    c->busy = false;
    c->load->failed++;
    (void)tide_evpool_discard(c->load->pool, bev);
}

static void on_acquired(struct tide_evpool *pool, int status, void *resource,
                        const struct tide_why *why, void *arg)
{
    (void)pool;
    (void)why;
    struct caller *c = arg;
    if (status != 0) {
        c->busy = false;
        c->load->failed++;
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
    ck_assert_int_eq(
        tide_evpool_acquire(c->load->pool, TIDE_SEC(5), on_acquired, c, NULL),
        0);
}

/* Makes the first n callers active (starting those that are idle) and the
 * rest inactive (they stop after their loan under way). */
static void set_active(struct load *l, int n)
{
    for (int i = 0; i < CALLERS_MAX; i++) {
        struct caller *c = &l->callers[i];
        c->active = i < n;
        if (c->active && !c->busy)
            go(c);
    }
}

static void load_start(struct load *l, struct tide_limits limits)
{
    memset(l, 0, sizeof *l);
    l->base = event_base_new();
    ck_assert_ptr_nonnull(l->base);
    echo_start(&l->echo, l->base);
    struct tide_tcp_options to = {.host = "127.0.0.1", .port = l->echo.port};
    ck_assert_int_eq(tide_tcp_factory_new(l->base, &to, &l->factory), 0);
    struct tide_factory f;
    tide_tcp_factory_bind(l->factory, &f);
    struct tide_evpool_options o = {
        .limits = limits, .queue_max = 1024, .seed = 7};
    ck_assert_int_eq(tide_evpool_new(l->base, &f, &o, &l->pool), 0);
    for (int i = 0; i < CALLERS_MAX; i++) {
        l->callers[i].load = l;
        l->callers[i].hold = evtimer_new(l->base, on_hold_done, &l->callers[i]);
    }
}

static bool all_still(void *arg)
{
    struct load *l = arg;
    for (int i = 0; i < CALLERS_MAX; i++)
        if (l->callers[i].busy)
            return false;
    return true;
}

static void run_ms(struct load *l, int ms)
{
    (void)tide_test_run_until(l->base, NULL, NULL, ms);
}

static void load_stop(struct load *l)
{
    set_active(l, 0);
    ck_assert(tide_test_run_until(l->base, all_still, l, 5000));
    tide_evpool_free(l->pool);
    tide_tcp_factory_free(l->factory);
    for (int i = 0; i < CALLERS_MAX; i++)
        event_free(l->callers[i].hold);
    evconnlistener_free(l->echo.listener);
    /* the server's side of each connection sees the close and frees */
    (void)tide_test_run_until(l->base, NULL, NULL, 50);
    event_base_free(l->base);
    ck_assert_int_eq(l->failed, 0);
}

static struct tide_evpool_stats stats(struct load *l)
{
    struct tide_evpool_stats s;
    tide_evpool_stats(l->pool, &s);
    return s;
}

/* ---- the runs ---- */

/* What a square wave showed, from its second burst on. */
struct wave {
    uint64_t acquires;
    uint64_t connect_waits;
    uint64_t made;
    int64_t live_after; /* after a quiet spell at the end */
    uint64_t retired;
    uint64_t preconnects;
};

static struct wave square_wave(struct tide_limits limits)
{
    struct load l;
    load_start(&l, limits);
    struct tide_evpool_stats first = {0};
    for (int w = 0; w < 4; w++) {
        set_active(&l, 100);
        run_ms(&l, 600);
        set_active(&l, 10);
        run_ms(&l, 600);
        if (w == 0)
            first = stats(&l);
    }
    run_ms(&l, 3000); /* the window (1 s) and the steps down after it */
    struct tide_evpool_stats s = stats(&l);
    struct wave out = {
        .acquires = s.acquires - first.acquires,
        .connect_waits = s.connect_waits - first.connect_waits,
        .made = s.made - first.made,
        .live_after = s.live,
        .retired = s.demand_retired,
        .preconnects = s.preconnects,
    };
    load_stop(&l);
    /* the figures, for a reader of the log */
    fprintf(stderr,
            "square wave %s: %llu acquires, %llu waited for a connect, %llu "
            "made, %llu preconnects, %llu retired, %lld live after\n",
            limits.demand ? "on" : "off", (unsigned long long)out.acquires,
            (unsigned long long)out.connect_waits, (unsigned long long)out.made,
            (unsigned long long)out.preconnects,
            (unsigned long long)out.retired, (long long)out.live_after);
    return out;
}

/* Square wave, 10 and 100 callers, 600 ms each, a window of 1 s: from the
 * second burst on nearly every acquire finds a connection ready (the
 * burst's are kept across the calm), few are made, and after the load
 * falls to 10 the pool steps down to about what 10 need, where without
 * the knobs it keeps the burst's 100 for keep's 30 minutes. */
START_TEST(square_wave_keeps_what_the_load_needs)
{
    struct wave on = square_wave(
        TIDE_LIMITS(.size = 160, .demand = TIDE_SEC(1), .preconnect = 0.9));
    struct wave off = square_wave(TIDE_LIMITS(.size = 160));
    ck_assert_uint_gt(on.acquires, 1000);
    ck_assert_uint_le(on.connect_waits * 100, on.acquires); /* <= 1% */
    ck_assert_uint_le(on.made, 20);
    ck_assert_uint_gt(on.preconnects, 0);
    /* 10 callers need 10, and preconnect's headroom 2 more */
    ck_assert_int_le(on.live_after, 24);
    ck_assert_uint_ge(on.retired, 70);
    ck_assert_int_ge(off.live_after, 90);
    ck_assert_uint_eq(off.retired, 0);
}
END_TEST

/* A cold ramp, one more caller every 10 ms from 0 to 200: with preconnect
 * the next caller finds a connection opened for it; without, each new
 * caller waits for its own connect. */
static struct tide_evpool_stats ramp(struct tide_limits limits)
{
    struct load l;
    load_start(&l, limits);
    for (int n = 1; n <= 200; n++) {
        set_active(&l, n);
        run_ms(&l, 10);
    }
    run_ms(&l, 200);
    struct tide_evpool_stats s = stats(&l);
    load_stop(&l);
    fprintf(stderr,
            "ramp %s: %llu acquires, %llu waited for a connect, %llu made, "
            "%llu preconnects\n",
            limits.preconnect > 0 ? "on" : "off",
            (unsigned long long)s.acquires, (unsigned long long)s.connect_waits,
            (unsigned long long)s.made, (unsigned long long)s.preconnects);
    return s;
}

START_TEST(cold_ramp_is_served_ahead)
{
    struct tide_evpool_stats on =
        ramp(TIDE_LIMITS(.size = 256, .preconnect = 0.9));
    struct tide_evpool_stats off = ramp(TIDE_LIMITS(.size = 256));
    ck_assert_uint_ge(off.connect_waits, 150); /* most new callers waited */
    ck_assert_uint_le(on.connect_waits * 10, off.connect_waits);
    ck_assert_uint_gt(on.preconnects, 150);
    /* no storm: what 200 at 0.9 need, and a few made for callers */
    ck_assert_uint_le(on.made, 240);
    ck_assert_uint_eq(on.make_failures, 0);
}
END_TEST

/* A long quiet spell after a burst: 100 callers, then 2 for many windows
 * (a window of 200 ms, 40 of them). The pool comes down to what 2 need and
 * stays there: nothing made or retired once it has, no churn. */
START_TEST(quiet_spell_after_a_burst_settles_and_stays)
{
    struct load l;
    load_start(&l, TIDE_LIMITS(.size = 160, .demand = TIDE_MS(200),
                               .preconnect = 0.9));
    set_active(&l, 100);
    run_ms(&l, 300);
    set_active(&l, 2);
    run_ms(&l, 1500);
    struct tide_evpool_stats settled = stats(&l);
    ck_assert_int_le(settled.live, 6);
    run_ms(&l, 6500);
    struct tide_evpool_stats s = stats(&l);
    ck_assert_int_le(s.live, 6);
    ck_assert_uint_le(s.made - settled.made, 2);
    ck_assert_uint_le(s.demand_retired - settled.demand_retired, 2);
    ck_assert_uint_gt(s.acquires - settled.acquires, 500); /* served on */
    load_stop(&l);
}
END_TEST

/* The minimum holds: demand never retires below min. */
START_TEST(demand_keeps_min)
{
    struct load l;
    memset(&l, 0, sizeof l);
    load_start(&l, TIDE_LIMITS(.size = 64, .demand = TIDE_MS(100)));
    tide_evpool_free(l.pool);
    struct tide_factory f;
    tide_tcp_factory_bind(l.factory, &f);
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 64, .demand = TIDE_MS(100)),
        .min = 5,
        .seed = 7};
    ck_assert_int_eq(tide_evpool_new(l.base, &f, &o, &l.pool), 0);
    set_active(&l, 40);
    run_ms(&l, 200);
    set_active(&l, 0);
    run_ms(&l, 1500);
    struct tide_evpool_stats s = stats(&l);
    ck_assert_int_eq(s.live, 5);
    ck_assert_uint_ge(s.demand_retired, 30);
    load_stop(&l);
}
END_TEST

static Suite *demand_suite(void)
{
    Suite *s = suite_create("evloop demand");
    TCase *tc = tcase_create("tcp");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, square_wave_keeps_what_the_load_needs);
    tcase_add_test(tc, cold_ramp_is_served_ahead);
    tcase_add_test(tc, quiet_spell_after_a_burst_settles_and_stays);
    tcase_add_test(tc, demand_keeps_min);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(demand_suite)
