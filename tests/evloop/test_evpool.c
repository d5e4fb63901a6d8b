/* tests for the evloop adapter: one test per promise. */
#include "fixture.h"

static bool answered_all(void)
{
    for (int i = 0; i < fx->n_answers; i++)
        if (fx->answers[i].calls == 0)
            return false;
    return true;
}

START_TEST(acquire_makes_and_answers_from_the_loop)
{
    fixture_pool(NULL);
    struct answer *a = acquire(0, NULL);
    ck_assert_int_eq(a->calls, 0); /* never inside acquire() */
    ck_assert(run_until(answered_all, 1000));
    ck_assert_int_eq(a->status, 0);
    ck_assert_ptr_nonnull(a->resource);
    ck_assert_int_eq(fx->makes, 1);
}
END_TEST

START_TEST(release_keeps_it_idle_and_reuses_it)
{
    fixture_pool(NULL);
    struct answer *a = acquire(0, NULL);
    ck_assert(run_until(answered_all, 1000));
    struct fake *f = a->resource;
    ck_assert_int_eq(tide_evpool_release(fx->pool, f), 0);
    a->resource = NULL;
    ck_assert(f->watched);
    struct answer *b = acquire(0, NULL);
    ck_assert(run_until(answered_all, 1000));
    ck_assert_ptr_eq(b->resource, f);
    ck_assert_int_eq(fx->makes, 1);
}
END_TEST

START_TEST(waiters_are_served_in_order)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1)};
    fixture_pool(&o);
    struct answer *a[4];
    for (int i = 0; i < 4; i++)
        a[i] = acquire(0, NULL);
    ck_assert(run_until(answered_all, 1000) == false);
    ck_assert_int_eq(a[0]->status, 0);
    for (int i = 1; i < 4; i++) {
        ck_assert_int_eq(a[i]->calls, 0);
        void *r = a[i - 1]->resource;
        a[i - 1]->resource = NULL;
        ck_assert_int_eq(tide_evpool_release(fx->pool, r), 0);
        run_ms(5);
        ck_assert_int_eq(a[i]->calls, 1);
        ck_assert_ptr_eq(a[i]->resource, r);
    }
}
END_TEST

START_TEST(failing_factory_gives_each_waiter_one_error)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1)};
    fx->mode = MAKE_FAIL_LATER;
    fixture_pool(&o);
    struct answer *a[3];
    for (int i = 0; i < 3; i++)
        a[i] = acquire(TIDE_SEC(2), NULL);
    ck_assert(run_until(answered_all, 1500));
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(a[i]->calls, 1);
        ck_assert_int_eq(a[i]->status, fx->fail_code);
        ck_assert_str_eq(a[i]->message, "scripted failure");
    }
}
END_TEST

START_TEST(close_fails_waiters_and_destroys_idle_once)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1)};
    fixture_pool(&o);
    struct answer *a = acquire(0, NULL);
    struct answer *b = acquire(0, NULL);
    run_ms(5);
    ck_assert_int_eq(a->status, 0);
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    ck_assert_int_eq(tide_evpool_close(fx->pool, NULL, NULL), TIDE_ECLOSED);
    run_ms(5);
    ck_assert_int_eq(b->calls, 1);
    ck_assert_int_eq(b->status, TIDE_ECLOSED);
    struct fake *f = a->resource;
    ck_assert_int_eq(f->destroyed, 0); /* lent: destroyed when it returns */
    a->resource = NULL;
    ck_assert_int_eq(tide_evpool_release(fx->pool, f), 0);
    ck_assert_int_eq(f->destroyed, 1);
}
END_TEST

static Suite *evpool_suite(void)
{
    Suite *s = suite_create("evpool");
    TCase *tc = tcase_create("acquire");
    fixture_add(tc);
    tcase_add_test(tc, acquire_makes_and_answers_from_the_loop);
    tcase_add_test(tc, release_keeps_it_idle_and_reuses_it);
    tcase_add_test(tc, waiters_are_served_in_order);
    tcase_add_test(tc, failing_factory_gives_each_waiter_one_error);
    tcase_add_test(tc, close_fails_waiters_and_destroys_idle_once);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(evpool_suite)
