/* tls/tcp.c and tls/watch.c: TCP connections in a pool. Lent, given back,
 * watched while idle (a peer close, a reset or unexpected bytes make the
 * connection lost before anyone is handed it), checked before lending and
 * on release, and closed exactly once. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "fixture.h"

struct tcp {
    struct test_server s;
    struct tide_tcp_factory *f;
    struct test_pool tp;
};

static void start_with(struct tcp *t, struct tide_tcp_options o, bool raw)
{
    ck_assert(server_start(&t->s, fx->base, AF_INET, 0, NULL));
    t->s.raw = raw;
    o.host = "127.0.0.1";
    o.port = t->s.port;
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &t->f), 0);
    struct tide_factory table;
    tide_tcp_factory_bind(t->f, &table);
    pool_start(&t->tp, &table, 0);
}

static void start(struct tcp *t)
{
    start_with(t, (struct tide_tcp_options){0}, false);
}

static void stop(struct tcp *t)
{
    pool_stop(&t->tp);
    struct tide_net_stats st;
    tide_tcp_factory_stats(t->f, &st);
    ck_assert_int_eq(st.live, 0);
    ck_assert_int_eq(st.destroyed, st.made);
    tide_tcp_factory_free(t->f);
    server_stop(&t->s);
}

static struct tide_net_stats stats(struct tcp *t)
{
    struct tide_net_stats st;
    tide_tcp_factory_stats(t->f, &st);
    return st;
}

static struct tide_evpool_stats pool_stats(struct tcp *t)
{
    struct tide_evpool_stats st;
    tide_evpool_stats(t->tp.pool, &st);
    return st;
}

static bool one_lost(void *arg)
{
    return stats(arg).lost >= 1;
}

/* Acquires one connection and gives it back idle. */
static struct bufferevent *make_idle(struct tcp *t)
{
    struct got g;
    acquire_wait(&t->tp, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    ck_assert_str_eq(echo(g.bev, "warm", 2000), "warm");
    ck_assert_int_eq(tide_evpool_release(t->tp.pool, g.bev), 0);
    ck_assert_int_eq(pool_stats(t).idle, 1);
    return g.bev;
}

START_TEST(released_connection_is_lent_again)
{
    struct tcp t;
    start(&t);
    struct bufferevent *bev = make_idle(&t);
    struct got g;
    acquire_wait(&t.tp, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    ck_assert_ptr_eq(g.bev, bev);
    ck_assert_str_eq(echo(g.bev, "again", 2000), "again");
    ck_assert_int_eq(stats(&t).made, 1);
    ck_assert_int_eq(t.s.accepted, 1);
    ck_assert_int_eq(tide_evpool_release(t.tp.pool, g.bev), 0);
    stop(&t);
}
END_TEST

/* The lend and release paths ask the socket nothing while nothing stirred:
 * a hundred exchanges over one kept connection, lent back to back from
 * try_acquire and acquire alike, cost no look. */
START_TEST(lend_and_release_ask_the_socket_nothing)
{
    struct tcp t;
    start(&t);
    struct bufferevent *bev = make_idle(&t);
    uint64_t looks = stats(&t).looks;
    for (int i = 0; i < 100; i++) {
        void *r = NULL;
        struct got g;
        if (i % 2) {
            ck_assert_int_eq(tide_evpool_try_acquire(t.tp.pool, &r), 0);
        } else {
            acquire_wait(&t.tp, &g, 5000);
            ck_assert_int_eq(g.status, 0);
            r = g.bev;
        }
        ck_assert_ptr_eq(r, bev);
        ck_assert_str_eq(echo(r, "again", 2000), "again");
        ck_assert_int_eq(tide_evpool_release(t.tp.pool, r), 0);
    }
    ck_assert_uint_eq(stats(&t).looks, looks);
    ck_assert_uint_eq(stats(&t).made, 1);
    stop(&t);
}
END_TEST

START_TEST(lent_connection_has_no_callbacks_and_reads)
{
    struct tcp t;
    start(&t);
    struct got g;
    acquire_wait(&t.tp, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    bufferevent_data_cb r = (bufferevent_data_cb)1, w = (bufferevent_data_cb)1;
    bufferevent_event_cb e = (bufferevent_event_cb)1;
    void *arg = (void *)1;
    bufferevent_getcb(g.bev, &r, &w, &e, &arg);
    ck_assert(r == NULL && w == NULL && e == NULL && arg == NULL);
    ck_assert_int_eq(bufferevent_get_enabled(g.bev), EV_READ | EV_WRITE);
    ck_assert_int_eq(tide_evpool_release(t.tp.pool, g.bev), 0);
    stop(&t);
}
END_TEST

START_TEST(idle_peer_close_is_dropped_before_acquire)
{
    struct tcp t;
    start(&t);
    make_idle(&t);
    server_close_all(&t.s);
    ck_assert(run_until(one_lost, &t, 2000));
    ck_assert_int_eq(pool_stats(&t).idle, 0);
    ck_assert_int_eq(pool_stats(&t).lost, 1);
    ck_assert_int_eq(stats(&t).live, 0);
    /* the next caller gets a fresh connection, never the dead one */
    struct got g;
    acquire_wait(&t.tp, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    ck_assert_str_eq(echo(g.bev, "fresh", 2000), "fresh");
    ck_assert_int_eq(stats(&t).made, 2);
    ck_assert_int_eq(tide_evpool_release(t.tp.pool, g.bev), 0);
    stop(&t);
}
END_TEST

START_TEST(idle_reset_is_dropped)
{
    struct tcp t;
    start(&t);
    make_idle(&t);
    server_reset_all(&t.s);
    ck_assert(run_until(one_lost, &t, 2000));
    ck_assert_int_eq(pool_stats(&t).idle, 0);
    ck_assert_int_eq(stats(&t).lost_data, 0);
    stop(&t);
}
END_TEST

START_TEST(unexpected_bytes_while_idle_are_dropped)
{
    struct tcp t;
    start(&t);
    make_idle(&t);
    server_send_all(&t.s, "HTTP/1.0 408 Request Time-out\r\n\r\n");
    ck_assert(run_until(one_lost, &t, 2000));
    ck_assert_int_eq(stats(&t).lost_data, 1);
    ck_assert_int_eq(pool_stats(&t).idle, 0);
    stop(&t);
}
END_TEST

static int pushed;

static bool keep_pushes(struct bufferevent *bev, void *arg)
{
    (void)arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    pushed += (int)evbuffer_get_length(in);
    evbuffer_drain(in, evbuffer_get_length(in)); /* consumed */
    return true;
}

START_TEST(idle_data_callback_can_keep_the_connection)
{
    struct tcp t;
    pushed = 0;
    start_with(&t, (struct tide_tcp_options){.on_idle_data = keep_pushes},
               false);
    struct bufferevent *bev = make_idle(&t);
    server_send_all(&t.s, "PUSH 1\r\n");
    run_ms(100);
    ck_assert_int_eq(pushed, 8);
    ck_assert_int_eq(stats(&t).lost, 0);
    ck_assert_int_eq(pool_stats(&t).idle, 1);
    struct got g;
    acquire_wait(&t.tp, &g, 5000);
    ck_assert_ptr_eq(g.bev, bev);
    ck_assert_int_eq(tide_evpool_release(t.tp.pool, g.bev), 0);
    stop(&t);
}
END_TEST

struct loan {
    short what;
    int events;
};

static void loan_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct loan *l = arg;
    l->what = what;
    l->events++;
}

static bool loan_failed(void *arg)
{
    return ((struct loan *)arg)->events > 0;
}

START_TEST(reset_mid_loan_goes_to_discard)
{
    struct tcp t;
    start(&t);
    struct got g;
    acquire_wait(&t.tp, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    struct loan l = {0};
    bufferevent_setcb(g.bev, NULL, NULL, loan_event, &l);
    server_reset_all(&t.s);
    ck_assert(run_until(loan_failed, &l, 2000));
    ck_assert_int_ne(l.what & (BEV_EVENT_ERROR | BEV_EVENT_EOF), 0);
    ck_assert_int_eq(tide_evpool_discard(t.tp.pool, g.bev), 0);
    ck_assert_int_eq(stats(&t).live, 0);
    ck_assert_int_eq(pool_stats(&t).live, 0);
    stop(&t);
}
END_TEST

struct classified {
    int code;
    struct tide_net_detail d;
    char text[128];
};

static void classify_event(struct bufferevent *bev, short what, void *arg)
{
    struct classified *c = arg;
    c->code = tide_net_event_error(bev, what, &c->d, c->text, sizeof c->text);
}

static bool classified(void *arg)
{
    return ((struct classified *)arg)->code != 0;
}

/* Lends one connection (*g), injects the server's fault and waits until
 * the lent connection's event is read into *c, which the connection keeps
 * pointing at: the test discards the loan before c goes. */
static void fault_mid_loan(struct tcp *t, struct got *g, struct classified *c,
                           void (*fault)(struct test_server *))
{
    acquire_wait(&t->tp, g, 5000);
    *c = (struct classified){0};
    bufferevent_setcb(g->bev, NULL, NULL, classify_event, c);
    fault(&t->s);
    ck_assert(run_until(classified, c, 2000));
}

START_TEST(reset_reads_as_broken_with_its_errno)
{
    struct tcp t;
    start(&t);
    struct got g;
    struct classified c;
    fault_mid_loan(&t, &g, &c, server_reset_all);
    ck_assert_int_eq(c.code, TIDE_ECONN_BROKEN);
    ck_assert_int_eq(c.d.sys_errno, ECONNRESET);
    ck_assert_ptr_nonnull(strstr(c.text, "reset"));
    ck_assert_int_eq(tide_evpool_discard(t.tp.pool, g.bev), 0);
    stop(&t);
}
END_TEST

START_TEST(peer_close_mid_loan_reads_as_peer_closed)
{
    struct tcp t;
    start(&t);
    struct got g;
    struct classified c;
    fault_mid_loan(&t, &g, &c, server_close_all);
    ck_assert_int_eq(c.code, TIDE_EPEER_CLOSED);
    ck_assert_int_eq(tide_evpool_discard(t.tp.pool, g.bev), 0);
    stop(&t);
}
END_TEST

START_TEST(release_with_unread_bytes_is_not_kept)
{
    struct tcp t;
    start(&t);
    struct got g;
    acquire_wait(&t.tp, &g, 5000);
    server_send_all(&t.s, "a reply nobody read");
    run_ms(50);
    ck_assert_int_eq(tide_evpool_release(t.tp.pool, g.bev), 0);
    ck_assert_int_eq(pool_stats(&t).idle, 0);
    ck_assert_int_eq(stats(&t).destroyed, 1);
    stop(&t);
}
END_TEST

/* n connections (at most 4) made over a raw server, each lent, served and
 * given back (into *bevs), then closed by the server while the loop does
 * not run: what the process holds tells nothing of the closes. */
static void served_then_closed_unpolled(struct tcp *t, int n,
                                        struct bufferevent **bevs)
{
    start_with(t, (struct tide_tcp_options){0}, true); /* raw server */
    struct got g[4];
    for (int i = 0; i < n; i++)
        acquire_wait(&t->tp, &g[i], 5000);
    for (int i = 0; i < n; i++) {
        bevs[i] = g[i].bev;
        ck_assert_int_eq(tide_evpool_release(t->tp.pool, g[i].bev), 0);
    }
    run_ms(10);
    ck_assert_int_eq(t->s.accepted, n);
    server_close_all(&t->s);
    usleep(20000);
}

/* The server closes an idle connection and the loop does not poll: no
 * check asks the socket (nothing the process holds tells of the close), so
 * the connection is lent, and its borrower meets the close before any byte
 * of its answer. That loan is stale: no fault of the backend's, and the
 * borrower may go again at once. */
START_TEST(close_the_loop_has_not_seen_ends_the_loan_stale)
{
    struct tcp t;
    struct bufferevent *bev;
    served_then_closed_unpolled(&t, 1, &bev);
    void *r = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(t.tp.pool, &r), 0);
    ck_assert_ptr_eq(r, bev);
    struct classified c = {0};
    bufferevent_setcb(r, NULL, NULL, classify_event, &c);
    bufferevent_write(r, "request", 7);
    ck_assert(run_until(classified, &c, 2000));
    ck_assert(c.code == TIDE_EPEER_CLOSED || c.code == TIDE_ECONN_BROKEN);
    ck_assert_int_eq(tide_evpool_stale(t.tp.pool, r), TIDE_STALE);
    struct tide_evpool_stats ps = pool_stats(&t);
    ck_assert_uint_eq(ps.stale_loans, 1);
    ck_assert_uint_eq(ps.make_failures, 0);
    ck_assert_uint_eq(ps.health_failures, 0);
    ck_assert_int_eq(stats(&t).live, 0);
    stop(&t);
}
END_TEST

/* Two idle connections closed by the server before the loop polls: the
 * first is lent and ends stale; the second, idle when that happened, is in
 * the same state and is looked at before it could be lent: found closed,
 * it is lent to nobody. */
START_TEST(after_a_stale_loan_the_next_is_looked_at)
{
    struct tcp t;
    struct bufferevent *bevs[2];
    served_then_closed_unpolled(&t, 2, bevs);
    void *r = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(t.tp.pool, &r), 0);
    ck_assert_int_eq(tide_evpool_stale(t.tp.pool, r), TIDE_STALE);
    r = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(t.tp.pool, &r), TIDE_EWOULDBLOCK);
    ck_assert_ptr_null(r);
    struct tide_evpool_stats ps = pool_stats(&t);
    ck_assert_uint_eq(ps.stale_loans, 1);
    ck_assert_uint_eq(ps.health_failures, 1);
    ck_assert_int_eq(stats(&t).live, 0);
    stop(&t);
}
END_TEST

static bool server_saw_close(void *arg)
{
    return ((struct test_server *)arg)->closed_by_peer > 0;
}

START_TEST(pool_free_closes_idle_connections)
{
    struct tcp t;
    start(&t);
    make_idle(&t);
    pool_stop(&t.tp);
    ck_assert(run_until(server_saw_close, &t.s, 2000));
    ck_assert_int_eq(stats(&t).live, 0);
    ck_assert_int_eq(stats(&t).destroyed, 1);
    tide_tcp_factory_free(t.f);
    server_stop(&t.s);
}
END_TEST

START_TEST(factory_answers_every_make_once_under_load)
{
    struct tcp t;
    start(&t);
    struct got g[10];
    for (int i = 0; i < 10; i++) {
        memset(&g[i], 0, sizeof g[i]);
        ck_assert_int_eq(
            tide_evpool_acquire(t.tp.pool, 0, pool_record, &g[i], NULL), 0);
    }
    for (int i = 0; i < 10; i++)
        ck_assert(run_until(answered, &g[i], 5000));
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(g[i].calls, 1);
        ck_assert_int_eq(g[i].status, 0);
    }
    ck_assert_int_eq(stats(&t).made, 10);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(tide_evpool_release(t.tp.pool, g[i].bev), 0);
    stop(&t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tcp");
    TCase *tc = tcase_create("tcp");
    fixture_add(tc);
    tcase_add_test(tc, released_connection_is_lent_again);
    tcase_add_test(tc, lent_connection_has_no_callbacks_and_reads);
    tcase_add_test(tc, lend_and_release_ask_the_socket_nothing);
    tcase_add_test(tc, idle_peer_close_is_dropped_before_acquire);
    tcase_add_test(tc, idle_reset_is_dropped);
    tcase_add_test(tc, unexpected_bytes_while_idle_are_dropped);
    tcase_add_test(tc, idle_data_callback_can_keep_the_connection);
    tcase_add_test(tc, reset_mid_loan_goes_to_discard);
    tcase_add_test(tc, reset_reads_as_broken_with_its_errno);
    tcase_add_test(tc, peer_close_mid_loan_reads_as_peer_closed);
    tcase_add_test(tc, release_with_unread_bytes_is_not_kept);
    tcase_add_test(tc, close_the_loop_has_not_seen_ends_the_loan_stale);
    tcase_add_test(tc, after_a_stale_loan_the_next_is_looked_at);
    tcase_add_test(tc, pool_free_closes_idle_connections);
    tcase_add_test(tc, factory_answers_every_make_once_under_load);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
