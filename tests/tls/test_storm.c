/* The top-up to `min` against a backend that kills every connection before
 * it can be used: a server that accepts and closes at once (Redis at
 * maxclients), and one that speaks first (an SMTP greeting, bytes nobody
 * asked for on an idle connection). Each connection is made, then found dead
 * before its first loan; counted as a failed make, it backs the top-up off
 * (100 ms doubling to 1 s), with or without a ward, instead of a storm of
 * thousands of connects a second. Meanwhile callers still get exactly one
 * answer each, and a failure says why. Against a healthy server the minimum
 * is made once and kept. */
#include <string.h>

#include <event2/buffer.h>

#include "fixture.h"

#define STORM_MS     5000
#define MAX_CONNECTS 25 /* in STORM_MS: a few dozen, not thousands */
#define CALLS        10 /* one every 500 ms */

struct call {
    int answers;
    int status;
    enum tide_guard guard;
    char message[320];
};

struct storm {
    struct test_server s;
    struct tide_tcp_factory *f;
    struct tide_evpool *pool;
    struct tide_breaker_options breaker;
    struct tide_backoff backoff;
    struct event *caller;
    struct call calls[CALLS];
    int issued;
};

static void on_answer(struct tide_evpool *pool, int status, void *resource,
                      const struct tide_why *why, void *arg)
{
    struct call *c = arg;
    c->answers++;
    c->status = status;
    c->guard = why ? why->guard : TIDE_GUARD_NONE;
    snprintf(c->message, sizeof c->message, "%s",
             why && why->message ? why->message : "");
    /* a connection lent before its death showed: the borrower's request
     * would fail, and it is given back as broken */
    if (status == 0)
        ck_assert_int_eq(tide_evpool_discard(pool, resource), 0);
}

static void on_call(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct storm *st = arg;
    if (st->issued >= CALLS)
        return;
    struct call *c = &st->calls[st->issued++];
    ck_assert_int_eq(
        tide_evpool_acquire(st->pool, TIDE_SEC(1), on_answer, c, NULL), 0);
}

/* A TCP factory pool with min = 2 against s; with a ward of a STRIKES
 * breaker and a backoff when `ward`, and every other option at its preset
 * (the seed fixed, for a run that can be repeated). */
static void storm_start(struct storm *st, bool ward)
{
    struct tide_tcp_options o = {.host = "127.0.0.1", .port = st->s.port};
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &st->f), 0);
    struct tide_factory table;
    tide_tcp_factory_bind(st->f, &table);
    struct tide_evpool_options po = {.min = 2, .seed = 1};
    if (ward) {
        st->breaker = (struct tide_breaker_options){
            .policy = TIDE_BREAKER_STRIKES,
        };
        st->backoff = TIDE_BACKOFF(0);
        po.ward.breaker = &st->breaker;
        po.ward.backoff = &st->backoff;
    }
    ck_assert_int_eq(tide_evpool_new(fx->base, &table, &po, &st->pool), 0);
    st->caller = event_new(fx->base, -1, EV_PERSIST, on_call, st);
    struct timeval tv = {0, 500000};
    event_add(st->caller, &tv);
}

static bool all_answered(void *arg)
{
    struct storm *st = arg;
    for (int i = 0; i < st->issued; i++)
        if (st->calls[i].answers == 0)
            return false;
    return true;
}

static void storm_stop(struct storm *st)
{
    event_free(st->caller);
    tide_evpool_free(st->pool);
    struct tide_net_stats ns;
    tide_tcp_factory_stats(st->f, &ns);
    ck_assert_int_eq(ns.live, 0);
    ck_assert_int_eq(ns.pending, 0);
    tide_tcp_factory_free(st->f);
    server_stop(&st->s);
}

/* Runs the storm and checks what a user relies on. */
static void storm_run(struct storm *st, bool ward)
{
    storm_start(st, ward);
    run_ms(STORM_MS);
    int connects = st->s.accepted;
    event_del(st->caller);
    /* the last call's timeout is 1 s */
    bool answered = run_until(all_answered, st, 3000);
    int ok = 0;
    for (int i = 0; i < st->issued; i++)
        ok += st->calls[i].status == 0;
    fprintf(stderr, "%s, %s: %d connects in %d ms; %d calls, %d lent\n",
            st->s.close_at_once ? "close at once" : "greets first",
            ward ? "strikes and backoff" : "no ward", connects, STORM_MS,
            st->issued, ok);
    for (int i = 0; i < st->issued; i++)
        if (st->calls[i].status != 0)
            fprintf(stderr, "  call %d: %s (guard %d): %s\n", i,
                    tide_err_name(st->calls[i].status), st->calls[i].guard,
                    st->calls[i].message);
    ck_assert_msg(connects <= MAX_CONNECTS, "%d connects in %d ms", connects,
                  STORM_MS);
    ck_assert(answered);
    ck_assert_int_ge(st->issued, CALLS - 1);
    for (int i = 0; i < st->issued; i++) {
        struct call *c = &st->calls[i];
        ck_assert_msg(c->answers == 1, "call %d answered %d times", i,
                      c->answers);
        if (c->status == 0)
            continue;
        /* a failure says why: the backend's cause, or the guard that
         * refused (which fails fast because of that cause) */
        ck_assert_msg(c->message[0] != '\0', "call %d: no message", i);
        if (c->status == TIDE_EUNAVAILABLE)
            ck_assert_msg(c->guard == TIDE_GUARD_BREAKER ||
                              c->guard == TIDE_GUARD_BACKOFF,
                          "call %d refused by guard %d", i, c->guard);
        else
            ck_assert_msg(strstr(c->message, "closed") != NULL,
                          "call %d (%s) does not say why: \"%s\"", i,
                          tide_err_name(c->status), c->message);
    }
    storm_stop(st);
}

static void closing_server(struct storm *st)
{
    memset(st, 0, sizeof *st);
    ck_assert(server_start(&st->s, fx->base, AF_INET, 0, NULL));
    st->s.close_at_once = true;
}

static void greeting_server(struct storm *st)
{
    memset(st, 0, sizeof *st);
    ck_assert(server_start(&st->s, fx->base, AF_INET, 0, NULL));
    st->s.greeting = "220 ready\r\n";
}

START_TEST(closing_server_is_not_stormed_without_a_ward)
{
    struct storm st;
    closing_server(&st);
    storm_run(&st, false);
}
END_TEST

START_TEST(greeting_server_is_not_stormed_without_a_ward)
{
    struct storm st;
    greeting_server(&st);
    storm_run(&st, false);
}
END_TEST

START_TEST(closing_server_is_not_stormed_with_strikes_and_backoff)
{
    struct storm st;
    closing_server(&st);
    storm_run(&st, true);
}
END_TEST

START_TEST(greeting_server_is_not_stormed_with_strikes_and_backoff)
{
    struct storm st;
    greeting_server(&st);
    storm_run(&st, true);
}
END_TEST

START_TEST(healthy_server_gets_the_minimum_once)
{
    struct storm st;
    memset(&st, 0, sizeof st);
    ck_assert(server_start(&st.s, fx->base, AF_INET, 0, NULL));
    struct tide_tcp_options o = {.host = "127.0.0.1", .port = st.s.port};
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &st.f), 0);
    struct tide_factory table;
    tide_tcp_factory_bind(st.f, &table);
    struct tide_evpool_options po = {.min = 2, .seed = 1};
    ck_assert_int_eq(tide_evpool_new(fx->base, &table, &po, &st.pool), 0);
    run_ms(2000);
    ck_assert_int_eq(st.s.accepted, 2);
    struct tide_evpool_stats ps;
    tide_evpool_stats(st.pool, &ps);
    ck_assert_int_eq(ps.idle, 2);
    ck_assert_uint_eq(ps.made, 2);
    ck_assert_uint_eq(ps.destroyed, 0);
    tide_evpool_free(st.pool);
    tide_tcp_factory_free(st.f);
    server_stop(&st.s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("storm");
    TCase *tc = tcase_create("storm");
    fixture_add(tc);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, closing_server_is_not_stormed_without_a_ward);
    tcase_add_test(tc, greeting_server_is_not_stormed_without_a_ward);
    tcase_add_test(tc, closing_server_is_not_stormed_with_strikes_and_backoff);
    tcase_add_test(tc, greeting_server_is_not_stormed_with_strikes_and_backoff);
    tcase_add_test(tc, healthy_server_gets_the_minimum_once);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
