/* The pool of <tidepool/evloop.h> over the TCP or the TLS factory of
 * <tidepool/tls.h>, under faults the chaos proxy injects on real sockets in
 * front of an echo server: 50 callers, a pool of 16, one phase per fault (see
 * load.h for what every phase asserts). Built twice, with CHAOS_OVER_TLS 0
 * and 1: the same phases over TCP and over TLS. */
#include "load.h"
#include "runner.h"

/* every third connection is reset as soon as it is accepted */
START_TEST(reset_on_connect_is_survived)
{
    chaos_phase(&(struct chaos_phase){
        .name = "reset-on-connect",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_RESET_ON_CONNECT,
        .knobs = {.every = 3},
        .backend_down = false,
        .ward = CHAOS_WARD_ADAPTIVE,
    });
}
END_TEST

/* one request in fifty is never forwarded: its caller is reset while it waits
 */
START_TEST(reset_mid_request_is_survived)
{
    chaos_phase(&(struct chaos_phase){
        .name = "reset-mid-request",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_RESET_MID_REQUEST,
        .knobs = {.every = 50},
        .backend_down = false,
        .ward = CHAOS_WARD_STRIKES,
    });
}
END_TEST

/* connections quiet for 50 ms are reset under the pool */
START_TEST(reset_while_idle_is_survived)
{
    chaos_phase(&(struct chaos_phase){
        .name = "reset-while-idle",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_RESET_IDLE,
        .knobs = {.idle_ms = 50},
        .think_ms = 150,
        .backend_down = false,
        .ward = CHAOS_WARD_ADAPTIVE,
    });
}
END_TEST

/* the server hangs: connections accepted, nothing ever answered */
START_TEST(blackhole_is_survived)
{
    chaos_phase(&(struct chaos_phase){
        .name = "blackhole",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_BLACKHOLE,
        .knobs = {0},
        .backend_down = true,
        .ward = CHAOS_WARD_STRIKES,
    });
}
END_TEST

/* the server is gone: every connection closed, the listener closed */
START_TEST(refused_is_survived)
{
    chaos_phase(&(struct chaos_phase){
        .name = "refused",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_REFUSE,
        .knobs = {0},
        .backend_down = true,
        .ward = CHAOS_WARD_ADAPTIVE,
    });
}
END_TEST

/* the server stops accepting: connections closed, the accept queue full, so
 * connects hang */
START_TEST(full_backlog_is_survived)
{
    chaos_phase(&(struct chaos_phase){
        .name = "full-backlog",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_FULL_BACKLOG,
        .knobs = {0},
        .backend_down = true,
        .ward = CHAOS_WARD_STRIKES,
    });
}
END_TEST

/* the server accepts one connection every 25 ms */
START_TEST(slow_accept_is_survived)
{
    chaos_phase(&(struct chaos_phase){
        .name = "slow-accept",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_SLOW_ACCEPT,
        .knobs = {.delay_ms = 25},
        .backend_down = false,
        .ward = CHAOS_WARD_ADAPTIVE,
    });
}
END_TEST

/* the server's first bytes on each connection come 200 ms late */
START_TEST(slow_handshake_is_survived)
{
    chaos_phase(&(struct chaos_phase){
        .name = "slow-handshake",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_SLOW_HANDSHAKE,
        .knobs = {.delay_ms = 200},
        .backend_down = false,
        .ward = CHAOS_WARD_STRIKES,
    });
}
END_TEST

/* the server closes connections quiet for 50 ms */
START_TEST(idle_close_is_survived)
{
    chaos_phase(&(struct chaos_phase){
        .name = "idle-close",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_IDLE_CLOSE,
        .knobs = {.idle_ms = 50},
        .think_ms = 150,
        .backend_down = false,
        .ward = CHAOS_WARD_STRIKES,
    });
}
END_TEST

/* connections quiet for 50 ms get bytes nobody asked for */
START_TEST(junk_while_idle_is_survived)
{
    chaos_phase(&(struct chaos_phase){
        .name = "junk-while-idle",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_IDLE_JUNK,
        .knobs = {.idle_ms = 50},
        .think_ms = 150,
        .backend_down = false,
        .ward = CHAOS_WARD_ADAPTIVE,
    });
}
END_TEST

/* one server write in fifty is cut in half and the connection closed */
START_TEST(truncated_reply_is_survived)
{
    chaos_phase(&(struct chaos_phase){
        .name = "truncated-reply",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_TRUNCATE,
        .knobs = {.every = 50},
        .backend_down = false,
        .ward = CHAOS_WARD_STRIKES,
    });
}
END_TEST

/* every server write is held 20 ms */
START_TEST(latency_is_survived)
{
    chaos_phase(&(struct chaos_phase){
        .name = "latency",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_LATENCY,
        .knobs = {.delay_ms = 20},
        .backend_down = false,
        .ward = CHAOS_WARD_ADAPTIVE,
    });
}
END_TEST

/* one server write in a hundred is held 1.3 s, past its caller's 1 s
 * timeout: the caller discards, and the late reply must reach nobody */
START_TEST(latency_spike_is_survived)
{
    chaos_phase(&(struct chaos_phase){
        .name = "latency-spike",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_STALL,
        .knobs = {.every = 100, .delay_ms = 1300},
        .backend_down = false,
        /* not five strikes: under loop lag several 1 s timeouts end in one
         * pass, five discards in a row, and that policy opens as designed */
        .ward = CHAOS_WARD_ADAPTIVE,
    });
}
END_TEST

/* the server closes each connection after a reply, its FIN 3 ms late: a
 * released connection looks clean and is lent again before the close
 * comes, and its next borrower meets the close before any byte of its
 * reply. Those loans are stale, not the backend's failures: under five
 * strikes the breaker must stay shut while the backend is up (counted as
 * discards, a quarter to a half of the acquires were refused). Over TLS
 * the answers to a link's first three client chunks are spared: two are
 * the handshake's, and the server's session tickets may race the first
 * request; so a TLS link serves two exchanges, a TCP one one. */
START_TEST(close_after_each_reply_is_no_failure)
{
    struct chaos_phase ph = {
        .name = "close-after-reply",
        .tls = CHAOS_OVER_TLS,
        .fault = CHAOS_CLOSE_AFTER_REPLY,
        .knobs = {.delay_ms = 3, .spared = CHAOS_OVER_TLS ? 3 : 0},
        .backend_down = false,
        .ward = CHAOS_WARD_STRIKES,
    };
    struct chaos_figures f;
    chaos_run(&ph, &f);
    chaos_check(&f);
    /* the case was made: loans met the late close */
    ck_assert_msg(f.stale_loans > 0, "%s: no loan ended stale", f.name);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create(CHAOS_OVER_TLS ? "chaos_tls" : "chaos_tcp");
    TCase *tc = tcase_create("faults");
    tcase_add_unchecked_fixture(tc, chaos_totals_open, chaos_totals_close);
    tcase_set_timeout(tc, CHAOS_TEST_TIMEOUT);
    tcase_add_test(tc, reset_on_connect_is_survived);
    tcase_add_test(tc, reset_mid_request_is_survived);
    tcase_add_test(tc, reset_while_idle_is_survived);
    tcase_add_test(tc, blackhole_is_survived);
    tcase_add_test(tc, refused_is_survived);
    tcase_add_test(tc, full_backlog_is_survived);
    tcase_add_test(tc, slow_accept_is_survived);
    tcase_add_test(tc, slow_handshake_is_survived);
    tcase_add_test(tc, idle_close_is_survived);
    tcase_add_test(tc, junk_while_idle_is_survived);
    tcase_add_test(tc, truncated_reply_is_survived);
    tcase_add_test(tc, latency_is_survived);
    tcase_add_test(tc, latency_spike_is_survived);
    tcase_add_test(tc, close_after_each_reply_is_no_failure);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(make_suite)
