/* tests for evloop/shared.c: shared loans (limits.streams > 1). Several
 * borrowers on one resource, the end of each loan, a break heard once, a
 * capacity per resource, exclusive loans in the one FIFO queue, and the
 * hooks (watch, alive, reusable, reset) only on a resource with no loan. */
#include "fixture.h"

/* What the breaker heard, through a strategy that only counts. */
static int successes, failures;

static void on_success(struct tide_breaker *b, int64_t now, void *arg)
{
    (void)b, (void)now, (void)arg;
    successes++;
}

static void on_failure(struct tide_breaker *b, int64_t now, void *arg)
{
    (void)b, (void)now, (void)arg;
    failures++;
}

static bool never(struct tide_breaker *b, int64_t now, void *arg)
{
    (void)b, (void)now, (void)arg;
    return false;
}

static const struct tide_breaker_strategy counting = {
    .report_success = on_success,
    .report_failure = on_failure,
    .should_recover = never,
};

static struct tide_breaker_options counting_breaker = {
    .policy = TIDE_BREAKER_CUSTOM,
    .strategy = &counting,
};

static void shared_pool(int64_t size, int64_t streams)
{
    successes = failures = 0;
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = size, .streams = streams),
        .ward = {.breaker = &counting_breaker},
    };
    fixture_pool(&o);
}

/* acquires n and runs the loop until all are answered */
static void acquire_n(struct answer **out, int n)
{
    for (int k = 0; k < n; k++)
        out[k] = acquire(0, NULL);
    ck_assert(run_until(answered_all, 1000));
    for (int k = 0; k < n; k++)
        ck_assert_int_eq(out[k]->status, 0);
}

static bool checked_once(void)
{
    return fx->checks > 0;
}

static void give_back(struct answer *a)
{
    ck_assert_int_eq(tide_evpool_release(fx->pool, a->resource), 0);
    a->resource = NULL;
}

START_TEST(four_borrowers_share_one_resource)
{
    shared_pool(4, 4);
    struct answer *a[5];
    acquire_n(a, 4);
    ck_assert_int_eq(fx->makes, 1);
    for (int k = 1; k < 4; k++)
        ck_assert_ptr_eq(a[k]->resource, a[0]->resource);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.live, 1);
    ck_assert_int_eq(s.lent, 1);
    ck_assert_int_eq(s.loans, 4);
    ck_assert_int_eq(s.busiest, 4);
    /* full: the fifth needs a make */
    a[4] = acquire(0, NULL);
    ck_assert(run_until(answered_all, 1000));
    ck_assert_ptr_ne(a[4]->resource, a[0]->resource);
    ck_assert_int_eq(fx->makes, 2);
    /* loans end one by one: it stays lent, unwatched, until the last */
    struct fake *f = a[0]->resource;
    for (int k = 0; k < 3; k++) {
        give_back(a[k]);
        ck_assert(!f->watched);
        ck_assert_int_eq(stats().idle, 0);
    }
    give_back(a[3]);
    ck_assert(f->watched);
    ck_assert_int_eq(stats().idle, 1);
    ck_assert_int_eq(stats().loans, 1);
    ck_assert_int_eq(f->destroyed, 0);
}
END_TEST

START_TEST(one_release_more_than_loans_out_is_busy)
{
    shared_pool(1, 3);
    struct answer *a[2];
    acquire_n(a, 2);
    void *r = a[0]->resource;
    give_back(a[0]);
    ck_assert_int_eq(tide_evpool_release(fx->pool, r), 0); /* a[1]'s */
    a[1]->resource = NULL;
    ck_assert_int_eq(tide_evpool_release(fx->pool, r), TIDE_EBUSY);
    ck_assert_int_eq(tide_evpool_discard(fx->pool, r), TIDE_EBUSY);
    ck_assert_int_eq(stats().idle, 1);
    ck_assert_int_eq(((struct fake *)r)->destroyed, 0);
}
END_TEST

START_TEST(a_discard_breaks_it_for_every_loan_with_one_failure)
{
    shared_pool(2, 4);
    struct answer *a[4];
    acquire_n(a, 4);
    run_ms(1100); /* past its untried span: a failure, not a failed make */
    struct fake *f = a[0]->resource;
    ck_assert_int_eq(tide_evpool_discard(fx->pool, f), 0);
    a[0]->resource = NULL;
    ck_assert_int_eq(failures, 1);
    ck_assert_int_eq(f->destroyed, 0); /* three loans still out */
    /* no new loan of it: a new acquire is made its own */
    struct answer *b = acquire(0, NULL);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_ptr_ne(b->resource, f);
    /* the others come back by discard, release and abandon: still one
     * failure, and destroyed once, by the last */
    ck_assert_int_eq(tide_evpool_discard(fx->pool, f), 0);
    a[1]->resource = NULL;
    ck_assert_int_eq(tide_evpool_release(fx->pool, f), 0);
    a[2]->resource = NULL;
    ck_assert_int_eq(f->destroyed, 0);
    ck_assert_int_eq(tide_evpool_abandon(fx->pool, f), 0);
    a[3]->resource = NULL;
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(failures, 1);
    ck_assert_uint_eq(stats().broken, 1);
}
END_TEST

START_TEST(a_break_is_heard_once_and_its_loans_come_back)
{
    shared_pool(1, 4);
    struct answer *a[3];
    acquire_n(a, 3);
    run_ms(1100);
    struct fake *f = a[0]->resource;
    ck_assert_int_eq(tide_evpool_break(fx->pool, f), 1);
    ck_assert_int_eq(tide_evpool_break(fx->pool, f), 0);
    ck_assert_int_eq(failures, 1);
    struct tide_share sh;
    ck_assert_int_eq(tide_evpool_share(fx->pool, f, &sh), 0);
    ck_assert(sh.broken);
    ck_assert_int_eq(sh.loans, 3);
    int before = successes;
    for (int k = 0; k < 3; k++)
        give_back(a[k]);
    ck_assert_int_eq(successes, before); /* a broken one's loans: no success */
    ck_assert_int_eq(failures, 1);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(tide_evpool_break(fx->pool, f), TIDE_EUNKNOWN);
}
END_TEST

START_TEST(break_needs_a_loan_out_and_shared_loans)
{
    shared_pool(1, 2);
    struct fake *f = release(acquired());
    ck_assert_int_eq(tide_evpool_break(fx->pool, f), TIDE_EBUSY);
    ck_assert_int_eq(tide_evpool_break(fx->pool, NULL), TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_break(NULL, f), TIDE_EINVAL);
}
END_TEST

/* an exclusive waiter at the head holds back the shared ones behind it,
 * though the resource has room for them */
START_TEST(an_exclusive_waiter_is_served_in_order)
{
    shared_pool(1, 4);
    struct answer *a = acquired();
    struct answer *x = acquire_alone(0);
    struct answer *b = acquire(0, NULL);
    run_ms(20);
    ck_assert_int_eq(x->calls, 0);
    ck_assert_int_eq(b->calls, 0); /* no barging past x */
    ck_assert_int_eq(stats().waiting, 2);
    give_back(a);
    ck_assert(run_until_answered(x, 1000));
    ck_assert_int_eq(x->status, 0);
    struct tide_share sh;
    ck_assert_int_eq(tide_evpool_share(fx->pool, x->resource, &sh), 0);
    ck_assert(sh.alone);
    run_ms(20);
    ck_assert_int_eq(b->calls, 0); /* nobody shares it while x holds it */
    give_back(x);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_int_eq(b->status, 0);
    ck_assert_int_eq(fx->makes, 1);
}
END_TEST

START_TEST(an_exclusive_waiter_gets_a_made_one_alone)
{
    shared_pool(2, 4);
    struct answer *a = acquired();
    struct answer *x = acquire_alone(0);
    ck_assert(run_until_answered(x, 1000));
    ck_assert_ptr_ne(x->resource, a->resource);
    ck_assert_int_eq(fx->makes, 2);
    struct tide_share sh;
    ck_assert_int_eq(tide_evpool_share(fx->pool, x->resource, &sh), 0);
    ck_assert(sh.alone);
    /* a shared acquire goes to a's, not x's */
    struct answer *b = acquired();
    ck_assert_ptr_eq(b->resource, a->resource);
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire_alone(fx->pool, &got),
                     TIDE_EWOULDBLOCK);
}
END_TEST

START_TEST(makes_for_waiters_cover_a_resource_each_of_streams)
{
    fx->mode = MAKE_LATER;
    fx->delay = TIDE_MS(5);
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 16, .streams = 4),
    };
    fixture_pool(&o);
    struct answer *a[10];
    for (int k = 0; k < 10; k++)
        a[k] = acquire(0, NULL);
    ck_assert(run_until(answered_all, 1000));
    ck_assert_int_eq(fx->makes, 3); /* 10 callers, 4 a resource */
    ck_assert_int_eq(stats().live, 3);
    for (int k = 0; k < 10; k++)
        ck_assert_int_eq(a[k]->status, 0);
}
END_TEST

START_TEST(capacity_zero_drains_with_loans_out)
{
    shared_pool(2, 4);
    struct answer *a[2];
    acquire_n(a, 2);
    struct fake *f = a[0]->resource;
    ck_assert_int_eq(tide_evpool_set_streams(fx->pool, f, 0), 0);
    struct answer *b = acquired(); /* not lent from a drained one */
    ck_assert_ptr_ne(b->resource, f);
    give_back(a[0]);
    ck_assert_int_eq(f->destroyed, 0);
    int before = failures;
    give_back(a[1]);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(failures, before); /* a drain is no failure */
    /* an idle one drains at once */
    struct fake *g = b->resource;
    give_back(b);
    ck_assert_int_eq(tide_evpool_set_streams(fx->pool, g, 0), 0);
    ck_assert_int_eq(g->destroyed, 1);
    ck_assert_int_eq(stats().live, 0);
    ck_assert_int_eq(tide_evpool_set_streams(fx->pool, g, 1), TIDE_EUNKNOWN);
}
END_TEST

START_TEST(capacity_raised_serves_the_waiters)
{
    shared_pool(1, 8);
    struct answer *a = acquired();
    struct fake *f = a->resource;
    ck_assert_int_eq(tide_evpool_set_streams(fx->pool, f, 1), 0);
    struct answer *b = acquire(0, NULL);
    run_ms(20);
    ck_assert_int_eq(b->calls, 0); /* full at 1, and no room to make */
    ck_assert_int_eq(tide_evpool_set_streams(fx->pool, f, 2), 0);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_ptr_eq(b->resource, f);
    ck_assert_int_eq(tide_evpool_set_streams(fx->pool, f, -1), TIDE_EINVAL);
}
END_TEST

START_TEST(each_acquire_keeps_its_own_timeout)
{
    shared_pool(1, 2);
    struct answer *a[2];
    acquire_n(a, 2);
    struct answer *late = acquire(TIDE_MS(30), NULL);
    struct answer *patient = acquire(TIDE_SEC(5), NULL);
    ck_assert(run_until_answered(late, 1000));
    ck_assert_int_eq(late->status, TIDE_ETIMEDOUT);
    ck_assert_int_eq(patient->calls, 0);
    give_back(a[0]);
    ck_assert(run_until_answered(patient, 1000));
    ck_assert_ptr_eq(patient->resource, a[1]->resource);
}
END_TEST

/* reusable() judges the connection only when no loan is out: bytes in
 * flight before then are other borrowers' */
START_TEST(reusable_is_asked_of_the_last_loan_only)
{
    shared_pool(1, 4);
    struct answer *a[3];
    acquire_n(a, 3);
    struct fake *f = a[0]->resource;
    f->broken = true;
    give_back(a[0]);
    give_back(a[1]);
    ck_assert_uint_eq(stats().dirty, 0);
    ck_assert_int_eq(f->destroyed, 0);
    give_back(a[2]);
    ck_assert_uint_eq(stats().dirty, 1);
    ck_assert_int_eq(f->destroyed, 1);
}
END_TEST

static int alive_calls;
static void count_alive(const char *hook, struct fake *f)
{
    (void)f;
    if (hook[0] == 'a' && hook[1] == 'l')
        alive_calls++;
}

START_TEST(alive_and_watch_only_with_no_loan_out)
{
    shared_pool(1, 4);
    fx->probe = count_alive;
    /* its make's own alive() (a fresh one is checked before its first
     * loan) is not what this test counts */
    struct fake *f = release(acquired());
    alive_calls = 0;
    int off = fx->watch_off;
    struct answer *a[3];
    acquire_n(a, 3);
    /* the first leaves idle (unwatched, alive asked), the others join */
    ck_assert_int_eq(fx->watch_off, off + 1);
    ck_assert_int_le(alive_calls, 1);
    ck_assert_ptr_eq(a[2]->resource, f);
}
END_TEST

START_TEST(reset_runs_on_the_last_loan_and_lends_nobody_meanwhile)
{
    fx->resets = true;
    shared_pool(1, 4);
    struct answer *a[2];
    acquire_n(a, 2);
    give_back(a[0]);
    ck_assert_int_eq(fx->resets_run, 0);
    give_back(a[1]);
    ck_assert_int_eq(fx->resets_run, 1);
    ck_assert_int_eq(stats().idle, 1);
}
END_TEST

static struct tide_reset *held_reset;
static void hold_reset(struct tide_evpool *pool, struct tide_reset *t,
                       void *resource, void *arg)
{
    (void)pool, (void)resource, (void)arg;
    fx->resets_run++;
    held_reset = t;
}

/* a reset that answers later: the connection, back to one loan in the
 * core, must take no shared loan before the reset is done */
START_TEST(a_resetting_one_takes_no_loan_until_reset)
{
    fx->factory.reset = hold_reset;
    shared_pool(1, 4);
    held_reset = NULL;
    struct answer *a = acquired();
    struct fake *f = a->resource;
    give_back(a);
    ck_assert_ptr_nonnull(held_reset);
    ck_assert_int_eq(stats().resetting, 1);
    struct answer *b = acquire(0, NULL);
    run_ms(20);
    ck_assert_int_eq(b->calls, 0);
    tide_evpool_reset_done(held_reset, true);
    held_reset = NULL;
    ck_assert(run_until_answered(b, 1000));
    ck_assert_ptr_eq(b->resource, f);
    ck_assert_int_eq(fx->makes, 1);
    give_back(b);
    tide_evpool_reset_done(held_reset, true);
    ck_assert_int_eq(stats().idle, 1);
}
END_TEST

START_TEST(no_health_check_with_loans_out)
{
    successes = failures = 0;
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 1, .streams = 4),
        .health_interval = TIDE_MS(5),
    };
    fixture_pool(&o);
    struct answer *a[2];
    acquire_n(a, 2);
    run_ms(40);
    ck_assert_int_eq(fx->checks, 0);
    give_back(a[0]);
    run_ms(40);
    ck_assert_int_eq(fx->checks, 0); /* one loan still out */
    give_back(a[1]);
    ck_assert(run_until(checked_once, 1000));
}
END_TEST

START_TEST(close_destroys_a_shared_one_after_its_last_loan)
{
    shared_pool(1, 4);
    struct answer *a[3];
    acquire_n(a, 3);
    struct fake *f = a[0]->resource;
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    give_back(a[0]);
    give_back(a[1]);
    ck_assert_int_eq(f->destroyed, 0);
    ck_assert(!fx->closed);
    give_back(a[2]);
    ck_assert_int_eq(f->destroyed, 1);
}
END_TEST

static struct tide_acquire *to_cancel;
static void cancel_the_next(struct answer *a)
{
    (void)a;
    if (to_cancel)
        tide_evpool_cancel(to_cancel, false);
    to_cancel = NULL;
}

/* a loan answered but not yet delivered, cancelled: that loan goes back,
 * the resource stays lent to the others */
START_TEST(a_cancelled_answer_gives_back_one_loan)
{
    shared_pool(1, 4);
    struct answer *a = acquired();
    struct fake *f = a->resource;
    struct answer *b = acquire(0, NULL);
    struct answer *c = acquire(0, &to_cancel);
    fx->answer_probe = cancel_the_next; /* b's answer cancels c's */
    ck_assert(run_until_answered(b, 1000));
    run_ms(5);
    ck_assert_int_eq(c->calls, 0);
    fx->n_answers--; /* c is never answered: the teardown must not wait */
    ck_assert(!f->watched);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.idle, 0);
    ck_assert_int_eq(s.loans, 2);
    give_back(a);
    give_back(b);
    ck_assert(f->watched);
    ck_assert_int_eq(stats().idle, 1);
}
END_TEST

/* the peer closed it a moment before the exchange: stale for the loan,
 * no failure, and gone for every loan once the last is back */
START_TEST(a_stale_loan_drains_it_with_no_failure)
{
    shared_pool(2, 4);
    struct answer *a[3];
    acquire_n(a, 3);
    run_ms(1100); /* past its untried span: stale, not a failed make */
    struct fake *f = a[0]->resource;
    ck_assert_int_eq(tide_evpool_stale(fx->pool, f), TIDE_STALE);
    a[0]->resource = NULL;
    struct answer *b = acquired(); /* not lent from it */
    ck_assert_ptr_ne(b->resource, f);
    ck_assert_int_eq(tide_evpool_stale(fx->pool, f), TIDE_STALE);
    a[1]->resource = NULL;
    give_back(a[2]);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(failures, 0);
    ck_assert_uint_eq(stats().stale_loans, 2);
}
END_TEST

START_TEST(streams_one_still_refuses_break)
{
    fixture_pool(NULL);
    struct answer *a = acquired();
    ck_assert_int_eq(tide_evpool_break(fx->pool, a->resource), TIDE_EINVAL);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.loans, 1);
    ck_assert_int_eq(s.busiest, 1);
}
END_TEST

static Suite *shared_suite(void)
{
    Suite *s = suite_create("shared");
    TCase *tc = tcase_create("shared");
    fixture_add(tc);
    tcase_add_test(tc, four_borrowers_share_one_resource);
    tcase_add_test(tc, one_release_more_than_loans_out_is_busy);
    tcase_add_test(tc, a_discard_breaks_it_for_every_loan_with_one_failure);
    tcase_add_test(tc, a_break_is_heard_once_and_its_loans_come_back);
    tcase_add_test(tc, break_needs_a_loan_out_and_shared_loans);
    tcase_add_test(tc, an_exclusive_waiter_is_served_in_order);
    tcase_add_test(tc, an_exclusive_waiter_gets_a_made_one_alone);
    tcase_add_test(tc, makes_for_waiters_cover_a_resource_each_of_streams);
    tcase_add_test(tc, capacity_zero_drains_with_loans_out);
    tcase_add_test(tc, capacity_raised_serves_the_waiters);
    tcase_add_test(tc, each_acquire_keeps_its_own_timeout);
    tcase_add_test(tc, reusable_is_asked_of_the_last_loan_only);
    tcase_add_test(tc, alive_and_watch_only_with_no_loan_out);
    tcase_add_test(tc, reset_runs_on_the_last_loan_and_lends_nobody_meanwhile);
    tcase_add_test(tc, a_resetting_one_takes_no_loan_until_reset);
    tcase_add_test(tc, no_health_check_with_loans_out);
    tcase_add_test(tc, close_destroys_a_shared_one_after_its_last_loan);
    tcase_add_test(tc, a_cancelled_answer_gives_back_one_loan);
    tcase_add_test(tc, a_stale_loan_drains_it_with_no_failure);
    tcase_add_test(tc, streams_one_still_refuses_break);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(shared_suite)
