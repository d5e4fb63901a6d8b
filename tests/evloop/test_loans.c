/* tests for evloop/loans.c: try_acquire, release, discard, lost, the
 * validators on the way out and back, and retirement after N loans. */
#include "fixture.h"

static void pool_of(int64_t size)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = size)};
    fixture_pool(&o);
}

/* A first loan that breaks is its make's failure, and makes are held
 * after one: for the tests of what a broken loan frees, no hold. */
static void unheld_pool_of(int64_t size)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = size),
                                    .ward = {.backoff = NO_HOLD}};
    fixture_pool(&o);
}

START_TEST(release_keeps_it_idle_and_reuses_it)
{
    fixture_pool(NULL);
    struct answer *a = acquired();
    struct fake *f = release(a);
    ck_assert(f->watched);
    ck_assert_int_eq(f->destroyed, 0);
    ck_assert_int_eq(stats().idle, 1);
    struct answer *b = acquired();
    ck_assert_ptr_eq(b->resource, f);
    ck_assert(!f->watched);
    ck_assert_int_eq(fx->makes, 1);
}
END_TEST

START_TEST(the_most_recently_released_goes_out_first)
{
    pool_of(2);
    struct answer *a = acquired();
    struct answer *b = acquired();
    struct fake *fa = release(a);
    struct fake *fb = release(b);
    ck_assert_ptr_ne(fa, fb);
    struct answer *c = acquired();
    ck_assert_ptr_eq(c->resource, fb);
}
END_TEST

START_TEST(try_acquire_lends_an_idle_one)
{
    fixture_pool(NULL);
    struct fake *f = release(acquired());
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), 0);
    ck_assert_ptr_eq(got, f);
    ck_assert(!f->watched);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.lent, 1);
    ck_assert_int_eq(s.idle, 0);
    ck_assert_int_eq(tide_evpool_release(fx->pool, got), 0);
    ck_assert_int_eq(stats().idle, 1);
}
END_TEST

START_TEST(try_acquire_would_block_when_nothing_is_idle)
{
    fixture_pool(NULL);
    void *got = &got;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), TIDE_EWOULDBLOCK);
    ck_assert_ptr_null(got);
    run_ms(5);
    ck_assert_int_eq(fx->makes, 0); /* it never makes */
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, NULL), TIDE_EINVAL);
}
END_TEST

START_TEST(try_acquire_would_block_behind_queued_callers)
{
    pool_of(2);
    struct answer *a = acquired();
    fx->mode = MAKE_NEVER;
    struct answer *b = acquire(0, NULL); /* waits for its make */
    run_ms(5);
    ck_assert_int_eq(b->calls, 0);
    struct fake *f = release(a); /* idle, and b is owed it */
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), TIDE_EWOULDBLOCK);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_ptr_eq(b->resource, f);
}
END_TEST

START_TEST(try_acquire_after_close_is_refused)
{
    fixture_pool(NULL);
    release(acquired());
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), TIDE_ECLOSED);
    ck_assert_ptr_null(got);
}
END_TEST

START_TEST(release_or_discard_of_unknown_or_idle_is_refused)
{
    fixture_pool(NULL);
    struct fake *f = release(acquired()); /* idle now */
    int stranger;
    ck_assert_int_eq(tide_evpool_release(fx->pool, &stranger), TIDE_EUNKNOWN);
    ck_assert_int_eq(tide_evpool_discard(fx->pool, &stranger), TIDE_EUNKNOWN);
    ck_assert_int_eq(tide_evpool_release(fx->pool, NULL), TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_discard(fx->pool, NULL), TIDE_EINVAL);
    /* idle: a second release or a discard of it is misuse, not a return */
    ck_assert_int_eq(tide_evpool_release(fx->pool, f), TIDE_EBUSY);
    ck_assert_int_eq(tide_evpool_discard(fx->pool, f), TIDE_EBUSY);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.idle, 1);
    ck_assert_int_eq(s.live, 1);
    ck_assert_int_eq(f->destroyed, 0);
    ck_assert(f->watched);
}
END_TEST

START_TEST(broken_release_destroys_it_and_wakes_a_waiter)
{
    unheld_pool_of(1);
    struct answer *a = acquired();
    struct answer *b = acquire(0, NULL);
    run_ms(5);
    ck_assert_int_eq(b->calls, 0);
    struct fake *f = a->resource;
    f->broken = true;
    release(a);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_int_eq(b->status, 0);
    ck_assert_ptr_ne(b->resource, f);
    ck_assert_int_eq(fx->makes, 2);
    ck_assert_int_eq(stats().dirty, 1);
    ck_assert_int_eq(stats().health_failures, 0);
}
END_TEST

START_TEST(discard_destroys_it_and_wakes_a_waiter)
{
    unheld_pool_of(1);
    struct answer *a = acquired();
    struct answer *b = acquire(0, NULL);
    run_ms(5);
    struct fake *f = a->resource;
    a->resource = NULL;
    ck_assert_int_eq(tide_evpool_discard(fx->pool, f), 0);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_int_eq(b->status, 0);
    ck_assert_ptr_ne(b->resource, f);
    ck_assert_int_eq(stats().live, 1);
}
END_TEST

START_TEST(lost_idle_resource_wakes_a_waiter)
{
    pool_of(1);
    struct answer *a = acquired();
    struct answer *b = acquire(0, NULL);
    run_ms(5);
    /* the peer closes as soon as the resource goes idle: the watch hook
     * reports it from inside the pool's own call */
    fx->lose_when_idle = true;
    struct fake *f = release(a);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert(!f->watched);
    fx->lose_when_idle = false;
    ck_assert(run_until_answered(b, 1000));
    ck_assert_int_eq(b->status, 0);
    ck_assert_ptr_ne(b->resource, f);
    ck_assert_int_eq(stats().lost, 1);
}
END_TEST

START_TEST(lost_idle_resource_is_destroyed_at_once)
{
    fixture_pool(NULL);
    struct answer *a = acquired();
    struct answer *b = acquired();
    struct fake *f = release(a);
    ck_assert_int_eq(tide_evpool_lost(fx->pool, f), 0);
    ck_assert_int_eq(f->destroyed, 1);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.lost, 1);
    ck_assert_int_eq(s.live, 1);
    ck_assert_int_eq(s.idle, 0);
    /* only an idle one can be lost */
    ck_assert_int_eq(tide_evpool_lost(fx->pool, b->resource), TIDE_ENOTIDLE);
    int stranger;
    ck_assert_int_eq(tide_evpool_lost(fx->pool, &stranger), TIDE_EUNKNOWN);
    ck_assert_int_eq(tide_evpool_lost(fx->pool, NULL), TIDE_EINVAL);
}
END_TEST

START_TEST(alive_rejection_destroys_it_and_serves_the_waiter_with_another)
{
    fixture_pool(NULL);
    struct fake *f = release(acquired());
    f->dead = true;
    struct answer *b = acquire(0, NULL);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_int_eq(b->status, 0);
    ck_assert_ptr_nonnull(b->resource);
    ck_assert_ptr_ne(b->resource, f);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(fx->makes, 2);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.health_failures, 1);
    ck_assert_int_eq(s.live, 1);
}
END_TEST

START_TEST(alive_rejection_in_try_acquire_tries_the_next_idle)
{
    pool_of(2);
    struct answer *a = acquired();
    struct answer *b = acquired();
    struct fake *fa = release(a);
    struct fake *fb = release(b);
    fb->dead = true; /* the newest, so the first tried */
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), 0);
    ck_assert_ptr_eq(got, fa);
    ck_assert_int_eq(fb->destroyed, 1);
    fa->dead = true;
    ck_assert_int_eq(tide_evpool_release(fx->pool, fa), 0);
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), TIDE_EWOULDBLOCK);
    ck_assert_int_eq(fa->destroyed, 1);
    ck_assert_int_eq(stats().live, 0);
}
END_TEST

START_TEST(retire_after_destroys_a_resource_after_n_loans)
{
    struct tide_evpool_options o = {.retire_after = 2};
    fixture_pool(&o);
    struct fake *f = release(acquired());
    ck_assert_int_eq(f->destroyed, 0);
    struct answer *b = acquired();
    ck_assert_ptr_eq(b->resource, f);
    release(b); /* its second loan: retired */
    ck_assert_int_eq(f->destroyed, 1);
    struct answer *c = acquired();
    ck_assert_ptr_ne(c->resource, f);
    ck_assert_int_eq(fx->makes, 2);
    ck_assert_int_eq(stats().health_failures, 0);
}
END_TEST

START_TEST(stale_idle_resource_is_destroyed_and_another_made)
{
    /* life, not keep: eviction is too slow to see it first */
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.life = TIDE_MS(20)),
                                    .evict_interval = TIDE_SEC(10)};
    fixture_pool(&o);
    struct fake *f = release(acquired());
    run_ms(30);
    ck_assert_int_eq(f->destroyed, 0);
    struct answer *b = acquired();
    ck_assert_ptr_ne(b->resource, f);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert(!f->watched);
    struct fake *g = release(b);
    run_ms(30);
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), TIDE_EWOULDBLOCK);
    ck_assert_int_eq(g->destroyed, 1);
    struct tide_evpool_stats s = stats();
    ck_assert_uint_eq(s.stale, 2);
    ck_assert_int_eq(s.live, 0);
}
END_TEST

/* A watcher may report a loss at any time, also from inside watch(false):
 * by then the resource is on its way out of idle (lent, checked, evicted,
 * closed), so the report is refused, not acted on twice. */
START_TEST(loss_reported_while_unwatched_is_refused)
{
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 4, .keep = TIDE_MS(30)),
        .evict_interval = TIDE_MS(10),
        .health_interval = TIDE_MS(15)};
    fixture_pool(&o);
    struct answer *a[4];
    for (int i = 0; i < 4; i++)
        a[i] = acquired();
    for (int i = 0; i < 4; i++)
        release(a[i]);
    fx->lose_when_unwatched = true;
    /* lent by the pump, and by try_acquire */
    struct answer *b = acquired();
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), 0);
    ck_assert_int_eq(tide_evpool_release(fx->pool, got), 0);
    release(b);
    int before = fx->lost_refused;
    ck_assert_int_ge(before, 2);
    /* lost itself */
    struct fake *f = &fx->fakes[0];
    ck_assert(f->watched);
    ck_assert_int_eq(tide_evpool_lost(fx->pool, f), 0);
    ck_assert_int_eq(f->destroyed, 1);
    /* health checks, then eviction of the rest */
    run_ms(20);
    ck_assert_int_gt(fx->checks, 0);
    run_ms(60);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.live, 0);
    ck_assert_uint_eq(s.evicted, 3);
    ck_assert_int_gt(fx->lost_refused, before + 3);
    ck_assert_int_eq(fx->n_fakes, 4);
}
END_TEST

START_TEST(loss_reported_while_closing_or_freeing_is_refused)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 4)};
    fixture_pool(&o);
    struct answer *a[4];
    for (int i = 0; i < 4; i++)
        a[i] = acquired();
    release(a[0]);
    release(a[1]);
    fx->lose_when_unwatched = true;
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    ck_assert_int_eq(fx->lost_refused, 2);
    ck_assert_int_eq(fx->fakes[0].destroyed, 1);
    ck_assert_int_eq(fx->fakes[1].destroyed, 1);
    release(a[2]);
    tide_evpool_free(fx->pool); /* a[3] still lent: destroyed with it */
    fx->pool = NULL;
    a[3]->resource = NULL;
}
END_TEST

START_TEST(loss_reported_while_freeing_is_refused)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 4)};
    fixture_pool(&o);
    struct answer *a[2];
    for (int i = 0; i < 2; i++)
        a[i] = acquired();
    release(a[0]);
    release(a[1]);
    fx->lose_when_unwatched = true;
    tide_evpool_free(fx->pool);
    fx->pool = NULL;
    ck_assert_int_eq(fx->lost_refused, 2);
}
END_TEST

START_TEST(loss_reported_while_a_stale_one_leaves_is_refused)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.life = TIDE_MS(20)),
                                    .evict_interval = TIDE_SEC(10)};
    fixture_pool(&o);
    fx->mode = MAKE_NEVER;
    struct answer *a = acquire(0, NULL);
    run_ms(2);
    answer_held(true);
    ck_assert(run_until_answered(a, 1000));
    release(a);
    run_ms(30); /* past life */
    fx->lose_when_unwatched = true;
    /* a make reservation is open while the stale one leaves */
    struct answer *b = acquire(0, NULL);
    ck_assert(run_until(answered_all, 50) == false);
    ck_assert_int_eq(fx->fakes[0].destroyed, 1);
    ck_assert_int_eq(fx->lost_refused, 1);
    ck_assert_int_eq(stats().making, 1);
    answer_held(true);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_int_eq(b->status, 0);
    ck_assert_int_eq(stats().live, 1);
}
END_TEST

static Suite *loans_suite(void)
{
    Suite *s = suite_create("loans");
    TCase *tc = tcase_create("release");
    fixture_add(tc);
    tcase_add_test(tc, release_keeps_it_idle_and_reuses_it);
    tcase_add_test(tc, the_most_recently_released_goes_out_first);
    tcase_add_test(tc, release_or_discard_of_unknown_or_idle_is_refused);
    tcase_add_test(tc, broken_release_destroys_it_and_wakes_a_waiter);
    tcase_add_test(tc, discard_destroys_it_and_wakes_a_waiter);
    tcase_add_test(tc, retire_after_destroys_a_resource_after_n_loans);
    tcase_add_test(tc, stale_idle_resource_is_destroyed_and_another_made);
    suite_add_tcase(s, tc);

    tc = tcase_create("try_acquire");
    fixture_add(tc);
    tcase_add_test(tc, try_acquire_lends_an_idle_one);
    tcase_add_test(tc, try_acquire_would_block_when_nothing_is_idle);
    tcase_add_test(tc, try_acquire_would_block_behind_queued_callers);
    tcase_add_test(tc, try_acquire_after_close_is_refused);
    suite_add_tcase(s, tc);

    tc = tcase_create("validators");
    fixture_add(tc);
    tcase_add_test(tc, lost_idle_resource_wakes_a_waiter);
    tcase_add_test(tc, lost_idle_resource_is_destroyed_at_once);
    tcase_add_test(
        tc, alive_rejection_destroys_it_and_serves_the_waiter_with_another);
    tcase_add_test(tc, alive_rejection_in_try_acquire_tries_the_next_idle);
    tcase_add_test(tc, loss_reported_while_unwatched_is_refused);
    tcase_add_test(tc, loss_reported_while_closing_or_freeing_is_refused);
    tcase_add_test(tc, loss_reported_while_freeing_is_refused);
    tcase_add_test(tc, loss_reported_while_a_stale_one_leaves_is_refused);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(loans_suite)
