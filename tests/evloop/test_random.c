/* Random interleavings of every public call against a factory that answers
 * at random (at once, later, never until told, failing), with checks held
 * open, resources dying while idle, cancels with and without notify, and a
 * close at the end. After every step the counts must add up; at the end the
 * fixture's teardown checks that every resource was destroyed exactly once
 * and the loop runs dry, and this file that every acquire was answered
 * exactly once unless cancelled without notify. Seeded, so a run repeats
 * up to the timing of the loop. */
#include "fixture.h"

#include <stdio.h>
#include <stdlib.h>

#define CALLS_MAX 512

enum call_state {
    CALL_PENDING = 0,
    CALL_ANSWERED,
    CALL_CANCELLED, /* without notify: must never be answered */
    CALL_REFUSED,   /* acquire returned an error: no callback */
};

struct call {
    struct tide_acquire *handle;
    enum call_state state;
    bool notified; /* cancelled with notify: owed one TIDE_ECANCELLED */
    int answers;
    int status;
    struct fake *held; /* lent to this caller and not given back yet */
    bool alone;        /* asked for an exclusive loan */
};

static struct call calls[CALLS_MAX];
static int n_calls;
static uint64_t rng;
static bool free_in_callback; /* the next answer frees the pool */
static int64_t streams;       /* limits.streams of the run: above 1, shared */
static int most_holders;      /* the most callers seen on one resource */

static uint32_t draw(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

/* A resource just lent to c: alive, unwatched, and lent to no one else;
 * with shared loans, to at most streams - 1 others, none of them alone,
 * and to none if c asked for it alone. */
static void check_lent(struct call *c, struct fake *f)
{
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->destroyed, 0);
    ck_assert(!f->watched);
    int others = 0;
    for (int i = 0; i < n_calls; i++) {
        if (calls[i].held != f)
            continue;
        others++;
        ck_assert_msg(streams > 1 && !c->alone && !calls[i].alone,
                      "fake %d lent twice", f->id);
    }
    ck_assert_int_lt(others, streams);
    if (others + 1 > most_holders)
        most_holders = others + 1;
    c->held = f;
}

static void on_answer(struct tide_evpool *pool, int status, void *resource,
                      const struct tide_why *why, void *arg)
{
    (void)pool;
    struct call *c = arg;
    ck_assert_msg(c->state != CALL_CANCELLED, "call %d answered after cancel",
                  (int)(c - calls));
    ck_assert_msg(c->answers == 0, "call %d answered twice", (int)(c - calls));
    ck_assert_ptr_nonnull(why->message);
    c->answers++;
    c->status = status;
    c->state = CALL_ANSWERED;
    c->handle = NULL;
    if (c->notified)
        ck_assert_int_eq(status, TIDE_ECANCELLED);
    if (status == 0) {
        check_lent(c, resource);
    } else {
        ck_assert_ptr_null(resource);
    }
    if (free_in_callback) {
        free_in_callback = false;
        tide_evpool_free(pool);
        fx->pool = NULL; /* everything lent went with it */
        for (int i = 0; i < n_calls; i++)
            calls[i].held = NULL;
    }
}

struct later {
    struct event *ev;
    struct tide_make *token;
    bool ok;
};

static void on_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct later *l = arg;
    fx->laters--;
    if (l->ok)
        tide_evpool_made(l->token, new_fake());
    else
        tide_evpool_unmade(l->token, -1000, "random failure, later");
    event_free(l->ev);
    free(l);
}

static void answer_later(struct tide_make *token, bool ok)
{
    struct later *l = calloc(1, sizeof *l);
    ck_assert_ptr_nonnull(l);
    l->token = token;
    l->ok = ok;
    l->ev = evtimer_new(fx->base, on_later, l);
    struct timeval tv = {0, (suseconds_t)(draw(20) * 1000)};
    evtimer_add(l->ev, &tv);
    fx->laters++;
}

/* The factory: each make picks how it answers. */
static void random_make(struct tide_evpool *pool, struct tide_make *token,
                        void *arg)
{
    (void)pool;
    (void)arg;
    fx->makes++;
    switch (draw(8)) {
    case 0:
    case 1:
    case 2:
        tide_evpool_made(token, new_fake());
        break;
    case 3:
        tide_evpool_unmade(token, -1000 - (int)draw(3), "random failure");
        break;
    case 4:
        answer_later(token, draw(3) != 0);
        break;
    default:
        /* answered by a later step, ok or not */
        fx->held[fx->n_held++] = token;
        break;
    }
}

static void check_counts(void)
{
    if (!fx->pool)
        return;
    struct tide_evpool_stats s = stats();
    ck_assert_int_ge(s.idle, 0);
    ck_assert_int_ge(s.lent, 0);
    ck_assert_int_ge(s.making, 0);
    ck_assert_int_ge(s.checking, 0);
    ck_assert_int_eq(s.live, s.idle + s.lent + s.making + s.checking);
    ck_assert_int_le(s.live, 4);
    ck_assert_int_le(s.waiting, 8);
    /* every resource made is in the pool or destroyed; a late answer to a
     * make the pool gave up on is counted both ways at once */
    ck_assert_int_eq((int64_t)(s.made - s.destroyed), s.live - s.making);
    ck_assert_int_eq(fakes_alive(), (int)(s.made - s.destroyed));
    int held = 0;
    for (int i = 0; i < n_calls; i++)
        held += calls[i].held != NULL;
    ck_assert_int_le(held, streams > 1 ? s.loans : s.lent);
    ck_assert_int_le(s.busiest, streams);
    ck_assert_int_le(s.lent, s.loans);
}

static struct call *pick(bool (*fits)(const struct call *))
{
    int start = (int)draw((uint32_t)(n_calls > 0 ? n_calls : 1));
    for (int k = 0; k < n_calls; k++) {
        struct call *c = &calls[(start + k) % n_calls];
        if (fits(c))
            return c;
    }
    return NULL;
}

static bool is_pending(const struct call *c)
{
    return c->state == CALL_PENDING && c->handle;
}

static bool is_holding(const struct call *c)
{
    return c->held != NULL;
}

/* Shared loans only: the other ends of a loan, a break, a capacity. */
static void shared_step(void)
{
    struct call *c = pick(is_holding);
    if (!c)
        return;
    struct fake *f = c->held;
    switch (draw(5)) {
    case 0: { /* the protocol layer breaks it; the loans still come back */
        int rc = tide_evpool_break(fx->pool, f);
        ck_assert(rc == 0 || rc == 1);
        break;
    }
    case 1: { /* a SETTINGS or a GOAWAY */
        ck_assert_int_eq(tide_evpool_set_streams(fx->pool, f, draw(4)), 0);
        break;
    }
    case 2:
        c->held = NULL;
        ck_assert_int_eq(tide_evpool_retire(fx->pool, f), 0);
        break;
    default:
        c->held = NULL;
        ck_assert_int_eq(tide_evpool_abandon(fx->pool, f), 0);
        break;
    }
}

static void step(void)
{
    switch (draw(12)) {
    case 0:
    case 1:
    case 2: { /* acquire */
        if (n_calls == CALLS_MAX)
            break;
        struct call *c = &calls[n_calls++];
        int64_t timeout = draw(4) == 0 ? 0 : TIDE_MS(1 + draw(40));
        c->alone = streams > 1 && draw(4) == 0;
        int rc = c->alone ? tide_evpool_acquire_alone(fx->pool, timeout,
                                                      on_answer, c, &c->handle)
                          : tide_evpool_acquire(fx->pool, timeout, on_answer,
                                                c, &c->handle);
        if (rc != 0) {
            ck_assert(rc == TIDE_EQUEUEFULL || rc == TIDE_ECLOSED);
            ck_assert_ptr_null(c->handle);
            c->state = CALL_REFUSED;
        }
        break;
    }
    case 3: { /* cancel */
        struct call *c = pick(is_pending);
        if (!c)
            break;
        bool notify = draw(2);
        if (notify)
            c->notified = true;
        else
            c->state = CALL_CANCELLED;
        struct tide_acquire *h = c->handle;
        c->handle = NULL;
        tide_evpool_cancel(h, notify);
        break;
    }
    case 4:
    case 5: { /* give back: release, broken, discard */
        struct call *c = pick(is_holding);
        if (!c)
            break;
        struct fake *f = c->held;
        c->held = NULL;
        uint32_t how = draw(5);
        if (how == 0)
            ck_assert_int_eq(tide_evpool_discard(fx->pool, f), 0);
        else {
            f->broken = how == 1;
            ck_assert_int_eq(tide_evpool_release(fx->pool, f), 0);
        }
        break;
    }
    case 6: { /* try_acquire */
        if (n_calls == CALLS_MAX)
            break;
        void *got = NULL;
        int rc = tide_evpool_try_acquire(fx->pool, &got);
        if (rc == 0) {
            struct call *c = &calls[n_calls++];
            c->state = CALL_ANSWERED;
            c->answers = 1; /* answered at once, no callback */
            check_lent(c, got);
        } else {
            ck_assert(rc == TIDE_EWOULDBLOCK || rc == TIDE_EUNAVAILABLE ||
                      rc == TIDE_ECLOSED);
            ck_assert_ptr_null(got);
        }
        break;
    }
    case 7: /* the factory answers a held make */
        if (fx->n_held > 0)
            answer_held(draw(3) != 0);
        break;
    case 8: /* a held check finishes; checks are held now and then */
        if (fx->n_held_checks > 0)
            answer_check(draw(3) != 0);
        fx->hold_checks = draw(2);
        break;
    case 9: { /* an idle one dies: found by its watcher, or by a validator */
        if (fx->closed)
            break;
        int start = (int)draw((uint32_t)(fx->n_fakes > 0 ? fx->n_fakes : 1));
        for (int k = 0; k < fx->n_fakes; k++) {
            struct fake *f = &fx->fakes[(start + k) % fx->n_fakes];
            if (f->destroyed || !f->watched)
                continue;
            if (draw(2))
                ck_assert_int_eq(tide_evpool_lost(fx->pool, f), 0);
            else
                f->dead = true;
            break;
        }
        break;
    }
    case 10: { /* the breaker flips by hand */
        struct tide_breaker *b = tide_evpool_breaker(fx->pool);
        if (draw(4) == 0)
            tide_breaker_deactivate(b, now_ns());
        else
            tide_breaker_activate(b, now_ns());
        break;
    }
    default:
        if (streams > 1)
            shared_step();
        break;
    }
}

/* Loop index i: seed i; from 12 on the pool is closed at step 200 and the
 * steps go on against the closing pool; from 24 on the pool is freed from
 * inside the first answer after step 200. From 30 on the same again (seed
 * i - 30) with shared loans: 3 a resource, exclusive acquires, breaks,
 * capacities, retires and abandons among the steps. */
START_TEST(random_interleavings_keep_every_promise)
{
    streams = _i >= 30 ? 3 : 1;
    int run = _i % 30; /* what the run does at step 200 */
    most_holders = 0;
    rng = UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(_i + 1);
    n_calls = 0;
    for (int i = 0; i < CALLS_MAX; i++)
        calls[i] = (struct call){0};
    struct tide_breaker_options breaker = {
        .policy = TIDE_BREAKER_STRIKES, .strikes = 4, .cooldown = TIDE_MS(10)};
    struct tide_backoff backoff = {.base = TIDE_MS(1), .cap = TIDE_MS(4)};
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = 4, .idle = 3, .keep = TIDE_MS(30),
                              .streams = streams),
        .ward = {.breaker = &breaker, .backoff = &backoff},
        .min = 1,
        .make_timeout = TIDE_MS(15),
        .evict_interval = TIDE_MS(5),
        .health_interval = TIDE_MS(7),
        .queue_max = 8,
        .leak_after = TIDE_MS(20),
        .retire_after = 5,
        .seed = (uint64_t)_i + 1,
    };
    fx->factory.make = random_make;
    fixture_pool(&o);
    free_in_callback = false;
    for (int s = 0; s < 400 && fx->pool; s++) {
        if (s == 200 && run >= 24)
            free_in_callback = true;
        else if (s == 200 && run >= 12)
            ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL),
                             0);
        step();
        check_counts();
        run_ms((int)draw(3));
        check_counts();
    }
    /* Whether a shared run did share depends on the real time between
     * steps (a loaded machine lets makes, leaks and keeps expire in other
     * orders: seen with 1 holder at most), so it is said, not asserted;
     * test_shared lends one connection to several callers deterministically. */
    if (streams > 1 && most_holders < 2)
        fprintf(stderr, "run %d: no resource was shared in this walk\n", _i);
    if (!fx->pool) {
        /* freed: the teardown answers what is held and drains the rest;
         * nothing may call back any more */
        for (int i = 0; i < n_calls; i++)
            ck_assert_int_le(calls[i].answers, 1);
        return;
    }
    /* give everything back, answer everything held, then close */
    for (int i = 0; i < n_calls; i++)
        if (calls[i].held) {
            ck_assert_int_eq(tide_evpool_release(fx->pool, calls[i].held), 0);
            calls[i].held = NULL;
        }
    int rc = tide_evpool_close(fx->pool, fixture_closed, NULL);
    ck_assert(rc == 0 || (rc == TIDE_ECLOSED && run >= 12));
    while (fx->n_held > 0)
        answer_held(draw(2));
    while (fx->n_held_checks > 0)
        answer_check(draw(2));
    for (int ms = 0; ms < 1000 && !fx->closed; ms++) {
        run_ms(1);
        /* answers delivered during the close may lend one last time */
        for (int i = 0; i < n_calls; i++)
            if (calls[i].held) {
                ck_assert_int_eq(tide_evpool_release(fx->pool, calls[i].held),
                                 0);
                calls[i].held = NULL;
            }
    }
    ck_assert_msg(fx->closed, "close never finished (seed %d)", _i);
    for (int i = 0; i < n_calls; i++) {
        const struct call *c = &calls[i];
        if (c->state == CALL_CANCELLED || c->state == CALL_REFUSED)
            ck_assert_int_eq(c->answers, 0);
        else
            ck_assert_msg(c->answers == 1, "call %d answered %d times", i,
                          c->answers);
    }
}
END_TEST

static Suite *random_suite(void)
{
    Suite *s = suite_create("random");
    TCase *tc = tcase_create("interleavings");
    fixture_add(tc);
    tcase_add_loop_test(tc, random_interleavings_keep_every_promise, 0, 60);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(random_suite)
