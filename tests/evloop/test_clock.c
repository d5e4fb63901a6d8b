/* The pool's reading of the clock: try_acquire and release decide with the
 * last reading while an eviction round refreshes it often enough, and read
 * the clock when what they stamp must be exact (a leak report, a breaker
 * with no eviction rounds to refresh its time). Each test keeps the loop
 * from running for a while first, so a reading taken before is old. */
#include "fixture.h"
#include "loop.h"

struct leak {
    int calls;
    int64_t held;
};

static struct leak leaks;

static void on_leak(struct tide_evpool *pool, void *resource, int64_t held,
                    void *arg)
{
    (void)pool;
    (void)resource;
    (void)arg;
    leaks.calls++;
    leaks.held = held;
}

/* A loan's leak report counts from when it was lent, not from a reading
 * taken before the loop was kept from running. */
START_TEST(try_acquire_after_a_stalled_loop_times_its_loan_from_then)
{
    struct tide_evpool_options o = {.leak_after = TIDE_MS(300),
                                    .on_leak = on_leak};
    leaks = (struct leak){0}; /* CK_FORK=no runs every test in one process */
    fixture_pool(&o);
    release(acquired());
    run_ms(20);
    tide_test_sleep_ms(400); /* the loop does not run: no timer refreshes */
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), 0);
    int64_t lent = now_ns();
    run_ms(150);
    ck_assert_int_eq(leaks.calls, 0); /* held 150 ms of 300 */
    run_ms(300);
    ck_assert_int_eq(leaks.calls, 1);
    ck_assert_int_ge(leaks.held, TIDE_MS(300));
    ck_assert_int_le(leaks.held, now_ns() - lent);
    ck_assert_int_eq(tide_evpool_release(fx->pool, got), 0);
}
END_TEST

/* With keep and life forever no eviction round runs, so nothing refreshes
 * the reading: a breaker opened by a release counts its cooldown from the
 * release itself. */
START_TEST(breaker_opened_by_a_release_cools_down_from_then)
{
    struct tide_breaker_options b = {
        .policy = TIDE_BREAKER_STRIKES, .strikes = 1, .cooldown = TIDE_SEC(1)};
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 2, .keep = TIDE_FOREVER),
        .ward = {.breaker = &b}};
    fixture_pool(&o);
    struct fake *f = release(acquired()); /* the make proven */
    run_ms(20);
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), 0);
    ck_assert_ptr_eq(got, f);
    tide_test_sleep_ms(500);
    f->broken = true; /* reusable() refuses it: the backend's failure */
    ck_assert_int_eq(tide_evpool_release(fx->pool, got), 0);
    struct tide_breaker *br = tide_evpool_breaker(fx->pool);
    ck_assert_int_eq(tide_breaker_state(br), TIDE_BREAKER_INACTIVE);
    ck_assert_int_ge(tide_breaker_retry_after(br, now_ns()), TIDE_MS(900));
}
END_TEST

/* While eviction rounds run, a release stamps its resource's rest with a
 * reading at most a round old: it is kept for its keep, less a round at
 * most, after a loan that outlasted many rounds. */
START_TEST(release_after_a_long_loan_is_kept_for_its_keep)
{
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 2, .keep = TIDE_MS(400)),
        .evict_interval = TIDE_MS(50)};
    fixture_pool(&o);
    release(acquired());
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), 0);
    run_ms(1000); /* eight keeps' worth of rounds while lent */
    ck_assert_int_eq(tide_evpool_release(fx->pool, got), 0);
    for (int k = 0; k < 5; k++) { /* 250 ms, five rounds, looked at each */
        run_ms(50);
        ck_assert_int_eq(stats().idle, 1);
    }
    ck_assert_uint_eq(stats().evicted, 0);
    run_ms(400);
    ck_assert_uint_eq(stats().evicted, 1);
}
END_TEST

static Suite *clock_suite(void)
{
    Suite *s = suite_create("evloop clock");
    TCase *tc = tcase_create("reading");
    fixture_add(tc);
    tcase_add_test(tc,
                   try_acquire_after_a_stalled_loop_times_its_loan_from_then);
    tcase_add_test(tc, breaker_opened_by_a_release_cools_down_from_then);
    tcase_add_test(tc, release_after_a_long_loan_is_kept_for_its_keep);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(clock_suite)
