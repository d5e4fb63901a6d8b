/* tls/watch.c's check on release: a connection the server closed (or reset)
 * after a whole exchange comes back as a served loan, not as a failure. The
 * exchange went right and the server merely chose to end the connection (an
 * HTTP/1.0 answer, a keep-alive limit, an idle timeout just then), so the
 * breaker must not hear of a failure: a healthy backend that closes after
 * each answer would otherwise open it. The connection is still never lent
 * again. Bytes left unread are another matter: that release stays dirty,
 * closed or not. And a connection the server ends while it sits idle is
 * dropped with no blame either.
 *
 * Each test runs over TCP (_i 0), TLS 1.3 (_i 1) and TLS 1.2 (_i 2). */
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>

#include "fixture.h"

struct run {
    struct test_server s;
    struct tide_tcp_factory *tcp;
    struct tide_tls_factory *tls;
    struct tide_factory table;
    struct tide_breaker_options breaker;
    struct tide_evpool *pool;
};

static const char *const names[] = {"TCP", "TLS 1.3", "TLS 1.2"};

/* A server of the kind asked for, and a pool over it whose breaker opens on
 * a single failure. */
static void start(struct run *r, int kind)
{
    memset(r, 0, sizeof *r);
    SSL_CTX *ctx = NULL;
    if (kind > 0) {
        ctx = server_ctx(fx->pki.good, fx->pki.key, 0,
                         kind == 2 ? TLS1_2_VERSION : 0, NULL);
        ck_assert_ptr_nonnull(ctx);
    }
    ck_assert(server_start(&r->s, fx->base, AF_INET, 0, ctx));
    if (kind == 0) {
        struct tide_tcp_options o = {.host = "127.0.0.1", .port = r->s.port};
        ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &r->tcp), 0);
        tide_tcp_factory_bind(r->tcp, &r->table);
    } else {
        struct tide_tls_options o = tls_options("localhost", &r->s);
        ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &r->tls), 0);
        tide_tls_factory_bind(r->tls, &r->table);
    }
    r->breaker = (struct tide_breaker_options){
        .policy = TIDE_BREAKER_STRIKES,
        .strikes = 1,
        .cooldown = TIDE_SEC(60),
    };
    struct tide_evpool_options po = {
        .make_timeout = TIDE_SEC(30),
        .seed = 1,
        .ward = {.breaker = &r->breaker},
    };
    ck_assert_int_eq(tide_evpool_new(fx->base, &r->table, &po, &r->pool), 0);
}

static struct tide_net_stats net_stats(struct run *r)
{
    struct tide_net_stats st;
    if (r->tcp)
        tide_tcp_factory_stats(r->tcp, &st);
    else
        tide_tls_factory_stats(r->tls, &st);
    return st;
}

static struct tide_evpool_stats pool_stats(struct run *r)
{
    struct tide_evpool_stats st;
    tide_evpool_stats(r->pool, &st);
    return st;
}

static void stop(struct run *r)
{
    tide_evpool_free(r->pool);
    ck_assert_int_eq(net_stats(r).live, 0);
    tide_tcp_factory_free(r->tcp);
    tide_tls_factory_free(r->tls);
    server_stop(&r->s);
}

static struct bufferevent *borrow(struct run *r)
{
    struct got g;
    memset(&g, 0, sizeof g);
    ck_assert_int_eq(tide_evpool_acquire(r->pool, 0, pool_record, &g, NULL), 0);
    ck_assert(run_until(answered, &g, 5000));
    ck_assert_msg(g.status == 0, "acquire: %s", g.message);
    return g.bev;
}

/* The server has read the client's bytes, so its close is a FIN (a socket
 * closed with bytes unread sends a reset instead). */
static bool server_idle(void *arg)
{
    struct test_server *s = arg;
    for (struct server_conn *c = s->conns; c; c = c->next)
        if (c->bev && evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
            return false;
    return s->conns != NULL;
}

/* A connection borrowed and used for one whole exchange ("ping" echoed),
 * the server done reading it: each fault here comes after a loan that
 * served, and the server's close is then a FIN (server_idle). */
static struct bufferevent *borrow_after_ping(struct run *r)
{
    struct bufferevent *bev = borrow(r);
    ck_assert_str_eq(echo(bev, "ping", 2000), "ping");
    ck_assert(run_until(server_idle, &r->s, 2000));
    return bev;
}

/* One whole exchange, then the server ends the connection (reset or not)
 * and the borrower, its answer read, gives the connection back once the
 * close has reached it. */
static void exchange_then_close(struct run *r, bool reset)
{
    struct bufferevent *bev = borrow_after_ping(r);
    if (reset)
        server_reset_all(&r->s);
    else
        server_close_all(&r->s); /* TLS: close_notify first */
    run_ms(100); /* the close reaches the client's socket and libevent */
    ck_assert_int_eq(tide_evpool_release(r->pool, bev), 0);
}

/* What a user relies on after such a release: no failure was counted, the
 * dead connection is lent to nobody, and the next borrower is served over a
 * new one. */
static void check_served(struct run *r, int kind)
{
    struct tide_evpool_stats ps = pool_stats(r);
    ck_assert_msg(ps.dirty == 0, "%s: the release was counted dirty",
                  names[kind]);
    ck_assert_msg(ps.make_failures == 0, "%s: a failed make was counted",
                  names[kind]);
    ck_assert_msg(ps.breaker == TIDE_BREAKER_ACTIVE,
                  "%s: the breaker opened on a served exchange", names[kind]);
    struct bufferevent *bev = borrow(r);
    ck_assert_str_eq(echo(bev, "again", 2000), "again");
    ck_assert_uint_eq(net_stats(r).made, 2);
    ck_assert_int_eq(tide_evpool_release(r->pool, bev), 0);
    ps = pool_stats(r);
    ck_assert_int_eq(ps.breaker, TIDE_BREAKER_ACTIVE);
    ck_assert_uint_eq(ps.dirty, 0);
}

START_TEST(close_after_a_whole_exchange_is_no_failure)
{
    struct run r;
    start(&r, _i);
    exchange_then_close(&r, false);
    check_served(&r, _i);
    stop(&r);
}
END_TEST

START_TEST(reset_after_a_whole_exchange_is_no_failure)
{
    struct run r;
    start(&r, _i);
    exchange_then_close(&r, true);
    check_served(&r, _i);
    stop(&r);
}
END_TEST

/* The borrower gives the connection back while the close is still only in
 * the socket (its reading off, so libevent never saw it). */
START_TEST(close_waiting_in_the_socket_is_no_failure)
{
    struct run r;
    start(&r, _i);
    struct bufferevent *bev = borrow_after_ping(&r);
    bufferevent_disable(bev, EV_READ);
    server_close_all(&r.s);
    run_ms(100);
    ck_assert_int_eq(tide_evpool_release(r.pool, bev), 0);
    check_served(&r, _i);
    stop(&r);
}
END_TEST

/* Bytes nobody read, then the close: still a dirty release (the borrower
 * stopped short of its answer), which the breaker hears of. */
START_TEST(unread_bytes_before_the_close_stay_dirty)
{
    struct run r;
    start(&r, _i);
    struct bufferevent *bev = borrow_after_ping(&r);
    server_send_all(&r.s, "unread");
    run_ms(50);
    server_close_all(&r.s);
    run_ms(100);
    ck_assert_int_eq(tide_evpool_release(r.pool, bev), 0);
    struct tide_evpool_stats ps = pool_stats(&r);
    ck_assert_msg(ps.dirty == 1, "%s: dirty %llu", names[_i],
                  (unsigned long long)ps.dirty);
    ck_assert_int_eq(ps.live, 0);
    stop(&r);
}
END_TEST

/* the pool itself dropped it, not only the factory that noticed */
static bool one_lost(void *arg)
{
    struct tide_evpool_stats ps = pool_stats(arg);
    return ps.lost >= 1 && ps.idle == 0 && ps.live == 0;
}

/* After a served loan the connection sits idle and the server ends it (a
 * close, a reset, or bytes nobody asked for: "HTTP/1.0 408" before an idle
 * timeout's close): the watch drops it at once, and the backend is not
 * blamed for it. _i: the transport; the fault comes in turn. */
START_TEST(idle_close_reset_or_bytes_are_no_failure)
{
    for (int fault = 0; fault < 3; fault++) {
        struct run r;
        start(&r, _i);
        struct bufferevent *bev = borrow_after_ping(&r);
        ck_assert_int_eq(tide_evpool_release(r.pool, bev), 0);
        run_ms(20);
        if (fault == 0)
            server_close_all(&r.s);
        else if (fault == 1)
            server_reset_all(&r.s);
        else
            server_send_all(&r.s, "HTTP/1.0 408 Request Time-out\r\n\r\n");
        ck_assert_msg(run_until(one_lost, &r, 2000), "%s fault %d: not lost",
                      names[_i], fault);
        ck_assert_uint_eq(net_stats(&r).lost_data, fault == 2 ? 1 : 0);
        struct tide_evpool_stats ps = pool_stats(&r);
        ck_assert_msg(ps.breaker == TIDE_BREAKER_ACTIVE &&
                          ps.make_failures == 0 && ps.dirty == 0,
                      "%s fault %d: the backend was blamed", names[_i], fault);
        check_served(&r, _i);
        stop(&r);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("closed");
    TCase *tc = tcase_create("release");
    fixture_add(tc);
    tcase_add_loop_test(tc, close_after_a_whole_exchange_is_no_failure, 0, 3);
    tcase_add_loop_test(tc, reset_after_a_whole_exchange_is_no_failure, 0, 3);
    tcase_add_loop_test(tc, close_waiting_in_the_socket_is_no_failure, 0, 3);
    tcase_add_loop_test(tc, unread_bytes_before_the_close_stay_dirty, 0, 3);
    tcase_add_loop_test(tc, idle_close_reset_or_bytes_are_no_failure, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
