/* tests for evloop/waits.c: the acquire-wait histogram behind the stats'
 * percentiles (driven directly: it is a pure function of what it saw). */
#include <string.h>

#include "evloop_internal.h"

#include "runner.h"

START_TEST(quantiles_of_nothing_are_zero)
{
    struct waits w = {0};
    ck_assert_int_eq(tide__waits_quantile(&w, 0.5), 0);
    ck_assert_int_eq(tide__waits_quantile(&w, 0.99), 0);
    ck_assert_int_eq(w.max, 0);
}
END_TEST

START_TEST(small_waits_are_exact)
{
    struct waits w = {0};
    for (int64_t ns = 0; ns < 8; ns++)
        tide__waits_add(&w, ns);
    ck_assert_int_eq(tide__waits_quantile(&w, 0.0), 0);
    ck_assert_int_eq(tide__waits_quantile(&w, 0.5), 4);
    ck_assert_int_eq(tide__waits_quantile(&w, 1.0), 7);
    tide__waits_add(&w, -5); /* a clock step back counts as no wait */
    ck_assert_uint_eq(w.count, 9);
    ck_assert_int_eq(tide__waits_quantile(&w, 0.0), 0);
}
END_TEST

START_TEST(quantiles_are_within_an_eighth)
{
    struct waits w = {0};
    /* 1 ms .. 1000 ms, one each */
    for (int64_t ms = 1; ms <= 1000; ms++)
        tide__waits_add(&w, TIDE_MS(ms));
    const double qs[] = {0.5, 0.9, 0.99};
    for (size_t i = 0; i < 3; i++) {
        double truth = (double)TIDE_MS(1) * (qs[i] * 1000 + 1);
        double got = (double)tide__waits_quantile(&w, qs[i]);
        ck_assert_msg(got >= truth * 0.875 && got <= truth * 1.125,
                      "q%.2f: %.0f, truth %.0f", qs[i], got, truth);
    }
    ck_assert_int_eq(w.max, TIDE_MS(1000));
    /* never above the largest seen */
    ck_assert_int_le(tide__waits_quantile(&w, 1.0), w.max);
}
END_TEST

START_TEST(huge_waits_stay_in_range)
{
    struct waits w = {0};
    tide__waits_add(&w, INT64_MAX);
    tide__waits_add(&w, TIDE_SEC(3600));
    ck_assert_int_eq(w.max, INT64_MAX);
    ck_assert_int_eq(tide__waits_quantile(&w, 1.0), INT64_MAX);
    int64_t p0 = tide__waits_quantile(&w, 0.0);
    ck_assert_int_ge(p0, TIDE_SEC(3600));
    ck_assert_int_le(p0, TIDE_SEC(3600) / 8 * 9);
}
END_TEST

/* The recent waits move on in slices: a wait counts for about a minute,
 * then only the lifetime figures keep it. */
START_TEST(recent_waits_forget_after_a_minute)
{
    static struct recent_waits r; /* 16 KiB: off the stack */
    static struct waits m;
    static struct waits all; /* the lifetime figures beside */
    memset(&r, 0, sizeof r);
    memset(&all, 0, sizeof all);
    int64_t t0 = TIDE_SEC(1000);
    tide__recent_merge(&r, t0, &m);
    ck_assert_uint_eq(m.count, 0);
    tide__wait_ended(&all, &r, t0, TIDE_MS(500)); /* a spike */
    for (int k = 0; k < 99; k++)
        tide__wait_ended(&all, &r, t0 + TIDE_SEC(1), TIDE_US(10));
    tide__recent_merge(&r, t0 + TIDE_SEC(30), &m);
    ck_assert_uint_eq(m.count, 100);
    ck_assert_int_eq(m.max, TIDE_MS(500));
    ck_assert_int_ge(tide__waits_quantile(&m, 0.995), TIDE_MS(400));
    /* a minute and a slice later the spike is gone */
    tide__wait_ended(&all, &r, t0 + TIDE_SEC(76), TIDE_US(20));
    tide__recent_merge(&r, t0 + TIDE_SEC(76), &m);
    ck_assert_uint_eq(m.count, 1);
    ck_assert_int_eq(m.max, TIDE_US(20));
    /* and with nothing added, merging later still drops the old slices */
    tide__recent_merge(&r, t0 + TIDE_SEC(200), &m);
    ck_assert_uint_eq(m.count, 0);
    ck_assert_uint_eq(all.count, 101); /* the lifetime ones keep them all */
    ck_assert_int_eq(all.max, TIDE_MS(500));
}
END_TEST

static Suite *waits_suite(void)
{
    Suite *s = suite_create("waits");
    TCase *tc = tcase_create("histogram");
    tcase_add_test(tc, quantiles_of_nothing_are_zero);
    tcase_add_test(tc, small_waits_are_exact);
    tcase_add_test(tc, quantiles_are_within_an_eighth);
    tcase_add_test(tc, huge_waits_stay_in_range);
    tcase_add_test(tc, recent_waits_forget_after_a_minute);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(waits_suite)
