/* tide_gate_*: a count with a ceiling, independent of time. */
#include <tidepool/core.h>

#include "runner.h"

static struct tide_gate *gate(int64_t ceiling)
{
    struct tide_gate *g = NULL;
    ck_assert_int_eq(tide_gate_new(ceiling, &g), 0);
    ck_assert_ptr_nonnull(g);
    return g;
}

START_TEST(new_refuses_a_ceiling_below_one)
{
    struct tide_gate *g = NULL;
    ck_assert_int_eq(tide_gate_new(0, &g), TIDE_EINVAL);
    ck_assert_int_eq(tide_gate_new(-1, &g), TIDE_EINVAL);
    ck_assert_int_eq(tide_gate_new(INT64_MIN, &g), TIDE_EINVAL);
}
END_TEST

START_TEST(new_refuses_a_null_out)
{
    ck_assert_int_eq(tide_gate_new(3, NULL), TIDE_EINVAL);
}
END_TEST

START_TEST(starts_empty)
{
    struct tide_gate *g = gate(3);
    ck_assert_int_eq(tide_gate_held(g), 0);
    tide_gate_free(g);
}
END_TEST

START_TEST(enter_succeeds_up_to_the_ceiling)
{
    struct tide_gate *g = gate(3);
    for (int64_t i = 1; i <= 3; i++) {
        ck_assert(tide_gate_enter(g));
        ck_assert_int_eq(tide_gate_held(g), i);
    }
    tide_gate_free(g);
}
END_TEST

START_TEST(enter_past_the_ceiling_is_refused_and_not_counted)
{
    struct tide_gate *g = gate(3);
    for (int i = 0; i < 3; i++)
        ck_assert(tide_gate_enter(g));
    for (int i = 0; i < 5; i++) {
        ck_assert(!tide_gate_enter(g));
        ck_assert_int_eq(tide_gate_held(g), 3);
    }
    /* the refused entries left nothing to leave */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(tide_gate_leave(g), 0);
    ck_assert_int_eq(tide_gate_leave(g), TIDE_EGATE);
    tide_gate_free(g);
}
END_TEST

START_TEST(ceiling_of_one_admits_one_at_a_time)
{
    struct tide_gate *g = gate(1);
    ck_assert(tide_gate_enter(g));
    ck_assert(!tide_gate_enter(g));
    ck_assert_int_eq(tide_gate_leave(g), 0);
    ck_assert(tide_gate_enter(g));
    ck_assert(!tide_gate_enter(g));
    tide_gate_free(g);
}
END_TEST

START_TEST(unlimited_ceiling_never_refuses)
{
    struct tide_gate *g = gate(TIDE_UNLIMITED);
    for (int i = 0; i < 100000; i++)
        ck_assert(tide_gate_enter(g));
    ck_assert_int_eq(tide_gate_held(g), 100000);
    tide_gate_free(g);
}
END_TEST

START_TEST(leave_makes_room_for_one)
{
    struct tide_gate *g = gate(2);
    ck_assert(tide_gate_enter(g));
    ck_assert(tide_gate_enter(g));
    ck_assert_int_eq(tide_gate_leave(g), 0);
    ck_assert_int_eq(tide_gate_held(g), 1);
    ck_assert(tide_gate_enter(g));
    ck_assert(!tide_gate_enter(g));
    tide_gate_free(g);
}
END_TEST

START_TEST(leave_with_nobody_inside_returns_egate)
{
    struct tide_gate *g = gate(2);
    ck_assert_int_eq(tide_gate_leave(g), TIDE_EGATE);
    ck_assert(tide_gate_enter(g));
    ck_assert_int_eq(tide_gate_leave(g), 0);
    ck_assert_int_eq(tide_gate_leave(g), TIDE_EGATE);
    tide_gate_free(g);
}
END_TEST

START_TEST(leave_with_nobody_inside_changes_nothing)
{
    struct tide_gate *g = gate(2);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(tide_gate_leave(g), TIDE_EGATE);
    ck_assert_int_eq(tide_gate_held(g), 0);
    /* still exactly the ceiling's worth of room, no credit for the misuse */
    ck_assert(tide_gate_enter(g));
    ck_assert(tide_gate_enter(g));
    ck_assert(!tide_gate_enter(g));
    ck_assert_int_eq(tide_gate_held(g), 2);
    tide_gate_free(g);
}
END_TEST

START_TEST(null_gate_is_answered_calmly)
{
    ck_assert(!tide_gate_enter(NULL));
    ck_assert_int_eq(tide_gate_leave(NULL), TIDE_EINVAL);
    ck_assert_int_eq(tide_gate_held(NULL), 0);
    tide_gate_free(NULL);
}
END_TEST

static Suite *gate_suite(void)
{
    Suite *s = suite_create("gate");
    TCase *tc = tcase_create("gate");
    tcase_add_test(tc, null_gate_is_answered_calmly);
    tcase_add_test(tc, new_refuses_a_ceiling_below_one);
    tcase_add_test(tc, new_refuses_a_null_out);
    tcase_add_test(tc, starts_empty);
    tcase_add_test(tc, enter_succeeds_up_to_the_ceiling);
    tcase_add_test(tc, enter_past_the_ceiling_is_refused_and_not_counted);
    tcase_add_test(tc, ceiling_of_one_admits_one_at_a_time);
    tcase_add_test(tc, unlimited_ceiling_never_refuses);
    tcase_add_test(tc, leave_makes_room_for_one);
    tcase_add_test(tc, leave_with_nobody_inside_returns_egate);
    tcase_add_test(tc, leave_with_nobody_inside_changes_nothing);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(gate_suite)
