/* tide_limits_*: the presets, TIDE_LIMITS(), TIDE_LIMITS_INIT() and
 * validation, both by tide_limits_check and at tide_pool_new. */
#include <math.h>

#include <tidepool/core.h>

#include "runner.h"

#define T0 TIDE_SEC(1000)

static void assert_presets_but(struct tide_limits l, int64_t size, int64_t idle,
                               int64_t keep, int64_t life, double spread)
{
    ck_assert_int_eq(l.size, size);
    ck_assert_int_eq(l.idle, idle);
    ck_assert_int_eq(l.keep, keep);
    ck_assert_int_eq(l.life, life);
    ck_assert_double_eq(l.spread, spread);
}

#define PRESET_SIZE 10
#define PRESET_IDLE 10
#define PRESET_KEEP TIDE_MIN(30)
#define PRESET_LIFE TIDE_FOREVER

/* Invalid limits, every other field valid: a negative value ... */
static const struct tide_limits negative[] = {
    {.size = -1},
    {.size = INT64_MIN},
    {.idle = -1},
    {.keep = -1},
    {.keep = -TIDE_MIN(30)},
    {.life = -1},
    {.size = 20, .idle = 5, .keep = TIDE_SEC(1), .life = -TIDE_SEC(1)},
};

/* ... or a spread outside [0, 1]. */
static const struct tide_limits bad_spread[] = {
    {.spread = -0.01}, {.spread = -1.0},     {.spread = 1.01},
    {.spread = NAN},   {.spread = INFINITY}, {.size = 20, .spread = -INFINITY},
};

#define NNEGATIVE  (sizeof negative / sizeof negative[0])
#define NBADSPREAD (sizeof bad_spread / sizeof bad_spread[0])

/* ---- presets ------------------------------------------------------------ */

START_TEST(zeroed_limits_resolve_to_presets)
{
    struct tide_limits l = tide_limits_resolve((struct tide_limits){0});
    ck_assert_int_eq(l.size, 10);
    ck_assert_int_eq(l.idle, 10);
    ck_assert_int_eq(l.keep, TIDE_MIN(30));
    ck_assert_int_eq(l.keep, TIDE_SEC(1800));
    ck_assert_int_eq(l.life, TIDE_FOREVER);
    ck_assert_double_eq(l.spread, 0.0);
}
END_TEST

START_TEST(macro_changes_one_field_and_keeps_the_rest)
{
    assert_presets_but(TIDE_LIMITS(.size = 20), 20, 20, PRESET_KEEP,
                       PRESET_LIFE, 0.0);
}
END_TEST

/* A pool of 16 under 50 callers with idle stuck at 10 closed six of every
 * sixteen releases and opened them again: unset, idle follows size. */
START_TEST(unset_idle_follows_size)
{
    ck_assert_int_eq(TIDE_LIMITS(.size = 16).idle, 16);
    ck_assert_int_eq(TIDE_LIMITS(.size = 3).idle, 3);
    ck_assert_int_eq(TIDE_LIMITS(.size = TIDE_UNLIMITED).idle, TIDE_UNLIMITED);
    ck_assert_int_eq(TIDE_LIMITS(.size = 16, .idle = 4).idle, 4);
    ck_assert_int_eq(TIDE_LIMITS(.size = 4, .idle = 16).idle, 16);
    /* resolving twice changes nothing */
    struct tide_limits once = TIDE_LIMITS(.size = 16);
    ck_assert_int_eq(tide_limits_resolve(once).idle, 16);
}
END_TEST

/* The adapter sees the same: 16 released at once are all kept. */
START_TEST(pool_of_16_keeps_16_idle)
{
    struct tide_limits l = TIDE_LIMITS(.size = 16);
    struct tide_pool *p;
    ck_assert_int_eq(tide_pool_new(&l, NULL, 0, &p), 0);
    int items[16];
    for (int k = 0; k < 16; k++) {
        ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
        ck_assert_int_eq(tide_pool_made(p, &items[k], 0), 0);
    }
    for (int k = 0; k < 16; k++)
        ck_assert_int_eq(tide_pool_give(p, &items[k], 1), 1);
    ck_assert_int_eq(tide_pool_idle(p), 16);
    tide_pool_free(p);
}
END_TEST

START_TEST(each_field_can_be_set_alone)
{
    assert_presets_but(TIDE_LIMITS(.idle = 3), PRESET_SIZE, 3, PRESET_KEEP,
                       PRESET_LIFE, 0.0);
    assert_presets_but(TIDE_LIMITS(.keep = TIDE_SEC(5)), PRESET_SIZE,
                       PRESET_IDLE, TIDE_SEC(5), PRESET_LIFE, 0.0);
    assert_presets_but(TIDE_LIMITS(.life = TIDE_MIN(60)), PRESET_SIZE,
                       PRESET_IDLE, PRESET_KEEP, TIDE_MIN(60), 0.0);
    assert_presets_but(TIDE_LIMITS(.spread = 0.25), PRESET_SIZE, PRESET_IDLE,
                       PRESET_KEEP, PRESET_LIFE, 0.25);
}
END_TEST

START_TEST(copy_changes_one_knob_of_a_set)
{
    struct tide_limits l = TIDE_LIMITS(.size = 20, .life = TIDE_MIN(10));
    l.size = 32; /* idle was resolved with the set: it stays at 20 */
    assert_presets_but(tide_limits_resolve(l), 32, 20, PRESET_KEEP,
                       TIDE_MIN(10), 0.0);
}
END_TEST

START_TEST(resolve_is_idempotent)
{
    struct tide_limits once = TIDE_LIMITS(.idle = 4, .spread = 0.5);
    struct tide_limits twice = tide_limits_resolve(once);
    assert_presets_but(twice, once.size, once.idle, once.keep, once.life,
                       once.spread);
}
END_TEST

START_TEST(zero_age_is_the_preset_not_forever)
{
    /* "No limit" has a name of its own; zero takes the preset. */
    struct tide_limits l = TIDE_LIMITS(.keep = 0, .life = 0);
    ck_assert_int_eq(l.keep, TIDE_MIN(30));
    ck_assert_int_eq(l.life, TIDE_FOREVER);
}
END_TEST

START_TEST(no_limit_is_kept_as_written)
{
    assert_presets_but(
        TIDE_LIMITS(.size = TIDE_UNLIMITED, .idle = TIDE_UNLIMITED,
                    .keep = TIDE_FOREVER),
        TIDE_UNLIMITED, TIDE_UNLIMITED, TIDE_FOREVER, PRESET_LIFE, 0.0);
}
END_TEST

/* TIDE_LIMITS calls a function, so it cannot fill static storage; this
 * can (the file does not compile, under -Wpedantic -Werror, when it is not
 * a constant expression). */
static const struct tide_limits static_limits = TIDE_LIMITS_INIT(.size = 20);
static const struct tide_limits static_presets = TIDE_LIMITS_INIT(0);

/* The initialiser keeps what is written; the pool applies the presets. */
START_TEST(static_initialiser_is_resolved_by_the_pool)
{
    assert_presets_but(static_limits, 20, 0, 0, 0, 0.0);
    struct tide_pool *p;
    ck_assert_int_eq(tide_pool_new(&static_limits, NULL, T0, &p), 0);
    assert_presets_but(tide_pool_limits(p), 20, 20, PRESET_KEEP, PRESET_LIFE,
                       0.0);
    for (int k = 0; k < 20; k++)
        ck_assert_int_eq(tide_pool_take(p, T0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_take(p, T0, 0.5).answer, TIDE_WAIT);
    tide_pool_free(p);
    ck_assert_int_eq(tide_pool_new(&static_presets, NULL, T0, &p), 0);
    assert_presets_but(tide_pool_limits(p), PRESET_SIZE, PRESET_IDLE,
                       PRESET_KEEP, PRESET_LIFE, 0.0);
    tide_pool_free(p);
}
END_TEST

/* ---- check ------------------------------------------------------------ */

START_TEST(check_accepts_valid_limits)
{
    const struct tide_limits valid[] = {
        {0},
        {.spread = 1.0},
        {.spread = 0.5},
        {.size = 1, .idle = 1, .keep = 1, .life = 1},
        {.size = TIDE_UNLIMITED,
         .idle = TIDE_UNLIMITED,
         .keep = TIDE_FOREVER,
         .life = TIDE_FOREVER},
    };
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        ck_assert_int_eq(tide_limits_check(&valid[i]), 0);
        struct tide_limits r = tide_limits_resolve(valid[i]);
        ck_assert_int_eq(tide_limits_check(&r), 0);
    }
}
END_TEST

START_TEST(check_refuses_negative_values)
{
    for (size_t i = 0; i < NNEGATIVE; i++)
        ck_assert_msg(tide_limits_check(&negative[i]) == TIDE_ELIMITS,
                      "negative[%zu] not refused", i);
}
END_TEST

START_TEST(check_refuses_spread_outside_the_unit_range_or_nan)
{
    for (size_t i = 0; i < NBADSPREAD; i++)
        ck_assert_msg(tide_limits_check(&bad_spread[i]) == TIDE_ELIMITS,
                      "spread %g not refused", bad_spread[i].spread);
}
END_TEST

/* ---- at tide_pool_new --------------------------------------------------- */

START_TEST(pool_new_refuses_negative_values)
{
    for (size_t i = 0; i < NNEGATIVE; i++) {
        struct tide_pool *p = NULL;
        int rc = tide_pool_new(&negative[i], NULL, T0, &p);
        ck_assert_msg(rc == TIDE_ELIMITS, "negative[%zu]: %d", i, rc);
        if (rc == 0)
            tide_pool_free(p);
    }
}
END_TEST

START_TEST(pool_new_refuses_spread_outside_the_unit_range_or_nan)
{
    for (size_t i = 0; i < NBADSPREAD; i++) {
        struct tide_pool *p = NULL;
        int rc = tide_pool_new(&bad_spread[i], NULL, T0, &p);
        ck_assert_msg(rc == TIDE_ELIMITS, "spread %g: %d", bad_spread[i].spread,
                      rc);
        if (rc == 0)
            tide_pool_free(p);
    }
}
END_TEST

START_TEST(pool_new_refuses_invalid_limits_with_a_ward)
{
    struct tide_breaker_options bo = {0};
    struct tide_ward ward = {.breaker = &bo};
    struct tide_pool *p = NULL;
    int rc = tide_pool_new(&negative[0], &ward, T0, &p);
    ck_assert_int_eq(rc, TIDE_ELIMITS);
    if (rc == 0)
        tide_pool_free(p);
}
END_TEST

START_TEST(pool_new_reads_back_resolved_limits)
{
    struct tide_pool *p = NULL;
    ck_assert_int_eq(tide_pool_new(NULL, NULL, T0, &p), 0);
    assert_presets_but(tide_pool_limits(p), PRESET_SIZE, PRESET_IDLE,
                       PRESET_KEEP, PRESET_LIFE, 0.0);
    tide_pool_free(p);
    const struct tide_limits raw = {.size = 20, .spread = 1.0};
    ck_assert_int_eq(tide_pool_new(&raw, NULL, T0, &p), 0);
    assert_presets_but(tide_pool_limits(p), 20, 20, PRESET_KEEP, PRESET_LIFE,
                       1.0);
    tide_pool_free(p);
}
END_TEST

static Suite *limits_suite(void)
{
    Suite *s = suite_create("limits");

    TCase *tc = tcase_create("presets");
    tcase_add_test(tc, zeroed_limits_resolve_to_presets);
    tcase_add_test(tc, macro_changes_one_field_and_keeps_the_rest);
    tcase_add_test(tc, unset_idle_follows_size);
    tcase_add_test(tc, pool_of_16_keeps_16_idle);
    tcase_add_test(tc, each_field_can_be_set_alone);
    tcase_add_test(tc, copy_changes_one_knob_of_a_set);
    tcase_add_test(tc, resolve_is_idempotent);
    tcase_add_test(tc, zero_age_is_the_preset_not_forever);
    tcase_add_test(tc, no_limit_is_kept_as_written);
    tcase_add_test(tc, static_initialiser_is_resolved_by_the_pool);
    suite_add_tcase(s, tc);

    tc = tcase_create("check");
    tcase_add_test(tc, check_accepts_valid_limits);
    tcase_add_test(tc, check_refuses_negative_values);
    tcase_add_test(tc, check_refuses_spread_outside_the_unit_range_or_nan);
    suite_add_tcase(s, tc);

    tc = tcase_create("pool_new");
    tcase_add_test(tc, pool_new_refuses_negative_values);
    tcase_add_test(tc, pool_new_refuses_spread_outside_the_unit_range_or_nan);
    tcase_add_test(tc, pool_new_refuses_invalid_limits_with_a_ward);
    tcase_add_test(tc, pool_new_reads_back_resolved_limits);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(limits_suite)
