/* tests for core/demand.c: connections by demand. The peak of loans kept
 * for a window, the idle ones beyond it retired a share a period (never
 * below the floor asked), preconnect opening the next one at its share
 * within size and the ward, the two agreeing, and both off by preset. */
#include <string.h>

#include <tidepool/core.h>

#include "runner.h"

static int res[256];

static struct tide_pool *new_pool(struct tide_limits limits,
                                  const struct tide_ward *ward)
{
    struct tide_pool *p = NULL;
    ck_assert_int_eq(tide_pool_new(&limits, ward, 0, &p), 0);
    return p;
}

/* Lends n: made ones first, and notes each loan as a runtime does. */
static void lend_n(struct tide_pool *p, int first, int n, int64_t now)
{
    for (int i = first; i < first + n; i++) {
        struct tide_taken t = tide_pool_take(p, now, 0.5);
        if (t.answer == TIDE_MAKE)
            ck_assert_int_eq(tide_pool_made(p, &res[i], now), 0);
        else
            ck_assert_int_eq(t.answer, TIDE_READY);
        (void)tide_pool_note(p, now);
    }
}

/* Makes n and gives them back: n idle, res[first] the oldest. */
static void fill_idle(struct tide_pool *p, int first, int n, int64_t now)
{
    lend_n(p, first, n, now);
    for (int i = first; i < first + n; i++)
        ck_assert_int_eq(tide_pool_give(p, &res[i], now), 1);
}

static size_t shrink(struct tide_pool *p, int64_t now, int64_t least)
{
    void *out[256];
    return tide_pool_shrink(p, now, least, out, 256);
}

START_TEST(both_off_by_preset_and_the_pool_unchanged)
{
    struct tide_limits l = TIDE_LIMITS(0);
    ck_assert_int_eq(l.demand, 0);
    ck_assert_double_eq(l.preconnect, 0.0);
    ck_assert_double_eq(l.retire, 0.5);
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 8), NULL);
    fill_idle(p, 0, 8, 0);
    lend_n(p, 0, 7, TIDE_SEC(1));
    ck_assert(!tide_pool_note(p, TIDE_SEC(1)));
    struct tide_taken t = tide_pool_preconnect(p, TIDE_SEC(1), 0.5);
    ck_assert_int_eq(t.answer, TIDE_WAIT);
    ck_assert_int_eq(t.guard, TIDE_GUARD_NONE);
    ck_assert_uint_eq(shrink(p, TIDE_MIN(10), 0), 0);
    ck_assert_int_eq(tide_pool_live(p), 8);
    struct tide_demand d;
    tide_pool_demand(p, TIDE_MIN(10), &d);
    ck_assert_int_eq(d.peak, 7);
    ck_assert_int_eq(d.needed, 7);
    ck_assert_int_eq(d.excess, 1);
    ck_assert_int_eq(d.period, 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(limits_refuse_shares_out_of_range)
{
    const struct tide_limits bad[] = {
        {.demand = -1},
        {.retire = -0.1},
        {.retire = 1.5},
        {.retire = 0.0 / 0.0},
        {.preconnect = -0.5},
        {.preconnect = 1.01},
        {.preconnect = 0.0 / 0.0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(tide_limits_check(&bad[i]), TIDE_ELIMITS);
        struct tide_pool *p = NULL;
        ck_assert_int_eq(tide_pool_new(&bad[i], NULL, 0, &p), TIDE_ELIMITS);
        ck_assert_ptr_null(p);
    }
    struct tide_limits ok = {
        .demand = TIDE_SEC(10), .retire = 1.0, .preconnect = 1.0};
    ck_assert_int_eq(tide_limits_check(&ok), 0);
}
END_TEST

START_TEST(limits_print_demand_only_when_on)
{
    char buf[TIDE_LIMITS_TEXT];
    struct tide_limits l = TIDE_LIMITS(0);
    tide_limits_format(&l, buf, sizeof buf);
    ck_assert_str_eq(buf, "size=10 idle=10 keep=30min life=forever spread=0 "
                          "streams=1 sharing=pack");
    l = TIDE_LIMITS(.demand = TIDE_SEC(10), .preconnect = 0.75);
    tide_limits_format(&l, buf, sizeof buf);
    ck_assert_str_eq(buf, "size=10 idle=10 keep=30min life=forever spread=0 "
                          "streams=1 sharing=pack demand=10s retire=0.5 "
                          "preconnect=0.75");
    struct tide_limits a = TIDE_LIMITS(.demand = TIDE_SEC(10));
    struct tide_limits b =
        TIDE_LIMITS_INIT(.demand = TIDE_SEC(10), .retire = 0.5);
    ck_assert(tide_limits_equal(&a, &b));
    b.retire = 0.25;
    ck_assert(tide_limits_not_equal(&a, &b));
}
END_TEST

/* A burst's peak is remembered for the window: its connections stay while
 * the load that needed them may come back, then go. */
START_TEST(peak_holds_for_the_window_then_excess_retires)
{
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.size = 32, .demand = TIDE_SEC(8)), NULL);
    lend_n(p, 0, 20, 0); /* the burst: 20 at once */
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(tide_pool_give(p, &res[i], TIDE_MS(100)), 1);
    lend_n(p, 100, 2, TIDE_SEC(1)); /* the calm after it: 2 at a time */
    for (int64_t s = 1; s < 8; s++)
        ck_assert_uint_eq(shrink(p, TIDE_SEC(s), 0), 0);
    struct tide_demand d;
    tide_pool_demand(p, TIDE_SEC(7), &d);
    ck_assert_int_eq(d.peak, 20);
    ck_assert_int_eq(d.needed, 20);
    ck_assert_int_eq(d.period, TIDE_SEC(1));
    /* the burst's period leaves the window: the peak is the calm's 2, and
     * half the 18 in excess go this period, half the rest the next ... */
    ck_assert_uint_eq(shrink(p, TIDE_SEC(8), 0), 9);
    ck_assert_uint_eq(shrink(p, TIDE_SEC(8) + 1, 0), 0); /* one share */
    ck_assert_uint_eq(shrink(p, TIDE_SEC(9), 0), 5);     /* of 9, up */
    ck_assert_uint_eq(shrink(p, TIDE_SEC(10), 0), 2);
    ck_assert_uint_eq(shrink(p, TIDE_SEC(11), 0), 1);
    ck_assert_uint_eq(shrink(p, TIDE_SEC(12), 0), 1);
    ck_assert_uint_eq(shrink(p, TIDE_SEC(13), 0), 0);
    ck_assert_int_eq(tide_pool_live(p), 2); /* the two lent: what it needs */
    tide_pool_free(p);
}
END_TEST

START_TEST(shrink_keeps_the_floor_and_lent_ones)
{
    struct tide_pool *p = new_pool(
        TIDE_LIMITS(.size = 16, .demand = TIDE_SEC(8), .retire = 1.0), NULL);
    fill_idle(p, 0, 12, 0);
    ck_assert_uint_eq(shrink(p, TIDE_SEC(20), 5), 7); /* to the floor */
    ck_assert_int_eq(tide_pool_live(p), 5);
    ck_assert_uint_eq(shrink(p, TIDE_SEC(40), 5), 0);
    /* lent ones are never retired: only idle ones beyond the need */
    lend_n(p, 0, 5, TIDE_SEC(41));
    ck_assert_uint_eq(shrink(p, TIDE_SEC(80), 0), 0);
    ck_assert_int_eq(tide_pool_live(p), 5);
    tide_pool_free(p);
}
END_TEST

/* The oldest idle ones go: the warm ones, lent next, stay. */
START_TEST(shrink_retires_the_least_recently_used)
{
    struct tide_pool *p = new_pool(
        TIDE_LIMITS(.size = 8, .demand = TIDE_SEC(8), .retire = 1.0), NULL);
    lend_n(p, 0, 6, 0);
    for (int i = 0; i < 6; i++) /* res[0] back first: the oldest idle */
        ck_assert_int_eq(tide_pool_give(p, &res[i], TIDE_MS(1 + i)), 1);
    lend_n(p, 50, 2, TIDE_SEC(10)); /* takes res[5], res[4] */
    void *out[8];
    ck_assert_uint_eq(tide_pool_shrink(p, TIDE_SEC(30), 0, out, 8), 4);
    for (int i = 0; i < 4; i++)
        ck_assert_ptr_eq(out[i], &res[i]);
    /* n bounds one call; the period's share goes on in the next */
    tide_pool_free(p);
}
END_TEST

START_TEST(shrink_hands_back_at_most_n_and_goes_on)
{
    struct tide_pool *p = new_pool(
        TIDE_LIMITS(.size = 16, .demand = TIDE_SEC(8), .retire = 1.0), NULL);
    fill_idle(p, 0, 10, 0);
    void *out[3];
    ck_assert_uint_eq(tide_pool_shrink(p, TIDE_SEC(20), 0, out, 3), 3);
    ck_assert_uint_eq(tide_pool_shrink(p, TIDE_SEC(20), 0, out, 3), 3);
    ck_assert_uint_eq(tide_pool_shrink(p, TIDE_SEC(20), 0, out, 3), 3);
    ck_assert_uint_eq(tide_pool_shrink(p, TIDE_SEC(20), 0, out, 3), 1);
    ck_assert_int_eq(tide_pool_live(p), 0);
    ck_assert_uint_eq(tide_pool_shrink(NULL, 0, 0, out, 3), 0);
    tide_pool_free(p);
}
END_TEST

/* A window of a few ns still has periods of 1 ns: no division by zero. */
START_TEST(tiny_window_and_a_clock_that_goes_back)
{
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.size = 8, .demand = 3, .retire = 1.0), NULL);
    fill_idle(p, 0, 4, -TIDE_SEC(5));
    struct tide_demand d;
    tide_pool_demand(p, -TIDE_SEC(5), &d);
    ck_assert_int_eq(d.period, 1);
    ck_assert_int_eq(d.peak, 4);
    ck_assert_uint_eq(shrink(p, -TIDE_SEC(6), 0), 0); /* back: same period */
    ck_assert_uint_eq(shrink(p, 0, 0), 4);
    tide_pool_free(p);
}
END_TEST

START_TEST(preconnect_opens_the_next_one_at_its_share)
{
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.size = 4, .preconnect = 0.75), NULL);
    ck_assert(!tide_pool_note(p, 0)); /* nothing out: nothing due */
    lend_n(p, 0, 1, 0);               /* 1 of 1 lent: due */
    ck_assert(tide_pool_note(p, 0));
    struct tide_taken t = tide_pool_preconnect(p, 0, 0.5);
    ck_assert_int_eq(t.answer, TIDE_MAKE);
    /* the one being made counts: 1 of 2 is below 3/4 */
    ck_assert(!tide_pool_note(p, 0));
    ck_assert_int_eq(tide_pool_preconnect(p, 0, 0.5).answer, TIDE_WAIT);
    ck_assert_int_eq(tide_pool_made(p, &res[1], TIDE_MS(1)), 0);
    ck_assert_int_eq(tide_pool_give(p, &res[1], TIDE_MS(1)), 1);
    lend_n(p, 2, 1, TIDE_MS(2)); /* the preconnected one, READY */
    ck_assert_int_eq(tide_pool_live(p), 2);
    ck_assert(tide_pool_note(p, TIDE_MS(2))); /* 2 of 2 */
    ck_assert_int_eq(tide_pool_preconnect(p, TIDE_MS(2), 0.5).answer,
                     TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, &res[3], TIDE_MS(3)), 0);
    ck_assert_int_eq(tide_pool_give(p, &res[3], TIDE_MS(3)), 1);
    lend_n(p, 4, 1, TIDE_MS(4)); /* 3 of 3 */
    ck_assert_int_eq(tide_pool_preconnect(p, TIDE_MS(4), 0.5).answer,
                     TIDE_MAKE);
    ck_assert_int_eq(tide_pool_live(p), 4);
    /* at size: none due, however many are out */
    ck_assert(!tide_pool_note(p, TIDE_MS(4)));
    ck_assert_int_eq(tide_pool_preconnect(p, TIDE_MS(4), 0.5).answer,
                     TIDE_WAIT);
    tide_pool_free(p);
}
END_TEST

/* Asked again and again, preconnect stops where loans are below its share
 * of what is live: it never storms. */
START_TEST(preconnect_stops_at_its_share)
{
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.size = 100, .preconnect = 0.5), NULL);
    lend_n(p, 0, 10, 0);
    int makes = 0;
    for (int k = 0; k < 1000; k++)
        makes += tide_pool_preconnect(p, 0, 0.5).answer == TIDE_MAKE;
    ck_assert_int_eq(makes, 11); /* 10 loans below half of 21 */
    ck_assert_int_eq(tide_pool_live(p), 21);
    tide_pool_free(p);
}
END_TEST

/* With shared loans the share is of the capacity: live x streams. */
START_TEST(preconnect_with_shared_loans_counts_capacity)
{
    struct tide_pool *p = new_pool(
        TIDE_LIMITS(.size = 8, .streams = 4, .preconnect = 0.75), NULL);
    lend_n(p, 0, 1, 0); /* one resource, one loan of 4 */
    ck_assert(!tide_pool_note(p, 0));
    lend_n(p, 1, 2, 0); /* three loans of 4: due */
    ck_assert_int_eq(tide_pool_live(p), 1);
    ck_assert(tide_pool_note(p, 0));
    ck_assert_int_eq(tide_pool_preconnect(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert(!tide_pool_note(p, 0)); /* 3 of 8 */
    tide_pool_free(p);
}
END_TEST

/* A preconnect is a make like any other: a failure holds makes (backoff),
 * and the breaker's refusal is its answer. */
START_TEST(preconnect_goes_through_the_ward)
{
    struct tide_backoff backoff = {.base = TIDE_MS(100),
                                   .jitter = TIDE_JITTER_RIGID};
    struct tide_breaker_options breaker = {.policy = TIDE_BREAKER_STRIKES,
                                           .strikes = 2};
    struct tide_ward w = {.backoff = &backoff, .breaker = &breaker};
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.size = 8, .preconnect = 1.0), &w);
    lend_n(p, 0, 1, 0);
    ck_assert_int_eq(tide_pool_preconnect(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_unmade(p, 0, 0.5), 0); /* a failed make */
    struct tide_taken t = tide_pool_preconnect(p, TIDE_MS(1), 0.5);
    ck_assert_int_eq(t.answer, TIDE_LATER);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BACKOFF);
    ck_assert_int_eq(t.span, TIDE_MS(99));
    /* the hold over, one probe; its failure is the second strike */
    ck_assert_int_eq(tide_pool_preconnect(p, TIDE_MS(100), 0.5).answer,
                     TIDE_MAKE);
    ck_assert_int_eq(tide_pool_unmade(p, TIDE_MS(100), 0.5), 0);
    t = tide_pool_preconnect(p, TIDE_SEC(1), 0.5);
    ck_assert_int_eq(t.answer, TIDE_SHED);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BREAKER);
    void *out[8];
    (void)tide_pool_close(p, out, 8);
    t = tide_pool_preconnect(p, TIDE_SEC(1), 0.5);
    ck_assert_int_eq(t.answer, TIDE_SHED);
    ck_assert_int_eq(t.guard, TIDE_GUARD_CLOSED);
    ck_assert(!tide_pool_note(p, TIDE_SEC(1)));
    tide_pool_give(p, &res[0], TIDE_SEC(1));
    tide_pool_free(p);
}
END_TEST

START_TEST(preconnect_within_the_bucket)
{
    struct tide_bucket_options bucket = {.rate = 10, .burst = 1};
    struct tide_ward w = {.bucket = &bucket};
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.size = 8, .preconnect = 1.0), &w);
    lend_n(p, 0, 1, 0); /* the bucket's one token */
    struct tide_taken t = tide_pool_preconnect(p, 0, 0.5);
    ck_assert_int_eq(t.answer, TIDE_LATER);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BUCKET);
    ck_assert_int_eq(tide_pool_preconnect(p, TIDE_MS(100), 0.5).answer,
                     TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

/* A runtime's loop in virtual time: each round `load` loans go out at
 * once (made when needed, each noted, preconnects made as they come due
 * and put idle), then all come back; a shrink each period. Returns the
 * makes (for callers and ahead) over the rounds. */
struct run {
    struct tide_pool *p;
    int64_t now;
    int fresh; /* resources made so far: res[fresh] is the next */
    long makes;
    long preconnects;
    long shrunk;
    long waited; /* takes that found nothing idle and had to make */
};

static void *fresh(struct run *r)
{
    ck_assert_int_lt(r->fresh, 256);
    return &res[r->fresh++];
}

static void round_of(struct run *r, int load, int64_t span)
{
    void *out[256];
    void *items[256];
    for (int i = 0; i < load; i++) {
        struct tide_taken t = tide_pool_take(r->p, r->now, 0.5);
        if (t.answer == TIDE_MAKE) {
            items[i] = fresh(r);
            r->makes++;
            r->waited++;
            ck_assert_int_eq(tide_pool_made(r->p, items[i], r->now), 0);
        } else {
            ck_assert_int_eq(t.answer, TIDE_READY);
            items[i] = t.item;
        }
        while (tide_pool_note(r->p, r->now) &&
               tide_pool_preconnect(r->p, r->now, 0.5).answer == TIDE_MAKE) {
            void *ahead = fresh(r);
            r->makes++;
            r->preconnects++;
            ck_assert_int_eq(tide_pool_made(r->p, ahead, r->now), 0);
            ck_assert_int_eq(tide_pool_give(r->p, ahead, r->now), 1);
        }
    }
    for (int i = 0; i < load; i++)
        ck_assert_int_eq(tide_pool_give(r->p, items[i], r->now + 1), 1);
    struct tide_demand d;
    tide_pool_demand(r->p, r->now, &d);
    for (int64_t t = r->now; d.period > 0 && t < r->now + span; t += d.period) {
        size_t n = tide_pool_shrink(r->p, t, 0, out, 256);
        r->shrunk += (long)n;
    }
    r->now += span;
}

/* Shrink keeps what preconnect would open again at the peak: a steady
 * load with both on makes nothing after its first round, and keeps
 * nothing beyond what it needs. */
START_TEST(shrink_and_preconnect_agree)
{
    struct run r = {.p = new_pool(TIDE_LIMITS(.size = 64, .demand = TIDE_SEC(8),
                                              .retire = 1.0, .preconnect = 0.8),
                                  NULL)};
    round_of(&r, 12, TIDE_SEC(1));
    long first = r.makes;
    for (int k = 0; k < 100; k++)
        round_of(&r, 12, TIDE_SEC(1));
    ck_assert_int_eq(r.makes, first);
    ck_assert_int_eq(r.shrunk, 0);
    struct tide_demand d;
    tide_pool_demand(r.p, r.now, &d);
    ck_assert_int_eq(d.peak, 12);
    ck_assert_int_eq(d.needed, 16); /* 12 / 0.8 = 15, and one past it */
    ck_assert_int_eq(d.excess, 0);
    ck_assert_int_eq(tide_pool_live(r.p), 16);
    tide_pool_free(r.p);
}
END_TEST

/* A square wave, 10 and 100 loans at once, bursts 6 s apart, a window of
 * 8 s: after the first burst every burst is served by connections kept
 * from the one before, and none is made again. */
START_TEST(square_wave_keeps_the_burst_between_bursts)
{
    struct run r = {
        .p = new_pool(TIDE_LIMITS(.size = 128, .demand = TIDE_SEC(8)), NULL)};
    for (int wave = 0; wave < 20; wave++) {
        if (wave == 1)
            r.waited = 0; /* from the second burst on */
        round_of(&r, 100, TIDE_SEC(3));
        round_of(&r, 10, TIDE_SEC(3));
    }
    ck_assert_int_eq(r.waited, 0);
    ck_assert_int_eq(r.makes, 100);
    ck_assert_int_eq(r.shrunk, 0);
    tide_pool_free(r.p);
}
END_TEST

/* A quiet hour in virtual time after a burst of 100: within the window
 * and a few periods the pool is down to what the quiet load needs (2 at
 * once), and over the hour it neither grows nor churns. */
START_TEST(quiet_hour_after_a_burst)
{
    struct run r = {
        .p = new_pool(
            TIDE_LIMITS(.size = 128, .demand = TIDE_SEC(10), .preconnect = 0.9),
            NULL)};
    round_of(&r, 100, TIDE_SEC(1));
    long burst = r.makes;
    for (int k = 0; k < 30; k++)
        round_of(&r, 2, TIDE_SEC(1));
    /* 30 s after: 2 needed, and one ahead of them (2 / 0.9 -> 3) */
    ck_assert_int_eq(tide_pool_live(r.p), 3);
    for (int k = 0; k < 3570; k++)
        round_of(&r, 2, TIDE_SEC(1));
    ck_assert_int_eq(tide_pool_live(r.p), 3);
    ck_assert_int_eq(r.makes, burst); /* nothing made in the hour */
    ck_assert_int_eq(r.shrunk, burst - 3);
    tide_pool_free(r.p);
}
END_TEST

/* A cold ramp, one more loan at once every round from 0 to 200: with
 * preconnect every take from the second on finds one ready. */
START_TEST(cold_ramp_is_served_ahead)
{
    struct run r = {
        .p = new_pool(TIDE_LIMITS(.size = 256, .preconnect = 0.9), NULL)};
    for (int load = 1; load <= 200; load++)
        round_of(&r, load, TIDE_MS(10));
    ck_assert_int_eq(r.waited, 1); /* the very first */
    ck_assert_int_le(tide_pool_live(r.p), 224);
    tide_pool_free(r.p);
}
END_TEST

static Suite *demand_suite(void)
{
    Suite *s = suite_create("demand");
    TCase *tc = tcase_create("demand");
    tcase_add_test(tc, both_off_by_preset_and_the_pool_unchanged);
    tcase_add_test(tc, limits_refuse_shares_out_of_range);
    tcase_add_test(tc, limits_print_demand_only_when_on);
    tcase_add_test(tc, peak_holds_for_the_window_then_excess_retires);
    tcase_add_test(tc, shrink_keeps_the_floor_and_lent_ones);
    tcase_add_test(tc, shrink_retires_the_least_recently_used);
    tcase_add_test(tc, shrink_hands_back_at_most_n_and_goes_on);
    tcase_add_test(tc, tiny_window_and_a_clock_that_goes_back);
    tcase_add_test(tc, preconnect_opens_the_next_one_at_its_share);
    tcase_add_test(tc, preconnect_stops_at_its_share);
    tcase_add_test(tc, preconnect_with_shared_loans_counts_capacity);
    tcase_add_test(tc, preconnect_goes_through_the_ward);
    tcase_add_test(tc, preconnect_within_the_bucket);
    tcase_add_test(tc, shrink_and_preconnect_agree);
    tcase_add_test(tc, square_wave_keeps_the_burst_between_bursts);
    tcase_add_test(tc, quiet_hour_after_a_burst);
    tcase_add_test(tc, cold_ramp_is_served_ahead);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(demand_suite)
