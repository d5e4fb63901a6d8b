/* tests for evloop/makes.c: the factory's answers, failures handed to
 * waiters, make timeouts and late answers. */
#include <string.h>

#include "fixture.h"

static void pool_of(int64_t size)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = size)};
    fixture_pool(&o);
}

/* The waiter a failed make was for gets its error, with the time makes
 * are held for. The others would each need a make: they wait out the
 * hold (their deadlines outlast it), then one make goes (a probe) for the
 * next; it fails too, and every waiter left is told at once why and when
 * to come back, rather than each start a make that would fail too. */
static void failed_make_answers_every_waiter(enum script_mode mode)
{
    pool_of(1);
    fx->mode = mode;
    struct answer *a[3];
    for (int i = 0; i < 3; i++)
        a[i] = acquire(TIDE_SEC(2), NULL);
    ck_assert_int_eq(a[0]->calls, 0);
    int64_t start = now_ns();
    ck_assert(run_until(answered_all, 1500));
    int64_t took = now_ns() - start;
    ck_assert_int_gt(took, TIDE_MS(75)); /* the first hold, waited out */
    ck_assert_int_lt(took, TIDE_MS(500));
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(a[i]->calls, 1);
        ck_assert_int_eq(a[i]->order, i);
        ck_assert_int_eq(a[i]->make_error, fx->fail_code);
        ck_assert_ptr_nonnull(strstr(a[i]->message, "scripted failure"));
    }
    /* a's make, and the probe b got after the hold */
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(a[i]->status, fx->fail_code);
    ck_assert_int_gt(a[0]->retry_after, TIDE_MS(50));
    ck_assert_int_le(a[0]->retry_after, TIDE_MS(120));
    ck_assert_int_gt(a[1]->retry_after, TIDE_MS(150));
    ck_assert_int_le(a[1]->retry_after, TIDE_MS(240));
    ck_assert_int_eq(a[2]->status, TIDE_EUNAVAILABLE);
    ck_assert_int_eq(a[2]->guard, TIDE_GUARD_BACKOFF);
    ck_assert_int_gt(a[2]->retry_after, TIDE_MS(150));
    ck_assert_int_le(a[2]->retry_after, TIDE_MS(240));
    ck_assert_int_eq(fx->makes, 2);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.make_failures, 2);
    ck_assert_int_eq(s.held, 1);
    ck_assert_int_eq(s.shed, 0);
    ck_assert_int_eq(s.live, 0);
    char buf[64];
    ck_assert_int_eq(tide_evpool_last_error(fx->pool, buf, sizeof buf),
                     fx->fail_code);
    ck_assert_str_eq(buf, "scripted failure");
}

START_TEST(failing_factory_answers_every_waiter_with_the_cause)
{
    failed_make_answers_every_waiter(MAKE_FAIL_LATER);
}
END_TEST

START_TEST(factory_failing_at_once_answers_every_waiter_with_the_cause)
{
    failed_make_answers_every_waiter(MAKE_FAIL);
}
END_TEST

START_TEST(ward_backoff_holds_waiters_with_its_own_delay)
{
    /* after the first failure the ward's backoff holds makes for 500 ms,
     * past the waiters' 150 ms: they are told so at once, rather than
     * time out on it */
    struct tide_backoff backoff = {.base = TIDE_MS(500),
                                   .jitter = TIDE_JITTER_RIGID};
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1),
                                    .ward = {.backoff = &backoff}};
    fixture_pool(&o);
    fx->mode = MAKE_FAIL_LATER;
    struct answer *a[3];
    for (int i = 0; i < 3; i++)
        a[i] = acquire(TIDE_MS(150), NULL);
    int64_t start = now_ns();
    ck_assert(run_until(answered_all, 1000));
    ck_assert_int_lt(now_ns() - start, TIDE_MS(140));
    ck_assert_int_eq(a[0]->status, fx->fail_code);
    for (int i = 1; i < 3; i++) {
        ck_assert_int_eq(a[i]->calls, 1);
        ck_assert_int_eq(a[i]->status, TIDE_EUNAVAILABLE);
        ck_assert_int_eq(a[i]->guard, TIDE_GUARD_BACKOFF);
        ck_assert_int_eq(a[i]->make_error, fx->fail_code);
        ck_assert_int_gt(a[i]->retry_after, TIDE_MS(450));
        ck_assert_int_le(a[i]->retry_after, TIDE_MS(500));
    }
    ck_assert_int_eq(fx->makes, 1);
    ck_assert_int_eq(stats().timeouts, 0);
    ck_assert_int_eq(stats().held, 2);
}
END_TEST

/* Once the hold is over one make (a probe) goes at a time while the last
 * failed: a waiter that would need another waits while it is being made,
 * and no longer: once it is made the next make starts at once, before the
 * probe's first loan has shown anything (nobody waits on another's loan). */
START_TEST(one_probe_at_a_time_after_the_hold)
{
    pool_of(4);
    fx->plan[0] = MAKE_FAIL;
    fx->plan[1] = MAKE_NEVER;
    fx->n_plan = 2;
    fx->mode = MAKE_NOW;
    struct answer *a = acquire(TIDE_SEC(2), NULL);
    ck_assert(run_until_answered(a, 1000));
    ck_assert_int_eq(a->status, fx->fail_code);
    run_ms(150); /* the preset's first hold: 120 ms at most */
    struct answer *b = acquire(TIDE_SEC(2), NULL);
    struct answer *c = acquire(TIDE_SEC(2), NULL);
    run_ms(50);
    ck_assert_int_eq(fx->makes, 2); /* b's probe; c waits on it */
    ck_assert_int_eq(c->calls, 0);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.making, 1);
    ck_assert_int_eq(s.waiting, 2);
    /* the probe is made: b has it, and c's make goes at once */
    (void)answer_held(true);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_int_eq(b->status, 0);
    ck_assert(run_until_answered(c, 1000));
    ck_assert_int_eq(c->status, 0);
    ck_assert_int_eq(fx->makes, 3);
    ck_assert_ptr_ne(c->resource, b->resource);
    ck_assert_uint_eq(stats().held, 0);
}
END_TEST

START_TEST(make_timeout_destroys_a_late_success)
{
    struct tide_evpool_options o = {.make_timeout = TIDE_MS(30)};
    fixture_pool(&o);
    fx->mode = MAKE_NEVER;
    struct answer *a = acquire(TIDE_SEC(1), NULL);
    ck_assert(run_until_answered(a, 1000));
    ck_assert_int_eq(a->status, TIDE_EMAKETIMEDOUT);
    ck_assert_int_eq(a->make_error, TIDE_EMAKETIMEDOUT);
    ck_assert_int_eq(fx->cancels, 1);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.making, 0);
    ck_assert_int_eq(s.live, 0);
    /* the factory answers after all: closed at once, counted once */
    struct fake *late = answer_held(true);
    ck_assert_int_eq(late->destroyed, 1);
    s = stats();
    ck_assert_int_eq(s.live, 0);
    ck_assert_uint_eq(s.made, s.destroyed);
    ck_assert_uint_eq(s.make_failures, 1);
    /* and once makes are no longer held, the pool works again */
    run_ms(150);
    fx->mode = MAKE_NOW;
    struct answer *b = acquired();
    ck_assert_ptr_ne(b->resource, late);
    s = stats();
    ck_assert_int_eq(s.live, 1);
    ck_assert_uint_eq(s.made - s.destroyed, 1);
}
END_TEST

START_TEST(make_timeout_passes_the_place_on)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1),
                                    .ward = {.backoff = NO_HOLD},
                                    .make_timeout = TIDE_MS(30)};
    fixture_pool(&o);
    fx->plan[0] = MAKE_NEVER; /* a's make hangs, b's answers */
    fx->n_plan = 1;
    struct answer *a = acquire(TIDE_SEC(1), NULL);
    struct answer *b = acquire(TIDE_SEC(1), NULL);
    ck_assert(run_until(answered_all, 1000));
    ck_assert_int_eq(a->status, TIDE_EMAKETIMEDOUT);
    ck_assert_int_eq(b->status, 0);
    struct fake *late = answer_held(true);
    ck_assert_int_eq(late->destroyed, 1);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.live, 1); /* b's, never the late one */
    ck_assert_uint_eq(s.made - s.destroyed, 1);
}
END_TEST

START_TEST(cancel_is_called_once_per_make)
{
    struct tide_evpool_options o = {.make_timeout = TIDE_MS(20)};
    fixture_pool(&o);
    fx->mode = MAKE_NEVER;
    struct answer *a = acquire(TIDE_SEC(1), NULL);
    ck_assert(run_until_answered(a, 1000));
    ck_assert_int_eq(fx->cancels, 1);
    /* the pool gave up on it already: closing or freeing says nothing
     * more to the factory about this make */
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    ck_assert(run_until(answered_all, 100));
    run_ms(5);
    ck_assert(fx->closed);
    tide_evpool_free(fx->pool);
    fx->pool = NULL;
    ck_assert_int_eq(fx->cancels, 1);
    struct fake *late = answer_held(true);
    ck_assert_int_eq(late->destroyed, 1);
}
END_TEST

START_TEST(close_cancels_a_make_in_flight)
{
    fixture_pool(NULL);
    fx->mode = MAKE_NEVER;
    struct answer *a = acquire(0, NULL);
    run_ms(5);
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    ck_assert_int_eq(fx->cancels, 1);
    ck_assert(run_until_answered(a, 1000));
    ck_assert_int_eq(a->status, TIDE_ECLOSED);
    run_ms(5);
    ck_assert(!fx->closed); /* the make is still owed an answer */
    struct fake *f = answer_held(true);
    ck_assert_int_eq(f->destroyed, 1);
    run_ms(5);
    ck_assert(fx->closed);
}
END_TEST

START_TEST(make_error_is_the_last_makes_code)
{
    pool_of(1);
    fx->plan[0] = MAKE_FAIL;
    fx->n_plan = 1;
    struct answer *a = acquire(0, NULL);
    ck_assert(run_until_answered(a, 1000));
    ck_assert_int_eq(a->status, fx->fail_code);
    run_ms(150);                   /* makes held: the preset's first delay */
    struct answer *b = acquired(); /* the next make succeeds */
    struct answer *c = acquire(TIDE_MS(20), NULL);
    ck_assert(run_until_answered(c, 1000));
    ck_assert_int_eq(c->status, TIDE_ETIMEDOUT);
    /* c waited on a busy pool, not on a failing factory */
    ck_assert_int_eq(c->make_error, 0);
    ck_assert_str_eq(c->message, tide_strerror(TIDE_ETIMEDOUT));
    /* the last failure stays readable */
    ck_assert_int_eq(tide_evpool_last_error(fx->pool, NULL, 0), fx->fail_code);
    release(b);
}
END_TEST

START_TEST(unmade_without_a_code_of_its_own_is_emake)
{
    fixture_pool(NULL);
    fx->mode = MAKE_FAIL;
    fx->fail_code = 5; /* not a negative code */
    struct answer *a = acquire(0, NULL);
    ck_assert(run_until_answered(a, 1000));
    ck_assert_int_eq(a->status, TIDE_EMAKE);
    ck_assert_str_eq(a->message, "scripted failure");
    char buf[8];
    ck_assert_int_eq(tide_evpool_last_error(fx->pool, buf, sizeof buf),
                     TIDE_EMAKE);
    ck_assert_str_eq(buf, "scripte"); /* truncated, terminated */
}
END_TEST

static void make_null(struct tide_evpool *pool, struct tide_make *token,
                      void *arg)
{
    (void)arg;
    fx->makes++;
    ck_assert_ptr_eq(tide_make_pool(token), pool);
    tide_evpool_made(token, NULL);
}

START_TEST(made_with_null_is_a_failure)
{
    fx->factory.make = make_null;
    fixture_pool(NULL);
    struct answer *a = acquire(0, NULL);
    ck_assert(run_until_answered(a, 1000));
    ck_assert_int_eq(a->status, TIDE_EMAKE);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.live, 0);
    ck_assert_uint_eq(s.make_failures, 1);
}
END_TEST

START_TEST(made_after_the_pool_is_freed_destroys_the_resource)
{
    fixture_pool(NULL);
    fx->mode = MAKE_NEVER;
    acquire(0, NULL);
    run_ms(5);
    tide_evpool_free(fx->pool);
    fx->pool = NULL;
    ck_assert_int_eq(fx->cancels, 1);
    ck_assert_ptr_null(tide_make_pool(fx->held[0]));
    struct fake *f = answer_held(true);
    ck_assert_int_eq(f->destroyed, 1);
}
END_TEST

static Suite *makes_suite(void)
{
    Suite *s = suite_create("makes");
    TCase *tc = tcase_create("failures");
    fixture_add(tc);
    tcase_add_test(tc, failing_factory_answers_every_waiter_with_the_cause);
    tcase_add_test(tc,
                   factory_failing_at_once_answers_every_waiter_with_the_cause);
    tcase_add_test(tc, ward_backoff_holds_waiters_with_its_own_delay);
    tcase_add_test(tc, one_probe_at_a_time_after_the_hold);
    tcase_add_test(tc, make_error_is_the_last_makes_code);
    tcase_add_test(tc, unmade_without_a_code_of_its_own_is_emake);
    tcase_add_test(tc, made_with_null_is_a_failure);
    suite_add_tcase(s, tc);

    tc = tcase_create("timeouts");
    fixture_add(tc);
    tcase_add_test(tc, make_timeout_destroys_a_late_success);
    tcase_add_test(tc, make_timeout_passes_the_place_on);
    tcase_add_test(tc, cancel_is_called_once_per_make);
    tcase_add_test(tc, close_cancels_a_make_in_flight);
    tcase_add_test(tc, made_after_the_pool_is_freed_destroys_the_resource);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(makes_suite)
