/* tide_backoff_*: presets, ceilings, the five jitters, more() and
 * schedule(). Every delay is checked against the header's formula; a jittered
 * one within a nanosecond of the real-valued answer, since the header does
 * not say how a fraction of a nanosecond is rounded. */
#include <limits.h>
#include <math.h>

#include <tidepool/core.h>

#include "runner.h"

/* got is within 1 ns of the real number want. */
#define ck_assert_ns_near(got, want)                                           \
    do {                                                                       \
        int64_t got_ns = (got);                                                \
        double want_ns = (want);                                               \
        double diff_ns = (double)got_ns - want_ns;                             \
        ck_assert_msg(diff_ns <= 1.0 && diff_ns >= -1.0,                       \
                      "%s = %lld ns, want %.3f ns", #got, (long long)got_ns,   \
                      want_ns);                                                \
    } while (0)

/* The preset written out in full. */
static const struct tide_backoff preset = {
    .base = TIDE_MS(100),
    .factor = 2.0,
    .cap = TIDE_SEC(1),
    .attempts = 3,
    .jitter = TIDE_JITTER_SPREAD,
    .spread = 0.2,
};

static const double rolls[] = {0.0, 0.5, 0.999};

/* ---- presets ---------------------------------------------------------- */

START_TEST(zeroed_struct_resolves_to_presets)
{
    struct tide_backoff b = tide_backoff_resolve((struct tide_backoff){0});
    ck_assert_int_eq(b.base, TIDE_MS(100));
    ck_assert_double_eq(b.factor, 2.0);
    ck_assert_int_eq(b.cap, TIDE_SEC(1));
    ck_assert_int_eq(b.attempts, 3);
    ck_assert_int_eq(b.jitter, TIDE_JITTER_SPREAD);
    ck_assert_double_eq(b.spread, 0.2);
}
END_TEST

START_TEST(zeroed_struct_behaves_as_presets)
{
    const struct tide_backoff zero = {0};
    for (int retry = 0; retry < 8; retry++) {
        ck_assert_int_eq(tide_backoff_ceiling(&zero, retry),
                         tide_backoff_ceiling(&preset, retry));
        for (size_t i = 0; i < sizeof rolls / sizeof rolls[0]; i++)
            ck_assert_int_eq(
                tide_backoff_delay(&zero, retry, rolls[i], TIDE_MS(300)),
                tide_backoff_delay(&preset, retry, rolls[i], TIDE_MS(300)));
    }
    for (int made = 0; made < 5; made++)
        ck_assert(tide_backoff_more(&zero, made) ==
                  tide_backoff_more(&preset, made));
    const double r[4] = {0.1, 0.6, 0.9, 0.3};
    int64_t a[4] = {-1, -1, -1, -1}, b[4] = {-1, -1, -1, -1};
    ck_assert_uint_eq(tide_backoff_schedule(&zero, r, a, 4),
                      tide_backoff_schedule(&preset, r, b, 4));
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(a[i], b[i]);
    ck_assert_int_eq(tide_backoff_check(&zero), 0);
}
END_TEST

START_TEST(preset_doubles_from_100ms_to_a_1s_ceiling)
{
    const struct tide_backoff zero = {0};
    const int64_t want[] = {TIDE_MS(100), TIDE_MS(200), TIDE_MS(400),
                            TIDE_MS(800), TIDE_SEC(1),  TIDE_SEC(1),
                            TIDE_SEC(1)};
    for (int retry = 0; retry < 7; retry++)
        ck_assert_int_eq(tide_backoff_ceiling(&zero, retry), want[retry]);
}
END_TEST

START_TEST(preset_makes_three_attempts)
{
    const struct tide_backoff zero = {0};
    ck_assert(tide_backoff_more(&zero, 0));
    ck_assert(tide_backoff_more(&zero, 1));
    ck_assert(tide_backoff_more(&zero, 2));
    ck_assert(!tide_backoff_more(&zero, 3));
}
END_TEST

START_TEST(preset_spreads_by_a_fifth_either_way)
{
    const struct tide_backoff zero = {0};
    /* random(0.8, 1.2) x 100 ms on the first retry */
    ck_assert_ns_near(tide_backoff_delay(&zero, 0, 0.0, 0), 80e6);
    ck_assert_ns_near(tide_backoff_delay(&zero, 0, 0.5, 0), 100e6);
    ck_assert_ns_near(tide_backoff_delay(&zero, 0, 0.999, 0),
                      100e6 * (0.8 + 0.4 * 0.999));
}
END_TEST

START_TEST(macro_changes_one_field_and_keeps_the_rest)
{
    struct tide_backoff b = TIDE_BACKOFF(.attempts = 5);
    ck_assert_int_eq(b.attempts, 5);
    ck_assert_int_eq(b.base, TIDE_MS(100));
    ck_assert_double_eq(b.factor, 2.0);
    ck_assert_int_eq(b.cap, TIDE_SEC(1));
    ck_assert_int_eq(b.jitter, TIDE_JITTER_SPREAD);
    ck_assert_double_eq(b.spread, 0.2);
}
END_TEST

START_TEST(resolve_keeps_fields_that_are_set)
{
    struct tide_backoff b =
        TIDE_BACKOFF(.base = TIDE_MS(7), .factor = 1.5, .cap = TIDE_SEC(3),
                     .attempts = 9, .jitter = TIDE_JITTER_FULL, .spread = 0.7);
    ck_assert_int_eq(b.base, TIDE_MS(7));
    ck_assert_double_eq(b.factor, 1.5);
    ck_assert_int_eq(b.cap, TIDE_SEC(3));
    ck_assert_int_eq(b.attempts, 9);
    ck_assert_int_eq(b.jitter, TIDE_JITTER_FULL);
    ck_assert_double_eq(b.spread, 0.7);
}
END_TEST

/* ---- ceiling ---------------------------------------------------------- */

START_TEST(ceiling_is_base_times_factor_to_the_retry)
{
    struct tide_backoff b = {
        .base = TIDE_MS(10), .factor = 3.0, .cap = TIDE_SEC(100)};
    ck_assert_int_eq(tide_backoff_ceiling(&b, 0), TIDE_MS(10));
    ck_assert_int_eq(tide_backoff_ceiling(&b, 1), TIDE_MS(30));
    ck_assert_int_eq(tide_backoff_ceiling(&b, 2), TIDE_MS(90));
    ck_assert_int_eq(tide_backoff_ceiling(&b, 3), TIDE_MS(270));
    ck_assert_int_eq(tide_backoff_ceiling(&b, 5), TIDE_MS(2430));
    b.factor = 1.5;
    ck_assert_int_eq(tide_backoff_ceiling(&b, 1), TIDE_MS(15));
    ck_assert_int_eq(tide_backoff_ceiling(&b, 2), TIDE_US(22500));
    b.factor = 1.0;
    ck_assert_int_eq(tide_backoff_ceiling(&b, 9), TIDE_MS(10));
}
END_TEST

START_TEST(ceiling_is_capped_at_cap)
{
    struct tide_backoff b = {
        .base = TIDE_MS(100), .factor = 2.0, .cap = TIDE_MS(500)};
    ck_assert_int_eq(tide_backoff_ceiling(&b, 2), TIDE_MS(400));
    ck_assert_int_eq(tide_backoff_ceiling(&b, 3), TIDE_MS(500));
    ck_assert_int_eq(tide_backoff_ceiling(&b, 30), TIDE_MS(500));
    /* a cap below the base holds from the first retry */
    b.cap = TIDE_MS(40);
    ck_assert_int_eq(tide_backoff_ceiling(&b, 0), TIDE_MS(40));
}
END_TEST

START_TEST(ceiling_with_huge_retry_stays_at_cap)
{
    /* Called many times, so a loop linear in retry would run for hours and
     * trip Check's timeout rather than pass slowly. */
    const struct tide_backoff zero = {0};
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(tide_backoff_ceiling(&zero, INT_MAX - i), TIDE_SEC(1));
    struct tide_backoff steep = {.factor = 1e300};
    ck_assert_int_eq(tide_backoff_ceiling(&steep, 7), TIDE_SEC(1));
    ck_assert_int_eq(tide_backoff_ceiling(&steep, INT_MAX), TIDE_SEC(1));
    struct tide_backoff flat = {.factor = 1.0};
    ck_assert_int_eq(tide_backoff_ceiling(&flat, INT_MAX), TIDE_MS(100));
}
END_TEST

START_TEST(ceiling_without_cap_saturates_instead_of_overflowing)
{
    struct tide_backoff b = {.cap = TIDE_FOREVER};
    ck_assert_int_eq(tide_backoff_ceiling(&b, 10), TIDE_MS(100) * 1024);
    ck_assert_int_eq(tide_backoff_ceiling(&b, 200), TIDE_FOREVER);
    ck_assert_int_eq(tide_backoff_ceiling(&b, INT_MAX), TIDE_FOREVER);
}
END_TEST

START_TEST(spans_near_the_top_of_the_range_are_exact)
{
    /* 9.21e18 ns is a valid span below INT64_MAX (and exact as a double):
     * min(cap, base x factor^0) is the base itself, and RIGID returns the
     * ceiling unchanged; neither may be rounded up to TIDE_FOREVER. */
    const int64_t big = INT64_C(9210000000000000000);
    struct tide_backoff no_cap = {
        .base = big, .cap = TIDE_FOREVER, .jitter = TIDE_JITTER_RIGID};
    ck_assert_int_eq(tide_backoff_ceiling(&no_cap, 0), big);
    ck_assert_int_eq(tide_backoff_delay(&no_cap, 0, 0.5, 0), big);
    struct tide_backoff capped = {.cap = big, .jitter = TIDE_JITTER_RIGID};
    ck_assert_int_eq(tide_backoff_ceiling(&capped, 100), big);
    ck_assert_int_eq(tide_backoff_delay(&capped, 100, 0.5, 0), big);
}
END_TEST

/* ---- jitters, c = the ceiling of retry 2 = 400 ms ----------------------- */

START_TEST(rigid_is_the_ceiling_whatever_the_roll)
{
    struct tide_backoff b = {.jitter = TIDE_JITTER_RIGID};
    for (size_t i = 0; i < sizeof rolls / sizeof rolls[0]; i++) {
        ck_assert_int_eq(tide_backoff_delay(&b, 0, rolls[i], 0), TIDE_MS(100));
        ck_assert_int_eq(tide_backoff_delay(&b, 2, rolls[i], 0), TIDE_MS(400));
        ck_assert_int_eq(tide_backoff_delay(&b, 9, rolls[i], 0), TIDE_SEC(1));
    }
}
END_TEST

START_TEST(full_is_uniform_from_zero_to_the_ceiling)
{
    struct tide_backoff b = {.jitter = TIDE_JITTER_FULL};
    ck_assert_int_eq(tide_backoff_delay(&b, 2, 0.0, 0), 0);
    ck_assert_ns_near(tide_backoff_delay(&b, 2, 0.5, 0), 200e6);
    ck_assert_ns_near(tide_backoff_delay(&b, 2, 0.999, 0), 0.999 * 400e6);
    ck_assert_ns_near(tide_backoff_delay(&b, 9, 0.5, 0), 500e6);
}
END_TEST

START_TEST(equal_is_half_the_ceiling_plus_uniform_half)
{
    struct tide_backoff b = {.jitter = TIDE_JITTER_EQUAL};
    ck_assert_int_eq(tide_backoff_delay(&b, 2, 0.0, 0), TIDE_MS(200));
    ck_assert_ns_near(tide_backoff_delay(&b, 2, 0.5, 0), 300e6);
    ck_assert_ns_near(tide_backoff_delay(&b, 2, 0.999, 0),
                      200e6 + 0.999 * 200e6);
    ck_assert_int_eq(tide_backoff_delay(&b, 9, 0.0, 0), TIDE_MS(500));
}
END_TEST

START_TEST(decorrelated_is_uniform_from_base_to_three_times_previous)
{
    struct tide_backoff b = {.jitter = TIDE_JITTER_DECORRELATED,
                             .cap = TIDE_SEC(10)};
    /* [100 ms, 3 x 200 ms] */
    ck_assert_int_eq(tide_backoff_delay(&b, 1, 0.0, TIDE_MS(200)),
                     TIDE_MS(100));
    ck_assert_ns_near(tide_backoff_delay(&b, 1, 0.5, TIDE_MS(200)), 350e6);
    ck_assert_ns_near(tide_backoff_delay(&b, 1, 0.999, TIDE_MS(200)),
                      100e6 + 0.999 * 500e6);
}
END_TEST

START_TEST(decorrelated_is_capped_at_cap)
{
    struct tide_backoff b = {.jitter = TIDE_JITTER_DECORRELATED};
    /* [100 ms, 1.5 s] capped at 1 s */
    ck_assert_ns_near(tide_backoff_delay(&b, 1, 0.5, TIDE_MS(500)), 800e6);
    ck_assert_int_eq(tide_backoff_delay(&b, 1, 0.999, TIDE_MS(500)),
                     TIDE_SEC(1));
    /* a previous far past the cap does not overflow */
    ck_assert_int_eq(tide_backoff_delay(&b, 1, 0.999, TIDE_FOREVER),
                     TIDE_SEC(1));
    ck_assert_int_eq(tide_backoff_delay(&b, 1, 0.0, TIDE_FOREVER),
                     TIDE_MS(100));
}
END_TEST

START_TEST(decorrelated_grows_from_previous_not_from_retry)
{
    struct tide_backoff b = {.jitter = TIDE_JITTER_DECORRELATED,
                             .cap = TIDE_SEC(10)};
    for (size_t i = 0; i < sizeof rolls / sizeof rolls[0]; i++) {
        int64_t d = tide_backoff_delay(&b, 1, rolls[i], TIDE_MS(250));
        ck_assert_int_eq(tide_backoff_delay(&b, 0, rolls[i], TIDE_MS(250)), d);
        ck_assert_int_eq(tide_backoff_delay(&b, 6, rolls[i], TIDE_MS(250)), d);
    }
}
END_TEST

START_TEST(decorrelated_first_retry_starts_at_base)
{
    struct tide_backoff b = {.jitter = TIDE_JITTER_DECORRELATED,
                             .cap = TIDE_SEC(10)};
    ck_assert_int_eq(tide_backoff_delay(&b, 0, 0.0, 0), TIDE_MS(100));
    int64_t mid = tide_backoff_delay(&b, 0, 0.5, 0);
    int64_t top = tide_backoff_delay(&b, 0, 0.999, 0);
    ck_assert_int_gt(mid, TIDE_MS(100));
    ck_assert_int_gt(top, mid);
    ck_assert_int_le(top, TIDE_MS(300));
}
END_TEST

START_TEST(spread_is_uniform_within_f_of_the_ceiling)
{
    struct tide_backoff b = {.jitter = TIDE_JITTER_SPREAD, .spread = 0.25};
    ck_assert_int_eq(tide_backoff_delay(&b, 2, 0.0, 0), TIDE_MS(300));
    ck_assert_ns_near(tide_backoff_delay(&b, 2, 0.5, 0), 400e6);
    ck_assert_ns_near(tide_backoff_delay(&b, 2, 0.999, 0),
                      400e6 * (0.75 + 0.5 * 0.999));
}
END_TEST

START_TEST(spread_can_pass_the_cap_by_f)
{
    const struct tide_backoff zero = {0};
    int64_t d = tide_backoff_delay(&zero, 20, 0.999, 0);
    ck_assert_int_gt(d, TIDE_SEC(1));
    ck_assert_int_le(d, TIDE_MS(1200));
    ck_assert_ns_near(d, 1e9 * (0.8 + 0.4 * 0.999));
    ck_assert_int_eq(tide_backoff_delay(&zero, 20, 0.0, 0), TIDE_MS(800));
}
END_TEST

START_TEST(spread_outside_the_unit_range_is_held_to_it)
{
    /* delay() does not validate; f is held to [0, 1] as the header says */
    struct tide_backoff wide = {.jitter = TIDE_JITTER_SPREAD, .spread = 1.5};
    ck_assert_int_eq(tide_backoff_delay(&wide, 2, 0.0, 0), 0);
    ck_assert_ns_near(tide_backoff_delay(&wide, 2, 0.999, 0),
                      400e6 * 2.0 * 0.999);
    struct tide_backoff negative = {.jitter = TIDE_JITTER_SPREAD,
                                    .spread = -0.5};
    for (size_t i = 0; i < sizeof rolls / sizeof rolls[0]; i++)
        ck_assert_int_eq(tide_backoff_delay(&negative, 2, rolls[i], 0),
                         TIDE_MS(400));
}
END_TEST

START_TEST(delay_with_an_endless_ceiling_saturates)
{
    struct tide_backoff b = {.cap = TIDE_FOREVER, .spread = 1.0};
    ck_assert_int_eq(tide_backoff_delay(&b, INT_MAX, 0.999, 0), TIDE_FOREVER);
    b.jitter = TIDE_JITTER_FULL;
    int64_t half = tide_backoff_delay(&b, INT_MAX, 0.5, 0);
    ck_assert_int_gt(half, INT64_MAX / 2 - (INT64_C(1) << 20));
    ck_assert_int_lt(half, INT64_MAX / 2 + (INT64_C(1) << 20));
    b.jitter = TIDE_JITTER_EQUAL;
    ck_assert_int_gt(tide_backoff_delay(&b, INT_MAX, 0.999, 0), half);
}
END_TEST

/* ---- more ------------------------------------------------------------- */

START_TEST(more_allows_attempts_in_all_first_included)
{
    struct tide_backoff b = {.attempts = 5};
    for (int made = 0; made < 5; made++)
        ck_assert(tide_backoff_more(&b, made));
    ck_assert(!tide_backoff_more(&b, 5));
    ck_assert(!tide_backoff_more(&b, 6));
    struct tide_backoff once = {.attempts = 1};
    ck_assert(tide_backoff_more(&once, 0));
    ck_assert(!tide_backoff_more(&once, 1));
}
END_TEST

/* ---- schedule --------------------------------------------------------- */

START_TEST(schedule_writes_attempts_minus_one_delays)
{
    struct tide_backoff b = {.attempts = 4, .jitter = TIDE_JITTER_RIGID};
    const double r[6] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
    int64_t out[6] = {-7, -7, -7, -7, -7, -7};
    ck_assert_uint_eq(tide_backoff_schedule(&b, r, out, 6), 3);
    ck_assert_int_eq(out[0], TIDE_MS(100));
    ck_assert_int_eq(out[1], TIDE_MS(200));
    ck_assert_int_eq(out[2], TIDE_MS(400));
    for (int i = 3; i < 6; i++)
        ck_assert_int_eq(out[i], -7);
}
END_TEST

START_TEST(schedule_writes_no_more_than_n)
{
    struct tide_backoff b = {.attempts = 6, .jitter = TIDE_JITTER_RIGID};
    const double r[3] = {0.5, 0.5, 0.5};
    int64_t out[3] = {-7, -7, -7};
    ck_assert_uint_eq(tide_backoff_schedule(&b, r, out, 2), 2);
    ck_assert_int_eq(out[0], TIDE_MS(100));
    ck_assert_int_eq(out[1], TIDE_MS(200));
    ck_assert_int_eq(out[2], -7);
    ck_assert_uint_eq(tide_backoff_schedule(&b, r, out, 0), 0);
}
END_TEST

START_TEST(schedule_with_one_attempt_writes_nothing)
{
    struct tide_backoff b = {.attempts = 1};
    const double r[2] = {0.5, 0.5};
    int64_t out[2] = {-7, -7};
    ck_assert_uint_eq(tide_backoff_schedule(&b, r, out, 2), 0);
    ck_assert_int_eq(out[0], -7);
}
END_TEST

START_TEST(schedule_of_the_preset_has_two_delays)
{
    const struct tide_backoff zero = {0};
    const double r[4] = {0.5, 0.5, 0.5, 0.5};
    int64_t out[4] = {-7, -7, -7, -7};
    ck_assert_uint_eq(tide_backoff_schedule(&zero, r, out, 4), 2);
    ck_assert_ns_near(out[0], 100e6);
    ck_assert_ns_near(out[1], 200e6);
    ck_assert_int_eq(out[2], -7);
}
END_TEST

START_TEST(schedule_draws_one_roll_per_retry)
{
    struct tide_backoff b = {.attempts = 4, .jitter = TIDE_JITTER_FULL};
    const double r[3] = {0.0, 0.5, 0.25};
    int64_t out[3];
    ck_assert_uint_eq(tide_backoff_schedule(&b, r, out, 3), 3);
    ck_assert_int_eq(out[0], 0);
    ck_assert_ns_near(out[1], 100e6);
    ck_assert_ns_near(out[2], 100e6);
}
END_TEST

START_TEST(schedule_chains_previous_for_decorrelated)
{
    struct tide_backoff b = {.attempts = 5,
                             .jitter = TIDE_JITTER_DECORRELATED,
                             .cap = TIDE_SEC(100)};
    const double r[4] = {0.5, 0.5, 0.25, 0.999};
    int64_t out[4];
    ck_assert_uint_eq(tide_backoff_schedule(&b, r, out, 4), 4);
    ck_assert_int_eq(out[0], tide_backoff_delay(&b, 0, r[0], 0));
    for (int i = 1; i < 4; i++) {
        ck_assert_int_eq(out[i], tide_backoff_delay(&b, i, r[i], out[i - 1]));
        ck_assert_ns_near(out[i],
                          100e6 + r[i] * (3.0 * (double)out[i - 1] - 100e6));
    }
}
END_TEST

/* ---- check ------------------------------------------------------------ */

START_TEST(check_accepts_valid_backoffs)
{
    const struct tide_backoff zero = {0};
    ck_assert_int_eq(tide_backoff_check(&zero), 0);
    ck_assert_int_eq(tide_backoff_check(&preset), 0);
    struct tide_backoff edge = {.factor = 1.0,
                                .attempts = 1,
                                .jitter = TIDE_JITTER_SPREAD,
                                .spread = 1.0,
                                .cap = TIDE_FOREVER};
    ck_assert_int_eq(tide_backoff_check(&edge), 0);
    for (int j = TIDE_JITTER_SPREAD; j <= TIDE_JITTER_DECORRELATED; j++) {
        struct tide_backoff b = {.jitter = (enum tide_jitter)j};
        ck_assert_int_eq(tide_backoff_check(&b), 0);
    }
}
END_TEST

START_TEST(check_refuses_negative_base)
{
    struct tide_backoff b = {.base = -1};
    ck_assert_int_eq(tide_backoff_check(&b), TIDE_EBACKOFF);
    b.base = -TIDE_SEC(1);
    ck_assert_int_eq(tide_backoff_check(&b), TIDE_EBACKOFF);
}
END_TEST

START_TEST(check_refuses_negative_cap)
{
    struct tide_backoff b = {.cap = -1};
    ck_assert_int_eq(tide_backoff_check(&b), TIDE_EBACKOFF);
}
END_TEST

START_TEST(check_refuses_factor_below_one)
{
    const double bad[] = {0.999, 0.5, -2.0, NAN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tide_backoff b = {.factor = bad[i]};
        ck_assert_int_eq(tide_backoff_check(&b), TIDE_EBACKOFF);
    }
}
END_TEST

START_TEST(check_refuses_negative_attempts)
{
    struct tide_backoff b = {.attempts = -1};
    ck_assert_int_eq(tide_backoff_check(&b), TIDE_EBACKOFF);
}
END_TEST

START_TEST(check_refuses_spread_outside_the_unit_range)
{
    const double bad[] = {-0.01, 1.01, 7.0, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tide_backoff b = {.spread = bad[i]};
        ck_assert_int_eq(tide_backoff_check(&b), TIDE_EBACKOFF);
        b.jitter = TIDE_JITTER_FULL;
        ck_assert_int_eq(tide_backoff_check(&b), TIDE_EBACKOFF);
    }
}
END_TEST

START_TEST(check_refuses_an_unknown_jitter)
{
    struct tide_backoff b = {
        .jitter = (enum tide_jitter)(TIDE_JITTER_DECORRELATED + 1)};
    ck_assert_int_eq(tide_backoff_check(&b), TIDE_EBACKOFF);
    b.jitter = (enum tide_jitter)(-1);
    ck_assert_int_eq(tide_backoff_check(&b), TIDE_EBACKOFF);
    b.jitter = (enum tide_jitter)1000;
    ck_assert_int_eq(tide_backoff_check(&b), TIDE_EBACKOFF);
}
END_TEST

START_TEST(null_backoff_is_the_preset)
{
    struct tide_backoff preset = {0};
    ck_assert_int_eq(tide_backoff_check(NULL), TIDE_EINVAL);
    ck_assert_int_eq(tide_backoff_ceiling(NULL, 3),
                     tide_backoff_ceiling(&preset, 3));
    ck_assert_int_eq(tide_backoff_delay(NULL, 1, 0.5, 0),
                     tide_backoff_delay(&preset, 1, 0.5, 0));
    ck_assert(tide_backoff_more(NULL, 2) == tide_backoff_more(&preset, 2));
    int64_t out[4];
    double rolls[4] = {0.5, 0.5, 0.5, 0.5};
    ck_assert_uint_eq(tide_backoff_schedule(NULL, rolls, out, 4), 2);
    ck_assert_uint_eq(tide_backoff_schedule(NULL, NULL, out, 4), 0);
    ck_assert_uint_eq(tide_backoff_schedule(NULL, rolls, NULL, 4), 0);
}
END_TEST

static Suite *backoff_suite(void)
{
    Suite *s = suite_create("backoff");

    TCase *tc = tcase_create("presets");
    tcase_add_test(tc, null_backoff_is_the_preset);
    tcase_add_test(tc, zeroed_struct_resolves_to_presets);
    tcase_add_test(tc, zeroed_struct_behaves_as_presets);
    tcase_add_test(tc, preset_doubles_from_100ms_to_a_1s_ceiling);
    tcase_add_test(tc, preset_makes_three_attempts);
    tcase_add_test(tc, preset_spreads_by_a_fifth_either_way);
    tcase_add_test(tc, macro_changes_one_field_and_keeps_the_rest);
    tcase_add_test(tc, resolve_keeps_fields_that_are_set);
    suite_add_tcase(s, tc);

    tc = tcase_create("ceiling");
    tcase_add_test(tc, ceiling_is_base_times_factor_to_the_retry);
    tcase_add_test(tc, ceiling_is_capped_at_cap);
    tcase_add_test(tc, ceiling_with_huge_retry_stays_at_cap);
    tcase_add_test(tc, ceiling_without_cap_saturates_instead_of_overflowing);
    tcase_add_test(tc, spans_near_the_top_of_the_range_are_exact);
    suite_add_tcase(s, tc);

    tc = tcase_create("jitter");
    tcase_add_test(tc, rigid_is_the_ceiling_whatever_the_roll);
    tcase_add_test(tc, full_is_uniform_from_zero_to_the_ceiling);
    tcase_add_test(tc, equal_is_half_the_ceiling_plus_uniform_half);
    tcase_add_test(tc,
                   decorrelated_is_uniform_from_base_to_three_times_previous);
    tcase_add_test(tc, decorrelated_is_capped_at_cap);
    tcase_add_test(tc, decorrelated_grows_from_previous_not_from_retry);
    tcase_add_test(tc, decorrelated_first_retry_starts_at_base);
    tcase_add_test(tc, spread_is_uniform_within_f_of_the_ceiling);
    tcase_add_test(tc, spread_can_pass_the_cap_by_f);
    tcase_add_test(tc, spread_outside_the_unit_range_is_held_to_it);
    tcase_add_test(tc, delay_with_an_endless_ceiling_saturates);
    suite_add_tcase(s, tc);

    tc = tcase_create("more");
    tcase_add_test(tc, more_allows_attempts_in_all_first_included);
    suite_add_tcase(s, tc);

    tc = tcase_create("schedule");
    tcase_add_test(tc, schedule_writes_attempts_minus_one_delays);
    tcase_add_test(tc, schedule_writes_no_more_than_n);
    tcase_add_test(tc, schedule_with_one_attempt_writes_nothing);
    tcase_add_test(tc, schedule_of_the_preset_has_two_delays);
    tcase_add_test(tc, schedule_draws_one_roll_per_retry);
    tcase_add_test(tc, schedule_chains_previous_for_decorrelated);
    suite_add_tcase(s, tc);

    tc = tcase_create("check");
    tcase_add_test(tc, check_accepts_valid_backoffs);
    tcase_add_test(tc, check_refuses_negative_base);
    tcase_add_test(tc, check_refuses_negative_cap);
    tcase_add_test(tc, check_refuses_factor_below_one);
    tcase_add_test(tc, check_refuses_negative_attempts);
    tcase_add_test(tc, check_refuses_spread_outside_the_unit_range);
    tcase_add_test(tc, check_refuses_an_unknown_jitter);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(backoff_suite)
