/* tests for the adapter's re-entrancy: every call evloop.h allows from a
 * callback, made from every callback, while that callback runs in the
 * middle of the pool's own work (the pump lending, a make timing out, a
 * release, a reset, a health round, a leak scan, the close finishing).
 *
 * The cases are generated from two tables, hooks (the callbacks) and calls,
 * one Check test per pair named "<hook>_calls_<call>" in a test case named
 * for the hook (CK_RUN_CASE=alive runs one row). Each test builds the
 * hook's scenario, makes the call once from inside the hook's first run,
 * asserts the hook was reached and what the call promises, and ends with
 * the fixture's exactly-once checks: one answer per acquire, one destroy
 * per resource made, a loop that runs dry after close.
 *
 * Pairs left out, because evloop.h does not allow the call there:
 *   make, cancel, destroy, alive, reusable, reset, check, watch_idle,
 *   watch_unidle x free: "None of them may call tide_evpool_free".
 *   closed x cancel_served, cancel_other: by the time done runs every
 *   acquire has been answered, and a handle is valid only until its
 *   callback starts.
 * Pairs with no meaning, left out too:
 *   check, leak, closed x cancel_served: these callbacks serve no waiter.
 * The factory callbacks release and discard another resource than the one
 * they are called about (releasing that one is not allowed). */
#include "fixture.h"

#include <stdio.h>
#include <string.h>

enum hook {
    H_MAKE,
    H_CANCEL,
    H_DESTROY,
    H_ALIVE,
    H_REUSABLE,
    H_RESET,
    H_CHECK,
    H_WATCH_IDLE,
    H_WATCH_UNIDLE,
    H_ANSWER,
    H_LEAK,
    H_CLOSED,
    N_HOOKS,
};

enum call {
    C_CLOSE,
    C_CANCEL_SERVED,
    C_CANCEL_OTHER,
    C_ACQUIRE,
    C_TRY_ACQUIRE,
    C_RELEASE_OTHER,
    C_DISCARD_OTHER,
    C_STATS,
    C_FREE,
    N_CALLS,
};

/* Where the waiter being served stands while the hook runs. */
enum served {
    SERVED_NONE,       /* the hook serves no waiter */
    SERVED_QUEUED,     /* queued: the hook runs on its way to an answer */
    SERVED_READY,      /* answered, not yet delivered */
    SERVED_DELIVERING, /* the hook is its own callback */
};

struct hook_case {
    const char *name;
    const char *probe; /* the fixture's probe name, NULL for no factory hook */
    bool factory;      /* a factory callback: may not free the pool */
    enum served served;
    int waiting;         /* callers queued while it runs (before the call) */
    int making;          /* makes in flight then */
    void (*setup)(void); /* builds the scenario, arms and triggers the hook */
};

struct call_case {
    const char *name;
    void (*make)(void);   /* inside the hook */
    void (*verify)(void); /* in the test body, once the loop has settled */
};

/* What one test saw. Reset per test: with CK_FORK=no every test runs in
 * one process. */
static struct {
    enum hook hook;
    enum call call;
    bool armed;
    int reached;          /* times the armed hook made the call */
    struct fake *expect;  /* the resource the hook must be about, or NULL */
    struct fake *subject; /* the resource it was about */
    struct fake *candidates[2]; /* ... or one of these, when expect is NULL */
    struct answer *served;      /* the waiter being served, or NULL */
    struct tide_acquire *served_h;
    struct answer *other; /* another waiter, or NULL */
    struct tide_acquire *other_h;
    struct answer *lent[2]; /* resources lent to the test */
    struct fake *lent_fake[2];
    int rc;                    /* what the call returned */
    struct answer *fresh;      /* an acquire started from the hook */
    void *taken;               /* what try_acquire handed out */
    bool pending[ANSWERS_MAX]; /* unanswered when the call was made */
    int n_at_call;
    int answered_at_free;
    int closed_calls; /* the closed scenario's done callback */
} rx;

static const struct hook_case hooks[N_HOOKS];
static const struct call_case calls[N_CALLS];

static const char *hook_name(void)
{
    return hooks[rx.hook].name;
}

/* ---- the calls ---- */

/* The oldest resource lent to the test that the hook is not about. */
static int other_lent(void)
{
    for (int k = 0; k < 2; k++)
        if (rx.lent_fake[k] && rx.lent_fake[k] != rx.subject)
            return k;
    ck_abort_msg("%s: no other lent resource", hook_name());
    return -1;
}

static void call_close(void)
{
    rx.rc = tide_evpool_close(fx->pool, fixture_closed, NULL);
    /* a second close changes nothing, the first done still comes */
    ck_assert_int_eq(rx.rc, rx.hook == H_CLOSED ? TIDE_ECLOSED : 0);
}

static void call_cancel_served(void)
{
    ck_assert_ptr_nonnull(rx.served_h);
    if (hooks[rx.hook].served != SERVED_DELIVERING)
        ck_assert_int_eq(rx.served->calls, 0);
    tide_evpool_cancel(rx.served_h, true);
    /* the notification comes from the loop, never inside cancel */
    ck_assert_int_le(rx.served->calls, 1);
}

static void call_cancel_other(void)
{
    ck_assert_ptr_nonnull(rx.other_h);
    ck_assert_int_eq(rx.other->calls, 0);
    tide_evpool_cancel(rx.other_h, true);
    ck_assert_int_eq(rx.other->calls, 0);
}

static void call_acquire(void)
{
    rx.rc = acquire_rc(0, NULL, &rx.fresh);
    ck_assert_int_eq(rx.rc, rx.hook == H_CLOSED ? TIDE_ECLOSED : 0);
    /* callbacks come from the loop, never from inside acquire */
    if (rx.fresh)
        ck_assert_int_eq(rx.fresh->calls, 0);
}

static void call_try_acquire(void)
{
    struct tide_evpool_stats s;
    tide_evpool_stats(fx->pool, &s);
    rx.rc = tide_evpool_try_acquire(fx->pool, &rx.taken);
    if (rx.hook == H_CLOSED)
        ck_assert_int_eq(rx.rc, TIDE_ECLOSED);
    else if (s.waiting > 0) /* never a barge past queued callers */
        ck_assert_int_eq(rx.rc, TIDE_EWOULDBLOCK);
    else
        ck_assert(rx.rc == 0 || rx.rc == TIDE_EWOULDBLOCK);
    if (rx.rc != 0) {
        ck_assert_ptr_null(rx.taken);
        return;
    }
    struct fake *f = rx.taken;
    ck_assert_int_eq(f->destroyed, 0);
    ck_assert_ptr_ne(f, rx.subject);
    for (int i = 0; i < fx->n_answers; i++)
        ck_assert_ptr_ne(fx->answers[i].resource, f);
}

/* Releases (discard: false) or discards another resource lent to the test.
 * In the closed scenario it was destroyed already: the pool no longer
 * knows it. */
static void give_back_other(bool release)
{
    int k = other_lent();
    struct fake *f = rx.lent_fake[k];
    rx.rc = release ? tide_evpool_release(fx->pool, f)
                    : tide_evpool_discard(fx->pool, f);
    ck_assert_int_eq(rx.rc, rx.hook == H_CLOSED ? TIDE_EUNKNOWN : 0);
    if (rx.rc == 0) {
        rx.lent[k]->resource = NULL; /* the teardown must not give it back */
        if (!release)                /* a discard destroys at once */
            ck_assert_int_eq(f->destroyed, 1);
    }
}

static void call_release_other(void)
{
    give_back_other(true);
}

static void call_discard_other(void)
{
    give_back_other(false);
}

static void call_stats(void)
{
    struct tide_evpool_stats s;
    tide_evpool_stats(fx->pool, &s);
    /* the books add up in the middle of the pool's work too */
    ck_assert_int_ge(s.idle, 0);
    ck_assert_int_ge(s.lent, 0);
    ck_assert_int_ge(s.checking, 0);
    ck_assert_msg(s.making >= 0,
                  "%s: making %lld (live %lld idle %lld lent "
                  "%lld checking %lld)",
                  hook_name(), (long long)s.making, (long long)s.live,
                  (long long)s.idle, (long long)s.lent, (long long)s.checking);
    ck_assert_int_eq(s.making, hooks[rx.hook].making);
    ck_assert_int_ge(s.waiting, 0);
    ck_assert_uint_le(s.destroyed, s.made);
    if (rx.hook == H_ALIVE || rx.hook == H_REUSABLE)
        ck_assert_int_ge(s.lent, 1); /* the one being judged */
    if (rx.hook == H_CHECK)
        ck_assert_int_ge(s.checking, 1);
    if (rx.hook == H_CLOSED)
        ck_assert_int_eq(s.live, 0);
}

static void call_free(void)
{
    rx.answered_at_free = fx->answered;
    tide_evpool_free(fx->pool);
    fx->pool = NULL;
}

/* ---- what each call promises, checked once the loop has settled ---- */

static void verify_close(void)
{
    /* close fails every waiter: none pending then gets a resource */
    for (int i = 0; i < rx.n_at_call; i++) {
        if (!rx.pending[i])
            continue;
        struct answer *a = &fx->answers[i];
        ck_assert_msg(a->calls == 1, "%s: acquire %d answered %d times",
                      hook_name(), i, a->calls);
        ck_assert_msg(a->status < 0 && !a->resource,
                      "%s: acquire %d got status %d after close", hook_name(),
                      i, a->status);
    }
    /* a waiter still queued, or set a resource aside, gets ECLOSED (one
     * answered with a failed make before the close keeps that answer) */
    if (rx.other && rx.pending[rx.other - fx->answers])
        ck_assert_int_eq(rx.other->status, TIDE_ECLOSED);
    if (rx.served && hooks[rx.hook].served == SERVED_QUEUED)
        ck_assert_int_eq(rx.served->status, TIDE_ECLOSED);
}

static void verify_cancel_served(void)
{
    ck_assert_int_eq(rx.served->calls, 1);
    if (hooks[rx.hook].served == SERVED_DELIVERING) {
        /* from inside its own callback: a no-op, the loan stands */
        ck_assert_int_eq(rx.served->status, 0);
        ck_assert_ptr_nonnull(rx.served->resource);
        ck_assert_int_eq(rx.served->resource->destroyed, 0);
        return;
    }
    ck_assert_int_eq(rx.served->status, TIDE_ECANCELLED);
    ck_assert_ptr_null(rx.served->resource);
}

static void verify_cancel_other(void)
{
    ck_assert_int_eq(rx.other->calls, 1);
    ck_assert_int_eq(rx.other->status, TIDE_ECANCELLED);
    ck_assert_ptr_null(rx.other->resource);
}

static void verify_acquire(void)
{
    /* answered at most once so far; the teardown's close answers it if
     * nothing else did */
    if (rx.fresh)
        ck_assert_int_le(rx.fresh->calls, 1);
}

/* An accepted release keeps the resource: to a waiter, or idle. */
static void verify_release_other(void)
{
    int k = other_lent();
    if (rx.rc == 0)
        ck_assert_int_eq(rx.lent_fake[k]->destroyed, 0);
}

/* Checked inside the hook already; the teardown checks the rest. */
static void verify_nothing_more(void)
{
}

static void verify_free(void)
{
    /* waiters are dropped without callbacks */
    ck_assert_int_eq(fx->answered, rx.answered_at_free);
    ck_assert_ptr_null(fx->pool);
}

static const struct call_case calls[N_CALLS] = {
    [C_CLOSE] = {.name = "close", .make = call_close, .verify = verify_close},
    [C_CANCEL_SERVED] = {.name = "cancel_served",
                         .make = call_cancel_served,
                         .verify = verify_cancel_served},
    [C_CANCEL_OTHER] = {.name = "cancel_other",
                        .make = call_cancel_other,
                        .verify = verify_cancel_other},
    [C_ACQUIRE] = {.name = "acquire",
                   .make = call_acquire,
                   .verify = verify_acquire},
    [C_TRY_ACQUIRE] = {.name = "try_acquire",
                       .make = call_try_acquire,
                       .verify = verify_nothing_more},
    [C_RELEASE_OTHER] = {.name = "release_other",
                         .make = call_release_other,
                         .verify = verify_release_other},
    [C_DISCARD_OTHER] = {.name = "discard_other",
                         .make = call_discard_other,
                         .verify = verify_nothing_more},
    [C_STATS] = {.name = "stats",
                 .make = call_stats,
                 .verify = verify_nothing_more},
    [C_FREE] = {.name = "free", .make = call_free, .verify = verify_free},
};

/* ---- reaching the hook ---- */

/* The armed hook runs: the call is made once, from its first run. */
static void reach(struct fake *f)
{
    rx.armed = false;
    rx.reached++;
    rx.subject = f;
    if (rx.expect)
        ck_assert_msg(f == rx.expect, "%s ran for fake %d, not fake %d",
                      hook_name(), f ? f->id : -1, rx.expect->id);
    else if (rx.candidates[0])
        ck_assert(f == rx.candidates[0] || f == rx.candidates[1]);
    /* the scenario is the one described, so many callers queued (this
     * reads stats from inside every hook: the mildest call there is) */
    int64_t waiting = stats().waiting;
    ck_assert_msg(waiting == hooks[rx.hook].waiting,
                  "%s ran with %lld waiting, not %d", hook_name(),
                  (long long)waiting, hooks[rx.hook].waiting);
    rx.n_at_call = fx->n_answers;
    for (int i = 0; i < fx->n_answers; i++)
        rx.pending[i] = fx->answers[i].calls == 0;
    calls[rx.call].make();
}

static void on_probe(const char *hook, struct fake *f)
{
    const struct hook_case *h = &hooks[rx.hook];
    if (!rx.armed || !h->probe || strcmp(hook, h->probe) != 0)
        return;
    if (rx.hook == H_WATCH_IDLE && !fx->watch_idle)
        return;
    if (rx.hook == H_WATCH_UNIDLE && fx->watch_idle)
        return;
    if (rx.expect && f != rx.expect)
        return; /* the same hook on the way, for another resource */
    if (rx.hook == H_CHECK && !rx.other) {
        /* the first check of the round queues a waiter, so the second runs
         * with one waiting (nothing is idle while both are checked) */
        rx.other = acquire(0, &rx.other_h);
        return;
    }
    reach(f);
}

static void on_answer(struct answer *a)
{
    if (rx.armed && rx.hook == H_ANSWER && a == rx.served) {
        ck_assert_int_eq(a->status, 0);
        reach(a->resource);
    }
}

static void on_leak(struct tide_evpool *pool, void *resource, int64_t held,
                    void *arg)
{
    (void)pool;
    (void)arg;
    ck_assert_int_gt(held, 0);
    if (rx.armed && rx.hook == H_LEAK)
        reach(resource);
}

static void on_closed(struct tide_evpool *pool, void *arg)
{
    fixture_closed(pool, arg);
    rx.closed_calls++;
    if (rx.armed && rx.hook == H_CLOSED)
        reach(NULL);
}

static bool reached(void)
{
    return rx.reached > 0;
}

/* ---- the scenarios ---- */

static void pool_of(int64_t size)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = size)};
    fixture_pool(&o);
}

/* Two resources lent to the test for the whole scenario: what the calls
 * release and discard. Made at once (the fixture's preset mode). */
static void lend_two(void)
{
    for (int k = 0; k < 2; k++) {
        rx.lent[k] = acquired();
        rx.lent_fake[k] = rx.lent[k]->resource;
    }
}

/* Two idle resources that have served once each (so a loss is no failed
 * make): out[0] returned first, out[1] last, so out[1] is lent first
 * (LIFO). */
static void idle_two(struct fake *out[2])
{
    struct answer *a = acquired();
    struct answer *b = acquired();
    out[0] = release(a);
    out[1] = release(b);
    ck_assert_ptr_ne(out[0], out[1]);
    ck_assert_int_eq(stats().idle, 2);
}

static void arm(void)
{
    rx.armed = true;
}

/* The pump starts a make for S (answered inside make, after the call); O is
 * queued behind S with no make yet. */
static void make_for_waiter(void)
{
    pool_of(4);
    lend_two();
    arm();
    rx.served = acquire(0, &rx.served_h);
    rx.other = acquire(0, &rx.other_h);
}

/* S's make times out: S is answered (not yet delivered), then the factory
 * is told to cancel; O waits on its own make. */
static void make_times_out(void)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 4),
                                    .make_timeout = TIDE_MS(30)};
    fixture_pool(&o);
    lend_two();
    fx->mode = MAKE_NEVER;
    arm();
    rx.served = acquire(0, &rx.served_h);
    rx.other = acquire(0, &rx.other_h);
}

/* The pump lends from idle: O (older) is set W aside, then S is handed X,
 * so while watch(false), alive() or (X dead) destroy runs for X, S is the
 * only one queued and O's answer waits to be delivered. */
static void lend_from_idle(void)
{
    pool_of(4);
    lend_two();
    struct fake *idle[2];
    idle_two(idle);
    rx.expect = idle[0]; /* X; W is lent first */
    fx->mode = MAKE_LATER;
    if (rx.hook == H_DESTROY)
        rx.expect->dead = true;
    arm();
    rx.other = acquire(0, &rx.other_h);
    rx.served = acquire(0, &rx.served_h);
}

/* The test releases X while S and O wait for a place: reusable() judges X,
 * then watch(true) as it goes idle on its way to S. */
static void release_to_waiters(void)
{
    pool_of(3);
    lend_two();
    struct answer *x = acquired();
    rx.expect = x->resource;
    fx->mode = MAKE_LATER;
    rx.served = acquire(0, &rx.served_h);
    rx.other = acquire(0, &rx.other_h);
    run_ms(5);
    ck_assert_int_eq(stats().waiting, 2);
    arm();
    release(x);
}

/* As release_to_waiters, the factory resetting X on its release, before
 * it goes to S. */
static void reset_to_waiters(void)
{
    fx->resets = true;
    release_to_waiters();
}

/* A health round over X and Y; O is queued from inside the first check. */
static void health_round(void)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 4),
                                    .health_interval = TIDE_MS(20)};
    fx->hold_checks = true;
    fixture_pool(&o);
    lend_two();
    idle_two(rx.candidates);
    fx->mode = MAKE_LATER;
    arm();
}

/* S's answer is delivered with W while O's (with X) waits behind it in the
 * ready list. */
static void answers_in_a_row(void)
{
    pool_of(4);
    lend_two();
    struct fake *idle[2];
    idle_two(idle);
    rx.expect = idle[1]; /* lent first, to S */
    fx->mode = MAKE_LATER;
    arm();
    rx.served = acquire(0, &rx.served_h);
    rx.other = acquire(0, &rx.other_h);
}

/* Both resources lent to the test leak while two waiters wait for one. */
static void loans_leak(void)
{
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 2),
                                    .leak_after = TIDE_MS(30),
                                    .on_leak = on_leak};
    fixture_pool(&o);
    lend_two();
    rx.candidates[0] = rx.lent_fake[0];
    rx.candidates[1] = rx.lent_fake[1];
    fx->mode = MAKE_LATER;
    (void)acquire(0, NULL);
    rx.other = acquire(0, &rx.other_h);
    arm();
}

/* The test closes the pool with two resources lent, then returns them:
 * done runs once the second is destroyed. */
static void close_finishes(void)
{
    pool_of(2);
    lend_two();
    struct answer *w = acquire(0, NULL);
    arm();
    ck_assert_int_eq(tide_evpool_close(fx->pool, on_closed, NULL), 0);
    ck_assert(run_until_answered(w, 1000));
    ck_assert_int_eq(w->status, TIDE_ECLOSED);
    release(rx.lent[0]);
    release(rx.lent[1]);
}

static const struct hook_case hooks[N_HOOKS] = {
    [H_MAKE] = {.name = "make",
                .probe = "make",
                .factory = true,
                .served = SERVED_QUEUED,
                .waiting = 2,
                .making = 1,
                .setup = make_for_waiter},
    [H_CANCEL] = {.name = "cancel",
                  .probe = "cancel",
                  .factory = true,
                  .served = SERVED_READY,
                  .waiting = 1,
                  .making = 1,
                  .setup = make_times_out},
    [H_DESTROY] = {.name = "destroy",
                   .probe = "destroy",
                   .factory = true,
                   .served = SERVED_QUEUED,
                   .waiting = 1,
                   .making = 0,
                   .setup = lend_from_idle},
    [H_ALIVE] = {.name = "alive",
                 .probe = "alive",
                 .factory = true,
                 .served = SERVED_QUEUED,
                 .waiting = 1,
                 .making = 0,
                 .setup = lend_from_idle},
    [H_REUSABLE] = {.name = "reusable",
                    .probe = "reusable",
                    .factory = true,
                    .served = SERVED_QUEUED,
                    .waiting = 2,
                    .making = 0,
                    .setup = release_to_waiters},
    [H_RESET] = {.name = "reset",
                 .probe = "reset",
                 .factory = true,
                 .served = SERVED_QUEUED,
                 .waiting = 2,
                 .making = 0,
                 .setup = reset_to_waiters},
    [H_CHECK] = {.name = "check",
                 .probe = "check",
                 .factory = true,
                 .served = SERVED_NONE,
                 .waiting = 1,
                 .making = 0,
                 .setup = health_round},
    [H_WATCH_IDLE] = {.name = "watch_idle",
                      .probe = "watch",
                      .factory = true,
                      .served = SERVED_QUEUED,
                      .waiting = 2,
                      .making = 0,
                      .setup = release_to_waiters},
    [H_WATCH_UNIDLE] = {.name = "watch_unidle",
                        .probe = "watch",
                        .factory = true,
                        .served = SERVED_QUEUED,
                        .waiting = 1,
                        .making = 0,
                        .setup = lend_from_idle},
    [H_ANSWER] = {.name = "answer",
                  .probe = NULL,
                  .factory = false,
                  .served = SERVED_DELIVERING,
                  .waiting = 0,
                  .making = 0,
                  .setup = answers_in_a_row},
    [H_LEAK] = {.name = "leak",
                .probe = NULL,
                .factory = false,
                .served = SERVED_NONE,
                .waiting = 2,
                .making = 0,
                .setup = loans_leak},
    [H_CLOSED] = {.name = "closed",
                  .probe = NULL,
                  .factory = false,
                  .served = SERVED_NONE,
                  .waiting = 0,
                  .making = 0,
                  .setup = close_finishes},
};

/* Whether the pair is in the matrix (see the list at the top). */
static bool in_matrix(enum hook h, enum call c)
{
    if (c == C_FREE && hooks[h].factory)
        return false;
    if (c == C_CANCEL_SERVED && hooks[h].served == SERVED_NONE)
        return false;
    if (c == C_CANCEL_OTHER && h == H_CLOSED)
        return false;
    return true;
}

/* ---- one test per pair ---- */

static void run_pair(int pair)
{
    memset(&rx, 0, sizeof rx);
    rx.hook = (enum hook)(pair / N_CALLS);
    rx.call = (enum call)(pair % N_CALLS);
    fx->probe = on_probe;
    fx->answer_probe = on_answer;
    fx->answer_once = true; /* every cancel here asks for its answer */
    hooks[rx.hook].setup();
    ck_assert_msg(run_until(reached, 2000), "%s never ran", hook_name());
    ck_assert_int_eq(rx.reached, 1);
    run_ms(60); /* late answers, the pump, timers the call armed */
    calls[rx.call].verify();
    if (rx.hook == H_CLOSED)
        ck_assert_int_eq(rx.closed_calls, 1); /* done exactly once */
    if (!fx->pool)
        return; /* freed: the pool destroyed what it had lent */
    if (rx.taken)
        ck_assert_int_eq(tide_evpool_release(fx->pool, rx.taken), 0);
    while (fx->n_held_checks > 0)
        answer_check(true);
    run_ms(10);
}

#define N_PAIRS (N_HOOKS * N_CALLS)

static char pair_names[N_PAIRS][48];
static TTest pair_tests[N_PAIRS];

static Suite *reentry_suite(void)
{
    Suite *s = suite_create("reentry");
    for (int h = 0; h < N_HOOKS; h++) {
        TCase *tc = tcase_create(hooks[h].name);
        fixture_add(tc);
        for (int c = 0; c < N_CALLS; c++) {
            if (!in_matrix((enum hook)h, (enum call)c))
                continue;
            int k = h * N_CALLS + c;
            snprintf(pair_names[k], sizeof pair_names[k], "%s_calls_%s",
                     hooks[h].name, calls[c].name);
            pair_tests[k] = (TTest){.name = pair_names[k],
                                    .fn = run_pair,
                                    .file = __FILE__,
                                    .line = __LINE__};
            /* a loop test of one iteration: _i tells pair_fn its pair */
            tcase_add_loop_test(tc, &pair_tests[k], k, k + 1);
        }
        suite_add_tcase(s, tc);
    }
    return s;
}

TIDE_TEST_MAIN(reentry_suite)
