/* tests for core/shedder.c, driven through a pool's ward (the shedder has
 * no object of its own: it is a guard of the pool). */
#include <tidepool/core.h>

#include "runner.h"

static int res[16];

static struct tide_pool *shedding_pool(int64_t size,
                                       struct tide_shedder_options so)
{
    struct tide_ward w = {.shedder = &so};
    struct tide_limits l = TIDE_LIMITS(.size = size);
    struct tide_pool *p = NULL;
    ck_assert_int_eq(tide_pool_new(&l, &w, 0, &p), 0);
    return p;
}

/* Lends n fresh resources (made through MAKE). */
static void lend(struct tide_pool *p, int from, int n, int64_t now)
{
    for (int i = from; i < from + n; i++) {
        ck_assert_int_eq(tide_pool_take(p, now, 0.5).answer, TIDE_MAKE);
        ck_assert_int_eq(tide_pool_made(p, &res[i], now), 0);
    }
}

START_TEST(lends_everything_without_overload)
{
    struct tide_pool *p = shedding_pool(4, (struct tide_shedder_options){0});
    lend(p, 0, 4, 0);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_WAIT);
    tide_pool_free(p);
}
END_TEST

START_TEST(lag_below_target_changes_nothing)
{
    struct tide_pool *p = shedding_pool(4, (struct tide_shedder_options){0});
    lend(p, 0, 2, 0);
    tide_pool_overload(p, 0, TIDE_MS(50)); /* at target, not above */
    lend(p, 2, 2, 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(lag_cuts_ceiling_to_half_in_flight)
{
    struct tide_pool *p = shedding_pool(10, (struct tide_shedder_options){0});
    lend(p, 0, 6, 0);
    tide_pool_overload(p, 0, TIDE_MS(80)); /* ceiling = 6 x 0.5 = 3 */
    for (int i = 0; i < 4; i++)
        tide_pool_give(p, &res[i], 1); /* 2 in flight; lagging: 3 -> 1.5 -> 1 */
    struct tide_taken t = tide_pool_take(p, 1, 0.5);
    ck_assert_int_eq(t.answer, TIDE_SHED);
    ck_assert_int_eq(t.guard, TIDE_GUARD_SHEDDER);
    tide_pool_free(p);
}
END_TEST

START_TEST(ceiling_never_below_floor)
{
    struct tide_pool *p =
        shedding_pool(10, (struct tide_shedder_options){.floor = 2});
    tide_pool_overload(p, 0, TIDE_SEC(1)); /* nothing in flight */
    lend(p, 0, 2, 0);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_SHED);
    tide_pool_free(p);
}
END_TEST

START_TEST(lag_sample_stops_counting_after_hold)
{
    struct tide_pool *p =
        shedding_pool(10, (struct tide_shedder_options){.hold = TIDE_SEC(1)});
    lend(p, 0, 2, 0);
    tide_pool_overload(p, 0, TIDE_MS(500)); /* ceiling 1 */
    /* within hold the settle cuts again (floor 1): one in flight is all */
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(1) - 1), 1);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(1) - 1, 0.5).answer, TIDE_SHED);
    /* after hold the sample no longer counts: the settle adds one */
    ck_assert_int_eq(tide_pool_give(p, &res[1], TIDE_SEC(1)), 1);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(1), 0.5).answer, TIDE_READY);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(1), 0.5).answer, TIDE_READY);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(1), 0.5).answer, TIDE_SHED);
    tide_pool_free(p);
}
END_TEST

START_TEST(lag_sample_counts_for_a_clock_gone_back)
{
    struct tide_pool *p =
        shedding_pool(10, (struct tide_shedder_options){.hold = TIDE_SEC(1)});
    lend(p, 0, 2, TIDE_SEC(10));
    tide_pool_overload(p, TIDE_SEC(10), TIDE_MS(500)); /* ceiling 1 */
    /* a give stamped before the sample still settles while it holds */
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(9)), 1);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(9), 0.5).answer, TIDE_SHED);
    tide_pool_free(p);
}
END_TEST

START_TEST(recovers_additively_when_calm)
{
    struct tide_pool *p = shedding_pool(10, (struct tide_shedder_options){0});
    lend(p, 0, 4, 0);
    tide_pool_overload(p, 0, TIDE_SEC(1)); /* ceiling 2 */
    int64_t calm = TIDE_SEC(5);
    /* each calm settle adds one: 4 gives -> ceiling 6, 0 in flight */
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(tide_pool_give(p, &res[i], calm), 1);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(tide_pool_take(p, calm, 0.5).answer, TIDE_READY);
    lend(p, 4, 2, calm);
    ck_assert_int_eq(tide_pool_take(p, calm, 0.5).answer, TIDE_SHED);
    tide_pool_free(p);
}
END_TEST

START_TEST(long_loans_signal_overload)
{
    struct tide_pool *p = shedding_pool(
        10, (struct tide_shedder_options){.loan_target = TIDE_SEC(1)});
    lend(p, 0, 4, 0);
    /* each loan overran: 10 -> 5 -> 2.5 -> 1.25 -> 1 */
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(tide_pool_give(p, &res[i], TIDE_SEC(2)), 1);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(2), 0.5).answer, TIDE_READY);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(2), 0.5).answer, TIDE_SHED);
    tide_pool_free(p);
}
END_TEST

/* A give by slot (the adapter's) settles each loan's ticket as a give by
 * pointer does: the shedder sees the overruns either way. */
START_TEST(long_loans_signal_overload_when_given_by_slot)
{
    struct tide_pool *p = shedding_pool(
        10, (struct tide_shedder_options){.loan_target = TIDE_SEC(1)});
    lend(p, 0, 4, 0);
    for (int i = 0; i < 4; i++) {
        uint32_t slot = tide_pool_slot(p, &res[i]);
        ck_assert_uint_ne(slot, TIDE_NO_SLOT);
        ck_assert_int_eq(tide_pool_give_at(p, slot, &res[i], TIDE_SEC(2)), 1);
    }
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(2), 0.5).answer, TIDE_READY);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(2), 0.5).answer, TIDE_SHED);
    tide_pool_free(p);
}
END_TEST

START_TEST(stale_is_handed_back_while_shedding)
{
    struct tide_limits l = TIDE_LIMITS(.keep = TIDE_SEC(1));
    struct tide_shedder_options so = {0};
    struct tide_ward w = {.shedder = &so};
    struct tide_pool *p = NULL;
    ck_assert_int_eq(tide_pool_new(&l, &w, 0, &p), 0);
    lend(p, 0, 2, 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    tide_pool_overload(p, TIDE_SEC(5),
                       TIDE_SEC(1)); /* 1 in flight: ceiling 1 */
    struct tide_taken t = tide_pool_take(p, TIDE_SEC(5), 0.5);
    ck_assert_int_eq(t.answer, TIDE_STALE);
    ck_assert_ptr_eq(t.item, &res[0]);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(5), 0.5).answer, TIDE_SHED);
    tide_pool_free(p);
}
END_TEST

START_TEST(overload_without_shedder_is_a_no_op)
{
    struct tide_pool *p = NULL;
    ck_assert_int_eq(tide_pool_new(NULL, NULL, 0, &p), 0);
    tide_pool_overload(p, 0, TIDE_SEC(10));
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

static Suite *shedder_suite(void)
{
    Suite *s = suite_create("shedder");
    TCase *tc = tcase_create("policy");
    tcase_add_test(tc, lends_everything_without_overload);
    tcase_add_test(tc, lag_below_target_changes_nothing);
    tcase_add_test(tc, lag_cuts_ceiling_to_half_in_flight);
    tcase_add_test(tc, ceiling_never_below_floor);
    tcase_add_test(tc, lag_sample_stops_counting_after_hold);
    tcase_add_test(tc, lag_sample_counts_for_a_clock_gone_back);
    tcase_add_test(tc, recovers_additively_when_calm);
    tcase_add_test(tc, long_loans_signal_overload);
    tcase_add_test(tc, long_loans_signal_overload_when_given_by_slot);
    tcase_add_test(tc, stale_is_handed_back_while_shedding);
    tcase_add_test(tc, overload_without_shedder_is_a_no_op);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(shedder_suite)
