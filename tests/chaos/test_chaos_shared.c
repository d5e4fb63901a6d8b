/* Shared loans under faults: the pool lends each connection to up to 16
 * callers at once (limits.streams 16), who speak the multiplexed echo
 * protocol of mux.h through its protocol layer, in front of the chaos
 * proxy; every tenth caller asks for its connection alone. Built twice,
 * over TCP and over TLS. Beside what every phase asserts (load.h): no
 * reply for a borrower not in flight, no connection destroyed with a
 * borrower on it, no exclusive loan shared, every protocol session over. */
#include "load.h"
#include "runner.h"

#define SHARED(...)                                                            \
    (&(struct chaos_phase){.tls = CHAOS_OVER_TLS,                              \
                           .streams = 16,                                      \
                           .alone_every = 10,                                  \
                           __VA_ARGS__})

/* one request chunk in fifty is never forwarded: the connection is reset
 * with every borrower on it waiting */
START_TEST(reset_mid_flight_in_order)
{
    chaos_phase(SHARED(.name = "shared-reset-mid-flight",
                       .fault = CHAOS_RESET_MID_REQUEST,
                       .knobs = {.every = 50}, .ward = CHAOS_WARD_STRIKES));
}
END_TEST

START_TEST(reset_mid_flight_out_of_order)
{
    chaos_phase(SHARED(.name = "shared-reset-reordered",
                       .fault = CHAOS_RESET_MID_REQUEST,
                       .knobs = {.every = 50}, .reorder = true,
                       .ward = CHAOS_WARD_ADAPTIVE));
}
END_TEST

/* the server closes a connection, with what it read unanswered, every
 * 300th frame: a peer that closes with its loans out */
START_TEST(peer_closes_with_loans_out)
{
    struct chaos_figures f;
    chaos_run(SHARED(.name = "shared-peer-closes", .close_every = 300,
                     .reorder = true, .ward = CHAOS_WARD_ADAPTIVE),
              &f);
    chaos_check(&f);
    ck_assert_msg(f.most_at_break >= 8,
                  "a close broke at most %lld loans at once",
                  (long long)f.most_at_break);
}
END_TEST

/* the server hangs: every borrower on a connection waits, the layer
 * breaks it on its stall */
START_TEST(blackhole_with_loans_out)
{
    chaos_phase(SHARED(.name = "shared-blackhole", .fault = CHAOS_BLACKHOLE,
                       .backend_down = true, .ward = CHAOS_WARD_STRIKES));
}
END_TEST

/* the busiest connection's capacity set to 0 (a GOAWAY) every 60 ms */
START_TEST(capacity_zero_with_loans_out)
{
    struct chaos_figures f;
    chaos_run(SHARED(.name = "shared-drain", .drain = true,
                     .ward = CHAOS_WARD_ADAPTIVE),
              &f);
    chaos_check(&f);
    ck_assert_msg(f.drains > 0, "nothing was drained");
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s =
        suite_create(CHAOS_OVER_TLS ? "chaos_shared_tls" : "chaos_shared_tcp");
    TCase *tc = tcase_create("shared");
    tcase_add_unchecked_fixture(tc, chaos_totals_open, chaos_totals_close);
    tcase_set_timeout(tc, CHAOS_TEST_TIMEOUT);
    tcase_add_test(tc, reset_mid_flight_in_order);
    tcase_add_test(tc, reset_mid_flight_out_of_order);
    tcase_add_test(tc, peer_closes_with_loans_out);
    tcase_add_test(tc, blackhole_with_loans_out);
    tcase_add_test(tc, capacity_zero_with_loans_out);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(make_suite)
