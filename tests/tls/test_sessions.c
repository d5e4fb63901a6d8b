/* tls/sessions.c and the session side of tls/tls.c: the next connection to
 * an upstream resumes, for TLS 1.2 sessions and TLS 1.3 tickets (each ticket
 * used once), sessions stay with their upstream, closing keeps them
 * resumable, and post-handshake records on an idle connection (a new ticket,
 * a key update) do not cost the connection. */
#include <string.h>

#include <event2/bufferevent_ssl.h>

#include "fixture.h"

struct run {
    struct test_server s;
    struct tide_tls_factory *f;
    struct test_pool tp;
};

static void serve(struct run *r, int max_version, int tickets)
{
    SSL_CTX *ctx = server_ctx(fx->pki.good, fx->pki.key, 0, max_version, NULL);
    ck_assert_ptr_nonnull(ctx);
    if (tickets > 0)
        SSL_CTX_set_num_tickets(ctx, (size_t)tickets);
    ck_assert(server_start(&r->s, fx->base, AF_INET, 0, ctx));
}

static void pool_over(struct run *r, const struct tide_tls_options *o)
{
    ck_assert_int_eq(tide_tls_factory_new(fx->base, o, &r->f), 0);
    struct tide_factory table;
    tide_tls_factory_bind(r->f, &table);
    pool_start(&r->tp, &table, 0);
}

static struct tide_net_stats stats(struct run *r)
{
    struct tide_net_stats st;
    tide_tls_factory_stats(r->f, &st);
    return st;
}

static void finish(struct run *r)
{
    pool_stop(&r->tp);
    ck_assert_int_eq(stats(r).live, 0);
    tide_tls_factory_free(r->f);
}

/* A client context trusting the test CA and an empty session cache, for
 * the tests that give both to several factories: with context and cache
 * shared, only the cache's key keeps their sessions apart. Free both with
 * shared_ctx_free. */
static SSL_CTX *shared_ctx_new(struct tide_tls_sessions **cache)
{
    ck_assert_int_eq(tide_tls_sessions_new(0, cache), 0);
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), fx->pki.ca);
    return ctx;
}

static void shared_ctx_free(SSL_CTX *ctx, struct tide_tls_sessions *cache)
{
    SSL_CTX_free(ctx);
    tide_tls_sessions_free(cache);
}

/* A new connection (nothing idle), used for one echo (which also lets
 * OpenSSL read the tickets that follow the handshake). */
static struct bufferevent *fresh(struct run *r)
{
    struct got g;
    acquire_wait(&r->tp, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    ck_assert_str_eq(echo(g.bev, "x", 2000), "x");
    return g.bev;
}

static void release(struct run *r, struct bufferevent *bev)
{
    ck_assert_int_eq(tide_evpool_release(r->tp.pool, bev), 0);
}

START_TEST(second_connection_resumes_a_tls13_ticket)
{
    struct run r;
    serve(&r, 0, 0);
    struct tide_tls_options o = tls_options("localhost", &r.s);
    pool_over(&r, &o);
    struct bufferevent *a = fresh(&r);
    ck_assert(!tide_tls_resumed(a));
    ck_assert_int_eq(SSL_version(bufferevent_openssl_get_ssl(a)),
                     TLS1_3_VERSION);
    ck_assert_int_ge(stats(&r).sessions_received, 1);
    struct bufferevent *b = fresh(&r); /* a is lent: b is new */
    ck_assert_ptr_ne(a, b);
    ck_assert(tide_tls_resumed(b));
    ck_assert_int_eq(stats(&r).resumed, 1);
    ck_assert_int_eq(r.s.resumptions, 1);
    release(&r, a);
    release(&r, b);
    finish(&r);
    server_stop(&r.s);
}
END_TEST

START_TEST(tls13_tickets_are_used_once)
{
    struct run r;
    serve(&r, 0, 1); /* one ticket per handshake */
    struct tide_tls_options o = tls_options("localhost", &r.s);
    pool_over(&r, &o);
    struct bufferevent *a = fresh(&r);
    ck_assert_int_eq(stats(&r).sessions_received, 1);
    ck_assert_int_eq(stats(&r).sessions_cached, 1);
    struct bufferevent *b = fresh(&r); /* takes the ticket, gets a new one */
    ck_assert(tide_tls_resumed(b));
    ck_assert_int_eq(stats(&r).sessions_received, 2);
    ck_assert_int_eq(stats(&r).sessions_cached, 1); /* not 2: used up */
    struct bufferevent *c = fresh(&r);              /* b's ticket */
    ck_assert(tide_tls_resumed(c));
    ck_assert_int_eq(stats(&r).resumed, 2);
    ck_assert_int_eq(r.s.resumptions, 2);
    release(&r, a);
    release(&r, b);
    release(&r, c);
    finish(&r);
    server_stop(&r.s);
}
END_TEST

START_TEST(second_connection_resumes_a_tls12_session)
{
    struct run r;
    serve(&r, TLS1_2_VERSION, 0);
    struct tide_tls_options o = tls_options("localhost", &r.s);
    pool_over(&r, &o);
    struct bufferevent *a = fresh(&r);
    ck_assert(!tide_tls_resumed(a));
    ck_assert_int_eq(SSL_version(bufferevent_openssl_get_ssl(a)),
                     TLS1_2_VERSION);
    struct bufferevent *b = fresh(&r);
    ck_assert(tide_tls_resumed(b));
    /* a TLS 1.2 session may be resumed again: it stays in the cache */
    ck_assert_int_ge(stats(&r).sessions_cached, 1);
    struct bufferevent *c = fresh(&r);
    ck_assert(tide_tls_resumed(c));
    ck_assert_int_eq(r.s.resumptions, 2);
    release(&r, a);
    release(&r, b);
    release(&r, c);
    finish(&r);
    server_stop(&r.s);
}
END_TEST

START_TEST(closed_connection_leaves_its_session_resumable)
{
    /* TLS 1.2: the connection's SSL and the cache share one SSL_SESSION;
     * a close without SSL_shutdown would spoil it for the cache */
    struct run r;
    serve(&r, TLS1_2_VERSION, 0);
    struct tide_tls_options o = tls_options("localhost", &r.s);
    pool_over(&r, &o);
    struct bufferevent *a = fresh(&r);
    ck_assert_int_eq(tide_evpool_discard(r.tp.pool, a), 0); /* destroyed */
    /* a first loan discarded is a failed make: past the hold it set */
    run_ms(150);
    struct bufferevent *b = fresh(&r);
    ck_assert(tide_tls_resumed(b));
    release(&r, b);
    finish(&r);
    server_stop(&r.s);
}
END_TEST

START_TEST(resumption_can_be_turned_off)
{
    struct run r;
    serve(&r, 0, 0);
    struct tide_tls_options o = tls_options("localhost", &r.s);
    o.no_resumption = true;
    pool_over(&r, &o);
    struct bufferevent *a = fresh(&r);
    struct bufferevent *b = fresh(&r);
    ck_assert(!tide_tls_resumed(b));
    ck_assert_int_eq(stats(&r).sessions_received, 0);
    ck_assert_int_eq(stats(&r).sessions_cached, 0);
    release(&r, a);
    release(&r, b);
    finish(&r);
    server_stop(&r.s);
}
END_TEST

START_TEST(sessions_stay_with_their_upstream)
{
    /* one cache, one context, two names for the same server: a session
     * from "localhost" is never offered to "127.0.0.1" */
    struct run r;
    serve(&r, 0, 0);
    struct tide_tls_sessions *cache;
    SSL_CTX *ctx = shared_ctx_new(&cache);
    struct tide_tls_options o = {
        .tcp = {.host = "localhost", .port = r.s.port},
        .ctx = ctx,
        .sessions = cache,
    };
    pool_over(&r, &o);
    struct bufferevent *a = fresh(&r);
    ck_assert_uint_ge(tide_tls_sessions_count(cache), 1);

    struct run other = {0};
    o.tcp.host = "127.0.0.1";
    pool_over(&other, &o);
    struct bufferevent *b = fresh(&other);
    ck_assert(!tide_tls_resumed(b));
    struct bufferevent *c = fresh(&other); /* its own session now */
    ck_assert(tide_tls_resumed(c));

    /* the same upstream through another factory does share */
    struct run same = {0};
    o.tcp.host = "localhost";
    pool_over(&same, &o);
    struct bufferevent *d = fresh(&same);
    ck_assert(tide_tls_resumed(d));

    release(&r, a);
    release(&other, b);
    release(&other, c);
    release(&same, d);
    finish(&same);
    finish(&other);
    finish(&r);
    shared_ctx_free(ctx, cache);
    server_stop(&r.s);
}
END_TEST

/* One cache, one context, one server: a factory that differs from the first
 * in only its port, SNI, ALPN list, name to verify or verification at all
 * is offered none of the first one's tickets (a ticket offered is taken
 * out of the cache, so the first factory's count shows it), and resumes
 * none. */
START_TEST(sessions_stay_with_their_port_sni_alpn_and_verification)
{
    struct run r;
    serve(&r, 0, 0);
    r.s.alpn_offer = "\x08http/1.1\x02h2";
    r.s.alpn_offer_len = 12;
    struct test_server s2; /* the same server on another port */
    SSL_CTX *sctx = server_ctx(fx->pki.good, fx->pki.key, 0, 0, NULL);
    ck_assert(server_start(&s2, fx->base, AF_INET, 0, sctx));
    struct tide_tls_sessions *cache;
    SSL_CTX *ctx = shared_ctx_new(&cache);
    const struct tide_tls_options base = {
        .tcp = {.host = "localhost", .port = r.s.port},
        .ctx = ctx,
        .sessions = cache,
        .alpn = (const char *[]){"http/1.1", NULL},
    };
    pool_over(&r, &base);
    struct bufferevent *a = fresh(&r);
    int64_t held = stats(&r).sessions_cached;
    ck_assert_int_ge(held, 1);

    struct tide_tls_options v[5];
    for (size_t i = 0; i < 5; i++)
        v[i] = base;
    v[0].tcp.port = s2.port;
    v[1].sni = "sni.example";
    v[2].alpn = (const char *[]){"h2", NULL};
    v[3].verify_name = "127.0.0.1";
    v[4].insecure_skip_verify = true;
    const char *what[] = {"port", "SNI", "ALPN", "verify_name",
                          "no verification"};
    for (size_t i = 0; i < 5; i++) {
        struct run other = {0};
        pool_over(&other, &v[i]);
        struct bufferevent *b = fresh(&other);
        ck_assert_msg(!tide_tls_resumed(b), "another %s resumed", what[i]);
        ck_assert_msg(stats(&r).sessions_cached == held,
                      "another %s was offered a ticket", what[i]);
        release(&other, b);
        finish(&other);
    }

    release(&r, a);
    finish(&r);
    shared_ctx_free(ctx, cache);
    server_stop(&s2);
    server_stop(&r.s);
}
END_TEST

/* The key keeps each setting apart even when a name holds the characters
 * that could join two settings into one: a session made for SNI
 * "a|localhost" verified as "localhost" is not one for SNI "a" verified as
 * "localhost|localhost", which no certificate here matches (resumed, it
 * would not be verified at all). */
START_TEST(names_holding_a_separator_do_not_share_sessions)
{
    struct run r;
    serve(&r, 0, 0);
    struct tide_tls_sessions *cache;
    SSL_CTX *ctx = shared_ctx_new(&cache);
    struct tide_tls_options o = {
        .tcp = {.host = "localhost", .port = r.s.port},
        .ctx = ctx,
        .sessions = cache,
        .sni = "a|localhost",
    };
    pool_over(&r, &o);
    struct bufferevent *a = fresh(&r);
    ck_assert_uint_ge(tide_tls_sessions_count(cache), 1);

    struct run other = {0};
    o.sni = "a";
    o.verify_name = "localhost|localhost";
    pool_over(&other, &o);
    struct got g;
    acquire_wait(&other.tp, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_ENAME_MISMATCH);
    ck_assert_uint_eq(stats(&other).resumed, 0);

    release(&r, a);
    finish(&other);
    finish(&r);
    shared_ctx_free(ctx, cache);
    server_stop(&r.s);
}
END_TEST

static bool ticket_seen(void *arg)
{
    return stats(arg).sessions_received >= 2;
}

START_TEST(ticket_while_idle_keeps_the_connection)
{
    struct run r;
    serve(&r, 0, 1);
    struct tide_tls_options o = tls_options("localhost", &r.s);
    pool_over(&r, &o);
    struct bufferevent *a = fresh(&r);
    ck_assert_int_eq(stats(&r).sessions_received, 1);
    release(&r, a);
    server_ticket_all(&r.s); /* a NewSessionTicket, while a is idle */
    ck_assert(run_until(ticket_seen, &r, 2000));
    run_ms(50);
    ck_assert_int_eq(stats(&r).lost, 0);
    struct got g;
    acquire_wait(&r.tp, &g, 2000);
    ck_assert_ptr_eq(g.bev, a); /* the same connection */
    ck_assert_str_eq(echo(g.bev, "still here", 2000), "still here");
    ck_assert_int_eq(stats(&r).made, 1);
    release(&r, g.bev);
    finish(&r);
    server_stop(&r.s);
}
END_TEST

START_TEST(key_update_while_idle_keeps_the_connection)
{
    struct run r;
    serve(&r, 0, 0);
    struct tide_tls_options o = tls_options("localhost", &r.s);
    pool_over(&r, &o);
    struct bufferevent *a = fresh(&r);
    release(&r, a);
    server_key_update_all(&r.s); /* the client must answer with its own */
    run_ms(100);
    ck_assert_int_eq(stats(&r).lost, 0);
    struct got g;
    acquire_wait(&r.tp, &g, 2000);
    ck_assert_ptr_eq(g.bev, a);
    ck_assert_str_eq(echo(g.bev, "new keys", 2000), "new keys");
    release(&r, g.bev);
    finish(&r);
    server_stop(&r.s);
}
END_TEST

START_TEST(cache_holds_at_most_its_size)
{
    struct run r;
    serve(&r, 0, 4); /* four tickets a handshake */
    struct tide_tls_sessions *cache;
    ck_assert_int_eq(tide_tls_sessions_new(3, &cache), 0);
    struct tide_tls_options o = tls_options("localhost", &r.s);
    o.sessions = cache;
    pool_over(&r, &o);
    struct bufferevent *a = fresh(&r);
    ck_assert_int_eq(stats(&r).sessions_received, 4);
    ck_assert_uint_eq(tide_tls_sessions_count(cache), 3);
    release(&r, a);
    finish(&r);
    tide_tls_sessions_free(cache);
    server_stop(&r.s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sessions");
    TCase *tc = tcase_create("sessions");
    fixture_add(tc);
    tcase_add_test(tc, second_connection_resumes_a_tls13_ticket);
    tcase_add_test(tc, tls13_tickets_are_used_once);
    tcase_add_test(tc, second_connection_resumes_a_tls12_session);
    tcase_add_test(tc, closed_connection_leaves_its_session_resumable);
    tcase_add_test(tc, resumption_can_be_turned_off);
    tcase_add_test(tc, sessions_stay_with_their_upstream);
    tcase_add_test(tc, sessions_stay_with_their_port_sni_alpn_and_verification);
    tcase_add_test(tc, names_holding_a_separator_do_not_share_sessions);
    tcase_add_test(tc, ticket_while_idle_keeps_the_connection);
    tcase_add_test(tc, key_update_while_idle_keeps_the_connection);
    tcase_add_test(tc, cache_holds_at_most_its_size);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
