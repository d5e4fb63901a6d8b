/* tide_limits_*: the presets, TIDE_LIMITS(), TIDE_LIMITS_INIT(),
 * validation (both by tide_limits_check and at tide_pool_new), comparison
 * and the printed form. */
#include <math.h>
#include <stdio.h>
#include <string.h>

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

/* ... or streams past its range, or a sharing policy that is not one. */
static const struct tide_limits bad_streams[] = {
    {.streams = -1},
    {.streams = TIDE_STREAMS_MAX + 1},
    {.streams = TIDE_UNLIMITED},
    {.sharing = (enum tide_sharing)2},
    {.sharing = (enum tide_sharing) - 1},
};

#define NNEGATIVE   (sizeof negative / sizeof negative[0])
#define NBADSTREAMS (sizeof bad_streams / sizeof bad_streams[0])
#define NBADSPREAD  (sizeof bad_spread / sizeof bad_spread[0])

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

/* One borrower at a time unless asked: the pool as it always was. */
START_TEST(streams_preset_is_one_and_sharing_pack)
{
    struct tide_limits l = tide_limits_resolve((struct tide_limits){0});
    ck_assert_int_eq(l.streams, 1);
    ck_assert_int_eq(l.sharing, TIDE_SHARING_PACK);
    l = TIDE_LIMITS(.streams = 16, .sharing = TIDE_SHARING_SPREAD);
    ck_assert_int_eq(l.streams, 16);
    ck_assert_int_eq(l.sharing, TIDE_SHARING_SPREAD);
    assert_presets_but(l, PRESET_SIZE, PRESET_IDLE, PRESET_KEEP, PRESET_LIFE,
                       0.0);
    ck_assert_int_eq(TIDE_LIMITS(.streams = TIDE_STREAMS_MAX).streams,
                     TIDE_STREAMS_MAX);
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

START_TEST(check_refuses_streams_out_of_range_and_unknown_sharing)
{
    for (size_t i = 0; i < NBADSTREAMS; i++)
        ck_assert_msg(tide_limits_check(&bad_streams[i]) == TIDE_ELIMITS,
                      "bad_streams[%zu] not refused", i);
    struct tide_limits most = {.streams = TIDE_STREAMS_MAX,
                               .sharing = TIDE_SHARING_SPREAD};
    ck_assert_int_eq(tide_limits_check(&most), 0);
}
END_TEST

/* ---- equal ------------------------------------------------------------- */

START_TEST(equal_compares_resolved_fields)
{
    struct tide_limits zero = TIDE_LIMITS_INIT(0);
    struct tide_limits presets = TIDE_LIMITS(.size = 10, .keep = TIDE_MIN(30));
    ck_assert(tide_limits_equal(&zero, &presets));
    ck_assert(!tide_limits_not_equal(&zero, &presets));
    ck_assert(tide_limits_equal(NULL, &zero));
    ck_assert(tide_limits_equal(&presets, NULL));
    ck_assert(tide_limits_equal(NULL, NULL));
    /* idle follows size when unset, on both sides */
    struct tide_limits a = TIDE_LIMITS_INIT(.size = 20);
    struct tide_limits b = TIDE_LIMITS_INIT(.size = 20, .idle = 20);
    ck_assert(tide_limits_equal(&a, &b));
}
END_TEST

START_TEST(one_field_apart_is_not_equal)
{
    const struct tide_limits base = TIDE_LIMITS(.size = 8, .spread = 0.25);
    struct tide_limits apart[7];
    for (int i = 0; i < 7; i++)
        apart[i] = base;
    apart[0].size = 9;
    apart[1].idle = 7;
    apart[2].keep = TIDE_SEC(1);
    apart[3].life = TIDE_MIN(5);
    apart[4].spread = 0.5;
    apart[5].streams = 2;
    apart[6].sharing = TIDE_SHARING_SPREAD;
    for (int i = 0; i < 7; i++) {
        ck_assert_msg(tide_limits_not_equal(&base, &apart[i]), "field %d", i);
        ck_assert_msg(!tide_limits_equal(&apart[i], &base), "field %d", i);
        ck_assert(tide_limits_equal(&apart[i], &apart[i]));
    }
    struct tide_limits nan = {.spread = NAN};
    ck_assert(!tide_limits_equal(&nan, &nan));
}
END_TEST

/* ---- format ------------------------------------------------------------ */

static void assert_formats(struct tide_limits l, const char *want)
{
    char buf[TIDE_LIMITS_TEXT];
    int n = tide_limits_format(&l, buf, sizeof buf);
    ck_assert_str_eq(buf, want);
    ck_assert_int_eq(n, (int)strlen(want));
}

START_TEST(format_names_every_field_with_the_presets_resolved)
{
    assert_formats((struct tide_limits){0},
                   "size=10 idle=10 keep=30min life=forever spread=0 "
                   "streams=1 sharing=pack");
    assert_formats(TIDE_LIMITS(.size = 16, .idle = 4, .keep = TIDE_SEC(90),
                               .life = TIDE_MS(1500), .spread = 0.2,
                               .streams = 100, .sharing = TIDE_SHARING_SPREAD),
                   "size=16 idle=4 keep=90s life=1500ms spread=0.2 "
                   "streams=100 sharing=spread");
}
END_TEST

START_TEST(format_spells_out_unlimited_and_forever)
{
    assert_formats(TIDE_LIMITS(.size = TIDE_UNLIMITED, .keep = TIDE_FOREVER),
                   "size=unlimited idle=unlimited keep=forever life=forever "
                   "spread=0 streams=1 sharing=pack");
}
END_TEST

/* Exact: a span goes in the largest unit it is a whole number of. */
START_TEST(format_writes_spans_exactly)
{
    const struct {
        int64_t ns;
        const char *text;
    } spans[] = {
        {TIDE_MIN(120), "2h"},
        {TIDE_MIN(90), "90min"},
        {TIDE_SEC(1), "1s"},
        {TIDE_MS(1001), "1001ms"},
        {TIDE_US(5), "5us"},
        {1, "1ns"},
        {TIDE_SEC(1) + 1, "1000000001ns"},
        {TIDE_FOREVER - 1, "9223372036854775806ns"},
    };
    for (size_t i = 0; i < sizeof spans / sizeof spans[0]; i++) {
        char want[TIDE_LIMITS_TEXT];
        struct tide_limits l = TIDE_LIMITS(.keep = spans[i].ns);
        snprintf(want, sizeof want,
                 "size=10 idle=10 keep=%s life=forever spread=0 streams=1 "
                 "sharing=pack",
                 spans[i].text);
        assert_formats(l, want);
    }
}
END_TEST

START_TEST(format_writes_spread_to_nine_decimals)
{
    const struct {
        double spread;
        const char *text;
    } shares[] = {
        {1.0, "1"},
        {0.5, "0.5"},
        {0.125, "0.125"},
        {1.0 / 3.0, "0.333333333"},
        {0.000000001, "0.000000001"},
    };
    for (size_t i = 0; i < sizeof shares / sizeof shares[0]; i++) {
        char want[TIDE_LIMITS_TEXT];
        snprintf(want, sizeof want,
                 "size=10 idle=10 keep=30min life=forever spread=%s "
                 "streams=1 sharing=pack",
                 shares[i].text);
        assert_formats(TIDE_LIMITS(.spread = shares[i].spread), want);
    }
}
END_TEST

/* Invalid limits print as they are, so a log shows the mistake. */
START_TEST(format_shows_invalid_values_as_they_are)
{
    assert_formats((struct tide_limits){.size = -1,
                                        .keep = -TIDE_SEC(2),
                                        .spread = -0.5,
                                        .streams = -3,
                                        .sharing = (enum tide_sharing)7},
                   "size=-1 idle=-1 keep=-2s life=forever spread=-0.5 "
                   "streams=-3 sharing=7");
    assert_formats((struct tide_limits){.spread = NAN},
                   "size=10 idle=10 keep=30min life=forever spread=nan "
                   "streams=1 sharing=pack");
    assert_formats((struct tide_limits){.spread = -INFINITY},
                   "size=10 idle=10 keep=30min life=forever spread=-inf "
                   "streams=1 sharing=pack");
}
END_TEST

/* The longest text there can be fits TIDE_LIMITS_TEXT. */
START_TEST(format_fits_its_buffer_at_the_extremes)
{
    struct tide_limits l = {.size = INT64_MIN,
                            .idle = INT64_MIN,
                            .keep = INT64_MIN,
                            .life = INT64_MIN,
                            .spread = -999999999.999999,
                            .streams = INT64_MIN,
                            .sharing = (enum tide_sharing)INT32_MIN,
                            .demand = INT64_MIN,
                            .retire = -999999999.999999,
                            .preconnect = -999999999.999999};
    char buf[TIDE_LIMITS_TEXT];
    int n = tide_limits_format(&l, buf, sizeof buf);
    ck_assert_int_lt(n, TIDE_LIMITS_TEXT);
    ck_assert_int_eq(n, (int)strlen(buf));
}
END_TEST

/* As snprintf: cut short, ended by a NUL, the whole length returned. */
START_TEST(format_cuts_short_and_counts_the_whole)
{
    struct tide_limits l = TIDE_LIMITS(0);
    char whole[TIDE_LIMITS_TEXT];
    int n = tide_limits_format(&l, whole, sizeof whole);
    ck_assert_int_eq(tide_limits_format(&l, NULL, 0), n);
    char small[8];
    memset(small, 'x', sizeof small);
    ck_assert_int_eq(tide_limits_format(&l, small, sizeof small), n);
    ck_assert_str_eq(small, "size=10");
    char one[1] = {'x'};
    ck_assert_int_eq(tide_limits_format(&l, one, 1), n);
    ck_assert_int_eq(one[0], '\0');
    ck_assert_int_eq(tide_limits_format(NULL, whole, sizeof whole),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_limits_format(&l, NULL, 4), TIDE_EINVAL);
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

START_TEST(pool_new_refuses_streams_out_of_range)
{
    for (size_t i = 0; i < NBADSTREAMS; i++) {
        struct tide_pool *p = NULL;
        int rc = tide_pool_new(&bad_streams[i], NULL, T0, &p);
        ck_assert_msg(rc == TIDE_ELIMITS, "bad_streams[%zu]: %d", i, rc);
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
    tcase_add_test(tc, streams_preset_is_one_and_sharing_pack);
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
    tcase_add_test(tc, check_refuses_streams_out_of_range_and_unknown_sharing);
    suite_add_tcase(s, tc);

    tc = tcase_create("equal");
    tcase_add_test(tc, equal_compares_resolved_fields);
    tcase_add_test(tc, one_field_apart_is_not_equal);
    suite_add_tcase(s, tc);

    tc = tcase_create("format");
    tcase_add_test(tc, format_names_every_field_with_the_presets_resolved);
    tcase_add_test(tc, format_spells_out_unlimited_and_forever);
    tcase_add_test(tc, format_writes_spans_exactly);
    tcase_add_test(tc, format_writes_spread_to_nine_decimals);
    tcase_add_test(tc, format_shows_invalid_values_as_they_are);
    tcase_add_test(tc, format_fits_its_buffer_at_the_extremes);
    tcase_add_test(tc, format_cuts_short_and_counts_the_whole);
    suite_add_tcase(s, tc);

    tc = tcase_create("pool_new");
    tcase_add_test(tc, pool_new_refuses_negative_values);
    tcase_add_test(tc, pool_new_refuses_spread_outside_the_unit_range_or_nan);
    tcase_add_test(tc, pool_new_refuses_streams_out_of_range);
    tcase_add_test(tc, pool_new_refuses_invalid_limits_with_a_ward);
    tcase_add_test(tc, pool_new_reads_back_resolved_limits);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(limits_suite)
