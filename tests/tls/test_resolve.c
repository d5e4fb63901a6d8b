/* tls/resolve.c: names through the test's own DNS server on 127.0.0.1,
 * which answers, refuses or stays silent as each test needs. */
#include <string.h>

#include "fixture.h"

struct run {
    struct tide_tcp_factory *f;
    struct test_pool tp;
    struct got g;
};

static void start(struct run *r, const struct tide_tcp_options *o)
{
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, o, &r->f), 0);
    struct tide_factory table;
    tide_tcp_factory_bind(r->f, &table);
    pool_start(&r->tp, &table, 0);
}

static void finish(struct run *r)
{
    if (r->g.calls && r->g.status == 0)
        ck_assert_int_eq(tide_evpool_release(r->tp.pool, r->g.bev), 0);
    pool_stop(&r->tp);
    struct tide_net_stats st;
    tide_tcp_factory_stats(r->f, &st);
    ck_assert_int_eq(st.live, 0);
    ck_assert_int_eq(st.pending, 0);
    tide_tcp_factory_free(r->f);
}

START_TEST(name_resolves_through_the_given_resolver)
{
    struct test_server s;
    ck_assert(server_start(&s, fx->base, AF_INET, 0, NULL));
    dns_server_add(&fx->dns_server, "svc.test", "127.0.0.1");
    struct tide_tcp_options o = {
        .host = "svc.test", .port = s.port, .dns = fx->dns};
    struct run r;
    start(&r, &o);
    acquire_wait(&r.tp, &r.g, 5000);
    ck_assert_int_eq(r.g.status, 0);
    ck_assert_str_eq(echo(r.g.bev, "hello", 2000), "hello");
    ck_assert_int_eq(fx->dns_server.queries_a, 1);
    ck_assert_int_eq(fx->dns_server.queries_aaaa, 1); /* asked at once */
    finish(&r);
    server_stop(&s);
}
END_TEST

START_TEST(each_make_asks_again)
{
    struct test_server s;
    ck_assert(server_start(&s, fx->base, AF_INET, 0, NULL));
    dns_server_add(&fx->dns_server, "svc.test", "127.0.0.1");
    struct tide_tcp_options o = {
        .host = "svc.test", .port = s.port, .dns = fx->dns, .family = AF_INET};
    struct run r;
    start(&r, &o);
    struct got a, b;
    acquire_wait(&r.tp, &a, 5000);
    acquire_wait(&r.tp, &b, 5000); /* a is lent: b is a new connection */
    ck_assert_int_eq(a.status, 0);
    ck_assert_int_eq(b.status, 0);
    ck_assert_int_eq(fx->dns_server.queries_a, 2);
    ck_assert_int_eq(tide_evpool_release(r.tp.pool, a.bev), 0);
    r.g = b;
    finish(&r);
    server_stop(&s);
}
END_TEST

START_TEST(missing_name_is_a_dns_error)
{
    struct tide_tcp_options o = {
        .host = "nowhere.test", .port = 80, .dns = fx->dns};
    struct run r;
    start(&r, &o);
    acquire_wait(&r.tp, &r.g, 5000);
    ck_assert_int_eq(r.g.status, TIDE_EDNS);
    struct tide_net_detail d;
    char text[256];
    ck_assert_int_eq(tide_tcp_factory_last_error(r.f, &d, text, sizeof text),
                     TIDE_EDNS);
    ck_assert_int_eq(d.dns_error, DNS_ERR_NOTEXIST);
    ck_assert_int_eq(d.sys_errno, 0);
    ck_assert_ptr_nonnull(strstr(text, "nowhere.test"));
    ck_assert_ptr_nonnull(strstr(r.g.message, "nowhere.test"));
    finish(&r);
}
END_TEST

START_TEST(refusing_dns_server_is_a_dns_error)
{
    fx->dns_server.mode = DNS_REFUSE;
    struct tide_tcp_options o = {
        .host = "svc.test", .port = 80, .dns = fx->dns};
    struct run r;
    start(&r, &o);
    acquire_wait(&r.tp, &r.g, 5000);
    ck_assert_int_eq(r.g.status, TIDE_EDNS);
    struct tide_net_detail d;
    tide_tcp_factory_last_error(r.f, &d, NULL, 0);
    ck_assert_int_eq(d.dns_error, DNS_ERR_REFUSED);
    finish(&r);
}
END_TEST

START_TEST(silent_dns_server_runs_out_the_connect_timeout)
{
    fx->dns_server.mode = DNS_SILENT;
    struct tide_tcp_options o = {.host = "svc.test",
                                 .port = 80,
                                 .dns = fx->dns,
                                 .connect_timeout = TIDE_MS(300)};
    struct run r;
    start(&r, &o);
    acquire_wait(&r.tp, &r.g, 5000);
    ck_assert_int_eq(r.g.status, TIDE_EDNS_TIMEOUT);
    ck_assert_int_ge(fx->dns_server.queries, 1);
    finish(&r);
}
END_TEST

START_TEST(silent_dns_server_runs_out_the_resolver_timeout)
{
    /* the resolver gives up (0.2 s, one try) before connect_timeout */
    fx->dns_server.mode = DNS_SILENT;
    struct evdns_base *quick = dns_resolver(fx->base, &fx->dns_server, "0.2");
    ck_assert_ptr_nonnull(quick);
    struct tide_tcp_options o = {.host = "svc.test", .port = 80, .dns = quick};
    struct run r;
    start(&r, &o);
    acquire_wait(&r.tp, &r.g, 5000);
    ck_assert_int_eq(r.g.status, TIDE_EDNS_TIMEOUT);
    struct tide_net_detail d;
    tide_tcp_factory_last_error(r.f, &d, NULL, 0);
    ck_assert_int_eq(d.dns_error, DNS_ERR_TIMEOUT);
    finish(&r);
    evdns_base_free(quick, 1);
}
END_TEST

START_TEST(name_with_only_an_ipv6_address_connects)
{
    struct test_server s;
    ck_assert(server_start(&s, fx->base, AF_INET6, 0, NULL));
    dns_server_add(&fx->dns_server, "six.test", "::1");
    struct tide_tcp_options o = {
        .host = "six.test", .port = s.port, .dns = fx->dns};
    struct run r;
    start(&r, &o);
    acquire_wait(&r.tp, &r.g, 5000);
    ck_assert_int_eq(r.g.status, 0); /* A: no data; AAAA: ::1 */
    finish(&r);
    server_stop(&s);
}
END_TEST

START_TEST(cancelled_make_lets_its_query_go)
{
    /* the pool gives up on the make (its make_timeout) while the query is
     * unanswered: the factory lets the query go, and the fixture's teardown
     * checks that nothing is left behind */
    fx->dns_server.mode = DNS_SILENT;
    struct tide_tcp_options o = {
        .host = "svc.test", .port = 80, .dns = fx->dns};
    struct tide_tcp_factory *f;
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), 0);
    struct tide_factory table;
    tide_tcp_factory_bind(f, &table);
    struct tide_evpool_options po = {.make_timeout = TIDE_MS(100),
                                     .acquire_timeout = TIDE_SEC(5)};
    struct tide_evpool *pool;
    ck_assert_int_eq(tide_evpool_new(fx->base, &table, &po, &pool), 0);
    struct got g = {0};
    struct test_pool tp = {.pool = pool};
    acquire_wait(&tp, &g, 3000);
    ck_assert_int_eq(g.status, TIDE_EMAKETIMEDOUT);
    struct tide_net_stats st;
    tide_tcp_factory_stats(f, &st);
    ck_assert_int_eq(st.cancelled, 1);
    ck_assert_int_eq(st.pending, 0);
    ck_assert_int_eq(st.failed, 0);
    tide_evpool_free(pool);
    tide_tcp_factory_free(f);
}
END_TEST

START_TEST(freeing_the_factory_cancels_its_makes)
{
    fx->dns_server.mode = DNS_SILENT;
    struct tide_tcp_options o = {
        .host = "svc.test", .port = 80, .dns = fx->dns};
    struct run r;
    start(&r, &o);
    struct got g = {0};
    ck_assert_int_eq(tide_evpool_acquire(r.tp.pool, 0, pool_record, &g, NULL),
                     0);
    run_ms(30); /* the query is out */
    ck_assert_int_ge(fx->dns_server.queries, 1);
    tide_evpool_free(r.tp.pool);  /* orphans the make: cancelled */
    ck_assert_int_eq(g.calls, 0); /* a freed pool answers nobody */
    struct tide_net_stats st;
    tide_tcp_factory_stats(r.f, &st);
    ck_assert_int_eq(st.pending, 0);
    ck_assert_int_eq(st.cancelled, 1);
    tide_tcp_factory_free(r.f);
}
END_TEST

START_TEST(own_resolver_is_not_built_for_literals)
{
    /* with no resolver given, a literal or localhost needs none, so none
     * is built (and no resolv.conf is read) */
    struct tide_tcp_factory *f;
    struct tide_tcp_options o = {.host = "127.0.0.1", .port = 80};
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), 0);
    tide_tcp_factory_free(f);
    o.host = "localhost";
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), 0);
    tide_tcp_factory_free(f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("resolve");
    TCase *tc = tcase_create("resolve");
    fixture_add(tc);
    tcase_add_test(tc, name_resolves_through_the_given_resolver);
    tcase_add_test(tc, each_make_asks_again);
    tcase_add_test(tc, missing_name_is_a_dns_error);
    tcase_add_test(tc, refusing_dns_server_is_a_dns_error);
    tcase_add_test(tc, silent_dns_server_runs_out_the_connect_timeout);
    tcase_add_test(tc, silent_dns_server_runs_out_the_resolver_timeout);
    tcase_add_test(tc, name_with_only_an_ipv6_address_connects);
    tcase_add_test(tc, cancelled_make_lets_its_query_go);
    tcase_add_test(tc, freeing_the_factory_cancels_its_makes);
    tcase_add_test(tc, own_resolver_is_not_built_for_literals);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
