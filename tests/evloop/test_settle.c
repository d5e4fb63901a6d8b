/* tests for the promises a resource carries until its first loan or its
 * loan ends, against every way that can end (loans.c, aside.c, upkeep.c,
 * evpool.c, with makes.c's settling and conns.c's end of a record):
 *   probe   a make the RECOVERING breaker let through: its outcome closes
 *           the breaker or opens it again; with no outcome its place is
 *           given back, or the breaker refuses every make for good;
 *   make    a make's own outcome, open until its resource's first loan
 *           ends or it dies: for the breaker and the backoff, once;
 *   ticket  the shedder's ticket of a loan, settled once when it ends.
 * One table of ends; each promise is a loop test over it, one case a
 * pair. A pair with nothing to settle (an idle resource holds no ticket; a
 * freed pool's breaker is gone with it) is left out of that loop. */
#include <string.h>
#include <time.h>

#include "fixture.h"

enum end {
    /* a loan, of a resource made for it (its first) */
    END_RELEASE,
    END_DIRTY,        /* a release reusable() refuses */
    END_RETIRE_AFTER, /* a release past retire_after */
    END_DISCARD,
    END_RETIRE,
    END_ABANDON,
    END_STALE_LOAN,      /* tide_evpool_stale: closed before an answer */
    END_RESET_OK,        /* a release, reset, back idle */
    END_RESET_FAILED,    /* a release whose reset fails */
    END_LOST_WHILE_LENT, /* a loss reported while lent, refused; released */
    END_UNSEEN,          /* set aside for a caller who cancelled first */
    END_CLOSE_LENT,      /* the pool closes; then released */
    END_FREE_LENT,       /* the pool is freed with it lent */
    /* an idle resource, made for the minimum, never lent */
    END_LOST_IDLE,
    END_DEAD_IDLE, /* alive() says dead as it is about to be lent */
    END_CHECK_FAILED,
    END_EVICTED,
    END_STALE, /* past its life when a take reaches it */
    END_CLOSE_IDLE,
    END_FREE_IDLE,
    ENDS,
};

static bool idle_end(enum end e)
{
    return e >= END_LOST_IDLE;
}

static const char *const end_names[ENDS] = {
    [END_RELEASE] = "release",
    [END_DIRTY] = "dirty release",
    [END_RETIRE_AFTER] = "retire_after",
    [END_DISCARD] = "discard",
    [END_RETIRE] = "retire",
    [END_ABANDON] = "abandon",
    [END_STALE_LOAN] = "stale loan",
    [END_RESET_OK] = "reset",
    [END_RESET_FAILED] = "failed reset",
    [END_LOST_WHILE_LENT] = "lost while lent",
    [END_UNSEEN] = "unseen",
    [END_CLOSE_LENT] = "close while lent",
    [END_FREE_LENT] = "free while lent",
    [END_LOST_IDLE] = "lost",
    [END_DEAD_IDLE] = "dead at lend",
    [END_CHECK_FAILED] = "failed check",
    [END_EVICTED] = "evicted",
    [END_STALE] = "stale at take",
    [END_CLOSE_IDLE] = "close while idle",
    [END_FREE_IDLE] = "free while idle",
};

/* What an end needs of the pool's options. */
static void options_for(enum end e, struct tide_evpool_options *o)
{
    if (o->health_interval == 0)
        o->health_interval = TIDE_FOREVER;
    switch (e) {
    case END_RETIRE_AFTER:
        o->retire_after = 1;
        break;
    case END_CHECK_FAILED:
        o->health_interval = TIDE_MS(20);
        break;
    case END_EVICTED:
        o->limits.keep = TIDE_MS(40);
        o->evict_interval = TIDE_MS(10);
        break;
    case END_STALE:
        /* life, not keep: eviction (off) must not see it first */
        o->limits.life = TIDE_MS(40);
        o->evict_interval = TIDE_FOREVER;
        break;
    case END_RESET_OK:
    case END_RESET_FAILED:
        fx->resets = true;
        break;
    default:
        break;
    }
}

static void nap_ms(int ms)
{
    struct timespec t = {.tv_nsec = (long)ms * 1000000};
    nanosleep(&t, NULL);
}

static bool closed(void)
{
    return fx->closed;
}

static struct fake *watched_fake;

static bool gone(void)
{
    return watched_fake->destroyed == 1;
}

/* Lends the test a resource made for it: a's answer, set aside (with
 * `deliver` false: not yet delivered, the caller's handle in *h). */
static struct answer *lend_made(bool deliver, struct tide_acquire **h)
{
    fx->mode = MAKE_NEVER;
    struct answer *a = acquire(0, h);
    run_ms(2);
    ck_assert_int_eq(fx->n_held, 1);
    (void)answer_held(true);
    fx->mode = MAKE_NOW;
    if (deliver) {
        ck_assert(run_until_answered(a, 1000));
        ck_assert_int_eq(a->status, 0);
    }
    return a;
}

/* Ends the loan of a with e. Returns the resource. A release (any kind)
 * is the fixture's, so the teardown does not give it back twice. */
static struct fake *end_loan(enum end e, struct answer *a,
                             struct tide_acquire *h)
{
    struct fake *f = fx->fakes[fx->n_fakes - 1].destroyed == 0
                         ? &fx->fakes[fx->n_fakes - 1]
                         : NULL;
    ck_assert_ptr_nonnull(f);
    switch (e) {
    case END_UNSEEN:
        tide_evpool_cancel(h, false);
        return f;
    case END_DIRTY:
        f->broken = true;
        break;
    case END_RESET_FAILED:
        f->dead = true;
        break;
    case END_LOST_WHILE_LENT:
        ck_assert_int_eq(tide_evpool_lost(fx->pool, f), TIDE_ENOTIDLE);
        break;
    case END_CLOSE_LENT:
        ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
        break;
    default:
        break;
    }
    ck_assert_ptr_eq(a->resource, f);
    a->resource = NULL;
    switch (e) {
    case END_DISCARD:
        ck_assert_int_eq(tide_evpool_discard(fx->pool, f), 0);
        break;
    case END_RETIRE:
        ck_assert_int_eq(tide_evpool_retire(fx->pool, f), 0);
        break;
    case END_ABANDON:
        ck_assert_int_eq(tide_evpool_abandon(fx->pool, f), 0);
        break;
    case END_STALE_LOAN:
        /* a first loan within a second of its make: not stale, its make
         * failed (a server that accepts and closes) */
        ck_assert_int_eq(tide_evpool_stale(fx->pool, f), 0);
        break;
    case END_FREE_LENT:
        tide_evpool_free(fx->pool);
        fx->pool = NULL;
        break;
    default:
        ck_assert_int_eq(tide_evpool_release(fx->pool, f), 0);
        break;
    }
    return f;
}

/* Ends idle resource f with e. An end that lends (dead at lend, stale at
 * take) leaves the acquire that found it in *a. */
static void end_idle(enum end e, struct fake *f, struct answer **a)
{
    *a = NULL;
    switch (e) {
    case END_LOST_IDLE:
        ck_assert_int_eq(tide_evpool_lost(fx->pool, f), 0);
        break;
    case END_DEAD_IDLE:
        f->dead = true;
        *a = acquire(0, NULL);
        ck_assert(run_until_answered(*a, 1000));
        break;
    case END_CHECK_FAILED:
    case END_EVICTED:
        f->dead = e == END_CHECK_FAILED;
        watched_fake = f;
        ck_assert(run_until(gone, 1000));
        break;
    case END_STALE:
        run_ms(50); /* past its life */
        *a = acquire(0, NULL);
        ck_assert(run_until_answered(*a, 1000));
        break;
    case END_CLOSE_IDLE:
        ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
        ck_assert(run_until(closed, 1000));
        break;
    case END_FREE_IDLE:
        tide_evpool_free(fx->pool);
        fx->pool = NULL;
        break;
    default:
        ck_abort_msg("not an end of an idle resource");
    }
    ck_assert_int_eq(f->destroyed, 1);
}

/* ---- the breaker's probe ------------------------------------------------ */

/* How a probe's end leaves the breaker: its outcome closes it (ACTIVE) or
 * opens it again (INACTIVE); with none it stays RECOVERING and the next
 * make probes (PLACE_BACK); a loan still out still holds its place
 * (HELD), and its release then closes it. */
enum probe_after {
    NOT_A_PAIR = 0,
    ACTIVE,
    INACTIVE,
    PLACE_BACK,
    HELD,
};

static const enum probe_after probe_expect[ENDS] = {
    [END_RELEASE] = ACTIVE,
    [END_DIRTY] = INACTIVE, /* a failed first loan: a failed make */
    [END_RETIRE_AFTER] = ACTIVE,
    [END_DISCARD] = INACTIVE,
    [END_RETIRE] = ACTIVE,
    [END_ABANDON] = PLACE_BACK,
    [END_STALE_LOAN] = INACTIVE, /* died young: a failed make */
    [END_RESET_OK] = ACTIVE,
    /* the release proves the make (ACTIVE), the reset's failure is an
     * outcome of its own, which opens a breaker of one strike */
    [END_RESET_FAILED] = INACTIVE,
    [END_LOST_WHILE_LENT] = ACTIVE,
    [END_UNSEEN] = HELD,
    [END_CLOSE_LENT] = ACTIVE,
    [END_LOST_IDLE] = INACTIVE, /* died young: a failed make */
    [END_DEAD_IDLE] = INACTIVE,
    [END_CHECK_FAILED] = INACTIVE,
    [END_EVICTED] = PLACE_BACK,
    [END_STALE] = PLACE_BACK,
    [END_CLOSE_IDLE] = PLACE_BACK,
    /* END_FREE_*: the breaker is freed with the pool */
};

static enum tide_breaker_state state(void)
{
    return tide_breaker_state(tide_evpool_breaker(fx->pool));
}

static bool recovering_with_one_idle(void)
{
    struct tide_evpool_stats s = stats();
    return s.breaker == TIDE_BREAKER_RECOVERING && s.idle == 1;
}

/* A breaker of one strike opened by a failed make, its cooldown over: the
 * next make is its probe. With `minimum` the pool keeps one, so the probe
 * is made idle by the top-up (after its backoff); else a caller's. */
static void probing_pool(enum end e, bool minimum)
{
    struct tide_breaker_options b = {
        .policy = TIDE_BREAKER_STRIKES, .strikes = 1, .cooldown = TIDE_MS(50)};
    struct tide_evpool_options o = {.ward = {.breaker = &b},
                                    .min = minimum ? 1 : 0};
    options_for(e, &o);
    fx->plan[0] = MAKE_FAIL;
    fx->n_plan = 1;
    fixture_pool(&o);
    if (minimum) {
        run_ms(5);
    } else {
        struct answer *a = acquire(0, NULL);
        ck_assert(run_until_answered(a, 1000));
        ck_assert_int_eq(a->status, fx->fail_code);
    }
    ck_assert_int_eq(state(), TIDE_BREAKER_INACTIVE);
    run_ms(150); /* the cooldown, and the hold after the failed make (the
                     preset backoff: 100 ms, 20% spread) */
}

START_TEST(each_end_settles_a_probe_once)
{
    enum end e = (enum end)_i;
    enum probe_after want = probe_expect[e];
    ck_assert_msg(want != NOT_A_PAIR, "%s", end_names[e]);
    int makes;
    if (!idle_end(e)) {
        probing_pool(e, false);
        struct tide_acquire *h = NULL;
        struct answer *a = lend_made(e != END_UNSEEN, &h);
        ck_assert_int_eq(state(), TIDE_BREAKER_RECOVERING);
        makes = fx->makes;
        (void)end_loan(e, a, h);
        run_ms(2);
    } else {
        probing_pool(e, true);
        ck_assert_msg(run_until(recovering_with_one_idle, 1000),
                      "no probe made for the minimum");
        makes = fx->makes;
        struct answer *a;
        end_idle(e, &fx->fakes[fx->n_fakes - 1], &a);
        if (e == END_STALE) { /* the take went on to make a probe */
            ck_assert_int_eq(a->status, 0);
            ck_assert_int_eq(fx->makes, makes + 1);
        }
        if (e == END_DEAD_IDLE) /* the failed make opened it: refused */
            ck_assert_int_eq(a->status, TIDE_EUNAVAILABLE);
    }
    switch (want) {
    case ACTIVE:
        ck_assert_msg(state() == TIDE_BREAKER_ACTIVE, "%s: state %d",
                      end_names[e], state());
        break;
    case INACTIVE:
        ck_assert_msg(state() == TIDE_BREAKER_INACTIVE, "%s: state %d",
                      end_names[e], state());
        break;
    case PLACE_BACK:
        ck_assert_msg(state() == TIDE_BREAKER_RECOVERING, "%s: state %d",
                      end_names[e], state());
        if (e == END_CLOSE_IDLE) {
            /* closed: nothing makes any more, but the place is free */
            ck_assert(tide_breaker_admit(tide_evpool_breaker(fx->pool),
                                         now_ns(), 0.5));
        } else if (e == END_EVICTED) {
            /* the top-up made its minimum again: a new probe */
            ck_assert_msg(fx->makes > makes, "%s: no new probe", end_names[e]);
        } else if (e != END_STALE) {
            struct answer *next = acquire(0, NULL);
            ck_assert(run_until_answered(next, 1000));
            ck_assert_msg(next->status == 0, "%s: the next caller got %d",
                          end_names[e], next->status);
            ck_assert_int_eq(fx->makes, makes + 1);
        }
        break;
    case HELD: {
        /* unseen: back idle, untried; the probe still out holds its place
         * and the next caller is lent it, no new make */
        ck_assert_int_eq(state(), TIDE_BREAKER_RECOVERING);
        struct answer *next = acquired();
        ck_assert_int_eq(fx->makes, makes);
        release(next);
        ck_assert_int_eq(state(), TIDE_BREAKER_ACTIVE);
        break;
    }
    case NOT_A_PAIR:
        break;
    }
}
END_TEST

/* A probe's make answered after the pool began to close: its resource is
 * not kept, so it ends before any loan, and the probe ends with it. */
START_TEST(probe_made_after_close_gives_its_place_back)
{
    probing_pool(END_CLOSE_IDLE, false);
    fx->mode = MAKE_NEVER;
    struct answer *a = acquire(0, NULL);
    run_ms(2);
    ck_assert_int_eq(fx->n_held, 1);
    ck_assert_int_eq(state(), TIDE_BREAKER_RECOVERING);
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    ck_assert(run_until_answered(a, 1000));
    ck_assert_int_eq(a->status, TIDE_ECLOSED);
    struct fake *f = answer_held(true);
    ck_assert_int_eq(f->destroyed, 1);
    ck_assert_int_eq(state(), TIDE_BREAKER_RECOVERING);
    ck_assert(tide_breaker_admit(tide_evpool_breaker(fx->pool), now_ns(), 0.5));
}
END_TEST

/* A pool whose breaker the spell tests open by hand (one strike, a 50 ms
 * cooldown), with no health round to take a make of theirs; its breaker,
 * owned by the pool. */
static struct tide_breaker *spells_pool(void)
{
    struct tide_breaker_options b = {
        .policy = TIDE_BREAKER_STRIKES, .strikes = 1, .cooldown = TIDE_MS(50)};
    struct tide_evpool_options o = {.ward = {.breaker = &b},
                                    .health_interval = TIDE_FOREVER};
    fixture_pool(&o); /* b and o are read during new only */
    return tide_evpool_breaker(fx->pool);
}

/* A make gives back a probe's place only in the spell of RECOVERING that
 * let it through: one made while ACTIVE was never a probe, and one of a
 * spell that ended (opened by hand meanwhile) holds no place in the next. */
START_TEST(only_a_probe_of_this_spell_gives_its_place_back)
{
    struct tide_breaker *br = spells_pool();
    struct answer *before = acquired(); /* made ACTIVE: no probe */
    tide_breaker_deactivate(br, now_ns());
    run_ms(60);
    struct answer *old = acquired(); /* the first spell's probe */
    ck_assert_int_eq(state(), TIDE_BREAKER_RECOVERING);
    tide_breaker_deactivate(br, now_ns()); /* that spell ends */
    run_ms(60);
    struct answer *probe = acquired(); /* the second spell's */
    ck_assert_int_eq(state(), TIDE_BREAKER_RECOVERING);
    int makes = fx->makes;
    struct answer *ends[2] = {before, old};
    for (int k = 0; k < 2; k++) {
        struct fake *f = ends[k]->resource;
        ends[k]->resource = NULL;
        ck_assert_int_eq(tide_evpool_abandon(fx->pool, f), 0);
        /* the place is the second spell's probe's: still held */
        struct answer *next = acquire(0, NULL);
        ck_assert(run_until_answered(next, 1000));
        ck_assert_int_eq(next->status, TIDE_EUNAVAILABLE);
        ck_assert_int_eq(fx->makes, makes);
    }
    release(probe);
    ck_assert_int_eq(state(), TIDE_BREAKER_ACTIVE);
}
END_TEST

/* The same for a probe's make still in flight when its spell ends: made
 * after, it is no probe of the next spell. */
START_TEST(probe_made_after_its_spell_ended_holds_no_place)
{
    struct tide_breaker *br = spells_pool();
    tide_breaker_deactivate(br, now_ns());
    run_ms(60);
    fx->mode = MAKE_NEVER;
    struct answer *first = acquire(0, NULL); /* the first spell's probe */
    run_ms(2);
    ck_assert_int_eq(fx->n_held, 1);
    tide_breaker_deactivate(br, now_ns()); /* that spell ends */
    run_ms(60);
    struct answer *second = acquire(0, NULL); /* the second spell's */
    run_ms(2);
    ck_assert_int_eq(fx->n_held, 2);
    ck_assert_int_eq(state(), TIDE_BREAKER_RECOVERING);
    fx->mode = MAKE_NOW;
    (void)answer_held(true); /* the first spell's make, to the first */
    ck_assert(run_until_answered(first, 1000));
    struct fake *f = first->resource;
    first->resource = NULL;
    ck_assert_int_eq(tide_evpool_abandon(fx->pool, f), 0);
    /* the place is the second spell's probe's: still held */
    struct answer *next = acquire(0, NULL);
    ck_assert(run_until_answered(next, 1000));
    ck_assert_int_eq(next->status, TIDE_EUNAVAILABLE);
    ck_assert_int_eq(fx->makes, 2);
    (void)answer_held(true);
    ck_assert(run_until_answered(second, 1000));
    release(second);
    ck_assert_int_eq(state(), TIDE_BREAKER_ACTIVE);
}
END_TEST

/* ---- the make's own outcome ----------------------------------------------
 * A strategy that counts what the breaker hears (it never opens), and the
 * make failures the pool counts: each end settles the make once, and a
 * loan after it (when the resource is still there) adds only its own. */

struct heard {
    int successes;
    int failures;
};

static struct heard heard;

static void heard_success(struct tide_breaker *b, int64_t now, void *arg)
{
    (void)b;
    (void)now;
    (void)arg;
    heard.successes++;
}

static void heard_failure(struct tide_breaker *b, int64_t now, void *arg)
{
    (void)b;
    (void)now;
    (void)arg;
    heard.failures++;
}

static bool never_recover(struct tide_breaker *b, int64_t now, void *arg)
{
    (void)b;
    (void)now;
    (void)arg;
    return false;
}

static const struct tide_breaker_strategy counting = {
    .report_success = heard_success,
    .report_failure = heard_failure,
    .should_recover = never_recover,
};

struct make_after {
    int successes; /* the make's and the loan's, as the breaker hears them */
    int failures;
    int make_failures; /* stats: a failed make counted */
};

static const struct make_after make_expect[ENDS] = {
    [END_RELEASE] = {2, 0, 0},
    [END_DIRTY] = {0, 1, 1}, /* the failed make is the one failure */
    [END_RETIRE_AFTER] = {2, 0, 0},
    [END_DISCARD] = {0, 1, 1},
    [END_RETIRE] = {2, 0, 0},
    [END_ABANDON] = {0, 0, 0},
    [END_STALE_LOAN] = {0, 1, 1},
    [END_RESET_OK] = {2, 0, 0},
    [END_RESET_FAILED] = {2, 1, 0},
    [END_LOST_WHILE_LENT] = {2, 0, 0},
    [END_UNSEEN] = {0, 0, 0}, /* still open: see below */
    [END_CLOSE_LENT] = {2, 0, 0},
    [END_FREE_LENT] = {0, 0, 0},
    [END_LOST_IDLE] = {0, 1, 1},
    [END_DEAD_IDLE] = {0, 1, 1},
    [END_CHECK_FAILED] = {0, 1, 1},
    [END_EVICTED] = {0, 0, 0},
    [END_STALE] = {0, 0, 0},
    [END_CLOSE_IDLE] = {0, 0, 0},
    [END_FREE_IDLE] = {0, 0, 0},
};

static bool one_idle(void)
{
    return stats().idle == 1;
}

START_TEST(each_end_settles_an_unproven_make_once)
{
    enum end e = (enum end)_i;
    memset(&heard, 0, sizeof heard);
    struct tide_breaker_options b = {.policy = TIDE_BREAKER_CUSTOM,
                                     .strategy = &counting};
    struct tide_evpool_options o = {.ward = {.breaker = &b},
                                    .min = idle_end(e) ? 1 : 0};
    options_for(e, &o);
    fixture_pool(&o);
    struct fake *f;
    struct answer *a = NULL;
    if (!idle_end(e)) {
        struct tide_acquire *h = NULL;
        a = lend_made(e != END_UNSEEN, &h);
        ck_assert_int_eq(heard.successes, 0); /* open until the loan ends */
        f = end_loan(e, a, h);
        a = NULL;
    } else {
        ck_assert(run_until(one_idle, 1000));
        f = &fx->fakes[0];
        end_idle(e, f, &a);
    }
    run_ms(2);
    const struct make_after *want = &make_expect[e];
    ck_assert_msg(heard.successes == want->successes &&
                      heard.failures == want->failures,
                  "%s: heard %d successes, %d failures", end_names[e],
                  heard.successes, heard.failures);
    if (fx->pool)
        ck_assert_msg(stats().make_failures == (uint64_t)want->make_failures,
                      "%s: %llu make failures", end_names[e],
                      (unsigned long long)stats().make_failures);
    /* settled once: a later loan of the same resource is heard alone */
    if (fx->pool && !fx->closed && f->destroyed == 0) {
        struct answer *next = acquired();
        ck_assert_ptr_eq(next->resource, f);
        release(next);
        int once = e == END_UNSEEN ? 2 : 1; /* unseen: the make's too */
        ck_assert_msg(heard.successes == want->successes + once &&
                          heard.failures == want->failures,
                      "%s: a later loan: %d successes, %d failures",
                      end_names[e], heard.successes, heard.failures);
    }
    (void)a;
}
END_TEST

/* ---- the shedder's ticket ------------------------------------------------
 * Loans past a target of 5 ms: one settled halves the ceiling on loans in
 * flight, 4 to 2; settled twice it would be 1; never, the loan would
 * still count in flight beside a ceiling of 4. So after each end exactly
 * two of four callers are served and two shed. An idle resource holds no
 * ticket; a closed or freed pool lends nothing more to tell. */

static struct answer *callers[4];

static bool callers_answered(void)
{
    for (int k = 0; k < 4; k++)
        if (callers[k]->calls == 0)
            return false;
    return true;
}

static bool ticket_pair(enum end e)
{
    return !idle_end(e) && e != END_CLOSE_LENT && e != END_FREE_LENT;
}

START_TEST(each_end_settles_a_loans_ticket_once)
{
    enum end e = (enum end)_i;
    ck_assert(ticket_pair(e));
    struct tide_shedder_options sh = {
        .loan_target = TIDE_MS(5), .lag_target = TIDE_SEC(10), .decrease = 0.5};
    struct tide_evpool_options o = {.limits = TIDE_LIMITS(.size = 4),
                                    .ward = {.shedder = &sh}};
    options_for(e, &o);
    fixture_pool(&o);
    struct tide_acquire *h = NULL;
    struct answer *a = lend_made(e != END_UNSEEN, &h);
    nap_ms(10); /* past the target */
    (void)end_loan(e, a, h);
    run_ms(2);
    for (int k = 0; k < 4; k++)
        callers[k] = acquire(0, NULL);
    ck_assert(run_until(callers_answered, 1000));
    int served = 0;
    int shed = 0;
    for (int k = 0; k < 4; k++) {
        if (callers[k]->status == 0)
            served++;
        else if (callers[k]->status == TIDE_EUNAVAILABLE &&
                 callers[k]->guard == TIDE_GUARD_SHEDDER)
            shed++;
    }
    ck_assert_msg(served == 2 && shed == 2, "%s: %d served, %d shed",
                  end_names[e], served, shed);
}
END_TEST

static Suite *settle_suite(void)
{
    Suite *s = suite_create("settle");
    TCase *tc = tcase_create("probe");
    fixture_add(tc);
    for (int e = 0; e < ENDS; e++)
        if (probe_expect[e] != NOT_A_PAIR)
            tcase_add_loop_test(tc, each_end_settles_a_probe_once, e, e + 1);
    tcase_add_test(tc, probe_made_after_close_gives_its_place_back);
    tcase_add_test(tc, only_a_probe_of_this_spell_gives_its_place_back);
    tcase_add_test(tc, probe_made_after_its_spell_ended_holds_no_place);
    suite_add_tcase(s, tc);
    tc = tcase_create("make");
    fixture_add(tc);
    tcase_add_loop_test(tc, each_end_settles_an_unproven_make_once, 0, ENDS);
    suite_add_tcase(s, tc);
    tc = tcase_create("ticket");
    fixture_add(tc);
    for (int e = 0; e < ENDS; e++)
        if (ticket_pair(e))
            tcase_add_loop_test(tc, each_end_settles_a_loans_ticket_once, e,
                                e + 1);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(settle_suite)
