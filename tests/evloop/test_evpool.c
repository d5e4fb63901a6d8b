/* tests for evloop/evpool.c: options, creation, close, free from anywhere,
 * stats, and the error table as this layer uses it. */
#include "fixture.h"

#include <string.h>

static int try_new(const struct tide_evpool_options *o)
{
    struct tide_evpool *p = (struct tide_evpool *)fx;
    int rc = tide_evpool_new(fx->base, &fx->factory, o, &p);
    if (rc == 0)
        tide_evpool_free(p);
    else
        ck_assert_ptr_null(p);
    return rc;
}

START_TEST(new_refuses_invalid_options)
{
    struct tide_evpool *p = NULL;
    struct tide_factory f = fx->factory;
    ck_assert_int_eq(tide_evpool_new(NULL, &f, NULL, &p), TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_new(fx->base, NULL, NULL, &p), TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_new(fx->base, &f, NULL, NULL), TIDE_EINVAL);
    f.make = NULL;
    ck_assert_int_eq(tide_evpool_new(fx->base, &f, NULL, &p), TIDE_EINVAL);
    f = fx->factory;
    f.destroy = NULL;
    ck_assert_int_eq(tide_evpool_new(fx->base, &f, NULL, &p), TIDE_EINVAL);
    ck_assert_ptr_null(p);

    struct tide_evpool_options bad[] = {
        {.limits = TIDE_LIMITS(.size = 2), .min = 3},
        {.limits = {.size = 5, .idle = 2}, .min = 3}, /* could never keep it */
        {.min = -1},
        {.acquire_timeout = TIDE_FOREVER},
        {.acquire_timeout = -1},
        {.make_timeout = -1},
        {.health_interval = -1},
        {.evict_interval = -1},
        {.queue_max = -1},
        {.leak_after = -1},
        {.retire_after = -1},
        {.lag_interval = -1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(try_new(&bad[i]) == TIDE_EINVAL, "bad options %zu", i);

    /* what the core refuses, with the core's code */
    struct tide_evpool_options o = {.limits = {.size = -1}};
    ck_assert_int_eq(try_new(&o), TIDE_ELIMITS);
    o = (struct tide_evpool_options){.limits = {.spread = 2}};
    ck_assert_int_eq(try_new(&o), TIDE_ELIMITS);
    struct tide_breaker_options br = {.k = 0.5};
    o = (struct tide_evpool_options){.ward = {.breaker = &br}};
    ck_assert_int_eq(try_new(&o), TIDE_EBREAKER);
    struct tide_bucket_options bu = {.rate = -1};
    o = (struct tide_evpool_options){.ward = {.bucket = &bu}};
    ck_assert_int_eq(try_new(&o), TIDE_EBUCKET);
    struct tide_backoff bo = {.factor = 0.5};
    o = (struct tide_evpool_options){.ward = {.backoff = &bo}};
    ck_assert_int_eq(try_new(&o), TIDE_EBACKOFF);
    struct tide_shedder_options sh = {.decrease = 2};
    o = (struct tide_evpool_options){.ward = {.shedder = &sh}};
    ck_assert_int_eq(try_new(&o), TIDE_ESHEDDER);

    /* and the edges that are fine */
    struct tide_evpool_options good[] = {
        {0},
        {.limits = TIDE_LIMITS(.size = 3), .min = 3},
        {.limits = TIDE_LIMITS(.size = TIDE_UNLIMITED)},
        /* one connection to several callers: lent shared */
        {.limits = TIDE_LIMITS(.streams = 2)},
        {.limits = TIDE_LIMITS(.streams = TIDE_STREAMS_MAX)},
        {.make_timeout = TIDE_FOREVER,
         .health_interval = TIDE_FOREVER,
         .evict_interval = TIDE_FOREVER,
         .queue_max = TIDE_UNLIMITED},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ck_assert_msg(try_new(&good[i]) == 0, "good options %zu", i);
    ck_assert_int_eq(try_new(NULL), 0);
    run_ms(5);
    ck_assert_int_eq(fx->makes, 0); /* freed before the loop ran */
}
END_TEST

START_TEST(close_wakes_every_waiter_and_destroys_each_resource_once)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 2)};
    fixture_pool(&o);
    struct answer *a = acquired();
    struct answer *b = acquired();
    struct answer *w[3];
    for (int i = 0; i < 3; i++)
        w[i] = acquire(TIDE_SEC(5), NULL);
    run_ms(5);
    ck_assert_int_eq(stats().waiting, 3);
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    ck_assert_int_eq(w[0]->calls, 0); /* from the loop */
    ck_assert(run_until(answered_all, 1000));
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(w[i]->calls, 1);
        ck_assert_int_eq(w[i]->status, TIDE_ECLOSED);
        ck_assert_int_eq(w[i]->guard, TIDE_GUARD_CLOSED);
        ck_assert_int_eq(w[i]->order, 2 + i);
    }
    /* lent ones are destroyed as they come back, and only then done */
    ck_assert(!fx->closed);
    struct fake *fa = release(a);
    ck_assert_int_eq(fa->destroyed, 1);
    run_ms(5);
    ck_assert(!fx->closed);
    struct fake *fb = b->resource;
    b->resource = NULL;
    ck_assert_int_eq(tide_evpool_discard(fx->pool, fb), 0);
    ck_assert_int_eq(fb->destroyed, 1);
    ck_assert(!fx->closed); /* done comes from the loop too */
    run_ms(5);
    ck_assert(fx->closed);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.live, 0);
    ck_assert_uint_eq(s.made, s.destroyed);
    /* nothing pending: the loop runs dry with the pool still allocated */
    ck_assert_int_eq(event_base_loop(fx->base, EVLOOP_NONBLOCK | EVLOOP_ONCE),
                     1);
}
END_TEST

static int closed_calls;

static void count_closed(struct tide_evpool *pool, void *arg)
{
    (void)pool;
    ck_assert_ptr_eq(arg, &closed_calls);
    closed_calls++;
    fx->closed = true;
}

START_TEST(close_destroys_idle_at_once_and_calls_done_once)
{
    closed_calls = 0; /* CK_FORK=no runs every test in one process */
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 3)};
    fixture_pool(&o);
    struct answer *a = acquired();
    struct answer *b = acquired();
    struct fake *fa = release(a);
    struct fake *fb = release(b);
    ck_assert_int_eq(tide_evpool_close(fx->pool, count_closed, &closed_calls),
                     0);
    ck_assert_int_eq(fa->destroyed, 1);
    ck_assert_int_eq(fb->destroyed, 1);
    ck_assert_int_eq(closed_calls, 0);
    ck_assert_int_eq(tide_evpool_close(fx->pool, count_closed, &closed_calls),
                     TIDE_ECLOSED);
    ck_assert_int_eq(event_base_dispatch(fx->base), 1); /* runs dry */
    ck_assert_int_eq(closed_calls, 1);
}
END_TEST

START_TEST(close_fails_a_waiter_whose_resource_was_set_aside)
{
    fixture_pool(NULL);
    fx->mode = MAKE_NEVER;
    struct answer *a = acquire(0, NULL);
    run_ms(5);
    struct fake *f = answer_held(true); /* set aside for a, not delivered */
    ck_assert_int_eq(a->calls, 0);
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    ck_assert(run_until_answered(a, 1000));
    ck_assert_int_eq(a->status, TIDE_ECLOSED);
    ck_assert_ptr_null(a->resource);
    ck_assert_int_eq(f->destroyed, 1);
    run_ms(5);
    ck_assert(fx->closed);
}
END_TEST

static void close_on_answer(struct tide_evpool *pool, int status,
                            void *resource, const struct tide_why *why,
                            void *arg)
{
    (void)status;
    (void)why;
    struct answer *a = arg;
    a->calls++;
    a->status = status;
    ck_assert_int_eq(tide_evpool_close(pool, fixture_closed, NULL), 0);
    ck_assert_int_eq(tide_evpool_release(pool, resource), 0);
}

START_TEST(close_from_inside_an_acquire_callback)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1)};
    fixture_pool(&o);
    struct answer first = {0};
    ck_assert_int_eq(
        tide_evpool_acquire(fx->pool, 0, close_on_answer, &first, NULL), 0);
    struct answer *b = acquire(0, NULL);
    struct answer *c = acquire(0, NULL);
    ck_assert(run_until(answered_all, 1000));
    ck_assert_int_eq(first.calls, 1);
    ck_assert_int_eq(first.status, 0);
    ck_assert_int_eq(b->status, TIDE_ECLOSED);
    ck_assert_int_eq(c->status, TIDE_ECLOSED);
    ck_assert_int_eq(fx->fakes[0].destroyed, 1);
    run_ms(5);
    ck_assert(fx->closed);
}
END_TEST

static void never_called(struct tide_evpool *pool, int status, void *resource,
                         const struct tide_why *why, void *arg)
{
    (void)pool;
    (void)status;
    (void)resource;
    (void)why;
    (void)arg;
    ck_abort_msg("an acquire refused at once must not call back");
}

START_TEST(acquire_after_close_is_refused)
{
    fixture_pool(NULL);
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    struct tide_acquire *h = NULL;
    ck_assert_int_eq(tide_evpool_acquire(fx->pool, 0, never_called, NULL, &h),
                     TIDE_ECLOSED);
    ck_assert_ptr_null(h);
    run_ms(5);
    ck_assert(fx->closed);
}
END_TEST

START_TEST(free_from_inside_an_acquire_callback)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 2)};
    fixture_pool(&o);
    struct answer *a = acquired(); /* lent, and not given back */
    fx->mode = MAKE_LATER;
    fx->delay = TIDE_MS(5);
    fx->free_in_callback = true;
    struct answer *b = acquire(0, NULL); /* its callback frees the pool */
    struct answer *c = acquire(0, NULL); /* queued behind it: dropped */
    ck_assert(run_until_answered(b, 1000));
    ck_assert_ptr_null(fx->pool);
    ck_assert_int_eq(b->status, 0);
    run_ms(20);
    ck_assert_int_eq(c->calls, 0);
    /* every resource destroyed once, lent ones included */
    ck_assert_int_eq(((struct fake *)a->resource)->destroyed, 1);
    ck_assert_int_eq(((struct fake *)b->resource)->destroyed, 1);
    a->resource = b->resource = NULL;
}
END_TEST

START_TEST(free_from_inside_a_timeout_callback)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1)};
    fixture_pool(&o);
    struct answer *a = acquired();
    fx->free_in_callback = true;
    struct answer *b = acquire(TIDE_MS(10), NULL);
    struct answer *c = acquire(TIDE_MS(10), NULL); /* times out together */
    ck_assert(run_until_answered(b, 1000));
    ck_assert_ptr_null(fx->pool);
    ck_assert_int_eq(b->status, TIDE_ETIMEDOUT);
    run_ms(20);
    ck_assert_int_eq(c->calls, 0);
    ck_assert_int_eq(((struct fake *)a->resource)->destroyed, 1);
    a->resource = NULL;
}
END_TEST

static void free_on_closed(struct tide_evpool *pool, void *arg)
{
    (void)arg;
    tide_evpool_free(pool);
    fx->pool = NULL;
    fx->closed = true;
}

START_TEST(free_from_inside_the_close_callback)
{
    fixture_pool(NULL);
    struct fake *f = release(acquired());
    ck_assert_int_eq(tide_evpool_close(fx->pool, free_on_closed, NULL), 0);
    ck_assert_int_eq(event_base_dispatch(fx->base), 1);
    ck_assert(fx->closed);
    ck_assert_ptr_null(fx->pool);
    ck_assert_int_eq(f->destroyed, 1);
}
END_TEST

static void free_on_leak(struct tide_evpool *pool, void *resource, int64_t held,
                         void *arg)
{
    (void)resource;
    (void)held;
    (void)arg;
    tide_evpool_free(pool);
    fx->pool = NULL;
}

START_TEST(free_from_inside_a_leak_report)
{
    /* both asked for before the loop runs: acquired() one after the
     * other ran the loop for the second while the first's leak report
     * could come due (a loaded machine took over 10 ms), and the pool
     * was freed with the second acquire unanswered */
    struct tide_evpool_options o = {.leak_after = TIDE_MS(100),
                                    .on_leak = free_on_leak};
    fixture_pool(&o);
    struct answer *a = acquire(0, NULL);
    struct answer *b = acquire(0, NULL);
    ck_assert(run_until_answered(a, 2000) && run_until_answered(b, 2000));
    ck_assert_ptr_nonnull(a->resource);
    ck_assert_ptr_nonnull(b->resource);
    run_ms(400);
    ck_assert_ptr_null(fx->pool);
    ck_assert_int_eq(((struct fake *)a->resource)->destroyed, 1);
    ck_assert_int_eq(((struct fake *)b->resource)->destroyed, 1);
    a->resource = b->resource = NULL;
}
END_TEST

START_TEST(free_with_work_in_flight_leaves_nothing_behind)
{
    fixture_pool(NULL);
    struct answer *a = acquired();
    release(acquired()); /* idle: the first acquire below takes it */
    fx->mode = MAKE_LATER;
    acquire(TIDE_SEC(1), NULL);
    acquire(TIDE_SEC(1), NULL);
    run_ms(1);
    tide_evpool_free(fx->pool); /* outside any callback: at once */
    fx->pool = NULL;
    ck_assert_int_eq(((struct fake *)a->resource)->destroyed, 1);
    a->resource = NULL;
    /* the teardown answers the makes late and checks the loop runs dry */
}
END_TEST

/* What a destroy hook calls while free destroys the pool's resources (the
 * factory rules allow an acquire, and giving back another loan). */
struct at_free {
    bool freeing;
    bool called;
    int acquire_rc;
    int release_rc;
    struct answer *loans[2];
};
static struct at_free at_free;

static void call_pool_from_destroy(const char *hook, struct fake *f)
{
    if (!at_free.freeing || at_free.called || strcmp(hook, "destroy") != 0)
        return;
    at_free.called = true;
    at_free.acquire_rc = acquire_rc(TIDE_MS(10), NULL, NULL);
    struct answer *other =
        at_free.loans[0]->resource == f ? at_free.loans[1] : at_free.loans[0];
    at_free.release_rc = tide_evpool_release(fx->pool, other->resource);
}

/* A pool being freed is closing to its hooks: an acquire is refused, a loan
 * given back is destroyed with no reset started, and nothing they do leaves
 * an event of the freed pool armed in the loop. */
START_TEST(hooks_called_during_free_meet_a_closing_pool)
{
    at_free = (struct at_free){.acquire_rc = 1, .release_rc = 1};
    fx->resets = true;
    fixture_pool(NULL);
    at_free.loans[0] = acquired();
    at_free.loans[1] = acquired();
    fx->probe = call_pool_from_destroy;
    int resets = fx->resets_run;
    at_free.freeing = true;
    tide_evpool_free(fx->pool);
    fx->pool = NULL;
    ck_assert(at_free.called);
    ck_assert_int_eq(at_free.acquire_rc, TIDE_ECLOSED);
    ck_assert_int_eq(at_free.release_rc, 0);
    ck_assert_int_eq(fx->resets_run, resets);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(((struct fake *)at_free.loans[i]->resource)->destroyed,
                         1);
        at_free.loans[i]->resource = NULL;
    }
    run_ms(5); /* an event of the freed pool left armed would run here */
}
END_TEST

START_TEST(stats_count_and_wait_percentiles)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1)};
    fixture_pool(&o);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.wait_p50, 0);
    ck_assert_int_eq(s.wait_max, 0);
    struct answer *a = acquired();
    struct answer *b = acquire(0, NULL);
    struct answer *c = acquire(TIDE_MS(10), NULL); /* times out */
    struct answer *d = acquire(0, NULL);
    run_ms(40);
    s = stats();
    ck_assert_int_eq(s.live, 1);
    ck_assert_int_eq(s.lent, 1);
    ck_assert_int_eq(s.idle, 0);
    ck_assert_int_eq(s.making, 0);
    ck_assert_int_eq(s.waiting, 2);
    ck_assert_uint_eq(s.timeouts, 1);
    ck_assert_int_eq(c->status, TIDE_ETIMEDOUT);
    release(a);
    ck_assert(run_until_answered(b, 1000));
    run_ms(40);
    release(b);
    ck_assert(run_until_answered(d, 1000));
    s = stats();
    ck_assert_uint_eq(s.made, 1);
    ck_assert_uint_eq(s.destroyed, 0);
    ck_assert_int_eq(s.waiting, 0);
    ck_assert_int_eq(s.lent, 1);
    /* waits: a ~0, b ~40 ms, d ~80 ms (the timed-out c not counted) */
    ck_assert_int_gt(s.wait_p50, TIDE_MS(30));
    ck_assert_int_le(s.wait_p50, s.wait_p90);
    ck_assert_int_le(s.wait_p90, s.wait_p99);
    ck_assert_int_le(s.wait_p99, s.wait_max);
    ck_assert_int_ge(s.wait_max, TIDE_MS(75));
    ck_assert_int_lt(s.wait_max, TIDE_SEC(2));
    ck_assert_int_eq(s.breaker, TIDE_BREAKER_ACTIVE);
}
END_TEST

/* A caller that acquires again from its callback, with the resource it
 * just released idle, waits for nothing: those waits count as 0 in the
 * percentiles, read from inside the callback as after it. One wait of
 * 30 ms among nine of 0 leaves the median at 0. */
struct again {
    int left;
    struct tide_evpool_stats inside; /* read in the last callback */
    void *last;
};

static void acquire_again(struct tide_evpool *pool, int status, void *resource,
                          const struct tide_why *why, void *arg)
{
    (void)why;
    struct again *g = arg;
    ck_assert_int_eq(status, 0);
    if (--g->left == 0) {
        tide_evpool_stats(pool, &g->inside);
        g->last = resource;
        return;
    }
    ck_assert_int_eq(tide_evpool_release(pool, resource), 0);
    ck_assert_int_eq(tide_evpool_acquire(pool, 0, acquire_again, g, NULL), 0);
}

START_TEST(stats_count_the_waits_of_callers_acquiring_again)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1)};
    fixture_pool(&o);
    struct answer *a = acquired();
    struct again g = {.left = 10};
    ck_assert_int_eq(tide_evpool_acquire(fx->pool, 0, acquire_again, &g, NULL),
                     0);
    run_ms(30);
    release(a); /* the first waited 30 ms, the nine after it none */
    for (int i = 0; i < 100 && g.left > 0; i++)
        run_ms(1);
    ck_assert_int_eq(g.left, 0);
    ck_assert_int_ge(g.inside.wait_max, TIDE_MS(25));
    ck_assert_int_eq(g.inside.wait_p50, 0);
    ck_assert_int_eq(g.inside.recent_p50, 0);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.wait_p50, 0);
    ck_assert_int_eq(s.recent_p50, 0);
    ck_assert_int_ge(s.wait_p99, TIDE_MS(25)); /* the 30 ms one */
    ck_assert_int_eq(tide_evpool_release(fx->pool, g.last), 0);
}
END_TEST

/* Each counter the stats add up: acquires, queue-full refusals, cancels,
 * dirty releases, and the recent waits beside the lifetime ones. */
START_TEST(stats_count_acquires_refusals_cancels_and_dirty_releases)
{
    /* a's dirty release is its make's failure: no hold for c's make */
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1),
                                    .ward = {.backoff = NO_HOLD},
                                    .queue_max = 1};
    fixture_pool(&o);
    struct answer *a = acquired();
    struct tide_acquire *h;
    struct answer *b = acquire(0, &h);
    ck_assert_int_eq(tide_evpool_acquire(fx->pool, 0, never_called, NULL, NULL),
                     TIDE_EQUEUEFULL);
    tide_evpool_cancel(h, false);
    b->calls = 1; /* cancelled without notify: no answer is due */
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), TIDE_EWOULDBLOCK);
    ((struct fake *)a->resource)->broken = true;
    release(a);
    struct answer *c = acquired();
    struct tide_evpool_stats s = stats();
    ck_assert_uint_eq(s.acquires, 5); /* a, b, the refused one, try, c */
    ck_assert_uint_eq(s.queue_full, 1);
    ck_assert_uint_eq(s.cancels, 1);
    ck_assert_uint_eq(s.dirty, 1);
    ck_assert_int_le(s.recent_p50, s.recent_p99);
    ck_assert_int_le(s.recent_p99, s.recent_max);
    ck_assert_int_eq(s.recent_max, s.wait_max); /* all within the minute */
    release(c);
}
END_TEST

/* Every entry point takes a NULL pool, token or out pointer calmly: an
 * error code, or nothing at all. */
START_TEST(null_is_refused_everywhere)
{
    fixture_pool(NULL);
    void *got = (void *)1;
    char buf[8] = "x";
    struct tide_evpool_stats s;
    ck_assert_int_eq(tide_evpool_close(NULL, NULL, NULL), TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_try_acquire(NULL, &got), TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, NULL), TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_release(NULL, &got), TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_release(fx->pool, NULL), TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_discard(NULL, &got), TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_discard(fx->pool, NULL), TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_lost(NULL, &got), TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_lost(fx->pool, NULL), TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_last_error(NULL, buf, sizeof buf),
                     TIDE_EINVAL);
    ck_assert_str_eq(buf, "");
    ck_assert_ptr_null(tide_evpool_breaker(NULL));
    ck_assert_ptr_null(tide_make_pool(NULL));
    tide_evpool_stats(NULL, &s);
    ck_assert_int_eq(s.live, 0);
    tide_evpool_stats(fx->pool, NULL);
    tide_evpool_made(NULL, &got);
    tide_evpool_unmade(NULL, TIDE_EMAKE, "x");
    tide_evpool_checked(NULL, true);
    tide_evpool_cancel(NULL, false);
    tide_evpool_free(NULL);
    ck_assert_int_eq(fx->makes, 0);
}
END_TEST

START_TEST(error_table_knows_the_evloop_codes)
{
    static const struct {
        int code;
        const char *name;
    } codes[] = {
        {TIDE_ETIMEDOUT, "TIDE_ETIMEDOUT"},
        {TIDE_EUNAVAILABLE, "TIDE_EUNAVAILABLE"},
        {TIDE_EQUEUEFULL, "TIDE_EQUEUEFULL"},
        {TIDE_ECANCELLED, "TIDE_ECANCELLED"},
        {TIDE_EMAKE, "TIDE_EMAKE"},
        {TIDE_EMAKETIMEDOUT, "TIDE_EMAKETIMEDOUT"},
        {TIDE_EWOULDBLOCK, "TIDE_EWOULDBLOCK"},
        {TIDE_EBUSY, "TIDE_EBUSY"},
        {TIDE_EUNPROVEN, "TIDE_EUNPROVEN"},
    };
    const char *unknown = tide_strerror(-999);
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        ck_assert_str_eq(tide_err_name(codes[i].code), codes[i].name);
        ck_assert_str_ne(tide_strerror(codes[i].code), unknown);
        for (size_t j = 0; j < i; j++)
            ck_assert_str_ne(tide_strerror(codes[i].code),
                             tide_strerror(codes[j].code));
    }
    ck_assert_str_eq(tide_err_name(-999), "TIDE_E?");
}
END_TEST

static Suite *evpool_suite(void)
{
    Suite *s = suite_create("evpool");
    TCase *tc = tcase_create("new");
    fixture_add(tc);
    tcase_add_test(tc, new_refuses_invalid_options);
    suite_add_tcase(s, tc);

    tc = tcase_create("close");
    fixture_add(tc);
    tcase_add_test(tc,
                   close_wakes_every_waiter_and_destroys_each_resource_once);
    tcase_add_test(tc, close_destroys_idle_at_once_and_calls_done_once);
    tcase_add_test(tc, hooks_called_during_free_meet_a_closing_pool);
    tcase_add_test(tc, acquire_after_close_is_refused);
    tcase_add_test(tc, close_fails_a_waiter_whose_resource_was_set_aside);
    tcase_add_test(tc, close_from_inside_an_acquire_callback);
    suite_add_tcase(s, tc);

    tc = tcase_create("free");
    fixture_add(tc);
    tcase_add_test(tc, free_from_inside_an_acquire_callback);
    tcase_add_test(tc, free_from_inside_a_timeout_callback);
    tcase_add_test(tc, free_from_inside_the_close_callback);
    tcase_add_test(tc, free_from_inside_a_leak_report);
    tcase_add_test(tc, free_with_work_in_flight_leaves_nothing_behind);
    suite_add_tcase(s, tc);

    tc = tcase_create("stats");
    fixture_add(tc);
    tcase_add_test(tc, stats_count_and_wait_percentiles);
    tcase_add_test(tc, stats_count_the_waits_of_callers_acquiring_again);
    tcase_add_test(tc,
                   stats_count_acquires_refusals_cancels_and_dirty_releases);
    tcase_add_test(tc, null_is_refused_everywhere);
    tcase_add_test(tc, error_table_knows_the_evloop_codes);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(evpool_suite)
