/* tests for the ward as the adapter drives it: serve.c refuses what the
 * breaker or shedder sheds and waits out what the bucket or backoff holds
 * back; makes.c and loans.c report every success and failure to the
 * breaker. */
#include <string.h>

#include "fixture.h"

START_TEST(pool_without_a_breaker_has_none)
{
    fixture_pool(NULL);
    ck_assert_ptr_null(tide_evpool_breaker(fx->pool));
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.breaker, TIDE_BREAKER_ACTIVE);
    ck_assert(s.refusal == 0.0);
}
END_TEST

START_TEST(inactive_breaker_fails_acquires_fast_even_with_idle)
{
    struct tide_breaker_options b = {.policy = TIDE_BREAKER_STRIKES};
    struct tide_evpool_options o = {
        .ward = {.breaker = &b, .backoff = NO_HOLD}};
    fixture_pool(&o);
    struct fake *f = release(acquired());
    struct tide_breaker *br = tide_evpool_breaker(fx->pool);
    ck_assert_ptr_nonnull(br);
    tide_breaker_deactivate(br, now_ns());
    struct answer *a = acquire(TIDE_SEC(2), NULL);
    ck_assert_int_eq(a->calls, 0);
    int64_t start = now_ns();
    ck_assert(run_until_answered(a, 1000));
    ck_assert_int_lt(now_ns() - start, TIDE_MS(500)); /* no waiting out */
    ck_assert_int_eq(a->status, TIDE_EUNAVAILABLE);
    ck_assert_int_eq(a->guard, TIDE_GUARD_BREAKER);
    ck_assert_ptr_null(a->resource);
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got),
                     TIDE_EUNAVAILABLE);
    ck_assert_ptr_null(got);
    /* the idle one is kept for when the backend is back */
    ck_assert_int_eq(f->destroyed, 0);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.idle, 1);
    ck_assert_int_eq(s.breaker, TIDE_BREAKER_INACTIVE);
    ck_assert_uint_eq(s.shed, 2);
    ck_assert(s.refusal == 1.0);
    ck_assert_int_eq(fx->makes, 1);
    tide_breaker_activate(br, now_ns());
    struct answer *c = acquired();
    ck_assert_ptr_eq(c->resource, f);
}
END_TEST

START_TEST(strikes_open_the_breaker_and_refuse_queued_waiters)
{
    struct tide_breaker_options b = {
        .policy = TIDE_BREAKER_STRIKES, .strikes = 2, .cooldown = TIDE_SEC(10)};
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 1),
        .ward = {.breaker = &b, .backoff = NO_HOLD}};
    fixture_pool(&o);
    fx->mode = MAKE_FAIL_LATER;
    struct answer *a[4];
    for (int i = 0; i < 4; i++)
        a[i] = acquire(TIDE_SEC(2), NULL);
    ck_assert(run_until(answered_all, 1000));
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(a[i]->status, fx->fail_code);
    for (int i = 2; i < 4; i++) {
        ck_assert_int_eq(a[i]->status, TIDE_EUNAVAILABLE);
        ck_assert_int_eq(a[i]->guard, TIDE_GUARD_BREAKER);
        ck_assert_int_eq(a[i]->make_error, fx->fail_code);
        /* the sentence says why: the failure behind it, and when */
        ck_assert_ptr_nonnull(strstr(a[i]->message, "breaker is open"));
        ck_assert_ptr_nonnull(strstr(a[i]->message, "scripted failure"));
        ck_assert_ptr_nonnull(strstr(a[i]->message, "probes again in"));
        /* the rest of the cooldown: when a retry may get through */
        ck_assert_int_gt(a[i]->retry_after, TIDE_SEC(9));
        ck_assert_int_le(a[i]->retry_after, TIDE_SEC(10));
    }
    ck_assert_int_eq(fx->makes, 2);
    ck_assert_int_eq(stats().breaker, TIDE_BREAKER_INACTIVE);
}
END_TEST

START_TEST(recovering_breaker_probes_once_then_activates)
{
    struct tide_breaker_options b = {
        .policy = TIDE_BREAKER_STRIKES, .strikes = 2, .cooldown = TIDE_MS(100)};
    struct tide_evpool_options o = {
        .ward = {.breaker = &b, .backoff = NO_HOLD}};
    fixture_pool(&o);
    fx->plan[0] = fx->plan[1] = MAKE_FAIL;
    fx->n_plan = 2;
    fx->mode = MAKE_NEVER;
    /* one after the other: makes are held (1 ns) after each failure */
    struct answer *a = acquire(0, NULL);
    ck_assert(run_until_answered(a, 1000));
    struct answer *b2 = acquire(0, NULL);
    ck_assert(run_until(answered_all, 1000));
    ck_assert_int_eq(b2->status, fx->fail_code);
    ck_assert_int_eq(stats().breaker, TIDE_BREAKER_INACTIVE);
    struct answer *c = acquire(0, NULL);
    ck_assert(run_until_answered(c, 1000));
    ck_assert_int_eq(c->status, TIDE_EUNAVAILABLE);
    ck_assert_int_eq(fx->makes, 2);
    run_ms(120); /* the cooldown */
    /* one probe goes out; a second caller is not let through meanwhile */
    struct answer *d = acquire(0, NULL);
    struct answer *e = acquire(0, NULL);
    ck_assert(run_until_answered(e, 1000));
    ck_assert_int_eq(fx->makes, 3);
    ck_assert_int_eq(stats().breaker, TIDE_BREAKER_RECOVERING);
    ck_assert_int_eq(e->status, TIDE_EUNAVAILABLE);
    ck_assert_int_eq(e->guard, TIDE_GUARD_BREAKER);
    ck_assert_int_eq(d->calls, 0);
    /* the probe is made and d has it; it succeeds when it comes back
     * fit: ACTIVE */
    struct fake *f = answer_held(true);
    ck_assert(run_until_answered(d, 1000));
    ck_assert_ptr_eq(d->resource, f);
    ck_assert_int_eq(stats().breaker, TIDE_BREAKER_RECOVERING);
    release(d);
    ck_assert_int_eq(stats().breaker, TIDE_BREAKER_ACTIVE);
    d = acquired();
    ck_assert_ptr_eq(d->resource, f);
    fx->mode = MAKE_NOW;
    struct answer *g = acquired();
    ck_assert_ptr_ne(g->resource, f);
    (void)a;
}
END_TEST

struct reports {
    int successes;
    int failures;
    bool open_on_failure;
};

static void report_success(struct tide_breaker *b, int64_t now, void *arg)
{
    (void)b;
    (void)now;
    ((struct reports *)arg)->successes++;
}

static void report_failure(struct tide_breaker *b, int64_t now, void *arg)
{
    struct reports *r = arg;
    r->failures++;
    if (r->open_on_failure)
        tide_breaker_deactivate(b, now);
}

static bool should_recover(struct tide_breaker *b, int64_t now, void *arg)
{
    (void)b;
    (void)now;
    (void)arg;
    return false;
}

static const struct tide_breaker_strategy counting = {
    .report_success = report_success,
    .report_failure = report_failure,
    .should_recover = should_recover,
};

static struct tide_evpool_options counted(struct reports *r,
                                          struct tide_breaker_options *b)
{
    *b = (struct tide_breaker_options){.policy = TIDE_BREAKER_CUSTOM,
                                       .strategy = &counting,
                                       .strategy_arg = r};
    return (struct tide_evpool_options){.limits = TIDE_LIMITS(.size = 3),
                                        .health_interval = TIDE_FOREVER,
                                        .ward = {.breaker = b}};
}

/* A pool of counted() as it is: the breaker's options are read by new
 * only. */
static void counted_pool(struct reports *r)
{
    struct tide_breaker_options b;
    struct tide_evpool_options o = counted(r, &b);
    fixture_pool(&o);
}

START_TEST(strategy_hears_every_success_and_failure)
{
    struct reports r = {0};
    struct tide_breaker_options b;
    struct tide_evpool_options o = counted(&r, &b);
    o.ward.backoff = NO_HOLD; /* each make here follows a failure at once */
    fixture_pool(&o);
    fx->plan[2] = MAKE_FAIL;
    fx->n_plan = 3;
    /* two made and lent: their makes wait for how the loans end */
    struct answer *a = acquired();
    struct answer *b2 = acquired();
    struct answer *c = acquire(0, NULL); /* a failed make: failure 1 */
    ck_assert(run_until_answered(c, 1000));
    ck_assert_int_eq(c->status, fx->fail_code);
    ck_assert_int_eq(r.successes, 0);
    ck_assert_int_eq(r.failures, 1);
    /* first loans that fail at once: failed makes, failures 2 and 3 */
    void *fa = a->resource;
    a->resource = NULL;
    ck_assert_int_eq(tide_evpool_discard(fx->pool, fa), 0);
    ((struct fake *)b2->resource)->broken = true;
    release(b2);
    ck_assert_int_eq(r.failures, 3);
    ck_assert_int_eq(r.successes, 0);
    /* a first loan that comes back fit: the make's success and the
     * release's, 1 and 2 */
    struct answer *d = acquired();
    struct fake *fd = release(d);
    ck_assert_int_eq(r.successes, 2);
    release(acquired()); /* from idle and back: success 3 */
    ck_assert_int_eq(r.successes, 3);
    fd->dead = true;
    /* found dead while idle after serving: no outcome; then a make */
    struct answer *e = acquired();
    ck_assert_ptr_ne(e->resource, fd);
    ck_assert_int_eq(r.successes, 3);
    ck_assert_int_eq(r.failures, 3);
    struct tide_evpool_stats s = stats();
    ck_assert_uint_eq(s.made, 4);
    ck_assert_uint_eq(s.make_failures, 3);
    ck_assert_uint_eq(s.health_failures, 1);
    ck_assert_uint_eq(s.dirty, 1);
}
END_TEST

START_TEST(strategy_installed_on_the_pools_breaker)
{
    struct reports r = {.open_on_failure = true};
    struct tide_breaker_options b = {.policy = TIDE_BREAKER_STRIKES};
    struct tide_evpool_options o = {
        .ward = {.breaker = &b, .backoff = NO_HOLD}};
    fixture_pool(&o);
    ck_assert_int_eq(
        tide_breaker_set_strategy(tide_evpool_breaker(fx->pool), &counting, &r),
        0);
    struct answer *a = acquired();
    ck_assert_int_eq(r.successes, 0); /* the make waits for the loan */
    void *fa = a->resource;
    a->resource = NULL;
    ck_assert_int_eq(tide_evpool_discard(fx->pool, fa), 0);
    ck_assert_int_eq(r.failures, 1);
    /* the strategy opened the breaker on that failure */
    struct answer *c = acquire(0, NULL);
    ck_assert(run_until_answered(c, 1000));
    ck_assert_int_eq(c->status, TIDE_EUNAVAILABLE);
    ck_assert_int_eq(c->guard, TIDE_GUARD_BREAKER);
    ck_assert_int_eq(fx->makes, 1);
}
END_TEST

/* ---- what feeds the breaker ------------------------------------------ */

static int64_t want_idle;
static const struct fake *want_destroyed;

static bool idle_reached(void)
{
    return stats().idle >= want_idle;
}

static bool destroyed_once(void)
{
    return want_destroyed->destroyed == 1;
}

static bool run_until_idle(int64_t n, int ms)
{
    want_idle = n;
    return run_until(idle_reached, ms);
}

static bool run_until_destroyed(const struct fake *f, int ms)
{
    want_destroyed = f;
    return run_until(destroyed_once, ms);
}

/* Five discards spread over a thousand good loans, under STRIKES: every
 * accepted release is a success, so there are never five failures in a
 * row and the breaker stays ACTIVE. (It used to hear only bad news: five
 * discards opened it while the pool sat on healthy idle connections.) */
START_TEST(five_discards_among_1000_loans_leave_strikes_active)
{
    struct tide_breaker_options b = {.policy = TIDE_BREAKER_STRIKES};
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 11),
        .health_interval = TIDE_FOREVER,
        .ward = {.breaker = &b, .backoff = NO_HOLD}};
    fixture_pool(&o);
    /* warm: eleven made and idle, as under load */
    struct answer *warm[11];
    for (int k = 0; k < 11; k++)
        warm[k] = acquired();
    for (int k = 0; k < 11; k++)
        release(warm[k]);
    memset(fx->answers, 0, sizeof fx->answers);
    fx->n_answers = 0;
    for (int k = 0; k < 1000; k++) {
        struct answer *a = acquired();
        ck_assert_int_eq(a->status, 0);
        if (k % 200 == 199) {
            void *r = a->resource;
            a->resource = NULL;
            ck_assert_int_eq(tide_evpool_discard(fx->pool, r), 0);
        } else {
            release(a);
        }
        /* the slots are reused; each was answered once */
        memset(fx->answers, 0, sizeof fx->answers[0]);
        fx->n_answers = 0;
    }
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.breaker, TIDE_BREAKER_ACTIVE);
    ck_assert_uint_eq(s.shed, 0);
    ck_assert_uint_eq(s.made, 11); /* every loan after the warm-up from idle */
    ck_assert_int_eq(s.idle, 6);
}
END_TEST

START_TEST(five_discards_in_a_row_open_strikes)
{
    struct tide_breaker_options b = {.policy = TIDE_BREAKER_STRIKES};
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 5),
        .ward = {.breaker = &b, .backoff = NO_HOLD}};
    fixture_pool(&o);
    struct answer *a[5];
    for (int k = 0; k < 5; k++)
        a[k] = acquired(); /* five makes: five successes */
    for (int k = 0; k < 5; k++) {
        void *r = a[k]->resource;
        a[k]->resource = NULL;
        ck_assert_int_eq(tide_evpool_discard(fx->pool, r), 0);
    }
    ck_assert_int_eq(stats().breaker, TIDE_BREAKER_INACTIVE);
}
END_TEST

/* An accepted release is a success; a make's success is counted once,
 * when its resource's first loan comes back fit. */
START_TEST(accepted_release_is_a_success)
{
    struct reports r = {0};
    counted_pool(&r);
    struct answer *a = acquired();
    ck_assert_int_eq(r.successes, 0); /* the make waits for the loan */
    release(a);
    ck_assert_int_eq(r.successes, 2); /* the make's and the release's */
    release(acquired());              /* from idle, and back */
    ck_assert_int_eq(r.successes, 3);
    ck_assert_int_eq(r.failures, 0);
}
END_TEST

/* A connection that served and then died while idle (the server's idle
 * timeout) says nothing about the backend. */
START_TEST(lost_after_serving_is_no_outcome)
{
    struct reports r = {0};
    counted_pool(&r);
    struct fake *f = release(acquired());
    int successes = r.successes;
    ck_assert_int_eq(tide_evpool_lost(fx->pool, f), 0);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(r.successes, successes);
    ck_assert_int_eq(r.failures, 0);
    ck_assert_uint_eq(stats().make_failures, 0);
    /* nor does one found dead by alive() */
    struct fake *g = release(acquired());
    g->dead = true;
    struct answer *c = acquired();
    ck_assert_ptr_ne(c->resource, g);
    ck_assert_int_eq(r.failures, 0);
    ck_assert_uint_eq(stats().make_failures, 0);
    /* given back here: the strategy's counts live on this stack */
    release(c);
}
END_TEST

/* A minimum made against a server that accepts and closes at once: each
 * is lost before anyone is lent it, so each counts as a failed make. */
START_TEST(lost_before_first_loan_is_a_failed_make)
{
    struct reports r = {0};
    struct tide_breaker_options b;
    struct tide_evpool_options o = counted(&r, &b);
    o.min = 1;
    fx->lose_when_idle = true; /* set before the pool makes its minimum */
    fixture_pool(&o);
    run_ms(20);
    ck_assert_int_ge(fx->makes, 1);
    ck_assert_int_eq(r.successes, 0);
    ck_assert_int_eq(r.failures, fx->makes);
    struct tide_evpool_stats s = stats();
    ck_assert_uint_eq(s.make_failures, (uint64_t)fx->makes);
    ck_assert_uint_eq(s.lost, (uint64_t)fx->makes);
    char why[256];
    ck_assert_int_eq(tide_evpool_last_error(fx->pool, why, sizeof why),
                     TIDE_EUNPROVEN);
    ck_assert_ptr_nonnull(strstr(why, "before its first loan"));
}
END_TEST

START_TEST(dead_before_first_loan_is_a_failed_make)
{
    struct reports r = {0};
    struct tide_breaker_options b;
    struct tide_evpool_options o = counted(&r, &b);
    o.min = 1;
    fixture_pool(&o);
    ck_assert(run_until_idle(1, 1000));
    fx->fakes[0].dead = true; /* the server closed it before first use */
    /* the minimum's make failed: makes are held, and a, who would need
     * one and can wait out the hold, gets the one made after it */
    struct answer *a = acquired();
    ck_assert_ptr_ne(a->resource, &fx->fakes[0]);
    ck_assert_int_eq(r.failures, 1);
    ck_assert_int_eq(r.successes, 0);
    ck_assert_uint_eq(stats().make_failures, 1);
    ck_assert_uint_eq(stats().held, 0);
    release(a);
    ck_assert_int_eq(r.successes, 2); /* the make a got, and its release */
}
END_TEST

/* The first loan, come back fit, proves a minimum's make: a success, and
 * no failure when it dies later. */
START_TEST(first_use_proves_a_minimums_make)
{
    struct reports r = {0};
    struct tide_breaker_options b;
    struct tide_evpool_options o = counted(&r, &b);
    o.min = 1;
    fixture_pool(&o);
    ck_assert(run_until_idle(1, 1000));
    ck_assert_int_eq(r.successes, 0); /* made, not yet tried */
    struct answer *a = acquired();
    ck_assert_ptr_eq(a->resource, &fx->fakes[0]);
    struct fake *f = release(a);
    ck_assert_int_eq(r.successes, 2);
    ck_assert_int_eq(tide_evpool_lost(fx->pool, f), 0);
    ck_assert_int_eq(r.failures, 0);
}
END_TEST

/* Takes a's resource from the answer, so the teardown does not give it
 * back again, and ends its loan with `end`. */
static struct fake *end_loan(struct answer *a,
                             int (*end)(struct tide_evpool *p, void *r))
{
    struct fake *f = a->resource;
    a->resource = NULL;
    ck_assert_int_eq(end(fx->pool, f), 0);
    return f;
}

/* A server that says it closes after the exchange (Connection: close) did
 * its job: a retire is an accepted release, and proves a first loan's make
 * even within a second of it, where a discard would fail the make. */
START_TEST(retire_is_a_success_and_proves_a_first_loan)
{
    struct reports r = {0};
    counted_pool(&r);
    struct fake *f = end_loan(acquired(), tide_evpool_retire);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(r.successes, 2); /* the make's and the release's */
    ck_assert_int_eq(r.failures, 0);
    struct fake *g = release(acquired());
    struct answer *a = acquired();
    ck_assert_ptr_eq(a->resource, g); /* from idle */
    end_loan(a, tide_evpool_retire);
    ck_assert_int_eq(r.successes, 5);
    ck_assert_int_eq(r.failures, 0);
    struct tide_evpool_stats s = stats();
    ck_assert_uint_eq(s.retired, 2);
    ck_assert_uint_eq(s.make_failures, 0);
    ck_assert_int_eq(s.live, 0);
}
END_TEST

/* A borrower that gives a connection up for its own reasons (its client
 * went away) says nothing of the backend: no success, no failure, and a
 * first loan's make is neither proven nor failed. */
START_TEST(abandon_is_no_outcome_even_on_a_first_loan)
{
    struct reports r = {0};
    counted_pool(&r);
    struct fake *f = end_loan(acquired(), tide_evpool_abandon);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(r.successes, 0);
    ck_assert_int_eq(r.failures, 0);
    struct fake *g = release(acquired());
    int successes = r.successes;
    struct answer *a = acquired();
    ck_assert_ptr_eq(a->resource, g);
    end_loan(a, tide_evpool_abandon);
    ck_assert_int_eq(r.successes, successes);
    ck_assert_int_eq(r.failures, 0);
    struct tide_evpool_stats s = stats();
    ck_assert_uint_eq(s.abandoned, 2);
    ck_assert_uint_eq(s.make_failures, 0);
    ck_assert_int_eq(s.live, 0);
}
END_TEST

/* A loan that failed by a close before any byte was answered, on a
 * resource that served before: stale, no outcome for the breaker, the
 * borrower told to go again (TIDE_STALE) and the factory told before the
 * destroy. On a first loan within a second of its make it is the make's
 * failure instead (a server that accepts and closes), as discard is. */
START_TEST(stale_is_no_outcome_once_the_resource_served)
{
    struct reports r = {0};
    counted_pool(&r);
    struct fake *f = release(acquired());
    int successes = r.successes;
    struct answer *a = acquired();
    ck_assert_ptr_eq(a->resource, f);
    a->resource = NULL;
    ck_assert_int_eq(tide_evpool_stale(fx->pool, f), TIDE_STALE);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(fx->stales, 1);
    ck_assert_int_eq(r.successes, successes);
    ck_assert_int_eq(r.failures, 0);
    struct tide_evpool_stats s = stats();
    ck_assert_uint_eq(s.stale_loans, 1);
    ck_assert_uint_eq(s.make_failures, 0);
    ck_assert_int_eq(s.live, 0);
    /* given back already */
    ck_assert_int_eq(tide_evpool_stale(fx->pool, f), TIDE_EUNKNOWN);
    ck_assert_int_eq(tide_evpool_stale(NULL, f), TIDE_EINVAL);
}
END_TEST

START_TEST(stale_on_a_young_first_loan_is_a_failed_make)
{
    struct reports r = {0};
    counted_pool(&r);
    struct answer *a = acquired();
    struct fake *f = a->resource;
    a->resource = NULL;
    ck_assert_int_eq(tide_evpool_stale(fx->pool, f), 0);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(r.successes, 0);
    ck_assert_int_eq(r.failures, 1);
    struct tide_evpool_stats s = stats();
    ck_assert_uint_eq(s.stale_loans, 0);
    ck_assert_uint_eq(s.make_failures, 1);
}
END_TEST

/* Under STRIKES, a run of failures is broken by a success only: four
 * discards, a retire, four discards leave it ACTIVE; with an abandon in
 * the retire's place the eight are one run, and it opens at the fifth. */
static enum tide_breaker_state
strikes_after(int (*between)(struct tide_evpool *, void *))
{
    struct tide_breaker_options b = {.policy = TIDE_BREAKER_STRIKES,
                                     .strikes = 5};
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 1),
        .health_interval = TIDE_FOREVER,
        .ward = {.breaker = &b, .backoff = NO_HOLD}};
    fixture_pool(&o);
    /* proven, so the discards below are loans gone bad, not failed makes */
    release(acquired());
    for (int k = 0; k < 9; k++) {
        struct answer *a = acquire(0, NULL);
        ck_assert(run_until_answered(a, 2000));
        if (a->status != 0) { /* open: refused at once */
            ck_assert_int_eq(a->status, TIDE_EUNAVAILABLE);
            break;
        }
        end_loan(a, k == 4 ? between : tide_evpool_discard);
        /* each loan gets a fresh slot in the answers */
        memset(fx->answers, 0, sizeof fx->answers[0]);
        fx->n_answers = 0;
        run_ms(2);
    }
    return stats().breaker;
}

START_TEST(a_retire_breaks_a_run_of_failures_and_an_abandon_does_not)
{
    ck_assert_int_eq(strikes_after(tide_evpool_retire), TIDE_BREAKER_ACTIVE);
}
END_TEST

START_TEST(an_abandon_leaves_a_run_of_failures_whole)
{
    ck_assert_int_eq(strikes_after(tide_evpool_abandon), TIDE_BREAKER_INACTIVE);
}
END_TEST

/* Retire and abandon free the place they held: a caller waiting for it is
 * served with a new one. Misuse answers as release does. */
START_TEST(retire_and_abandon_wake_a_waiter_and_refuse_misuse)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1),
                                    .health_interval = TIDE_FOREVER};
    fixture_pool(&o);
    int (*const ends[2])(struct tide_evpool *, void *) = {tide_evpool_retire,
                                                          tide_evpool_abandon};
    for (int k = 0; k < 2; k++) {
        struct answer *a = acquired();
        struct answer *w = acquire(0, NULL);
        run_ms(5);
        ck_assert_int_eq(w->calls, 0); /* every place is lent */
        struct fake *f = end_loan(a, ends[k]);
        ck_assert(run_until_answered(w, 1000));
        ck_assert_int_eq(w->status, 0);
        ck_assert_ptr_ne(w->resource, f);
        /* given back already: unknown now */
        ck_assert_int_eq(ends[k](fx->pool, f), TIDE_EUNKNOWN);
        struct fake *g = release(w);
        ck_assert_int_eq(ends[k](fx->pool, g), TIDE_EBUSY); /* idle */
        ck_assert_int_eq(ends[k](NULL, g), TIDE_EINVAL);
        ck_assert_int_eq(ends[k](fx->pool, NULL), TIDE_EINVAL);
        memset(fx->answers, 0, sizeof fx->answers[0] * 2);
        fx->n_answers = 0;
        /* the idle one goes, so the next round's loan is a new make */
        struct answer *c = acquired();
        end_loan(c, tide_evpool_retire);
        memset(fx->answers, 0, sizeof fx->answers[0]);
        fx->n_answers = 0;
    }
}
END_TEST

START_TEST(rejected_release_and_failed_check_are_failures)
{
    struct reports r = {0};
    struct tide_breaker_options b;
    struct tide_evpool_options o = counted(&r, &b);
    o.health_interval = TIDE_MS(20);
    o.ward.backoff = NO_HOLD; /* the second make follows a failure */
    fixture_pool(&o);
    struct answer *a = acquired();
    ((struct fake *)a->resource)->broken = true;
    release(a);
    ck_assert_int_eq(r.failures, 1);
    ck_assert_uint_eq(stats().dirty, 1);
    struct fake *f = release(acquired());
    f->dead = true;
    ck_assert(run_until_destroyed(f, 1000)); /* the health check */
    ck_assert_int_eq(r.failures, 2);
}
END_TEST

/* ---- RECOVERING ---------------------------------------------------------- */

START_TEST(recovering_reopens_on_a_probes_failure)
{
    struct tide_breaker_options b = {
        .policy = TIDE_BREAKER_STRIKES, .strikes = 1, .cooldown = TIDE_MS(50)};
    struct tide_evpool_options o = {
        .ward = {.breaker = &b, .backoff = NO_HOLD}};
    fixture_pool(&o);
    fx->mode = MAKE_FAIL;
    struct answer *a = acquire(0, NULL);
    ck_assert(run_until_answered(a, 1000));
    ck_assert_int_eq(stats().breaker, TIDE_BREAKER_INACTIVE);
    run_ms(70);
    struct answer *p = acquire(0, NULL); /* the probe, failing */
    ck_assert(run_until_answered(p, 1000));
    ck_assert_int_eq(p->status, fx->fail_code);
    ck_assert_int_eq(stats().breaker, TIDE_BREAKER_INACTIVE);
    fx->mode = MAKE_NOW;
    run_ms(70);
    struct answer *q = acquired(); /* the next probe is made */
    ck_assert_int_eq(q->status, 0);
    release(q); /* and serves: ACTIVE */
    ck_assert_int_eq(stats().breaker, TIDE_BREAKER_ACTIVE);
}
END_TEST

/* ---- opening by any route fails the parked callers at once -------------- */

START_TEST(deactivate_by_hand_fails_parked_waiters_at_once)
{
    struct tide_breaker_options b = {.policy = TIDE_BREAKER_STRIKES,
                                     .cooldown = TIDE_SEC(5)};
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 1),
        .ward = {.breaker = &b, .backoff = NO_HOLD}};
    fixture_pool(&o);
    struct answer *a = acquired();
    struct answer *w1 = acquire(TIDE_SEC(2), NULL);
    struct answer *w2 = acquire(TIDE_FOREVER, NULL);
    run_ms(10);
    ck_assert_int_eq(w1->calls + w2->calls, 0); /* parked: size 1 is lent */
    int64_t start = now_ns();
    tide_breaker_deactivate(tide_evpool_breaker(fx->pool), now_ns());
    ck_assert(run_until_answered(w2, 1000));
    ck_assert_int_lt(now_ns() - start, TIDE_MS(500));
    for (int k = 0; k < 2; k++) {
        struct answer *w = k ? w2 : w1;
        ck_assert_int_eq(w->calls, 1);
        ck_assert_int_eq(w->status, TIDE_EUNAVAILABLE);
        ck_assert_int_eq(w->guard, TIDE_GUARD_BREAKER);
        ck_assert_int_gt(w->retry_after, TIDE_SEC(4));
        ck_assert_int_le(w->retry_after, TIDE_SEC(5));
    }
    /* closed by hand: parked callers are served again */
    tide_breaker_activate(tide_evpool_breaker(fx->pool), now_ns());
    struct answer *w3 = acquire(TIDE_SEC(2), NULL);
    run_ms(10);
    ck_assert_int_eq(w3->calls, 0);
    struct fake *f = release(a);
    ck_assert(run_until_answered(w3, 1000));
    ck_assert_ptr_eq(w3->resource, f);
}
END_TEST

/* A strategy that opens on its first failure, told of a discard while a
 * caller is parked: the caller is failed at once. */
START_TEST(strategy_opening_fails_parked_waiters_at_once)
{
    struct reports r = {.open_on_failure = true};
    struct tide_breaker_options b = {.policy = TIDE_BREAKER_CUSTOM,
                                     .strategy = &counting,
                                     .strategy_arg = &r};
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 2),
        .ward = {.breaker = &b, .backoff = NO_HOLD}};
    fixture_pool(&o);
    struct answer *a = acquired();
    struct answer *c = acquired();
    struct answer *w = acquire(TIDE_SEC(5), NULL);
    run_ms(10);
    ck_assert_int_eq(w->calls, 0);
    void *ra = a->resource;
    a->resource = NULL;
    int64_t start = now_ns();
    ck_assert_int_eq(tide_evpool_discard(fx->pool, ra), 0);
    ck_assert(run_until_answered(w, 1000));
    ck_assert_int_lt(now_ns() - start, TIDE_MS(500));
    ck_assert_int_eq(w->status, TIDE_EUNAVAILABLE);
    ck_assert_int_eq(w->guard, TIDE_GUARD_BREAKER);
    release(c);
}
END_TEST

START_TEST(bucket_spaces_makes_and_waiters_are_served_in_order)
{
    struct tide_bucket_options bucket = {.rate = 20, .burst = 1};
    struct tide_evpool_options o = {.ward = {.bucket = &bucket}};
    fixture_pool(&o);
    struct answer *a[3];
    for (int i = 0; i < 3; i++)
        a[i] = acquire(TIDE_SEC(2), NULL);
    int64_t start = now_ns();
    ck_assert(run_until(answered_all, 1500));
    /* a token every 50 ms: the third waits for two of them */
    ck_assert_int_ge(now_ns() - start, TIDE_MS(90));
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(a[i]->status, 0);
        ck_assert_int_eq(a[i]->order, i);
    }
    ck_assert_int_eq(fx->makes, 3);
}
END_TEST

static void hog_the_loop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    int64_t until = now_ns() + *(int64_t *)arg;
    while (now_ns() < until)
        ; /* a callback that blocks the loop, as an overloaded host would */
}

START_TEST(shedder_refuses_while_the_loop_lags)
{
    /* targets far above a noisy machine's hiccups */
    struct tide_shedder_options shedder = {.lag_target = TIDE_MS(80)};
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 4),
                                    .lag_interval = TIDE_MS(10),
                                    .ward = {.shedder = &shedder}};
    fixture_pool(&o);
    struct answer *a = acquired();
    struct answer *b = acquired();
    /* the lag probe runs ~250 ms late: the ceiling on resources in flight
     * is cut from 2 to 1 */
    int64_t hog = TIDE_MS(250);
    struct event *ev = evtimer_new(fx->base, hog_the_loop, &hog);
    struct timeval tv = {0, 1000};
    evtimer_add(ev, &tv);
    run_ms(30);
    event_free(ev);
    struct answer *c = acquire(0, NULL);
    ck_assert(run_until_answered(c, 1000));
    ck_assert_int_eq(c->status, TIDE_EUNAVAILABLE);
    ck_assert_int_eq(c->guard, TIDE_GUARD_SHEDDER);
    ck_assert_int_eq(fx->makes, 2);
    ck_assert_uint_eq(stats().shed, 1);
    release(a);
    release(b);
}
END_TEST

static Suite *ward_suite(void)
{
    Suite *s = suite_create("ward");
    TCase *tc = tcase_create("breaker");
    fixture_add(tc);
    tcase_add_test(tc, pool_without_a_breaker_has_none);
    tcase_add_test(tc, inactive_breaker_fails_acquires_fast_even_with_idle);
    tcase_add_test(tc, strikes_open_the_breaker_and_refuse_queued_waiters);
    tcase_add_test(tc, recovering_breaker_probes_once_then_activates);
    tcase_add_test(tc, strategy_hears_every_success_and_failure);
    tcase_add_test(tc, strategy_installed_on_the_pools_breaker);
    suite_add_tcase(s, tc);

    tc = tcase_create("outcomes");
    fixture_add(tc);
    tcase_add_test(tc, five_discards_among_1000_loans_leave_strikes_active);
    tcase_add_test(tc, five_discards_in_a_row_open_strikes);
    tcase_add_test(tc, accepted_release_is_a_success);
    tcase_add_test(tc, lost_after_serving_is_no_outcome);
    tcase_add_test(tc, lost_before_first_loan_is_a_failed_make);
    tcase_add_test(tc, dead_before_first_loan_is_a_failed_make);
    tcase_add_test(tc, first_use_proves_a_minimums_make);
    tcase_add_test(tc, retire_is_a_success_and_proves_a_first_loan);
    tcase_add_test(tc, abandon_is_no_outcome_even_on_a_first_loan);
    tcase_add_test(tc, stale_is_no_outcome_once_the_resource_served);
    tcase_add_test(tc, stale_on_a_young_first_loan_is_a_failed_make);
    tcase_add_test(tc,
                   a_retire_breaks_a_run_of_failures_and_an_abandon_does_not);
    tcase_add_test(tc, an_abandon_leaves_a_run_of_failures_whole);
    tcase_add_test(tc, retire_and_abandon_wake_a_waiter_and_refuse_misuse);
    tcase_add_test(tc, rejected_release_and_failed_check_are_failures);
    tcase_add_test(tc, recovering_reopens_on_a_probes_failure);
    tcase_add_test(tc, deactivate_by_hand_fails_parked_waiters_at_once);
    tcase_add_test(tc, strategy_opening_fails_parked_waiters_at_once);
    suite_add_tcase(s, tc);

    tc = tcase_create("later");
    fixture_add(tc);
    tcase_add_test(tc, bucket_spaces_makes_and_waiters_are_served_in_order);
    tcase_add_test(tc, shedder_refuses_while_the_loop_lags);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(ward_suite)
