/* tls/dial.c and tls/sock.c: from a host to a connected socket. Refusals,
 * hanging connects, every address tried, IPv6 and IPv4 raced, and the
 * socket options every connection gets. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

static bool have_ipv6(void)
{
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in6 a = {.sin6_family = AF_INET6,
                             .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

static int64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Acquires once from a fresh pool over a TCP factory built from o. */
static struct got *try_tcp(const struct tide_tcp_options *o,
                           struct tide_tcp_factory **fp, struct test_pool *tp,
                           struct got *g)
{
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, o, fp), 0);
    struct tide_factory table;
    tide_tcp_factory_bind(*fp, &table);
    pool_start(tp, &table, 0);
    return acquire_wait(tp, g, 10000);
}

static void done(struct test_pool *tp, struct tide_tcp_factory *f,
                 struct got *g)
{
    if (g->status == 0)
        ck_assert_int_eq(tide_evpool_release(tp->pool, g->bev), 0);
    pool_stop(tp);
    struct tide_net_stats st;
    tide_tcp_factory_stats(f, &st);
    ck_assert_int_eq(st.live, 0);
    ck_assert_int_eq(st.pending, 0);
    tide_tcp_factory_free(f);
}

/* One echo server of the family; host must reach it, with no query sent to
 * the DNS server the factory is given (literals and localhost skip DNS). */
static void reaches_without_dns(int family, const char *host)
{
    struct test_server s;
    ck_assert(server_start(&s, fx->base, family, 0, NULL));
    struct tide_tcp_options o = {.host = host, .port = s.port, .dns = fx->dns};
    struct tide_tcp_factory *f;
    struct test_pool tp;
    struct got g;
    try_tcp(&o, &f, &tp, &g);
    ck_assert_int_eq(g.status, 0);
    ck_assert_str_eq(echo(g.bev, "ping", 2000), "ping");
    ck_assert_int_eq(fx->dns_server.queries, 0);
    done(&tp, f, &g);
    server_stop(&s);
}

START_TEST(ip_literal_connects_without_dns)
{
    reaches_without_dns(AF_INET, "127.0.0.1");
}
END_TEST

START_TEST(bracketed_ipv6_literal_connects)
{
    if (have_ipv6())
        reaches_without_dns(AF_INET6, "[::1]");
}
END_TEST

START_TEST(refused_port_is_refused)
{
    struct test_server s; /* bound, then closed: the port is free */
    ck_assert(server_start(&s, fx->base, AF_INET, 0, NULL));
    uint16_t port = s.port;
    server_stop(&s);
    struct tide_tcp_options o = {.host = "127.0.0.1", .port = port};
    struct tide_tcp_factory *f;
    struct test_pool tp;
    struct got g;
    try_tcp(&o, &f, &tp, &g);
    ck_assert_int_eq(g.status, TIDE_EREFUSED);
    struct tide_net_detail d;
    char text[256];
    ck_assert_int_eq(tide_tcp_factory_last_error(f, &d, text, sizeof text),
                     TIDE_EREFUSED);
    ck_assert_int_eq(d.code, TIDE_EREFUSED);
    ck_assert_int_eq(d.sys_errno, ECONNREFUSED);
    ck_assert_ptr_nonnull(strstr(text, "refused"));
    ck_assert_str_eq(g.message, text); /* the waiter saw the same sentence */
    done(&tp, f, &g);
}
END_TEST

START_TEST(full_backlog_is_a_connect_timeout)
{
    struct test_server s;
    ck_assert(server_start_full_backlog(&s, AF_INET));
    struct tide_tcp_options o = {
        .host = "127.0.0.1", .port = s.port, .connect_timeout = TIDE_MS(300)};
    struct tide_tcp_factory *f;
    struct test_pool tp;
    struct got g;
    int64_t t0 = ms_now();
    try_tcp(&o, &f, &tp, &g);
    int64_t took = ms_now() - t0;
    ck_assert_int_eq(g.status, TIDE_ECONNECT_TIMEOUT);
    ck_assert_int_ge(took, 290);
    ck_assert_int_lt(took, 2000);
    struct tide_net_detail d;
    ck_assert_int_eq(tide_tcp_factory_last_error(f, &d, NULL, 0),
                     TIDE_ECONNECT_TIMEOUT);
    ck_assert_int_eq(d.sys_errno, ETIMEDOUT);
    done(&tp, f, &g);
    server_stop(&s);
}
END_TEST

START_TEST(localhost_reaches_ipv4_only_server)
{
    reaches_without_dns(AF_INET, "localhost"); /* RFC 6761 */
}
END_TEST

START_TEST(localhost_reaches_ipv6_only_server)
{
    if (have_ipv6())
        reaches_without_dns(AF_INET6, "localhost");
}
END_TEST

START_TEST(every_resolved_address_is_tried)
{
    struct test_server s;
    ck_assert(server_start(&s, fx->base, AF_INET, 0, NULL));
    /* two dead addresses before the live one: 127.0.0.2 and 127.0.0.3 have
     * nothing on this port (refused), 127.0.0.1 has the server */
    dns_server_add(&fx->dns_server, "svc.test", "127.0.0.2");
    dns_server_add(&fx->dns_server, "svc.test", "127.0.0.3");
    dns_server_add(&fx->dns_server, "svc.test", "127.0.0.1");
    struct tide_tcp_options o = {
        .host = "svc.test", .port = s.port, .dns = fx->dns, .family = AF_INET};
    struct tide_tcp_factory *f;
    struct test_pool tp;
    struct got g;
    try_tcp(&o, &f, &tp, &g);
    ck_assert_int_eq(g.status, 0);
    struct tide_net_stats st;
    tide_tcp_factory_stats(f, &st);
    ck_assert_int_eq(st.attempts, 3);
    ck_assert_int_eq(fx->dns_server.queries_aaaa, 0); /* AF_INET only */
    done(&tp, f, &g);
    server_stop(&s);
}
END_TEST

START_TEST(all_addresses_refused_is_refused)
{
    struct test_server s;
    ck_assert(server_start(&s, fx->base, AF_INET, 0, NULL));
    uint16_t port = s.port;
    server_stop(&s);
    dns_server_add(&fx->dns_server, "svc.test", "127.0.0.2");
    dns_server_add(&fx->dns_server, "svc.test", "127.0.0.3");
    struct tide_tcp_options o = {
        .host = "svc.test", .port = port, .dns = fx->dns};
    struct tide_tcp_factory *f;
    struct test_pool tp;
    struct got g;
    try_tcp(&o, &f, &tp, &g);
    ck_assert_int_eq(g.status, TIDE_EREFUSED);
    ck_assert_ptr_nonnull(strstr(g.message, "2 addresses tried"));
    done(&tp, f, &g);
}
END_TEST

START_TEST(hanging_ipv6_is_raced_by_ipv4)
{
    if (!have_ipv6())
        return;
    /* AAAA points at a listener whose backlog is full (the connect hangs);
     * A points at a live server on the same port number. IPv6 goes first;
     * after attempt_delay IPv4 starts beside it and wins. */
    struct test_server hang, live;
    ck_assert(server_start_full_backlog(&hang, AF_INET6));
    ck_assert(server_start(&live, fx->base, AF_INET, hang.port, NULL));
    dns_server_add(&fx->dns_server, "svc.test", "::1");
    dns_server_add(&fx->dns_server, "svc.test", "127.0.0.1");
    struct tide_tcp_options o = {.host = "svc.test",
                                 .port = hang.port,
                                 .dns = fx->dns,
                                 .attempt_delay = TIDE_MS(100),
                                 .connect_timeout = TIDE_SEC(5)};
    struct tide_tcp_factory *f;
    struct test_pool tp;
    struct got g;
    int64_t t0 = ms_now();
    try_tcp(&o, &f, &tp, &g);
    int64_t took = ms_now() - t0;
    ck_assert_int_eq(g.status, 0);
    ck_assert_int_ge(took, 95);
    ck_assert_int_lt(took, 2000);
    ck_assert_int_eq(live.accepted, 1);
    struct tide_net_stats st;
    tide_tcp_factory_stats(f, &st);
    ck_assert_int_eq(st.attempts, 2);
    done(&tp, f, &g);
    server_stop(&live);
    server_stop(&hang);
}
END_TEST

START_TEST(late_aaaa_is_waited_for_briefly)
{
    if (!have_ipv6())
        return;
    /* A answers at once, AAAA 20 ms later: IPv4 waits the resolution delay
     * (50 ms), so the IPv6 server is the one reached */
    struct test_server v6, v4;
    ck_assert(server_start(&v6, fx->base, AF_INET6, 0, NULL));
    ck_assert(server_start(&v4, fx->base, AF_INET, v6.port, NULL));
    dns_server_add(&fx->dns_server, "svc.test", "::1");
    dns_server_add(&fx->dns_server, "svc.test", "127.0.0.1");
    fx->dns_server.aaaa_delay_ms = 20;
    struct tide_tcp_options o = {
        .host = "svc.test", .port = v6.port, .dns = fx->dns};
    struct tide_tcp_factory *f;
    struct test_pool tp;
    struct got g;
    try_tcp(&o, &f, &tp, &g);
    ck_assert_int_eq(g.status, 0);
    run_ms(10);
    ck_assert_int_eq(v6.accepted, 1);
    ck_assert_int_eq(v4.accepted, 0);
    done(&tp, f, &g);
    server_stop(&v4);
    server_stop(&v6);
}
END_TEST

START_TEST(socket_is_nodelay_cloexec_nonblocking)
{
    struct test_server s;
    ck_assert(server_start(&s, fx->base, AF_INET, 0, NULL));
    struct tide_tcp_options o = {.host = "127.0.0.1",
                                 .port = s.port,
                                 .keepalive_idle = TIDE_SEC(30),
                                 .keepalive_interval = TIDE_MS(4500),
                                 .keepalive_count = 3};
    struct tide_tcp_factory *f;
    struct test_pool tp;
    struct got g;
    try_tcp(&o, &f, &tp, &g);
    ck_assert_int_eq(g.status, 0);
    int fd = bufferevent_getfd(g.bev);
    int v = 0;
    socklen_t len = sizeof v;
    ck_assert_int_eq(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len), 0);
    ck_assert_int_ne(v, 0);
    ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    ck_assert_int_ne(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    len = sizeof v;
    ck_assert_int_eq(getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, &len), 0);
    ck_assert_int_ne(v, 0);
    len = sizeof v;
    ck_assert_int_eq(getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, &len), 0);
    ck_assert_int_eq(v, 30);
    len = sizeof v;
    ck_assert_int_eq(getsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &v, &len), 0);
    ck_assert_int_eq(v, 5); /* rounded up to whole seconds */
    len = sizeof v;
    ck_assert_int_eq(getsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &v, &len), 0);
    ck_assert_int_eq(v, 3);
    done(&tp, f, &g);
    server_stop(&s);
}
END_TEST

START_TEST(keepalive_is_off_by_default)
{
    struct test_server s;
    ck_assert(server_start(&s, fx->base, AF_INET, 0, NULL));
    struct tide_tcp_options o = {.host = "127.0.0.1", .port = s.port};
    struct tide_tcp_factory *f;
    struct test_pool tp;
    struct got g;
    try_tcp(&o, &f, &tp, &g);
    ck_assert_int_eq(g.status, 0);
    int v = 1;
    socklen_t len = sizeof v;
    ck_assert_int_eq(getsockopt(bufferevent_getfd(g.bev), SOL_SOCKET,
                                SO_KEEPALIVE, &v, &len),
                     0);
    ck_assert_int_eq(v, 0);
    done(&tp, f, &g);
    server_stop(&s);
}
END_TEST

START_TEST(service_name_gives_the_port)
{
    struct tide_tcp_factory *f;
    struct tide_tcp_options o = {.host = "127.0.0.1", .service = "8080"};
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), 0);
    tide_tcp_factory_free(f);
    struct servent *se = getservbyname("https", "tcp");
    if (se) {
        o.service = "https";
        ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), 0);
        tide_tcp_factory_free(f);
    }
    o.service = "no-such-service-anywhere";
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    ck_assert_ptr_null(f);
}
END_TEST

START_TEST(bad_options_are_refused)
{
    struct tide_tcp_factory *f = (void *)1;
    const struct tide_tcp_options bad[] = {
        {.port = 80},                                    /* no host */
        {.host = "", .port = 80},                        /* empty host */
        {.host = "a.test"},                              /* no port */
        {.host = "a.test", .port = 80, .service = "80"}, /* both */
        {.host = "a.test", .port = 80, .family = 99},
        {.host = "a.test", .port = 80, .connect_timeout = -1},
        {.host = "a.test", .port = 80, .attempt_delay = -1},
        {.host = "a.test", .port = 80, .keepalive_idle = TIDE_SEC(40000)},
        {.host = "a.test", .port = 80, .keepalive_count = 3}, /* no idle */
        {.host = "a.test",
         .port = 80,
         .keepalive_idle = TIDE_SEC(1),
         .keepalive_count = -1},
        {.host = "127.0.0.1", .port = 80, .family = AF_INET6},
        {.host = "a.test", .service = "0"},
        {.host = "a.test", .service = "65536"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = (void *)1;
        ck_assert_msg(tide_tcp_factory_new(fx->base, &bad[i], &f) ==
                          TIDE_EINVAL,
                      "case %zu accepted", i);
        ck_assert_ptr_null(f);
    }
    struct tide_tcp_options ok = {.host = "a.test", .port = 80};
    ck_assert_int_eq(tide_tcp_factory_new(NULL, &ok, &f), TIDE_EINVAL);
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, NULL, &f), TIDE_EINVAL);
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &ok, NULL), TIDE_EINVAL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("dial");
    TCase *tc = tcase_create("dial");
    fixture_add(tc);
    tcase_add_test(tc, ip_literal_connects_without_dns);
    tcase_add_test(tc, bracketed_ipv6_literal_connects);
    tcase_add_test(tc, refused_port_is_refused);
    tcase_add_test(tc, full_backlog_is_a_connect_timeout);
    tcase_add_test(tc, localhost_reaches_ipv4_only_server);
    tcase_add_test(tc, localhost_reaches_ipv6_only_server);
    tcase_add_test(tc, every_resolved_address_is_tried);
    tcase_add_test(tc, all_addresses_refused_is_refused);
    tcase_add_test(tc, hanging_ipv6_is_raced_by_ipv4);
    tcase_add_test(tc, late_aaaa_is_waited_for_briefly);
    tcase_add_test(tc, socket_is_nodelay_cloexec_nonblocking);
    tcase_add_test(tc, keepalive_is_off_by_default);
    tcase_add_test(tc, service_name_gives_the_port);
    tcase_add_test(tc, bad_options_are_refused);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
