/* tide_window_*: at most `quota` events in any `window`-long stretch,
 * counted exactly. */
#include <tidepool/core.h>

#include "runner.h"

#define T0 TIDE_SEC(1000) /* any origin: only differences matter */

static struct tide_window *window(int64_t quota, int64_t span)
{
    struct tide_window *w = NULL;
    ck_assert_int_eq(tide_window_new(quota, span, &w), 0);
    ck_assert_ptr_nonnull(w);
    return w;
}

/* ---- creation ----------------------------------------------------------- */

START_TEST(new_refuses_a_quota_below_one)
{
    struct tide_window *w = NULL;
    ck_assert_int_eq(tide_window_new(0, TIDE_SEC(1), &w), TIDE_EINVAL);
    ck_assert_int_eq(tide_window_new(-1, TIDE_SEC(1), &w), TIDE_EINVAL);
    ck_assert_int_eq(tide_window_new(INT64_MIN, TIDE_SEC(1), &w), TIDE_EINVAL);
}
END_TEST

START_TEST(new_refuses_a_window_not_above_zero)
{
    struct tide_window *w = NULL;
    ck_assert_int_eq(tide_window_new(3, 0, &w), TIDE_EINVAL);
    ck_assert_int_eq(tide_window_new(3, -TIDE_SEC(1), &w), TIDE_EINVAL);
}
END_TEST

START_TEST(new_refuses_a_null_out)
{
    ck_assert_int_eq(tide_window_new(3, TIDE_SEC(1), NULL), TIDE_EINVAL);
}
END_TEST

START_TEST(new_accepts_the_smallest_valid_arguments)
{
    struct tide_window *w = window(1, 1);
    ck_assert(tide_window_take(w, T0));
    ck_assert(!tide_window_take(w, T0));
    ck_assert(tide_window_take(w, T0 + 1));
    tide_window_free(w);
}
END_TEST

START_TEST(starts_with_the_whole_quota)
{
    struct tide_window *w = window(5, TIDE_SEC(1));
    ck_assert_int_eq(tide_window_left(w, T0), 5);
    ck_assert_int_eq(tide_window_next(w, T0), 0);
    tide_window_free(w);
}
END_TEST

/* ---- take -------------------------------------------------------------- */

START_TEST(take_counts_up_to_the_quota)
{
    struct tide_window *w = window(3, TIDE_SEC(1));
    ck_assert(tide_window_take(w, T0));
    ck_assert_int_eq(tide_window_left(w, T0), 2);
    ck_assert(tide_window_take(w, T0 + TIDE_MS(10)));
    ck_assert_int_eq(tide_window_left(w, T0 + TIDE_MS(10)), 1);
    ck_assert(tide_window_take(w, T0 + TIDE_MS(20)));
    ck_assert_int_eq(tide_window_left(w, T0 + TIDE_MS(20)), 0);
    ck_assert(!tide_window_take(w, T0 + TIDE_MS(30)));
    ck_assert_int_eq(tide_window_left(w, T0 + TIDE_MS(30)), 0);
    tide_window_free(w);
}
END_TEST

START_TEST(refused_take_is_not_counted)
{
    struct tide_window *w = window(1, TIDE_SEC(1));
    ck_assert(tide_window_take(w, T0));
    for (int i = 1; i < 10; i++)
        ck_assert(!tide_window_take(w, T0 + TIDE_MS(100) * i));
    ck_assert(tide_window_take(w, T0 + TIDE_SEC(1)));
    tide_window_free(w);
}
END_TEST

START_TEST(event_stops_counting_at_t_plus_window)
{
    struct tide_window *w = window(1, TIDE_SEC(1));
    ck_assert(tide_window_take(w, T0));
    ck_assert_int_eq(tide_window_left(w, T0 + TIDE_SEC(1) - 1), 0);
    ck_assert(!tide_window_take(w, T0 + TIDE_SEC(1) - 1));
    ck_assert_int_eq(tide_window_left(w, T0 + TIDE_SEC(1)), 1);
    ck_assert(tide_window_take(w, T0 + TIDE_SEC(1)));
    tide_window_free(w);
}
END_TEST

START_TEST(events_in_one_instant_count_separately)
{
    struct tide_window *w = window(4, TIDE_SEC(1));
    for (int i = 0; i < 4; i++)
        ck_assert(tide_window_take(w, T0));
    ck_assert(!tide_window_take(w, T0));
    ck_assert_int_eq(tide_window_left(w, T0 + TIDE_SEC(1) - 1), 0);
    ck_assert_int_eq(tide_window_left(w, T0 + TIDE_SEC(1)), 4);
    tide_window_free(w);
}
END_TEST

START_TEST(quota_reached_is_freed_one_event_at_a_time)
{
    struct tide_window *w = window(3, TIDE_SEC(1));
    ck_assert(tide_window_take(w, T0));
    ck_assert(tide_window_take(w, T0 + TIDE_MS(100)));
    ck_assert(tide_window_take(w, T0 + TIDE_MS(200)));
    ck_assert_int_eq(tide_window_left(w, T0 + TIDE_MS(999)), 0);
    ck_assert_int_eq(tide_window_left(w, T0 + TIDE_MS(1000)), 1);
    ck_assert_int_eq(tide_window_left(w, T0 + TIDE_MS(1099)), 1);
    ck_assert_int_eq(tide_window_left(w, T0 + TIDE_MS(1100)), 2);
    ck_assert_int_eq(tide_window_left(w, T0 + TIDE_MS(1199)), 2);
    ck_assert_int_eq(tide_window_left(w, T0 + TIDE_MS(1200)), 3);
    tide_window_free(w);
}
END_TEST

START_TEST(daily_quota_is_not_spent_and_renewed_within_the_day)
{
    /* A thousand a day: all thousand may go in the first minute, and then
     * none until a day after the first. */
    struct tide_window *w = window(1000, TIDE_MIN(60 * 24));
    for (int i = 0; i < 1000; i++)
        ck_assert(tide_window_take(w, T0 + TIDE_MS(60) * i));
    ck_assert(!tide_window_take(w, T0 + TIDE_MIN(1)));
    ck_assert(!tide_window_take(w, T0 + TIDE_MIN(60 * 12)));
    ck_assert(!tide_window_take(w, T0 + TIDE_MIN(60 * 24) - 1));
    ck_assert(tide_window_take(w, T0 + TIDE_MIN(60 * 24)));
    ck_assert(!tide_window_take(w, T0 + TIDE_MIN(60 * 24)));
    tide_window_free(w);
}
END_TEST

/* Against a model that keeps every accepted stamp and counts those in
 * (now - window, now]: the window must agree on every answer. */
START_TEST(count_is_exact_in_any_window)
{
    enum { QUOTA = 7, EVENTS = 4000 };
    const int64_t span = TIDE_MS(1000);
    struct tide_window *w = window(QUOTA, span);
    static int64_t kept[EVENTS];
    size_t nkept = 0;
    uint64_t seed = 12345;
    int64_t t = T0;
    for (int i = 0; i < EVENTS; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        /* gaps of 0 to 399 ms, some zero, so the window is often full */
        t += TIDE_MS((seed >> 33) % 400);
        int64_t inside = 0;
        int64_t oldest = INT64_MAX;
        for (size_t k = 0; k < nkept; k++)
            if (t - kept[k] < span) {
                inside++;
                if (kept[k] < oldest)
                    oldest = kept[k];
            }
        int64_t want_left = QUOTA - inside;
        int64_t want_next = want_left > 0 ? 0 : oldest + span - t;
        ck_assert_int_eq(tide_window_left(w, t), want_left);
        ck_assert_int_eq(tide_window_next(w, t), want_next);
        bool want = inside < QUOTA;
        ck_assert_msg(tide_window_take(w, t) == want, "event %d at %lld", i,
                      (long long)(t - T0));
        if (want)
            kept[nkept++] = t;
    }
    tide_window_free(w);
}
END_TEST

START_TEST(origin_of_the_clock_does_not_matter)
{
    const int64_t origins[] = {0, -TIDE_SEC(1000000000), INT64_MIN + 1,
                               INT64_MAX - TIDE_SEC(10)};
    for (size_t i = 0; i < sizeof origins / sizeof origins[0]; i++) {
        int64_t t = origins[i];
        struct tide_window *w = window(2, TIDE_SEC(1));
        ck_assert(tide_window_take(w, t));
        ck_assert(tide_window_take(w, t + TIDE_MS(300)));
        ck_assert(!tide_window_take(w, t + TIDE_MS(500)));
        ck_assert_int_eq(tide_window_next(w, t + TIDE_MS(500)), TIDE_MS(500));
        ck_assert_int_eq(tide_window_left(w, t + TIDE_SEC(1)), 1);
        ck_assert_int_eq(tide_window_left(w, t + TIDE_MS(1300)), 2);
        tide_window_free(w);
    }
}
END_TEST

/* ---- left and next ---------------------------------------------------- */

START_TEST(left_and_next_count_nothing)
{
    struct tide_window *w = window(2, TIDE_SEC(1));
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(tide_window_left(w, T0), 2);
        ck_assert_int_eq(tide_window_next(w, T0), 0);
    }
    ck_assert(tide_window_take(w, T0));
    ck_assert(tide_window_take(w, T0));
    tide_window_free(w);
}
END_TEST

START_TEST(next_is_the_wait_until_the_oldest_leaves)
{
    struct tide_window *w = window(2, TIDE_SEC(1));
    ck_assert(tide_window_take(w, T0));
    ck_assert_int_eq(tide_window_next(w, T0), 0);
    ck_assert(tide_window_take(w, T0 + TIDE_MS(300)));
    ck_assert_int_eq(tide_window_next(w, T0 + TIDE_MS(300)), TIDE_MS(700));
    ck_assert_int_eq(tide_window_next(w, T0 + TIDE_MS(500)), TIDE_MS(500));
    ck_assert_int_eq(tide_window_next(w, T0 + TIDE_SEC(1) - 1), 1);
    ck_assert_int_eq(tide_window_next(w, T0 + TIDE_SEC(1)), 0);
    ck_assert(tide_window_take(w, T0 + TIDE_SEC(1)));
    /* now the one at 300 ms is the oldest */
    ck_assert_int_eq(tide_window_next(w, T0 + TIDE_SEC(1)), TIDE_MS(300));
    tide_window_free(w);
}
END_TEST

START_TEST(take_at_now_plus_next_succeeds)
{
    struct tide_window *w = window(3, TIDE_MS(700));
    int64_t t = T0;
    for (int i = 0; i < 50; i++) {
        int64_t n = tide_window_next(w, t);
        if (n > 0)
            ck_assert(!tide_window_take(w, t + n - 1));
        ck_assert(tide_window_take(w, t + n));
        t += n + TIDE_MS(i % 4 * 90);
    }
    tide_window_free(w);
}
END_TEST

START_TEST(null_window_is_answered_calmly)
{
    ck_assert(!tide_window_take(NULL, 0));
    ck_assert_int_eq(tide_window_left(NULL, 0), 0);
    ck_assert_int_eq(tide_window_next(NULL, 0), 0);
    tide_window_free(NULL);
}
END_TEST

static Suite *window_suite(void)
{
    Suite *s = suite_create("window");

    TCase *tc = tcase_create("new");
    tcase_add_test(tc, null_window_is_answered_calmly);
    tcase_add_test(tc, new_refuses_a_quota_below_one);
    tcase_add_test(tc, new_refuses_a_window_not_above_zero);
    tcase_add_test(tc, new_refuses_a_null_out);
    tcase_add_test(tc, new_accepts_the_smallest_valid_arguments);
    tcase_add_test(tc, starts_with_the_whole_quota);
    suite_add_tcase(s, tc);

    tc = tcase_create("take");
    tcase_add_test(tc, take_counts_up_to_the_quota);
    tcase_add_test(tc, refused_take_is_not_counted);
    tcase_add_test(tc, event_stops_counting_at_t_plus_window);
    tcase_add_test(tc, events_in_one_instant_count_separately);
    tcase_add_test(tc, quota_reached_is_freed_one_event_at_a_time);
    tcase_add_test(tc, daily_quota_is_not_spent_and_renewed_within_the_day);
    tcase_add_test(tc, count_is_exact_in_any_window);
    tcase_add_test(tc, origin_of_the_clock_does_not_matter);
    suite_add_tcase(s, tc);

    tc = tcase_create("left_next");
    tcase_add_test(tc, left_and_next_count_nothing);
    tcase_add_test(tc, next_is_the_wait_until_the_oldest_leaves);
    tcase_add_test(tc, take_at_now_plus_next_succeeds);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(window_suite)
