/* tide_bucket_*: a token bucket driven by explicit `now` values. */
#include <math.h>

#include <tidepool/core.h>

#include "rng.h"
#include "runner.h"

#define T0 TIDE_SEC(1000) /* any origin: only differences matter */

static struct tide_bucket *bucket(double rate, double burst, int64_t now)
{
    struct tide_bucket_options o = {.rate = rate, .burst = burst};
    struct tide_bucket *b = NULL;
    ck_assert_int_eq(tide_bucket_new(&o, now, &b), 0);
    ck_assert_ptr_nonnull(b);
    return b;
}

/* Takes every whole token there is at now; returns how many. */
static int drain(struct tide_bucket *b, int64_t now)
{
    int n = 0;
    while (tide_bucket_take(b, now))
        n++;
    return n;
}

/* ---- creation ----------------------------------------------------------- */

START_TEST(starts_full_at_burst)
{
    struct tide_bucket *b = bucket(2.0, 5.0, T0);
    ck_assert_double_eq(tide_bucket_tokens(b, T0), 5.0);
    tide_bucket_free(b);
}
END_TEST

START_TEST(burst_preset_is_one_seconds_worth)
{
    struct tide_bucket *b = bucket(4.0, 0.0, T0);
    ck_assert_double_eq(tide_bucket_tokens(b, T0), 4.0);
    ck_assert_int_eq(drain(b, T0), 4);
    tide_bucket_free(b);
}
END_TEST

START_TEST(null_options_are_ten_a_second)
{
    struct tide_bucket *b = NULL;
    ck_assert_int_eq(tide_bucket_new(NULL, T0, &b), 0);
    ck_assert_double_eq(tide_bucket_tokens(b, T0), 10.0);
    ck_assert_int_eq(drain(b, T0), 10);
    ck_assert_int_eq(tide_bucket_next(b, T0), TIDE_MS(100));
    tide_bucket_free(b);
}
END_TEST

START_TEST(zeroed_options_are_the_preset)
{
    struct tide_bucket *b = bucket(0.0, 0.0, T0);
    ck_assert_int_eq(drain(b, T0), 10);
    ck_assert_int_eq(tide_bucket_next(b, T0), TIDE_MS(100));
    tide_bucket_free(b);
}
END_TEST

START_TEST(rate_preset_holds_with_a_burst_set)
{
    struct tide_bucket *b = bucket(0.0, 3.0, T0);
    ck_assert_int_eq(drain(b, T0), 3);
    ck_assert_int_eq(tide_bucket_next(b, T0), TIDE_MS(100));
    tide_bucket_free(b);
}
END_TEST

START_TEST(new_refuses_a_rate_not_above_zero)
{
    const double bad[] = {-1.0, -1e-9, NAN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tide_bucket_options o = {.rate = bad[i], .burst = 5.0};
        struct tide_bucket *b = NULL;
        ck_assert_int_eq(tide_bucket_new(&o, T0, &b), TIDE_EBUCKET);
    }
}
END_TEST

START_TEST(new_refuses_a_burst_below_one)
{
    const double bad[] = {0.999, 0.5, -1.0, NAN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tide_bucket_options o = {.rate = 5.0, .burst = bad[i]};
        struct tide_bucket *b = NULL;
        ck_assert_int_eq(tide_bucket_new(&o, T0, &b), TIDE_EBUCKET);
    }
}
END_TEST

START_TEST(new_accepts_the_smallest_valid_options)
{
    struct tide_bucket *b = bucket(0.001, 1.0, T0);
    ck_assert(tide_bucket_take(b, T0));
    ck_assert(!tide_bucket_take(b, T0));
    ck_assert_int_eq(tide_bucket_next(b, T0), TIDE_SEC(1000));
    tide_bucket_free(b);
}
END_TEST

START_TEST(new_refuses_a_null_out)
{
    ck_assert_int_eq(tide_bucket_new(NULL, T0, NULL), TIDE_EINVAL);
}
END_TEST

/* ---- take -------------------------------------------------------------- */

START_TEST(take_succeeds_until_empty)
{
    struct tide_bucket *b = bucket(1.0, 3.0, T0);
    ck_assert(tide_bucket_take(b, T0));
    ck_assert(tide_bucket_take(b, T0));
    ck_assert(tide_bucket_take(b, T0));
    ck_assert(!tide_bucket_take(b, T0));
    ck_assert_double_eq(tide_bucket_tokens(b, T0), 0.0);
    tide_bucket_free(b);
}
END_TEST

START_TEST(refused_take_takes_nothing)
{
    struct tide_bucket *b = bucket(10.0, 2.0, T0);
    drain(b, T0);
    int64_t t = T0 + TIDE_MS(50);
    ck_assert(!tide_bucket_take(b, t));
    ck_assert(!tide_bucket_take(b, t));
    ck_assert_double_eq_tol(tide_bucket_tokens(b, t), 0.5, 1e-9);
    ck_assert(tide_bucket_take(b, T0 + TIDE_MS(100)));
    tide_bucket_free(b);
}
END_TEST

START_TEST(quiet_hour_allows_a_burst_at_one_instant)
{
    struct tide_bucket *b = NULL;
    ck_assert_int_eq(tide_bucket_new(NULL, T0, &b), 0);
    drain(b, T0);
    int64_t later = T0 + TIDE_MIN(60);
    for (int i = 0; i < 10; i++)
        ck_assert(tide_bucket_take(b, later));
    ck_assert(!tide_bucket_take(b, later));
    tide_bucket_free(b);
}
END_TEST

/* ---- accrual ------------------------------------------------------------ */

START_TEST(tokens_accrue_at_rate)
{
    struct tide_bucket *b = bucket(10.0, 5.0, T0);
    drain(b, T0);
    ck_assert_double_eq_tol(tide_bucket_tokens(b, T0 + TIDE_MS(50)), 0.5, 1e-9);
    ck_assert_double_eq_tol(tide_bucket_tokens(b, T0 + TIDE_MS(250)), 2.5,
                            1e-9);
    ck_assert_double_eq_tol(tide_bucket_tokens(b, T0 + TIDE_MS(420)), 4.2,
                            1e-9);
    ck_assert_int_eq(drain(b, T0 + TIDE_MS(420)), 4);
    tide_bucket_free(b);
}
END_TEST

START_TEST(tokens_stop_at_burst)
{
    struct tide_bucket *b = bucket(10.0, 5.0, T0);
    drain(b, T0);
    ck_assert_double_eq(tide_bucket_tokens(b, T0 + TIDE_MS(500)), 5.0);
    ck_assert_double_eq(tide_bucket_tokens(b, T0 + TIDE_MIN(60)), 5.0);
    ck_assert_int_eq(drain(b, T0 + TIDE_MIN(60)), 5);
    tide_bucket_free(b);
}
END_TEST

START_TEST(clock_going_backwards_earns_nothing)
{
    struct tide_bucket *b = bucket(10.0, 10.0, T0);
    drain(b, T0);
    /* A look into the past neither earns nor restarts the clock there. */
    ck_assert_double_eq(tide_bucket_tokens(b, T0 - TIDE_SEC(5)), 0.0);
    ck_assert(!tide_bucket_take(b, T0 - TIDE_SEC(5)));
    ck_assert_double_eq(tide_bucket_tokens(b, T0), 0.0);
    ck_assert(!tide_bucket_take(b, T0));
    ck_assert_int_eq(tide_bucket_next(b, T0), TIDE_MS(100));
    ck_assert(tide_bucket_take(b, T0 + TIDE_MS(100)));
    ck_assert(!tide_bucket_take(b, T0 + TIDE_MS(100)));
    tide_bucket_free(b);
}
END_TEST

START_TEST(clock_going_backwards_takes_nothing_away)
{
    struct tide_bucket *b = bucket(10.0, 10.0, T0);
    drain(b, T0);
    ck_assert_double_eq_tol(tide_bucket_tokens(b, T0 + TIDE_MS(350)), 3.5,
                            1e-9);
    ck_assert_double_eq_tol(tide_bucket_tokens(b, T0), 3.5, 1e-9);
    ck_assert_int_eq(drain(b, T0 - TIDE_SEC(1)), 3);
    tide_bucket_free(b);
}
END_TEST

START_TEST(origin_of_the_clock_does_not_matter)
{
    const int64_t origins[] = {0, -TIDE_SEC(1000000000), INT64_MIN + 1,
                               INT64_MAX - TIDE_MIN(120)};
    for (size_t i = 0; i < sizeof origins / sizeof origins[0]; i++) {
        int64_t t = origins[i];
        struct tide_bucket *b = bucket(10.0, 3.0, t);
        ck_assert_int_eq(drain(b, t), 3);
        ck_assert_int_eq(tide_bucket_next(b, t), TIDE_MS(100));
        ck_assert_double_eq_tol(tide_bucket_tokens(b, t + TIDE_MS(150)), 1.5,
                                1e-9);
        ck_assert_int_eq(drain(b, t + TIDE_MS(150)), 1);
        ck_assert_double_eq(tide_bucket_tokens(b, t + TIDE_MIN(60)), 3.0);
        tide_bucket_free(b);
    }
}
END_TEST

/* A bucket that has refilled is read as full without the arithmetic; this
 * checks that shortcut against the arithmetic itself, kept here in
 * doubles, over random steps that leave it full, nearly full, partly full
 * and empty, and over rates fast enough that a token comes back within a
 * nanosecond. */
START_TEST(take_agrees_with_the_arithmetic_at_every_step)
{
    const double rates[] = {1000.0, 3e9, 0.5};
    const double bursts[] = {3.0, 1.0, 7.5};
    uint64_t rng = 42;
    for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++) {
        double rate = rates[r] / 1e9, burst = bursts[r];
        int64_t now = T0;
        struct tide_bucket *b = bucket(rates[r], burst, now);
        double level = burst; /* the reference, at `now` */
        for (int i = 0; i < 200000; i++) {
            /* steps from 0 to about three tokens' worth */
            int64_t step = (int64_t)(rng_roll(&rng) * 3.0 / rate);
            now += step;
            level = fmin(burst, level + (double)step * rate);
            bool want = level >= 1.0;
            bool near = fabs(level - 1.0) < 1e-6 || fabs(level - burst) < 1e-6;
            bool got = tide_bucket_take(b, now);
            if (!near)
                ck_assert_msg(got == want,
                              "rate %g step %d: took %d, want %d "
                              "(level %.9f)",
                              rates[r], i, got, want, level);
            if (got)
                level -= 1.0;
            if (level < 0.0)
                level = 0.0; /* a boundary take the reference would refuse */
            double tokens = tide_bucket_tokens(b, now);
            ck_assert(tokens <= burst);
            ck_assert_msg(fabs(tokens - level) < 1e-6 || near,
                          "rate %g step %d: tokens %.9f, want %.9f", rates[r],
                          i, tokens, level);
            level = tokens; /* so one boundary call does not drift it */
        }
        tide_bucket_free(b);
    }
}
END_TEST

/* ---- next -------------------------------------------------------------- */

START_TEST(next_is_zero_while_a_token_is_there)
{
    struct tide_bucket *b = bucket(1.0, 2.0, T0);
    ck_assert_int_eq(tide_bucket_next(b, T0), 0);
    ck_assert(tide_bucket_take(b, T0));
    ck_assert_int_eq(tide_bucket_next(b, T0), 0);
    ck_assert(tide_bucket_take(b, T0));
    ck_assert_int_gt(tide_bucket_next(b, T0), 0);
    ck_assert_int_eq(tide_bucket_next(b, T0 + TIDE_SEC(1)), 0);
    tide_bucket_free(b);
}
END_TEST

START_TEST(next_is_the_exact_wait_for_a_token)
{
    struct tide_bucket *b = bucket(10.0, 1.0, T0);
    ck_assert(tide_bucket_take(b, T0));
    ck_assert_int_eq(tide_bucket_next(b, T0), TIDE_MS(100));
    ck_assert_int_eq(tide_bucket_next(b, T0 + TIDE_MS(30)), TIDE_MS(70));
    ck_assert(!tide_bucket_take(b, T0 + TIDE_MS(100) - 1));
    ck_assert(tide_bucket_take(b, T0 + TIDE_MS(100)));
    tide_bucket_free(b);
}
END_TEST

START_TEST(next_does_not_take)
{
    struct tide_bucket *b = bucket(1.0, 1.0, T0);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(tide_bucket_next(b, T0), 0);
    ck_assert(tide_bucket_take(b, T0));
    tide_bucket_free(b);
}
END_TEST

/* At now + next(now) a take succeeds and one nanosecond earlier it does not,
 * for awkward rates and from part-filled buckets. */
START_TEST(next_is_never_early_and_never_late)
{
    const double rates[] = {1.0, 3.0, 7.0, 10.0, 33.3, 1000.0, 0.37, 123456.0};
    const int64_t steps[] = {1,          7,           TIDE_US(3),
                             TIDE_MS(1), TIDE_MS(13), TIDE_MS(77)};
    for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++) {
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            int64_t t = T0;
            struct tide_bucket *b = bucket(rates[r], 2.0, t);
            drain(b, t);
            for (int round = 0; round < 50; round++) {
                t += steps[s];
                if (tide_bucket_take(b, t))
                    continue;
                int64_t n = tide_bucket_next(b, t);
                ck_assert_msg(n > 0, "rate %g step %lld: next %lld", rates[r],
                              (long long)steps[s], (long long)n);
                if (n > 1)
                    ck_assert_msg(!tide_bucket_take(b, t + n - 1),
                                  "rate %g step %lld round %d: a token 1 ns "
                                  "before next said",
                                  rates[r], (long long)steps[s], round);
                ck_assert_msg(tide_bucket_take(b, t + n),
                              "rate %g step %lld round %d: none after %lld ns",
                              rates[r], (long long)steps[s], round,
                              (long long)n);
                t += n;
            }
            tide_bucket_free(b);
        }
    }
}
END_TEST

START_TEST(next_for_a_very_slow_rate_is_never_early)
{
    /* One token in 317 years: the wait, 1e19 ns, is past what int64_t
     * holds, so the only answer that is not early is TIDE_FOREVER. In
     * particular not 0, which would send a caller round take() forever. */
    struct tide_bucket *b = bucket(1e-10, 1.0, 0);
    ck_assert(tide_bucket_take(b, 0));
    ck_assert(!tide_bucket_take(b, 0));
    int64_t n = tide_bucket_next(b, 0);
    ck_assert_int_gt(n, 0);
    ck_assert_int_eq(n, TIDE_FOREVER);
    ck_assert(!tide_bucket_take(b, n - 1));
    tide_bucket_free(b);
}
END_TEST

START_TEST(null_bucket_is_answered_calmly)
{
    ck_assert(!tide_bucket_take(NULL, 0));
    ck_assert_int_eq(tide_bucket_next(NULL, 0), 0);
    ck_assert(tide_bucket_tokens(NULL, 0) == 0.0);
    tide_bucket_free(NULL);
}
END_TEST

static Suite *bucket_suite(void)
{
    Suite *s = suite_create("bucket");

    TCase *tc = tcase_create("new");
    tcase_add_test(tc, null_bucket_is_answered_calmly);
    tcase_add_test(tc, starts_full_at_burst);
    tcase_add_test(tc, burst_preset_is_one_seconds_worth);
    tcase_add_test(tc, null_options_are_ten_a_second);
    tcase_add_test(tc, zeroed_options_are_the_preset);
    tcase_add_test(tc, rate_preset_holds_with_a_burst_set);
    tcase_add_test(tc, new_refuses_a_rate_not_above_zero);
    tcase_add_test(tc, new_refuses_a_burst_below_one);
    tcase_add_test(tc, new_accepts_the_smallest_valid_options);
    tcase_add_test(tc, new_refuses_a_null_out);
    suite_add_tcase(s, tc);

    tc = tcase_create("take");
    tcase_add_test(tc, take_succeeds_until_empty);
    tcase_add_test(tc, refused_take_takes_nothing);
    tcase_add_test(tc, quiet_hour_allows_a_burst_at_one_instant);
    suite_add_tcase(s, tc);

    tc = tcase_create("accrual");
    /* 600,000 randomized steps: seconds under ASan on a busy machine */
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, tokens_accrue_at_rate);
    tcase_add_test(tc, tokens_stop_at_burst);
    tcase_add_test(tc, clock_going_backwards_earns_nothing);
    tcase_add_test(tc, clock_going_backwards_takes_nothing_away);
    tcase_add_test(tc, origin_of_the_clock_does_not_matter);
    tcase_add_test(tc, take_agrees_with_the_arithmetic_at_every_step);
    suite_add_tcase(s, tc);

    tc = tcase_create("next");
    tcase_add_test(tc, next_is_zero_while_a_token_is_there);
    tcase_add_test(tc, next_is_the_exact_wait_for_a_token);
    tcase_add_test(tc, next_does_not_take);
    tcase_add_test(tc, next_is_never_early_and_never_late);
    tcase_add_test(tc, next_for_a_very_slow_rate_is_never_early);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(bucket_suite)
