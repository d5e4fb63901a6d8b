/* tests for evloop/health.c: periodic checks of idle resources, and the
 * counts while a resource is in a check or a validator. */
#include "fixture.h"

#include <string.h>
#include <time.h>

static bool first_is_replaced(void)
{
    struct tide_evpool_stats s = stats();
    return fx->fakes[0].destroyed == 1 && s.live == 2 && s.idle == 2;
}

START_TEST(health_check_destroys_and_replaces_up_to_min)
{
    struct tide_evpool_options o = {.min = 2,
                                    .health_interval = TIDE_MS(20),
                                    .evict_interval = TIDE_MS(20)};
    fixture_pool(&o);
    run_ms(5);
    ck_assert_int_eq(fx->n_fakes, 2);
    fx->fakes[0].dead = true;
    ck_assert(run_until(first_is_replaced, 1000));
    ck_assert_int_eq(fx->fakes[1].destroyed, 0);
    ck_assert_int_eq(fx->makes, 3);
    ck_assert_int_ge(fx->checks, 2);
    struct tide_evpool_stats s = stats();
    ck_assert_uint_eq(s.health_failures, 1);
    ck_assert_int_eq(s.checking, 0);
}
END_TEST

START_TEST(health_check_keeps_a_good_one_idle)
{
    struct tide_evpool_options o = {.health_interval = TIDE_MS(10)};
    fixture_pool(&o);
    struct fake *f = release(acquired());
    run_ms(60);
    ck_assert_int_ge(fx->checks, 2);
    ck_assert_int_eq(f->destroyed, 0);
    ck_assert(f->watched); /* watched again after each check */
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.idle, 1);
    ck_assert_int_eq(s.checking, 0);
    ck_assert_uint_eq(s.health_failures, 0);
}
END_TEST

static bool checking_one(void)
{
    return fx->n_held_checks == 1;
}

static bool checking_three(void)
{
    return fx->n_held_checks == 3;
}

START_TEST(resource_in_a_check_counts_as_live_not_idle)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1),
                                    .health_interval = TIDE_MS(10)};
    fixture_pool(&o);
    fx->hold_checks = true;
    struct fake *f = release(acquired());
    ck_assert(run_until(checking_one, 1000));
    ck_assert(!f->watched);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.live, 1);
    ck_assert_int_eq(s.idle, 0);
    ck_assert_int_eq(s.checking, 1);
    ck_assert_int_eq(s.lent, 0);
    ck_assert_int_eq(s.making, 0);
    /* not lent while in the check, not given back by a caller either */
    ck_assert_int_eq(tide_evpool_release(fx->pool, f), TIDE_EBUSY);
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), TIDE_EWOULDBLOCK);
    struct answer *b = acquire(0, NULL);
    run_ms(20);
    ck_assert_int_eq(b->calls, 0);
    ck_assert_int_eq(fx->makes, 1);
    /* the check passes: the waiter gets it */
    answer_check(true);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_ptr_eq(b->resource, f);
}
END_TEST

/* The factory's answer to two held checks, from a timer of the test's own:
 * it comes due in the same loop pass as the next health round. */
static void answer_two_checks(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    answer_check(true);
    answer_check(true);
}

/* A check's answer frees an idle resource that a queued caller is owed;
 * the pump that hands it over runs after whatever the loop pass already
 * holds. A health round due in that pass must leave it to the pump, not
 * take it into a second check (the caller would wait a round for
 * nothing). Made deterministic: the loop is kept from running until both
 * the answer's timer and the round's are due, and libevent runs due
 * timers in deadline order, so the answer comes first, then the round,
 * then the pump. */
START_TEST(round_in_the_pass_of_a_checks_answer_leaves_a_waiter_its_own)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 3),
                                    .health_interval = TIDE_MS(100)};
    fixture_pool(&o);
    fx->hold_checks = true;
    struct answer *a = acquired();
    struct answer *b = acquired();
    struct answer *c = acquired();
    release(a);
    release(b);
    release(c);
    ck_assert(run_until(checking_three, 1000)); /* the first round */
    struct answer *w = acquire(0, NULL);
    run_ms(2);
    ck_assert_int_eq(w->calls, 0); /* all three are in checks */
    struct event *answer = evtimer_new(fx->base, answer_two_checks, NULL);
    struct timeval soon = {.tv_usec = 1000};
    evtimer_add(answer, &soon);
    /* past both: the answer's timer (1 ms) and the round's (100 ms) */
    struct timespec nap = {.tv_nsec = 150 * 1000000};
    nanosleep(&nap, NULL);
    ck_assert_int_eq(fx->checks, 3);
    ck_assert_int_eq(event_base_loop(fx->base, EVLOOP_ONCE), 0);
    event_free(answer);
    /* the round ran in that pass: of the two back from their checks, it
     * took one into a new check and left the other to the waiter */
    ck_assert_int_eq(fx->checks, 4);
    ck_assert_int_eq(w->calls, 1);
    ck_assert_int_eq(w->status, 0);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.checking, 2);
    ck_assert_int_eq(s.lent, 1);
    ck_assert_int_eq(s.idle, 0);
}
END_TEST

START_TEST(failed_check_while_a_waiter_waits_makes_another)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1),
                                    .health_interval = TIDE_MS(10)};
    fixture_pool(&o);
    fx->hold_checks = true;
    struct fake *f = release(acquired());
    ck_assert(run_until(checking_one, 1000));
    struct answer *b = acquire(0, NULL);
    run_ms(5);
    ck_assert_ptr_eq(answer_check(false), f);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_int_eq(b->status, 0);
    ck_assert_ptr_ne(b->resource, f);
    ck_assert_uint_eq(stats().health_failures, 1);
}
END_TEST

START_TEST(close_waits_for_a_check_in_flight)
{
    struct tide_evpool_options o = {.health_interval = TIDE_MS(10)};
    fixture_pool(&o);
    fx->hold_checks = true;
    struct fake *f = release(acquired());
    ck_assert(run_until(checking_one, 1000));
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    run_ms(10);
    ck_assert(!fx->closed);
    ck_assert_int_eq(f->destroyed, 0);
    answer_check(true); /* passed, but the pool is closing: destroyed */
    ck_assert_int_eq(f->destroyed, 1);
    run_ms(5);
    ck_assert(fx->closed);
}
END_TEST

START_TEST(check_answered_after_free_destroys_the_resource)
{
    struct tide_evpool_options o = {.health_interval = TIDE_MS(10)};
    fixture_pool(&o);
    fx->hold_checks = true;
    struct fake *f = release(acquired());
    ck_assert(run_until(checking_one, 1000));
    tide_evpool_free(fx->pool);
    fx->pool = NULL;
    ck_assert_int_eq(f->destroyed, 0); /* the check still holds it */
    answer_check(true);
    ck_assert_int_eq(f->destroyed, 1);
}
END_TEST

/* Every hook checks that the counts add up while it runs: a resource in a
 * validator or a check is live and never idle. */
static int probes;

static void counts_add_up(const char *hook, struct fake *f)
{
    (void)f;
    if (!fx->pool)
        return;
    struct tide_evpool_stats s;
    tide_evpool_stats(fx->pool, &s);
    ck_assert_msg(s.making == 0, "%s: making %lld", hook, (long long)s.making);
    ck_assert_msg(s.live == s.idle + s.lent + s.making + s.checking,
                  "%s: live %lld != idle %lld + lent %lld + making %lld + "
                  "checking %lld",
                  hook, (long long)s.live, (long long)s.idle, (long long)s.lent,
                  (long long)s.making, (long long)s.checking);
    if (strcmp(hook, "alive") == 0 || strcmp(hook, "reusable") == 0)
        ck_assert_int_ge(s.lent, 1);
    if (strcmp(hook, "check") == 0)
        ck_assert_int_ge(s.checking, 1);
    probes++;
}

START_TEST(counts_add_up_during_validators_and_checks)
{
    probes = 0; /* CK_FORK=no runs every test in one process */
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 2),
                                    .health_interval = TIDE_MS(10)};
    fixture_pool(&o);
    struct answer *a = acquired();
    struct answer *b = acquired();
    fx->probe = counts_add_up; /* from now on no make is in flight */
    release(a);
    release(b);
    run_ms(30); /* health rounds */
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), 0);
    struct answer *c = acquired(); /* through the pump's alive() */
    ck_assert_int_eq(tide_evpool_release(fx->pool, got), 0);
    ((struct fake *)c->resource)->dead = true;
    release(c);
    run_ms(30); /* the dead one fails its check */
    fx->probe = NULL;
    ck_assert_int_ge(fx->checks, 2);
    ck_assert_int_gt(probes, 8);
    ck_assert_int_eq(stats().live, 1);
}
END_TEST

static Suite *health_suite(void)
{
    Suite *s = suite_create("health");
    TCase *tc = tcase_create("checks");
    fixture_add(tc);
    tcase_add_test(tc, health_check_destroys_and_replaces_up_to_min);
    tcase_add_test(tc, health_check_keeps_a_good_one_idle);
    tcase_add_test(tc, resource_in_a_check_counts_as_live_not_idle);
    tcase_add_test(
        tc, round_in_the_pass_of_a_checks_answer_leaves_a_waiter_its_own);
    tcase_add_test(tc, failed_check_while_a_waiter_waits_makes_another);
    tcase_add_test(tc, close_waits_for_a_check_in_flight);
    tcase_add_test(tc, check_answered_after_free_destroys_the_resource);
    tcase_add_test(tc, counts_add_up_during_validators_and_checks);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(health_suite)
