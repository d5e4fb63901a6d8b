/* tests for evloop/upkeep.c: the minimum made at start and kept, eviction,
 * leak reports, and timers that are armed only while they have work. */
#include "fixture.h"

static bool min_is_up(void)
{
    struct tide_evpool_stats s = stats();
    return s.live == 3 && s.idle == 3;
}

static bool min_is_up_one(void)
{
    return stats().idle == 1;
}

START_TEST(prewarm_makes_min_at_start)
{
    struct tide_evpool_options o = {.min = 3};
    fixture_pool(&o);
    ck_assert_int_eq(fx->makes, 0); /* from the loop, not inside new */
    ck_assert(run_until(min_is_up, 1000));
    ck_assert_int_eq(fx->makes, 3);
    ck_assert_int_eq(fx->watch_on, 3);
    run_ms(20);
    ck_assert_int_eq(fx->makes, 3); /* kept, not remade */
}
END_TEST

static bool answers_in(void)
{
    return fx->makes == 3 && fx->laters == 0;
}

START_TEST(prewarm_partial_failure_does_not_fail_the_pool_and_tops_up_later)
{
    struct tide_evpool_options o = {.min = 3, .evict_interval = TIDE_MS(200)};
    fx->plan[0] = MAKE_LATER;
    fx->plan[1] = MAKE_FAIL_LATER;
    fx->plan[2] = MAKE_LATER;
    fx->n_plan = 3;
    fx->mode = MAKE_NOW;
    fixture_pool(&o); /* new succeeds: the makes have not even run */
    ck_assert(run_until(answers_in, 1000));
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(fx->makes, 3);
    ck_assert_int_eq(s.live, 2);
    ck_assert_uint_eq(s.make_failures, 1);
    /* the pool serves meanwhile */
    struct answer *a = acquired();
    release(a);
    /* and tops up on its next round */
    ck_assert(run_until(min_is_up, 1000));
    ck_assert_int_eq(fx->makes, 4);
}
END_TEST

START_TEST(min_is_kept_after_a_discard)
{
    struct tide_evpool_options o = {.min = 1, .evict_interval = TIDE_MS(20)};
    fixture_pool(&o);
    release(acquired()); /* it has served: a discard is no failed make */
    struct answer *a = acquired();
    struct fake *f = a->resource;
    a->resource = NULL;
    ck_assert_int_eq(tide_evpool_discard(fx->pool, f), 0);
    run_ms(10);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.live, 1);
    ck_assert_int_eq(s.idle, 1);
    ck_assert_int_eq(fx->makes, 2);
}
END_TEST

START_TEST(min_is_topped_up_with_eviction_off)
{
    /* TIDE_FOREVER turns the eviction timer off; the minimum must still be
     * made again after a failed top-up */
    struct tide_evpool_options o = {.min = 1, .evict_interval = TIDE_FOREVER};
    fx->plan[0] = MAKE_FAIL;
    fx->n_plan = 1;
    fixture_pool(&o);
    run_ms(5);
    ck_assert_int_eq(fx->makes, 1);
    ck_assert_int_eq(stats().live, 0);
    ck_assert(run_until(min_is_up_one, 3000));
    ck_assert_int_eq(fx->makes, 2);
}
END_TEST

/* A server that accepts and closes at once (Redis at maxclients): every
 * connection of the minimum is lost before its first loan. Each counts as
 * a failed make, and the top-up backs off with no backoff in the ward:
 * rounds at about 0, 0.2, 1.0 and 2.0 s. It used to refill at once, in a
 * storm of thousands a second. */
START_TEST(minimum_against_a_server_that_closes_at_once_backs_off)
{
    struct tide_evpool_options o = {.min = 2};
    fx->lose_when_idle = true;
    fixture_pool(&o);
    run_ms(2000);
    ck_assert_int_ge(fx->makes, 4);  /* it keeps trying */
    ck_assert_int_le(fx->makes, 10); /* a few rounds, not a storm */
    struct tide_evpool_stats s = stats();
    ck_assert_uint_eq(s.make_failures, (uint64_t)fx->makes);
    ck_assert_uint_eq(s.lost, (uint64_t)fx->makes);
    ck_assert_int_eq(tide_evpool_last_error(fx->pool, NULL, 0), TIDE_EUNPROVEN);
    fx->lose_when_idle = false;
}
END_TEST

/* Makes that fail outright back off the same way, ward or not. */
START_TEST(minimum_backs_off_after_failed_makes_without_a_ward)
{
    struct tide_evpool_options o = {.min = 2};
    fx->mode = MAKE_FAIL;
    fixture_pool(&o);
    run_ms(2000);
    ck_assert_int_ge(fx->makes, 4);
    ck_assert_int_le(fx->makes, 10);
    fx->mode = MAKE_NOW;
}
END_TEST

/* Once a make is proven (its first loan came back fit), the backoff is
 * forgotten: a discard is replaced at once. */
START_TEST(proven_make_lifts_the_topup_backoff)
{
    struct tide_evpool_options o = {.min = 1};
    fx->plan[0] = fx->plan[1] = fx->plan[2] = MAKE_FAIL;
    fx->n_plan = 3;
    fixture_pool(&o);
    ck_assert(run_until(min_is_up_one, 3000));
    ck_assert_int_eq(fx->makes, 4);
    release(acquired());
    struct answer *a = acquired();
    void *r = a->resource;
    a->resource = NULL;
    ck_assert_int_eq(tide_evpool_discard(fx->pool, r), 0);
    run_ms(20);
    ck_assert_int_eq(fx->makes, 5);
    ck_assert_int_eq(stats().idle, 1);
}
END_TEST

START_TEST(huge_spans_do_not_overflow)
{
    /* finite but as large as they come: nothing may wrap (UBSan watches) */
    int64_t huge = TIDE_FOREVER - 1;
    struct tide_evpool_options o = {.min = 1,
                                    .make_timeout = huge,
                                    .acquire_timeout = huge,
                                    .health_interval = huge,
                                    .evict_interval = huge,
                                    .leak_after = huge,
                                    .lag_interval = huge};
    fx->plan[0] = MAKE_FAIL;
    fx->n_plan = 1;
    fixture_pool(&o);
    run_ms(5);
    ck_assert_int_eq(fx->makes, 1); /* the top-up waits out the hold */
    run_ms(150);                    /* the preset's first: 120 ms at most */
    ck_assert_int_eq(fx->makes, 2);
    struct answer *a = acquire(huge, NULL);
    ck_assert(run_until_answered(a, 1000));
    ck_assert_int_eq(a->status, 0);
    release(a);
}
END_TEST

static bool none_idle(void)
{
    return stats().idle == 0;
}

START_TEST(eviction_destroys_idle_past_keep)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.keep = TIDE_MS(50)),
                                    .evict_interval = TIDE_MS(20)};
    fixture_pool(&o);
    struct answer *a = acquired();
    struct answer *b = acquired();
    struct fake *fa = release(a);
    run_ms(30);
    struct fake *fb = release(b);
    ck_assert_int_eq(fa->destroyed + fb->destroyed, 0);
    /* fa goes first: it has rested longest */
    ck_assert(run_until(none_idle, 1000));
    ck_assert_int_eq(fa->destroyed, 1);
    ck_assert_int_eq(fb->destroyed, 1);
    struct tide_evpool_stats s = stats();
    ck_assert_uint_eq(s.evicted, 2);
    ck_assert_int_eq(s.live, 0);
}
END_TEST

START_TEST(timers_disarm_when_idle_so_the_loop_exits)
{
    /* health checks and leak reports on with long periods: they must not
     * hold the loop once nothing is idle or lent */
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.keep = TIDE_MS(40)),
                                    .evict_interval = TIDE_MS(20),
                                    .health_interval = TIDE_SEC(30),
                                    .leak_after = TIDE_SEC(60)};
    fixture_pool(&o);
    struct fake *f = release(acquired());
    int64_t start = now_ns();
    /* no stop timer: the dispatch must return by itself */
    ck_assert_int_eq(event_base_dispatch(fx->base), 1);
    /* keep + an eviction round is ~60 ms; a leak scan left armed would
     * hold it for a second, a health round for thirty */
    ck_assert_int_lt(now_ns() - start, TIDE_MS(800));
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_uint_eq(stats().evicted, 1);
}
END_TEST

START_TEST(waiting_for_nothing_leaves_no_timer_behind)
{
    /* a waiter the bucket spaces out arms a retry; once it has left, that
     * timer must not hold the loop for the rest of the second (makes held
     * after a failure refuse the waiter instead: no hold here) */
    struct tide_bucket_options bucket = {.rate = 1, .burst = 1};
    struct tide_evpool_options o = {
        .ward = {.bucket = &bucket, .backoff = NO_HOLD}};
    fixture_pool(&o);
    fx->mode = MAKE_FAIL;
    struct answer *a = acquire(0, NULL);
    ck_assert(run_until_answered(a, 1000));
    /* a's make took the one token: b's waits for the next */
    struct answer *b = acquire(TIDE_MS(30), NULL);
    int64_t start = now_ns();
    ck_assert_int_eq(event_base_dispatch(fx->base), 1);
    ck_assert_int_lt(now_ns() - start, TIDE_MS(600));
    ck_assert_int_eq(a->status, fx->fail_code);
    ck_assert_int_eq(b->status, TIDE_ETIMEDOUT);
}
END_TEST

struct leak {
    int calls;
    void *resource;
    int64_t held;
};

static struct leak leaks;

static void on_leak(struct tide_evpool *pool, void *resource, int64_t held,
                    void *arg)
{
    ck_assert_ptr_eq(pool, fx->pool);
    ck_assert_ptr_eq(arg, &leaks);
    leaks.calls++;
    leaks.resource = resource;
    leaks.held = held;
}

START_TEST(leak_report_fires_once_per_loan)
{
    struct tide_evpool_options o = {
        .leak_after = TIDE_MS(30), .on_leak = on_leak, .leak_arg = &leaks};
    leaks = (struct leak){0}; /* CK_FORK=no runs every test in one process */
    fixture_pool(&o);
    struct answer *a = acquired();
    run_ms(150);
    ck_assert_int_eq(leaks.calls, 1);
    ck_assert_ptr_eq(leaks.resource, a->resource);
    ck_assert_int_ge(leaks.held, TIDE_MS(30));
    struct fake *f = release(a);
    /* a short loan: no report */
    struct answer *b = acquired();
    ck_assert_ptr_eq(b->resource, f);
    release(b);
    run_ms(60);
    ck_assert_int_eq(leaks.calls, 1);
    /* a second long loan of the same resource: a second report */
    struct answer *c = acquired();
    run_ms(100);
    ck_assert_int_eq(leaks.calls, 2);
    ck_assert_uint_eq(stats().leaks, 2);
    release(c);
}
END_TEST

START_TEST(leak_report_covers_try_acquire_loans)
{
    struct tide_evpool_options o = {.leak_after = TIDE_MS(30),
                                    .evict_interval = TIDE_SEC(10),
                                    .health_interval = TIDE_SEC(10),
                                    .on_leak = on_leak,
                                    .leak_arg = &leaks};
    leaks = (struct leak){0}; /* CK_FORK=no runs every test in one process */
    fixture_pool(&o);
    struct fake *f = release(acquired());
    run_ms(40); /* whatever the first loan armed has run out */
    ck_assert_int_eq(leaks.calls, 0);
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), 0);
    run_ms(150);
    ck_assert_int_eq(leaks.calls, 1);
    ck_assert_ptr_eq(leaks.resource, f);
    ck_assert_int_eq(tide_evpool_release(fx->pool, got), 0);
}
END_TEST

static Suite *upkeep_suite(void)
{
    Suite *s = suite_create("upkeep");
    TCase *tc = tcase_create("min");
    fixture_add(tc);
    tcase_add_test(tc, prewarm_makes_min_at_start);
    tcase_add_test(
        tc, prewarm_partial_failure_does_not_fail_the_pool_and_tops_up_later);
    tcase_add_test(tc, min_is_kept_after_a_discard);
    tcase_add_test(tc, min_is_topped_up_with_eviction_off);
    tcase_add_test(tc, minimum_against_a_server_that_closes_at_once_backs_off);
    tcase_add_test(tc, minimum_backs_off_after_failed_makes_without_a_ward);
    tcase_add_test(tc, proven_make_lifts_the_topup_backoff);
    tcase_add_test(tc, huge_spans_do_not_overflow);
    suite_add_tcase(s, tc);

    tc = tcase_create("timers");
    fixture_add(tc);
    tcase_set_timeout(tc, 10); /* a loop that never exits fails here */
    tcase_add_test(tc, eviction_destroys_idle_past_keep);
    tcase_add_test(tc, timers_disarm_when_idle_so_the_loop_exits);
    tcase_add_test(tc, waiting_for_nothing_leaves_no_timer_behind);
    tcase_add_test(tc, leak_report_fires_once_per_loan);
    tcase_add_test(tc, leak_report_covers_try_acquire_loans);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(upkeep_suite)
