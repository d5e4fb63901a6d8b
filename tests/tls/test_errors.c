/* tls/errors.c: the codes of this layer, an event on a lent connection read
 * into a code, the getters' buffers, and the connection getters on a plain
 * TCP bufferevent. (The sentences live in core/error.c's one table.) And bad
 * input to every public function of <tidepool/tls.h>: NULL objects and
 * pointers, ports and other integers out of range. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "fixture.h"
#include "net_internal.h"

static const int codes[] = {
    TIDE_EDNS,           TIDE_EDNS_TIMEOUT,       TIDE_EREFUSED,
    TIDE_EUNREACHABLE,   TIDE_ECONNECT_TIMEOUT,   TIDE_ECONNECT,
    TIDE_EHANDSHAKE,     TIDE_EHANDSHAKE_TIMEOUT, TIDE_EUNTRUSTED,
    TIDE_ENAME_MISMATCH, TIDE_EEXPIRED,           TIDE_EALPN,
    TIDE_ETLS_CONFIG,    TIDE_EPEER_CLOSED,       TIDE_ECONN_BROKEN,
    TIDE_ETLS,           TIDE_EIO_TIMEOUT,
};

#define NCODES (sizeof codes / sizeof codes[0])

START_TEST(codes_are_distinct_and_in_this_layers_range)
{
    for (size_t i = 0; i < NCODES; i++) {
        ck_assert_int_le(codes[i], -40);
        ck_assert_int_ge(codes[i], -59);
        for (size_t j = i + 1; j < NCODES; j++)
            ck_assert_int_ne(codes[i], codes[j]);
    }
}
END_TEST

/* The one error table knows every code of this layer by its own name. */
START_TEST(error_table_names_every_code)
{
    static const char *const names[] = {
        "TIDE_EDNS",           "TIDE_EDNS_TIMEOUT",       "TIDE_EREFUSED",
        "TIDE_EUNREACHABLE",   "TIDE_ECONNECT_TIMEOUT",   "TIDE_ECONNECT",
        "TIDE_EHANDSHAKE",     "TIDE_EHANDSHAKE_TIMEOUT", "TIDE_EUNTRUSTED",
        "TIDE_ENAME_MISMATCH", "TIDE_EEXPIRED",           "TIDE_EALPN",
        "TIDE_ETLS_CONFIG",    "TIDE_EPEER_CLOSED",       "TIDE_ECONN_BROKEN",
        "TIDE_ETLS",           "TIDE_EIO_TIMEOUT",
    };
    ck_assert_uint_eq(sizeof names / sizeof names[0], NCODES);
    for (size_t i = 0; i < NCODES; i++) {
        ck_assert_str_eq(tide_err_name(codes[i]), names[i]);
        ck_assert_str_ne(tide_strerror(codes[i]),
                         "unknown tidepool error code");
    }
}
END_TEST

START_TEST(connect_errnos_map_to_codes_by_how_telling)
{
    int refused, unreachable, timedout, other, r;
    ck_assert_int_eq(tide__net_errno_code(ECONNREFUSED, &refused),
                     TIDE_EREFUSED);
    ck_assert_int_eq(tide__net_errno_code(ENETUNREACH, &unreachable),
                     TIDE_EUNREACHABLE);
    ck_assert_int_eq(tide__net_errno_code(EHOSTUNREACH, &r), TIDE_EUNREACHABLE);
    ck_assert_int_eq(tide__net_errno_code(EADDRNOTAVAIL, &r),
                     TIDE_EUNREACHABLE);
    ck_assert_int_eq(tide__net_errno_code(EAFNOSUPPORT, &r), TIDE_EUNREACHABLE);
    ck_assert_int_eq(tide__net_errno_code(ETIMEDOUT, &timedout),
                     TIDE_ECONNECT_TIMEOUT);
    ck_assert_int_eq(tide__net_errno_code(EACCES, &other), TIDE_ECONNECT);
    /* a host reached and refusing says more than a family without route */
    ck_assert_int_gt(refused, other);
    ck_assert_int_gt(other, timedout);
    ck_assert_int_gt(timedout, unreachable);
}
END_TEST

START_TEST(events_read_into_codes)
{
    struct bufferevent *bev = bufferevent_socket_new(fx->base, -1, 0);
    struct tide_net_detail d;
    char text[128];
    ck_assert_int_eq(
        tide_net_event_error(bev, BEV_EVENT_CONNECTED, &d, text, sizeof text),
        0);
    ck_assert_int_eq(d.code, 0);
    ck_assert_str_eq(text, "");
    ck_assert_int_eq(tide_net_event_error(bev,
                                          BEV_EVENT_EOF | BEV_EVENT_READING, &d,
                                          text, sizeof text),
                     TIDE_EPEER_CLOSED);
    ck_assert_int_eq(tide_net_event_error(bev,
                                          BEV_EVENT_TIMEOUT | BEV_EVENT_WRITING,
                                          &d, text, sizeof text),
                     TIDE_EIO_TIMEOUT);
    ck_assert_ptr_nonnull(strstr(text, "write"));
    EVUTIL_SET_SOCKET_ERROR(ECONNRESET);
    ck_assert_int_eq(tide_net_event_error(bev,
                                          BEV_EVENT_ERROR | BEV_EVENT_READING,
                                          &d, text, sizeof text),
                     TIDE_ECONN_BROKEN);
    ck_assert_int_eq(d.sys_errno, ECONNRESET);
    ck_assert_int_eq(d.ssl_error, 0);
    ck_assert_int_eq(d.verify_result, 0);
    bufferevent_free(bev);
}
END_TEST

START_TEST(buffers_are_cut_to_fit_and_terminated)
{
    struct bufferevent *bev = bufferevent_socket_new(fx->base, -1, 0);
    char text[8];
    memset(text, 'x', sizeof text);
    ck_assert_int_eq(
        tide_net_event_error(bev, BEV_EVENT_EOF, NULL, text, sizeof text),
        TIDE_EPEER_CLOSED);
    ck_assert_uint_eq(strlen(text), 7);
    char one = 'x';
    tide_net_event_error(bev, BEV_EVENT_EOF, NULL, &one, 1);
    ck_assert_int_eq(one, '\0');
    /* no buffer at all is fine */
    ck_assert_int_eq(tide_net_event_error(bev, BEV_EVENT_EOF, NULL, NULL, 0),
                     TIDE_EPEER_CLOSED);
    bufferevent_free(bev);
}
END_TEST

START_TEST(fresh_factory_has_no_last_error)
{
    struct tide_tcp_factory *f;
    struct tide_tcp_options o = {.host = "127.0.0.1", .port = 9};
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), 0);
    struct tide_net_detail d;
    memset(&d, 0xff, sizeof d);
    char text[16] = "stale";
    ck_assert_int_eq(tide_tcp_factory_last_error(f, &d, text, sizeof text), 0);
    ck_assert_int_eq(d.code, 0);
    ck_assert_int_eq(d.sys_errno, 0);
    ck_assert_str_eq(text, "");
    struct tide_net_stats st;
    tide_tcp_factory_stats(f, &st);
    ck_assert_uint_eq(st.makes, 0);
    ck_assert_int_eq(st.live, 0);
    tide_tcp_factory_free(f);
    tide_tcp_factory_free(NULL);
    tide_tls_factory_free(NULL);
}
END_TEST

START_TEST(tls_getters_on_a_plain_connection)
{
    struct bufferevent *bev = bufferevent_socket_new(fx->base, -1, 0);
    ck_assert(!tide_tls_resumed(bev));
    ck_assert(!tide_tls_resumed(NULL));
    char proto[8] = "x";
    ck_assert_uint_eq(tide_tls_alpn(bev, proto, sizeof proto), 0);
    ck_assert_str_eq(proto, "");
    bufferevent_free(bev);
}
END_TEST

START_TEST(session_cache_starts_empty)
{
    struct tide_tls_sessions *s;
    ck_assert_int_eq(tide_tls_sessions_new(0, &s), 0);
    ck_assert_uint_eq(tide_tls_sessions_count(s), 0);
    tide_tls_sessions_free(s);
    tide_tls_sessions_free(NULL);
    ck_assert_int_eq(tide_tls_sessions_new(4, NULL), TIDE_EINVAL);
}
END_TEST

/* ---- ports and other integers out of range ---- */

/* The bug a uint16_t port had: 70000 became 4464, and the factory went to
 * whoever listens there. Here the port that a wrap would reach is ours. */
START_TEST(port_70000_is_refused)
{
    struct test_server s;
    ck_assert(server_start(&s, fx->base, AF_INET, 0, NULL));
    struct tide_tcp_factory *f = (void *)1;
    struct tide_tcp_options o = {.host = "127.0.0.1", .port = 70000};
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    ck_assert_ptr_null(f);
    o.port = s.port + 65536; /* would wrap to the server's port */
    f = (void *)1;
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    ck_assert_ptr_null(f);
    struct tide_tls_factory *t = (void *)1;
    struct tide_tls_options to = tls_options("127.0.0.1", &s);
    to.tcp.port = s.port + 65536;
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &to, &t), TIDE_EINVAL);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(s.accepted, 0);
    server_stop(&s);
}
END_TEST

START_TEST(negative_port_is_refused)
{
    const int ports[] = {-1, -65536 + 443, INT_MIN, 65536, INT_MAX};
    for (size_t i = 0; i < sizeof ports / sizeof ports[0]; i++) {
        struct tide_tcp_factory *f = (void *)1;
        struct tide_tcp_options o = {.host = "127.0.0.1", .port = ports[i]};
        ck_assert_msg(tide_tcp_factory_new(fx->base, &o, &f) == TIDE_EINVAL,
                      "port %d accepted", ports[i]);
        ck_assert_ptr_null(f);
        struct tide_tls_factory *t = (void *)1;
        struct tide_tls_options to = {.tcp = o, .ca_pem = fx->ca_pem};
        ck_assert_msg(tide_tls_factory_new(fx->base, &to, &t) == TIDE_EINVAL,
                      "TLS port %d accepted", ports[i]);
        ck_assert_ptr_null(t);
    }
}
END_TEST

START_TEST(ports_1_and_65535_are_accepted)
{
    const int ports[] = {1, 65535};
    for (size_t i = 0; i < sizeof ports / sizeof ports[0]; i++) {
        struct tide_tcp_factory *f;
        struct tide_tcp_options o = {.host = "127.0.0.1", .port = ports[i]};
        ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), 0);
        tide_tcp_factory_free(f);
        struct tide_tls_factory *t;
        struct tide_tls_options to = {.tcp = o, .ca_pem = fx->ca_pem};
        ck_assert_int_eq(tide_tls_factory_new(fx->base, &to, &t), 0);
        tide_tls_factory_free(t);
    }
}
END_TEST

/* A service given as a number is digits only: strtol alone would read
 * " 443" and "+443" as 443, and "-0" as 0. */
START_TEST(service_number_is_digits_only)
{
    const char *const bad[] = {" 443", "+443", "-443",  "-0",
                               "443 ", "0",    "65536", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tide_tcp_factory *f = (void *)1;
        struct tide_tcp_options o = {.host = "127.0.0.1", .service = bad[i]};
        ck_assert_msg(tide_tcp_factory_new(fx->base, &o, &f) == TIDE_EINVAL,
                      "service \"%s\" accepted", bad[i]);
        ck_assert_ptr_null(f);
    }
    struct tide_tcp_factory *f;
    struct tide_tcp_options o = {.host = "127.0.0.1", .service = "65535"};
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), 0);
    tide_tcp_factory_free(f);
}
END_TEST

/* Spans and counts: negative, or beyond what the kernel takes (Linux bounds
 * TCP_KEEPIDLE/INTVL at 32767 s and TCP_KEEPCNT at 127). */
START_TEST(integer_options_out_of_range_are_refused)
{
#define TCP_AT(...)                                                            \
    {                                                                          \
        .host = "127.0.0.1", .port = 80, __VA_ARGS__                           \
    }
    const struct tide_tcp_options bad[] = {
        TCP_AT(.family = -1),
        TCP_AT(.connect_timeout = INT64_MIN),
        TCP_AT(.attempt_delay = INT64_MIN),
        TCP_AT(.keepalive_idle = -1),
        TCP_AT(.keepalive_idle = TIDE_SEC(32768)),
        TCP_AT(.keepalive_idle = INT64_MAX),
        TCP_AT(.keepalive_idle = TIDE_SEC(1), .keepalive_interval = -1),
        TCP_AT(.keepalive_idle = TIDE_SEC(1),
               .keepalive_interval = TIDE_SEC(32768)),
        TCP_AT(.keepalive_idle = TIDE_SEC(1), .keepalive_count = 128),
        TCP_AT(.keepalive_idle = TIDE_SEC(1), .keepalive_count = INT_MIN),
    };
#undef TCP_AT
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tide_tcp_factory *f = (void *)1;
        ck_assert_msg(tide_tcp_factory_new(fx->base, &bad[i], &f) ==
                          TIDE_EINVAL,
                      "case %zu accepted", i);
        ck_assert_ptr_null(f);
    }
    struct tide_tcp_options top = {.host = "127.0.0.1",
                                   .port = 80,
                                   .keepalive_idle = TIDE_SEC(32767),
                                   .keepalive_interval = TIDE_SEC(32767),
                                   .keepalive_count = 127};
    struct tide_tcp_factory *f;
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &top, &f), 0);
    tide_tcp_factory_free(f);
}
END_TEST

START_TEST(tls_integer_options_out_of_range_are_refused)
{
    struct tide_tls_options o = {
        .tcp = {.host = "127.0.0.1", .port = 443},
        .ca_pem = fx->ca_pem,
    };
    struct tide_tls_factory *f = (void *)1;
    o.handshake_timeout = INT64_MIN;
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    ck_assert_ptr_null(f);
    o.handshake_timeout = 0;
    o.min_version = -TLS1_2_VERSION;
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    o.min_version = 0;
    o.max_version = INT_MAX;
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    o.max_version = 0;
    /* an ALPN list past what a ClientHello carries, of valid names */
    static const char *many[600];
    for (size_t i = 0; i < 599; i++)
        many[i] = "h2";
    many[599] = NULL;
    o.alpn = many;
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    ck_assert_ptr_null(f);
}
END_TEST

/* ---- NULL ---- */

START_TEST(null_factory_last_error_is_einval)
{
    struct tide_net_detail d;
    memset(&d, 0xff, sizeof d);
    char text[16] = "stale";
    ck_assert_int_eq(tide_tcp_factory_last_error(NULL, &d, text, sizeof text),
                     TIDE_EINVAL);
    ck_assert_int_eq(d.code, 0);
    ck_assert_int_eq(d.sys_errno, 0);
    ck_assert_uint_eq(d.ssl_error, 0);
    ck_assert_str_eq(text, "");
    memset(&d, 0xff, sizeof d);
    strcpy(text, "stale");
    ck_assert_int_eq(tide_tls_factory_last_error(NULL, &d, text, sizeof text),
                     TIDE_EINVAL);
    ck_assert_int_eq(d.code, 0);
    ck_assert_str_eq(text, "");
    ck_assert_int_eq(tide_tls_factory_last_error(NULL, NULL, NULL, 0),
                     TIDE_EINVAL);
}
END_TEST

/* A table bound from no factory must not reach a pool: it is cleared, and
 * tide_evpool_new refuses a table without make. */
START_TEST(null_factory_bind_clears_the_table)
{
    struct tide_factory table;
    memset(&table, 0xa5, sizeof table);
    tide_tcp_factory_bind(NULL, &table);
    ck_assert(table.make == NULL);
    ck_assert_ptr_null(table.arg);
    struct tide_evpool *pool = (void *)1;
    ck_assert_int_eq(tide_evpool_new(fx->base, &table, NULL, &pool),
                     TIDE_EINVAL);
    ck_assert_ptr_null(pool);
    memset(&table, 0xa5, sizeof table);
    tide_tls_factory_bind(NULL, &table);
    ck_assert(table.make == NULL && table.destroy == NULL);
}
END_TEST

START_TEST(null_factory_stats_read_as_zero)
{
    struct tide_net_stats st;
    memset(&st, 0xff, sizeof st);
    tide_tcp_factory_stats(NULL, &st);
    ck_assert_uint_eq(st.makes, 0);
    ck_assert_int_eq(st.live, 0);
    memset(&st, 0xff, sizeof st);
    tide_tls_factory_stats(NULL, &st);
    ck_assert_uint_eq(st.made, 0);
    ck_assert_int_eq(st.sessions_cached, 0);
}
END_TEST

START_TEST(null_bev_event_error_is_einval)
{
    struct tide_net_detail d;
    memset(&d, 0xff, sizeof d);
    char text[16] = "stale";
    ck_assert_int_eq(
        tide_net_event_error(NULL, BEV_EVENT_EOF, &d, text, sizeof text),
        TIDE_EINVAL);
    ck_assert_int_eq(d.code, 0);
    ck_assert_str_eq(text, "");
}
END_TEST

/* Every public function of <tidepool/tls.h>, with each pointer it takes
 * NULL in turn (the others valid): each case returns whether the answer is
 * the one the header promises. Nothing may crash. */
struct objects {
    struct tide_tcp_factory *tcp;
    struct tide_tls_factory *tls;
    struct tide_tls_sessions *sessions;
    struct bufferevent *bev; /* plain, never connected */
    struct tide_tcp_options tcp_o;
    struct tide_tls_options tls_o;
};

static struct objects ob;

static bool tcp_new_base(void)
{
    struct tide_tcp_factory *f = (void *)1;
    return tide_tcp_factory_new(NULL, &ob.tcp_o, &f) == TIDE_EINVAL && !f;
}
static bool tcp_new_options(void)
{
    struct tide_tcp_factory *f = (void *)1;
    return tide_tcp_factory_new(fx->base, NULL, &f) == TIDE_EINVAL && !f;
}
static bool tcp_new_out(void)
{
    return tide_tcp_factory_new(fx->base, &ob.tcp_o, NULL) == TIDE_EINVAL;
}
static bool tcp_new_host(void)
{
    struct tide_tcp_options o = ob.tcp_o;
    o.host = NULL;
    struct tide_tcp_factory *f = (void *)1;
    return tide_tcp_factory_new(fx->base, &o, &f) == TIDE_EINVAL && !f;
}
static bool tcp_bind_factory(void)
{
    struct tide_factory t;
    memset(&t, 0xa5, sizeof t);
    tide_tcp_factory_bind(NULL, &t);
    return !t.make && !t.destroy && !t.arg;
}
static bool tcp_bind_out(void)
{
    tide_tcp_factory_bind(ob.tcp, NULL);
    return true;
}
static bool tcp_free_factory(void)
{
    tide_tcp_factory_free(NULL);
    return true;
}
static bool tcp_last_error_factory(void)
{
    char b[8] = "x";
    return tide_tcp_factory_last_error(NULL, NULL, b, sizeof b) ==
               TIDE_EINVAL &&
           b[0] == '\0';
}
static bool tcp_last_error_optional(void)
{
    return tide_tcp_factory_last_error(ob.tcp, NULL, NULL, 8) == 0;
}
static bool tcp_stats_factory(void)
{
    struct tide_net_stats st;
    memset(&st, 0xff, sizeof st);
    tide_tcp_factory_stats(NULL, &st);
    return st.makes == 0 && st.live == 0;
}
static bool tcp_stats_out(void)
{
    tide_tcp_factory_stats(ob.tcp, NULL);
    return true;
}
static bool sessions_new_out(void)
{
    return tide_tls_sessions_new(4, NULL) == TIDE_EINVAL;
}
static bool sessions_free_cache(void)
{
    tide_tls_sessions_free(NULL);
    return true;
}
static bool sessions_count_cache(void)
{
    return tide_tls_sessions_count(NULL) == 0;
}
static bool tls_new_base(void)
{
    struct tide_tls_factory *f = (void *)1;
    return tide_tls_factory_new(NULL, &ob.tls_o, &f) == TIDE_EINVAL && !f;
}
static bool tls_new_options(void)
{
    struct tide_tls_factory *f = (void *)1;
    return tide_tls_factory_new(fx->base, NULL, &f) == TIDE_EINVAL && !f;
}
static bool tls_new_out(void)
{
    return tide_tls_factory_new(fx->base, &ob.tls_o, NULL) == TIDE_EINVAL;
}
static bool tls_new_host(void)
{
    struct tide_tls_options o = ob.tls_o;
    o.tcp.host = NULL;
    struct tide_tls_factory *f = (void *)1;
    return tide_tls_factory_new(fx->base, &o, &f) == TIDE_EINVAL && !f;
}
static bool tls_bind_factory(void)
{
    struct tide_factory t;
    memset(&t, 0xa5, sizeof t);
    tide_tls_factory_bind(NULL, &t);
    return !t.make && !t.destroy && !t.arg;
}
static bool tls_bind_out(void)
{
    tide_tls_factory_bind(ob.tls, NULL);
    return true;
}
static bool tls_free_factory(void)
{
    tide_tls_factory_free(NULL);
    return true;
}
static bool tls_last_error_factory(void)
{
    char b[8] = "x";
    return tide_tls_factory_last_error(NULL, NULL, b, sizeof b) ==
               TIDE_EINVAL &&
           b[0] == '\0';
}
static bool tls_last_error_optional(void)
{
    return tide_tls_factory_last_error(ob.tls, NULL, NULL, 8) == 0;
}
static bool tls_stats_factory(void)
{
    struct tide_net_stats st;
    memset(&st, 0xff, sizeof st);
    tide_tls_factory_stats(NULL, &st);
    return st.made == 0 && st.sessions_cached == 0;
}
static bool tls_stats_out(void)
{
    tide_tls_factory_stats(ob.tls, NULL);
    return true;
}
static bool resumed_bev(void)
{
    return !tide_tls_resumed(NULL);
}
static bool alpn_bev(void)
{
    char b[8] = "x";
    return tide_tls_alpn(NULL, b, sizeof b) == 0 && b[0] == '\0';
}
static bool alpn_buf(void)
{
    return tide_tls_alpn(ob.bev, NULL, 8) == 0;
}
static bool event_error_bev(void)
{
    char b[8] = "x";
    return tide_net_event_error(NULL, BEV_EVENT_ERROR, NULL, b, sizeof b) ==
               TIDE_EINVAL &&
           b[0] == '\0';
}
static bool event_error_optional(void)
{
    return tide_net_event_error(ob.bev, BEV_EVENT_EOF, NULL, NULL, 8) ==
           TIDE_EPEER_CLOSED;
}

static const struct {
    const char *what;
    bool (*ok)(void);
} null_cases[] = {
    {"tide_tcp_factory_new(NULL base)", tcp_new_base},
    {"tide_tcp_factory_new(NULL options)", tcp_new_options},
    {"tide_tcp_factory_new(NULL out)", tcp_new_out},
    {"tide_tcp_factory_new(NULL host)", tcp_new_host},
    {"tide_tcp_factory_bind(NULL factory)", tcp_bind_factory},
    {"tide_tcp_factory_bind(NULL out)", tcp_bind_out},
    {"tide_tcp_factory_free(NULL)", tcp_free_factory},
    {"tide_tcp_factory_last_error(NULL factory)", tcp_last_error_factory},
    {"tide_tcp_factory_last_error(NULL detail, buf)", tcp_last_error_optional},
    {"tide_tcp_factory_stats(NULL factory)", tcp_stats_factory},
    {"tide_tcp_factory_stats(NULL out)", tcp_stats_out},
    {"tide_tls_sessions_new(NULL out)", sessions_new_out},
    {"tide_tls_sessions_free(NULL)", sessions_free_cache},
    {"tide_tls_sessions_count(NULL)", sessions_count_cache},
    {"tide_tls_factory_new(NULL base)", tls_new_base},
    {"tide_tls_factory_new(NULL options)", tls_new_options},
    {"tide_tls_factory_new(NULL out)", tls_new_out},
    {"tide_tls_factory_new(NULL host)", tls_new_host},
    {"tide_tls_factory_bind(NULL factory)", tls_bind_factory},
    {"tide_tls_factory_bind(NULL out)", tls_bind_out},
    {"tide_tls_factory_free(NULL)", tls_free_factory},
    {"tide_tls_factory_last_error(NULL factory)", tls_last_error_factory},
    {"tide_tls_factory_last_error(NULL detail, buf)", tls_last_error_optional},
    {"tide_tls_factory_stats(NULL factory)", tls_stats_factory},
    {"tide_tls_factory_stats(NULL out)", tls_stats_out},
    {"tide_tls_resumed(NULL)", resumed_bev},
    {"tide_tls_alpn(NULL bev)", alpn_bev},
    {"tide_tls_alpn(NULL buf)", alpn_buf},
    {"tide_net_event_error(NULL bev)", event_error_bev},
    {"tide_net_event_error(NULL detail, buf)", event_error_optional},
};

START_TEST(every_public_function_takes_null)
{
    ob.tcp_o = (struct tide_tcp_options){.host = "127.0.0.1", .port = 9};
    ob.tls_o = (struct tide_tls_options){.tcp = ob.tcp_o, .ca_pem = fx->ca_pem};
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &ob.tcp_o, &ob.tcp), 0);
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &ob.tls_o, &ob.tls), 0);
    ck_assert_int_eq(tide_tls_sessions_new(0, &ob.sessions), 0);
    ob.bev = bufferevent_socket_new(fx->base, -1, 0);
    ck_assert_ptr_nonnull(ob.bev);
    /* every case runs, and all that fail are named at once */
    char failed[2048] = "";
    size_t n = 0;
    for (size_t i = 0; i < sizeof null_cases / sizeof null_cases[0]; i++)
        if (!null_cases[i].ok() && n < sizeof failed)
            n += (size_t)snprintf(failed + n, sizeof failed - n, " %s;",
                                  null_cases[i].what);
    ck_assert_msg(n == 0, "not the promised answer:%s", failed);
    bufferevent_free(ob.bev);
    tide_tls_sessions_free(ob.sessions);
    tide_tls_factory_free(ob.tls);
    tide_tcp_factory_free(ob.tcp);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("errors");
    fixture_add(tc);
    tcase_add_test(tc, codes_are_distinct_and_in_this_layers_range);
    tcase_add_test(tc, error_table_names_every_code);
    tcase_add_test(tc, connect_errnos_map_to_codes_by_how_telling);
    tcase_add_test(tc, events_read_into_codes);
    tcase_add_test(tc, buffers_are_cut_to_fit_and_terminated);
    tcase_add_test(tc, fresh_factory_has_no_last_error);
    tcase_add_test(tc, tls_getters_on_a_plain_connection);
    tcase_add_test(tc, session_cache_starts_empty);
    tcase_add_test(tc, port_70000_is_refused);
    tcase_add_test(tc, negative_port_is_refused);
    tcase_add_test(tc, ports_1_and_65535_are_accepted);
    tcase_add_test(tc, service_number_is_digits_only);
    tcase_add_test(tc, integer_options_out_of_range_are_refused);
    tcase_add_test(tc, tls_integer_options_out_of_range_are_refused);
    tcase_add_test(tc, null_factory_last_error_is_einval);
    tcase_add_test(tc, null_factory_bind_clears_the_table);
    tcase_add_test(tc, null_factory_stats_read_as_zero);
    tcase_add_test(tc, null_bev_event_error_is_einval);
    tcase_add_test(tc, every_public_function_takes_null);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
