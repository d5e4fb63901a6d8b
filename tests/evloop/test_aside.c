/* tests for evloop/aside.c's resets: a released resource readied for its
 * next borrower (SMTP RSET, DISCARD ALL) before it goes idle, lent to
 * nobody meanwhile, seen by the waiters as a release that took a little
 * longer. (Health checks, the other use of aside.c: test_health.c.) */
#include "fixture.h"

/* The script's reset: held until the test answers it, or answered at once
 * with `reset_at_once`. */
static struct tide_reset *held_resets[16];
static struct fake *reset_of[16];
static int n_resets;
static int resets_run;
static int reset_at_once; /* 0: hold; 1: ok at once; -1: fail at once */

static void script_reset(struct tide_evpool *pool, struct tide_reset *token,
                         void *resource, void *arg)
{
    (void)arg;
    resets_run++;
    /* counted as resetting, not lent, when the hook runs */
    struct tide_evpool_stats s;
    tide_evpool_stats(pool, &s);
    ck_assert_int_ge(s.resetting, 1);
    if (reset_at_once) {
        tide_evpool_reset_done(token, reset_at_once > 0);
        return;
    }
    ck_assert_int_lt(n_resets, 16);
    reset_of[n_resets] = resource;
    held_resets[n_resets++] = token;
}

static struct fake *answer_reset(bool ok)
{
    ck_assert_int_gt(n_resets, 0);
    struct tide_reset *t = held_resets[0];
    struct fake *f = reset_of[0];
    n_resets--;
    for (int k = 0; k < n_resets; k++) {
        held_resets[k] = held_resets[k + 1];
        reset_of[k] = reset_of[k + 1];
    }
    tide_evpool_reset_done(t, ok);
    return f;
}

static void resetting_pool(const struct tide_evpool_options *o)
{
    n_resets = resets_run = reset_at_once = 0;
    fx->factory.reset = script_reset;
    fixture_pool(o);
}

START_TEST(release_is_reset_before_it_goes_idle)
{
    resetting_pool(NULL);
    struct fake *f = release(acquired());
    ck_assert_int_eq(resets_run, 1);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.resetting, 1);
    ck_assert_int_eq(s.idle, 0);
    ck_assert_int_eq(s.lent, 0);
    ck_assert_int_eq(s.live, 1);
    ck_assert_int_eq(s.making, 0);
    /* lent to nobody while it runs */
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), TIDE_EWOULDBLOCK);
    ck_assert_ptr_eq(answer_reset(true), f);
    s = stats();
    ck_assert_int_eq(s.resetting, 0);
    ck_assert_int_eq(s.idle, 1);
    ck_assert(f->watched);
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), 0);
    ck_assert_ptr_eq(got, f);
    ck_assert_int_eq(tide_evpool_release(fx->pool, got), 0);
    answer_reset(true);
}
END_TEST

START_TEST(failed_reset_destroys_and_counts)
{
    resetting_pool(NULL);
    struct fake *f = release(acquired());
    ck_assert_ptr_eq(answer_reset(false), f);
    ck_assert_int_eq(f->destroyed, 1);
    struct tide_evpool_stats s = stats();
    ck_assert_uint_eq(s.reset_failures, 1);
    ck_assert_int_eq(s.live, 0);
    ck_assert_int_eq(s.resetting, 0);
}
END_TEST

/* A waiter parked on a pool of one gets the resource once its reset is
 * done, in order, and nobody gets it before. */
START_TEST(waiters_get_a_reset_resource_in_order)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1)};
    resetting_pool(&o);
    struct answer *a = acquired();
    struct answer *b = acquire(0, NULL);
    struct answer *c = acquire(0, NULL);
    struct fake *f = release(a);
    run_ms(10);
    ck_assert_int_eq(b->calls + c->calls, 0); /* it is being reset */
    ck_assert_int_eq(fx->makes, 1);           /* and no make barges */
    answer_reset(true);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_ptr_eq(b->resource, f);
    ck_assert_int_eq(c->calls, 0);
    release(b);
    answer_reset(true);
    ck_assert(run_until_answered(c, 1000));
    ck_assert_ptr_eq(c->resource, f);
    release(c);
    answer_reset(true);
}
END_TEST

START_TEST(reset_answered_at_once_inside_the_hook)
{
    resetting_pool(NULL);
    reset_at_once = 1;
    struct fake *f = release(acquired());
    ck_assert_int_eq(resets_run, 1);
    ck_assert_int_eq(stats().idle, 1);
    reset_at_once = -1;
    struct answer *a = acquired();
    ck_assert_ptr_eq(a->resource, f);
    release(a);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_uint_eq(stats().reset_failures, 1);
}
END_TEST

/* Retired, refused by reusable(), or released while the pool closes: no
 * reset, since the resource is not kept. */
START_TEST(no_reset_for_what_is_not_kept)
{
    struct tide_evpool_options o = {.retire_after = 1};
    resetting_pool(&o);
    struct fake *f = release(acquired());
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(resets_run, 0);
    fixture_teardown();
    fixture_setup();
    /* the broken first loan is a failed make: no hold, for the next one */
    struct tide_evpool_options nh = {.ward = {.backoff = NO_HOLD}};
    resetting_pool(&nh);
    struct answer *a = acquired();
    ((struct fake *)a->resource)->broken = true;
    f = release(a);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(resets_run, 0);
    a = acquired();
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    f = release(a);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(resets_run, 0);
}
END_TEST

START_TEST(close_waits_for_a_reset)
{
    resetting_pool(NULL);
    struct fake *f = release(acquired());
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    run_ms(10);
    ck_assert(!fx->closed);
    ck_assert_int_eq(f->destroyed, 0);
    answer_reset(true); /* back, and destroyed: the pool is closed */
    ck_assert_int_eq(f->destroyed, 1);
    run_ms(10);
    ck_assert(fx->closed);
}
END_TEST

START_TEST(free_during_a_reset_leaves_it_to_the_token)
{
    resetting_pool(NULL);
    struct fake *f = release(acquired());
    tide_evpool_free(fx->pool);
    fx->pool = NULL;
    ck_assert_int_eq(f->destroyed, 0);
    answer_reset(true);
    ck_assert_int_eq(f->destroyed, 1);
}
END_TEST

static Suite *aside_suite(void)
{
    Suite *s = suite_create("aside");
    TCase *tc = tcase_create("reset");
    fixture_add(tc);
    tcase_add_test(tc, release_is_reset_before_it_goes_idle);
    tcase_add_test(tc, failed_reset_destroys_and_counts);
    tcase_add_test(tc, waiters_get_a_reset_resource_in_order);
    tcase_add_test(tc, reset_answered_at_once_inside_the_hook);
    tcase_add_test(tc, no_reset_for_what_is_not_kept);
    tcase_add_test(tc, close_waits_for_a_reset);
    tcase_add_test(tc, free_during_a_reset_leaves_it_to_the_token);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(aside_suite)
