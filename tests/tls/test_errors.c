/* tls/errors.c: the codes of this layer, an event on a lent connection read
 * into a code, the getters' buffers, and the connection getters on a plain
 * TCP bufferevent. (The sentences live in core/error.c's one table.) */
#include <errno.h>
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
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
