/* tests for evloop/waiters.c: acquire, cancel, acquire timeouts, the queue
 * bound and the order answers are delivered in. */
#include <malloc.h>

#include "fixture.h"

static void pool_of(int64_t size)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = size)};
    fixture_pool(&o);
}

START_TEST(acquire_answers_from_the_loop_never_inside)
{
    fixture_pool(NULL);
    struct answer *a = acquire(0, NULL);
    /* the factory answered inside make(), inside the pump: still no call */
    ck_assert_int_eq(a->calls, 0);
    ck_assert(run_until_answered(a, 1000));
    ck_assert_int_eq(a->status, 0);
    ck_assert_ptr_nonnull(a->resource);
    ck_assert_int_eq(fx->makes, 1);
}
END_TEST

START_TEST(waiters_are_served_in_order)
{
    pool_of(1);
    struct answer *a[4];
    for (int i = 0; i < 4; i++)
        a[i] = acquire(0, NULL);
    ck_assert(run_until(answered_all, 200) == false);
    ck_assert_int_eq(a[0]->status, 0);
    for (int i = 1; i < 4; i++) {
        ck_assert_int_eq(a[i]->calls, 0);
        struct fake *r = release(a[i - 1]);
        ck_assert(run_until_answered(a[i], 1000));
        ck_assert_ptr_eq(a[i]->resource, r);
        for (int j = i + 1; j < 4; j++)
            ck_assert_int_eq(a[j]->calls, 0);
    }
    ck_assert_int_eq(fx->makes, 1);
}
END_TEST

START_TEST(made_resources_go_to_the_oldest_waiter)
{
    pool_of(3);
    fx->mode = MAKE_NEVER;
    struct answer *a[3];
    for (int i = 0; i < 3; i++)
        a[i] = acquire(0, NULL);
    run_ms(5);
    ck_assert_int_eq(fx->n_held, 3);
    /* whichever make answers first serves the oldest waiter */
    for (int i = 0; i < 3; i++) {
        struct fake *f = answer_held(true);
        ck_assert(run_until_answered(a[i], 1000));
        ck_assert_ptr_eq(a[i]->resource, f);
        ck_assert_int_eq(a[i]->order, i);
    }
}
END_TEST

START_TEST(release_does_not_barge)
{
    pool_of(1);
    struct answer *a = acquired();
    struct answer *b = acquire(0, NULL);
    run_ms(5);
    ck_assert_int_eq(b->calls, 0);
    struct fake *r = release(a);
    /* right after release, before the loop runs: b is owed r */
    void *got = NULL;
    ck_assert_int_eq(tide_evpool_try_acquire(fx->pool, &got), TIDE_EWOULDBLOCK);
    ck_assert_ptr_null(got);
    struct answer *c = acquire(0, NULL);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_int_eq(b->status, 0);
    ck_assert_ptr_eq(b->resource, r);
    run_ms(5);
    ck_assert_int_eq(c->calls, 0);
    /* and c is next, once b is done */
    release(b);
    ck_assert(run_until_answered(c, 1000));
    ck_assert_ptr_eq(c->resource, r);
    ck_assert_int_eq(fx->makes, 1);
}
END_TEST

START_TEST(cancelled_waiter_passes_its_make_on)
{
    pool_of(1);
    fx->mode = MAKE_NEVER;
    struct tide_acquire *ha = NULL;
    struct answer *a = acquire(0, &ha);
    ck_assert_ptr_nonnull(ha);
    struct answer *b = acquire(0, NULL);
    run_ms(5);
    ck_assert_int_eq(fx->makes, 1); /* a's; b waits for room */
    tide_evpool_cancel(ha, false);
    struct fake *f = answer_held(true);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_ptr_eq(b->resource, f);
    ck_assert_int_eq(a->calls, 0);
    ck_assert_int_eq(fx->makes, 1);
}
END_TEST

START_TEST(cancelled_waiter_passes_its_resource_on)
{
    /* retire after one loan: a resource set aside for a cancelled waiter
     * was never lent, so it must not count as a loan */
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1),
                                    .retire_after = 1};
    fixture_pool(&o);
    fx->mode = MAKE_NEVER;
    struct tide_acquire *ha = NULL;
    struct answer *a = acquire(0, &ha);
    struct answer *b = acquire(0, NULL);
    run_ms(5);
    /* answered outside the loop: set aside for a, not yet delivered */
    struct fake *f = answer_held(true);
    ck_assert_int_eq(a->calls, 0);
    tide_evpool_cancel(ha, false);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_int_eq(b->status, 0);
    ck_assert_ptr_eq(b->resource, f);
    ck_assert_int_eq(f->destroyed, 0);
    ck_assert_int_eq(a->calls, 0);
    ck_assert_int_eq(fx->makes, 1);
}
END_TEST

START_TEST(cancel_with_notify_answers_once_with_ecancelled)
{
    pool_of(1);
    struct answer *a = acquired();
    struct tide_acquire *hb = NULL;
    struct answer *b = acquire(0, &hb);
    run_ms(5);
    tide_evpool_cancel(hb, true);
    ck_assert_int_eq(b->calls, 0); /* from the loop, not inside cancel */
    ck_assert(run_until_answered(b, 1000));
    ck_assert_int_eq(b->status, TIDE_ECANCELLED);
    ck_assert_ptr_null(b->resource);
    ck_assert_str_eq(b->message, tide_strerror(TIDE_ECANCELLED));
    /* the resource that comes back later does not answer b again */
    release(a);
    run_ms(10);
    ck_assert_int_eq(b->calls, 1);
    ck_assert_int_eq(stats().idle, 1);
}
END_TEST

/* a cancels b from its callback, once */
static struct tide_acquire *to_cancel;

static void cancel_the_other(struct answer *a)
{
    (void)a;
    if (to_cancel)
        tide_evpool_cancel(to_cancel, true);
    to_cancel = NULL;
}

/* Cancelled after a refusal was given but before it was delivered, a
 * caller hears the cancel alone: no guard or retry time of the refusal it
 * never saw. */
START_TEST(cancel_with_notify_of_a_refusal_says_nothing_of_it)
{
    struct tide_breaker_options br = {.policy = TIDE_BREAKER_STRIKES,
                                      .cooldown = TIDE_SEC(5)};
    /* each discard is its make's failure: no hold between them */
    struct tide_evpool_options o = {
        .ward = {.breaker = &br, .backoff = NO_HOLD}};
    fixture_pool(&o);
    for (int i = 0; i < 5; i++) /* five strikes: open, 5 s to a probe */
        ck_assert_int_eq(tide_evpool_discard(fx->pool, acquired()->resource),
                         0);
    struct answer *a = acquire(0, NULL);
    struct answer *b = acquire(0, &to_cancel);
    fx->answer_probe = cancel_the_other;
    ck_assert(run_until_answered(b, 1000));
    ck_assert_int_eq(a->status, TIDE_EUNAVAILABLE);
    ck_assert_int_eq(a->guard, TIDE_GUARD_BREAKER);
    ck_assert_int_gt(a->retry_after, 0);
    ck_assert_int_eq(b->calls, 1);
    ck_assert_int_eq(b->status, TIDE_ECANCELLED);
    ck_assert_int_eq(b->guard, TIDE_GUARD_NONE);
    ck_assert_int_eq(b->retry_after, 0);
    ck_assert_str_eq(b->message, tide_strerror(TIDE_ECANCELLED));
}
END_TEST

START_TEST(cancel_with_notify_of_a_served_waiter_passes_the_resource_on)
{
    pool_of(1);
    fx->mode = MAKE_NEVER;
    struct tide_acquire *ha = NULL;
    struct answer *a = acquire(0, &ha);
    struct answer *b = acquire(0, NULL);
    run_ms(5);
    struct fake *f = answer_held(true); /* set aside for a */
    tide_evpool_cancel(ha, true);
    ck_assert(run_until(answered_all, 1000));
    ck_assert_int_eq(a->calls, 1);
    ck_assert_int_eq(a->status, TIDE_ECANCELLED);
    ck_assert_ptr_null(a->resource);
    ck_assert_int_eq(b->status, 0);
    ck_assert_ptr_eq(b->resource, f);
}
END_TEST

START_TEST(cancel_without_notify_never_calls_back)
{
    pool_of(1);
    struct answer *a = acquired();
    struct tide_acquire *hb = NULL;
    struct answer *b = acquire(TIDE_MS(20), &hb);
    tide_evpool_cancel(hb, false);
    run_ms(60); /* past b's timeout: its timer went with it */
    release(a);
    run_ms(10);
    ck_assert_int_eq(b->calls, 0);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.waiting, 0);
    ck_assert_int_eq(s.timeouts, 0);
    ck_assert_int_eq(s.idle, 1);
}
END_TEST

START_TEST(timeout_answers_etimedout_once)
{
    pool_of(1);
    struct answer *a = acquired();
    struct answer *b = acquire(TIDE_MS(20), NULL);
    int64_t start = now_ns();
    ck_assert(run_until_answered(b, 1000));
    int64_t waited = now_ns() - start;
    ck_assert_int_eq(b->status, TIDE_ETIMEDOUT);
    ck_assert_ptr_null(b->resource);
    ck_assert_int_eq(b->make_error, 0);
    ck_assert_int_eq(b->guard, TIDE_GUARD_NONE);
    ck_assert_str_eq(b->message, tide_strerror(TIDE_ETIMEDOUT));
    ck_assert_int_ge(waited, TIDE_MS(19)); /* never early */
    release(a);
    run_ms(10);
    ck_assert_int_eq(b->calls, 1);
    ck_assert_int_eq(stats().timeouts, 1);
}
END_TEST

START_TEST(timed_out_waiter_passes_its_place_on)
{
    pool_of(1);
    fx->mode = MAKE_LATER;
    fx->delay = TIDE_MS(100);
    struct answer *a = acquire(TIDE_MS(30), NULL);
    struct answer *b = acquire(TIDE_SEC(2), NULL);
    ck_assert(run_until(answered_all, 1500));
    ck_assert_int_eq(a->status, TIDE_ETIMEDOUT);
    ck_assert_int_eq(b->status, 0);
    ck_assert_ptr_nonnull(b->resource);
    ck_assert_int_lt(a->order, b->order);
    ck_assert_int_eq(fx->makes, 1); /* a's make served b */
    ck_assert_int_eq(stats().timeouts, 1);
}
END_TEST

START_TEST(default_timeout_is_the_pools)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1),
                                    .acquire_timeout = TIDE_MS(20)};
    fixture_pool(&o);
    struct answer *a = acquired();
    struct answer *b = acquire(0, NULL);
    ck_assert(run_until_answered(b, 1000));
    ck_assert_int_eq(b->status, TIDE_ETIMEDOUT);
    release(a);
}
END_TEST

/* Waiters with one timeout share a timer armed for the head: when the
 * head is served first, the next still times out on its own deadline,
 * neither early (at the head's) nor late. */
START_TEST(next_waiter_times_out_on_its_own_deadline_after_the_head_is_served)
{
    pool_of(1);
    struct answer *a = acquired();
    struct answer *head = acquire(TIDE_MS(100), NULL);
    run_ms(50);
    int64_t queued = now_ns();
    struct answer *next = acquire(TIDE_MS(100), NULL);
    run_ms(10);
    struct fake *f = release(a); /* the head is served, 40 ms before its
                                    deadline */
    ck_assert(run_until_answered(head, 200));
    ck_assert_int_eq(head->status, 0);
    ck_assert_ptr_eq(head->resource, f);
    ck_assert(run_until_answered(next, 1000));
    int64_t waited = now_ns() - queued;
    ck_assert_int_eq(next->status, TIDE_ETIMEDOUT);
    ck_assert_int_ge(waited, TIDE_MS(99));  /* not at the head's deadline */
    ck_assert_int_lt(waited, TIDE_MS(180)); /* nor a round later */
    release(head);
}
END_TEST

/* More distinct timeouts at once than the pool keeps shared timers for:
 * each still times out on its own, in deadline order, never early. */
#define SPANS 12

START_TEST(many_distinct_timeouts_each_time_out_on_time)
{
    pool_of(1);
    struct answer *a = acquired();
    struct answer *w[SPANS];
    int64_t start = now_ns();
    for (int k = 0; k < SPANS; k++) /* 130, 120, ... 20 ms */
        w[k] = acquire(TIDE_MS(20 + 10 * (SPANS - 1 - k)), NULL);
    ck_assert(run_until(answered_all, 1000));
    for (int k = 0; k < SPANS; k++) {
        ck_assert_int_eq(w[k]->status, TIDE_ETIMEDOUT);
        ck_assert_int_eq(w[k]->calls, 1);
        if (k > 0) /* the shorter timeout answered first */
            ck_assert_int_lt(w[k]->order, w[k - 1]->order);
    }
    ck_assert_int_ge(now_ns() - start, TIDE_MS(129));
    ck_assert_int_eq(stats().timeouts, SPANS);
    ck_assert_int_eq(stats().waiting, 0);
    release(a);
}
END_TEST

struct nested {
    int first_calls;
    bool first_returned;
    int second_calls;
    bool second_after_first;
    void *second_resource;
    int second_status;
};

static struct nested nest;

static void second_cb(struct tide_evpool *pool, int status, void *resource,
                      const struct tide_why *why, void *arg)
{
    (void)why;
    (void)arg;
    nest.second_calls++;
    nest.second_after_first = nest.first_returned;
    nest.second_status = status;
    nest.second_resource = resource;
    if (resource)
        ck_assert_int_eq(tide_evpool_release(pool, resource), 0);
}

static void first_cb(struct tide_evpool *pool, int status, void *resource,
                     const struct tide_why *why, void *arg)
{
    (void)why;
    (void)arg;
    nest.first_calls++;
    ck_assert_int_eq(status, 0);
    ck_assert_int_eq(tide_evpool_release(pool, resource), 0);
    /* the resource just given back is idle and nobody waits: it is this
     * caller's, but its answer still waits for this callback to return */
    ck_assert_int_eq(tide_evpool_acquire(pool, 0, second_cb, NULL, NULL), 0);
    ck_assert_int_eq(nest.second_calls, 0);
    nest.first_returned = true;
}

static bool second_answered(void)
{
    return nest.second_calls > 0;
}

START_TEST(acquire_from_a_callback_is_answered_after_it_returns)
{
    nest = (struct nested){0}; /* CK_FORK=no runs every test in one process */
    pool_of(1);
    struct fake *f = release(acquired());
    ck_assert_int_eq(tide_evpool_acquire(fx->pool, 0, first_cb, NULL, NULL), 0);
    ck_assert(run_until(second_answered, 1000));
    ck_assert_int_eq(nest.first_calls, 1);
    ck_assert_int_eq(nest.second_calls, 1);
    ck_assert(nest.second_after_first);
    ck_assert_int_eq(nest.second_status, 0);
    ck_assert_ptr_eq(nest.second_resource, f);
    run_ms(10);
    ck_assert_int_eq(nest.second_calls, 1);
    ck_assert_int_eq(stats().made, 1);
    ck_assert_int_eq(stats().idle, 1);
}
END_TEST

#define CHAIN 5000

struct chain {
    int cycles;
    int cycles_when_other_ran; /* -1: not yet */
};

static struct chain chain;

static void chain_cb(struct tide_evpool *pool, int status, void *resource,
                     const struct tide_why *why, void *arg)
{
    (void)why;
    (void)arg;
    ck_assert_int_eq(status, 0);
    ck_assert_int_eq(tide_evpool_release(pool, resource), 0);
    if (++chain.cycles < CHAIN)
        ck_assert_int_eq(tide_evpool_acquire(pool, 0, chain_cb, NULL, NULL), 0);
}

static void other_event(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    chain.cycles_when_other_ran = chain.cycles;
}

static bool chain_done(void)
{
    return chain.cycles == CHAIN && chain.cycles_when_other_ran >= 0;
}

/* Callers acquiring again from their callbacks are served in rounds of the
 * same pump run, but the run yields to the loop now and then: another
 * event made active meanwhile runs long before the chain ends. */
START_TEST(a_chain_of_callers_does_not_starve_the_loop)
{
    chain = (struct chain){.cycles_when_other_ran = -1};
    pool_of(1);
    release(acquired());
    struct event *other = event_new(fx->base, -1, 0, other_event, NULL);
    ck_assert_int_eq(tide_evpool_acquire(fx->pool, 0, chain_cb, NULL, NULL), 0);
    event_active(other, EV_TIMEOUT, 0);
    ck_assert(run_until(chain_done, 5000));
    ck_assert_int_lt(chain.cycles_when_other_ran, 200);
    event_free(other);
}
END_TEST

#if defined(__SANITIZE_ADDRESS__)
#define HEAP_MEASURED 0 /* its allocator keeps no mallinfo; no spares kept */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEAP_MEASURED 0
#endif
#endif
#ifndef HEAP_MEASURED
#define HEAP_MEASURED 1
#endif

#define BURST 2000

static size_t heap_in_use(void)
{
    return mallinfo2().uordblks;
}

static int burst_answers;

static void burst_cb(struct tide_evpool *pool, int status, void *resource,
                     const struct tide_why *why, void *arg)
{
    (void)why;
    (void)arg;
    ck_assert_int_eq(status, 0);
    burst_answers++;
    ck_assert_int_eq(tide_evpool_release(pool, resource), 0);
}

static bool burst_served(void)
{
    return burst_answers == BURST;
}

/* A burst's waiter records are kept for the next burst only until the next
 * eviction round, which gives them back to the heap. */
START_TEST(a_bursts_records_go_back_to_the_heap_within_a_round)
{
    if (!HEAP_MEASURED)
        return;
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1),
                                    .evict_interval = TIDE_MS(50),
                                    .queue_max = TIDE_UNLIMITED};
    fixture_pool(&o);
    burst_answers = 0;
    release(acquired());
    size_t before = heap_in_use();
    for (int k = 0; k < BURST; k++)
        ck_assert_int_eq(tide_evpool_acquire(fx->pool, 0, burst_cb, NULL, NULL),
                         0);
    ck_assert(run_until(burst_served, 5000));
    size_t kept = heap_in_use();
    ck_assert_uint_gt(kept, before + BURST * 64); /* kept for the next one */
    run_ms(120);                                  /* a round or two */
    ck_assert_uint_lt(heap_in_use(), before + 64 * 256);
}
END_TEST

START_TEST(release_from_inside_the_callback_serves_the_next)
{
    pool_of(1);
    fx->release_in_callback = true;
    struct answer *a[3];
    for (int i = 0; i < 3; i++)
        a[i] = acquire(0, NULL);
    ck_assert(run_until(answered_all, 1000));
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(a[i]->status, 0);
        ck_assert_int_eq(a[i]->order, i);
    }
    ck_assert_int_eq(fx->makes, 1);
    ck_assert_int_eq(stats().idle, 1);
}
END_TEST

static int refused_calls;

static void refused_cb(struct tide_evpool *pool, int status, void *resource,
                       const struct tide_why *why, void *arg)
{
    (void)pool;
    (void)status;
    (void)resource;
    (void)why;
    (void)arg;
    refused_calls++;
}

START_TEST(acquire_past_queue_max_fails_at_once)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 1),
                                    .queue_max = 2};
    refused_calls = 0; /* CK_FORK=no runs every test in one process */
    fixture_pool(&o);
    struct answer *a = acquired();
    struct answer *b = acquire(0, NULL);
    struct answer *c = acquire(0, NULL);
    struct tide_acquire *h = (struct tide_acquire *)&refused_calls;
    ck_assert_int_eq(tide_evpool_acquire(fx->pool, 0, refused_cb, NULL, &h),
                     TIDE_EQUEUEFULL);
    ck_assert_ptr_null(h);
    ck_assert_int_eq(stats().waiting, 2);
    run_ms(10);
    ck_assert_int_eq(refused_calls, 0);
    /* a place frees up: the queue takes one more */
    release(a);
    ck_assert(run_until_answered(b, 1000));
    struct answer *d = acquire(0, NULL);
    release(b);
    ck_assert(run_until_answered(c, 1000));
    release(c);
    ck_assert(run_until_answered(d, 1000));
    ck_assert_int_eq(d->status, 0);
    ck_assert_int_eq(refused_calls, 0);
}
END_TEST

START_TEST(acquire_refuses_bad_arguments)
{
    refused_calls = 0;
    fixture_pool(NULL);
    struct tide_acquire *h = NULL;
    ck_assert_int_eq(tide_evpool_acquire(fx->pool, 0, NULL, NULL, &h),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_acquire(fx->pool, -1, refused_cb, NULL, &h),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_evpool_acquire(NULL, 0, refused_cb, NULL, &h),
                     TIDE_EINVAL);
    ck_assert_ptr_null(h);
    tide_evpool_cancel(NULL, true); /* a no-op */
    run_ms(5);
    ck_assert_int_eq(refused_calls, 0);
    ck_assert_int_eq(fx->makes, 0);
}
END_TEST

/* Cancelling an acquire from inside its own callback: the answer is given,
 * so there is nothing to cancel. It used to unlink the waiter from a list
 * it was no longer on and free it twice. */
static struct tide_acquire *self_handle;
static int self_calls;

static void cancels_itself(struct tide_evpool *pool, int status, void *res,
                           const struct tide_why *why, void *arg)
{
    (void)why;
    (void)arg;
    self_calls++;
    ck_assert_int_eq(status, 0);
    tide_evpool_cancel(self_handle, true);
    tide_evpool_cancel(self_handle, false);
    ck_assert_int_eq(tide_evpool_release(pool, res), 0);
}

START_TEST(cancel_from_inside_its_own_callback_is_a_no_op)
{
    self_calls = 0;
    fixture_pool(NULL);
    struct answer *before = acquire(0, NULL);
    ck_assert_int_eq(
        tide_evpool_acquire(fx->pool, 0, cancels_itself, NULL, &self_handle),
        0);
    struct answer *after = acquire(0, NULL);
    ck_assert(run_until_answered(after, 1000));
    run_ms(5);
    ck_assert_int_eq(self_calls, 1);
    ck_assert_int_eq(before->status, 0);
    ck_assert_int_eq(after->status, 0);
    ck_assert_uint_eq(stats().cancels, 0);
    release(before);
    release(after);
}
END_TEST

static Suite *waiters_suite(void)
{
    Suite *s = suite_create("waiters");
    TCase *tc = tcase_create("order");
    fixture_add(tc);
    tcase_add_test(tc, acquire_answers_from_the_loop_never_inside);
    tcase_add_test(tc, waiters_are_served_in_order);
    tcase_add_test(tc, made_resources_go_to_the_oldest_waiter);
    tcase_add_test(tc, release_does_not_barge);
    tcase_add_test(tc, release_from_inside_the_callback_serves_the_next);
    tcase_add_test(tc, cancel_from_inside_its_own_callback_is_a_no_op);
    tcase_add_test(tc, acquire_from_a_callback_is_answered_after_it_returns);
    tcase_add_test(tc, a_chain_of_callers_does_not_starve_the_loop);
    tcase_add_test(tc, a_bursts_records_go_back_to_the_heap_within_a_round);
    suite_add_tcase(s, tc);

    tc = tcase_create("cancel");
    fixture_add(tc);
    tcase_add_test(tc, cancelled_waiter_passes_its_make_on);
    tcase_add_test(tc, cancelled_waiter_passes_its_resource_on);
    tcase_add_test(tc, cancel_with_notify_answers_once_with_ecancelled);
    tcase_add_test(tc, cancel_with_notify_of_a_refusal_says_nothing_of_it);
    tcase_add_test(
        tc, cancel_with_notify_of_a_served_waiter_passes_the_resource_on);
    tcase_add_test(tc, cancel_without_notify_never_calls_back);
    suite_add_tcase(s, tc);

    tc = tcase_create("timeout");
    fixture_add(tc);
    tcase_add_test(tc, timeout_answers_etimedout_once);
    tcase_add_test(tc, timed_out_waiter_passes_its_place_on);
    tcase_add_test(tc, default_timeout_is_the_pools);
    tcase_add_test(
        tc, next_waiter_times_out_on_its_own_deadline_after_the_head_is_served);
    tcase_add_test(tc, many_distinct_timeouts_each_time_out_on_time);
    suite_add_tcase(s, tc);

    tc = tcase_create("bounds");
    fixture_add(tc);
    tcase_add_test(tc, acquire_past_queue_max_fails_at_once);
    tcase_add_test(tc, acquire_refuses_bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(waiters_suite)
