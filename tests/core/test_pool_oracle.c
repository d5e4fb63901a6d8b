/* Differential: with streams = 1 the pool gives every answer the pool
 * before shared loans gave (the frozen copy in oracle/), step for step,
 * over a million random operations: every call of the pool, times moving
 * on, random rolls and guards, misuse among them. After each step the
 * counts, the guards' readings and the breaker's state are compared too.
 * The exclusive takes answer as the plain ones: with one loan a resource,
 * every loan is alone. */

#include <tidepool/core.h>

#include "oracle/oracle.h"
#include "oracle/wards.h"
#include "rng.h"
#include "runner.h"

#define EPISODES 1000
#define STEPS    1000
#define ITEMS    24 /* twice the largest pool: misuse comes up often */
#define RECENT   8

/* One episode: the live pool and the oracle fed the same calls. */
struct pair {
    struct tide_pool *live;
    struct oracle_pool *oracle;
    int64_t now;
    uint64_t rng;
    char items[ITEMS];
    void *recent[RECENT]; /* items lately lent: gives find lent ones */
    unsigned n_recent;
    int episode;
    int step;
    long total;
};

/* Answers compared as numbers, each evaluated once. Check is told only
 * of a difference: each assertion it passes costs it a write to its parent,
 * which a million steps would spend most of their time on. */
static void same(const struct pair *pr, const char *what, long long live,
                 long long oracle)
{
    if (live != oracle)
        ck_abort_msg("episode %d step %d: %s: %lld (live) != %lld (oracle)",
                     pr->episode, pr->step, what, live, oracle);
}

static void same_double(const struct pair *pr, const char *what, double live,
                        double oracle)
{
    if (live != oracle)
        ck_abort_msg("episode %d step %d: %s: %g (live) != %g (oracle)",
                     pr->episode, pr->step, what, live, oracle);
}

#define SAME(what, a, b) same(pr, (what), (long long)(a), (long long)(b))

static void same_taken(struct pair *pr, const char *what, struct tide_taken t,
                       struct oracle_taken o)
{
    SAME(what, (int)t.answer, o.answer);
    SAME(what, (int)t.guard, o.guard);
    if (t.answer == TIDE_LATER)
        SAME(what, t.span, o.span);
    else
        SAME(what, (uintptr_t)t.item, (uintptr_t)o.item);
    if (t.answer == TIDE_READY)
        pr->recent[pr->n_recent++ % RECENT] = t.item;
}

static void same_state(struct pair *pr)
{
    SAME("live", tide_pool_live(pr->live), oracle_pool_live(pr->oracle));
    SAME("idle", tide_pool_idle(pr->live), oracle_pool_idle(pr->oracle));
    SAME("busy", tide_pool_busy(pr->live), oracle_pool_busy(pr->oracle));
    SAME("must_wait", tide_pool_must_wait(pr->live),
         oracle_pool_must_wait(pr->oracle));
    SAME("must_wait_alone", tide_pool_must_wait_alone(pr->live),
         oracle_pool_must_wait(pr->oracle));
    same_double(pr, "refusal", tide_pool_refusal(pr->live, pr->now),
                oracle_pool_refusal(pr->oracle, pr->now));
    struct tide_pool_guards g;
    struct oracle_guards o;
    tide_pool_guards(pr->live, pr->now, &g);
    oracle_pool_guards(pr->oracle, pr->now, &o);
    same_double(pr, "bucket_tokens", g.bucket_tokens, o.bucket_tokens);
    SAME("backoff_hold", g.backoff_hold, o.backoff_hold);
    SAME("backoff_failures", g.backoff_failures, o.backoff_failures);
    SAME("backoff_probing", g.backoff_probing, o.backoff_probing);
    same_double(pr, "shedder_ceiling", g.shedder_ceiling, o.shedder_ceiling);
    struct tide_breaker *b = tide_pool_breaker(pr->live);
    SAME("breaker", b ? (int)tide_breaker_state(b) : -1,
         oracle_pool_breaker_state(pr->oracle));
}

/* An item: one lately lent half the time, else any, most of which are
 * idle, gone or never seen (misuse, or a made() skipped). */
static void *pick_item(struct pair *pr)
{
    if (pr->n_recent > 0 && rng_below(&pr->rng, 2))
        return pr->recent[rng_below(
            &pr->rng, pr->n_recent < RECENT ? pr->n_recent : RECENT)];
    return &pr->items[rng_below(&pr->rng, ITEMS)];
}

static void step_give_at(struct pair *pr, void *item)
{
    uint32_t slot = tide_pool_slot(pr->live, item);
    SAME("slot", slot, oracle_pool_slot(pr->oracle, item));
    uint32_t way = rng_below(&pr->rng, 4);
    if (way == 1)
        slot = TIDE_NO_SLOT;
    else if (way == 2)
        slot = rng_below(&pr->rng, 16); /* a stale note: any slot */
    SAME("give_at", tide_pool_give_at(pr->live, slot, item, pr->now),
         oracle_pool_give_at(pr->oracle, slot, item, pr->now));
}

static void step_evict_or_close(struct pair *pr, bool close)
{
    void *a[8], *b[8];
    size_t n = 1 + rng_below(&pr->rng, 8);
    size_t got = close ? tide_pool_close(pr->live, a, n)
                       : tide_pool_evict(pr->live, pr->now, a, n);
    size_t want = close ? oracle_pool_close(pr->oracle, b, n)
                        : oracle_pool_evict(pr->oracle, pr->now, b, n);
    SAME(close ? "close" : "evict", got, want);
    for (size_t k = 0; k < got; k++)
        SAME(close ? "closed item" : "evicted item", (uintptr_t)a[k],
             (uintptr_t)b[k]);
}

static void step(struct pair *pr)
{
    double roll = rng_roll(&pr->rng);
    bool ok = rng_roll(&pr->rng) < 0.7;
    void *item = pick_item(pr);
    switch (rng_below(&pr->rng, 20)) {
    case 0:
    case 1:
    case 2:
    case 3:
        same_taken(pr, "take", tide_pool_take(pr->live, pr->now, roll),
                   oracle_pool_take(pr->oracle, pr->now, roll));
        break;
    case 4:
        same_taken(pr, "take_idle", tide_pool_take_idle(pr->live, pr->now),
                   oracle_pool_take_idle(pr->oracle, pr->now));
        break;
    case 5:
        same_taken(pr, "grow", tide_pool_grow(pr->live, pr->now, roll),
                   oracle_pool_grow(pr->oracle, pr->now, roll));
        break;
    case 6:
    case 7:
        SAME("made", tide_pool_made(pr->live, item, pr->now),
             oracle_pool_made(pr->oracle, item, pr->now));
        break;
    case 8:
        SAME("made_untried", tide_pool_made_untried(pr->live, item, pr->now),
             oracle_pool_made_untried(pr->oracle, item, pr->now));
        break;
    case 9:
        SAME("unmade", tide_pool_unmade(pr->live, pr->now, roll),
             oracle_pool_unmade(pr->oracle, pr->now, roll));
        break;
    case 10:
        tide_pool_tried(pr->live, pr->now, roll, ok);
        oracle_pool_tried(pr->oracle, pr->now, roll, ok);
        break;
    case 11:
        tide_pool_report(pr->live, pr->now, ok);
        oracle_pool_report(pr->oracle, pr->now, ok);
        break;
    case 12:
    case 13:
        SAME("give", tide_pool_give(pr->live, item, pr->now),
             oracle_pool_give(pr->oracle, item, pr->now));
        break;
    case 14:
        step_give_at(pr, item);
        break;
    case 15:
        SAME("drop", tide_pool_drop(pr->live, item, pr->now),
             oracle_pool_drop(pr->oracle, item, pr->now));
        break;
    case 16:
        SAME("hold", tide_pool_hold(pr->live, item),
             oracle_pool_hold(pr->oracle, item));
        break;
    case 17:
        step_evict_or_close(pr, false);
        break;
    case 18: {
        int64_t lag = TIDE_MS(rng_below(&pr->rng, 100));
        tide_pool_overload(pr->live, pr->now, lag);
        oracle_pool_overload(pr->oracle, pr->now, lag);
        break;
    }
    default: /* an exclusive take: at streams 1, a take */
        if (rng_below(&pr->rng, 100) == 0)
            step_evict_or_close(pr, true);
        else if (rng_below(&pr->rng, 2))
            same_taken(pr, "take_alone",
                       tide_pool_take_alone(pr->live, pr->now, roll),
                       oracle_pool_take(pr->oracle, pr->now, roll));
        else
            same_taken(pr, "take_idle_alone",
                       tide_pool_take_idle_alone(pr->live, pr->now),
                       oracle_pool_take_idle(pr->oracle, pr->now));
        break;
    }
}

/* Mostly short steps, so resources pile up idle; now and then a long one,
 * so keep, life, backoff and the breaker's windows run out. */
static int64_t next_step(uint64_t *rng)
{
    switch (rng_below(rng, 16)) {
    case 0:
        return TIDE_MS(rng_below(rng, 2000));
    case 1:
    case 2:
        return TIDE_US(rng_below(rng, 50000));
    default:
        return TIDE_US(rng_below(rng, 500));
    }
}

static void episode(struct pair *pr, uint64_t *rng)
{
    struct oracle_limits ol = {
        .size = 1 + rng_below(rng, 12),
        .keep = rng_below(rng, 4) == 0 ? TIDE_FOREVER
                                       : TIDE_MS(1 + rng_below(rng, 200)),
        .life = rng_below(rng, 3) == 0 ? TIDE_FOREVER
                                       : TIDE_MS(1 + rng_below(rng, 1000)),
        .spread = rng_below(rng, 2) ? rng_roll(rng) : 0.0,
    };
    ol.idle = rng_below(rng, 4) == 0 ? 0 : 1 + rng_below(rng, ol.size + 2);
    unsigned guards = rng_below(rng, 3) == 0 ? 0 : rng_below(rng, 32);
    /* streams 1 by the preset or by name; the sharing policy is moot */
    struct tide_limits l = {
        .size = ol.size,
        .idle = ol.idle,
        .keep = ol.keep,
        .life = ol.life,
        .spread = ol.spread,
        .streams = rng_below(rng, 2),
        .sharing = rng_below(rng, 2) ? TIDE_SHARING_SPREAD : TIDE_SHARING_PACK,
    };
    struct oracle_ward_options o;
    struct tide_ward w = oracle_ward(guards, &o);
    ck_assert_int_eq(tide_pool_new(&l, &w, 0, &pr->live), 0);
    ck_assert_int_eq(oracle_pool_new(&ol, guards, 0, &pr->oracle), 0);
    pr->now = 0;
    pr->n_recent = 0;
    pr->rng = rng_next(rng);
    for (pr->step = 0; pr->step < STEPS; pr->step++) {
        pr->now += next_step(&pr->rng);
        step(pr);
        same_state(pr);
        pr->total++;
    }
    tide_pool_free(pr->live);
    oracle_pool_free(pr->oracle);
}

START_TEST(streams_one_answers_as_the_pool_before_shared_loans)
{
    static struct pair pr;
    uint64_t rng = UINT64_C(0x6f7261636c65);
    for (pr.episode = 0; pr.episode < EPISODES; pr.episode++)
        episode(&pr, &rng);
    ck_assert_int_ge(pr.total, 1000000);
}
END_TEST

static Suite *oracle_suite(void)
{
    Suite *s = suite_create("pool_oracle");
    TCase *tc = tcase_create("differential");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, streams_one_answers_as_the_pool_before_shared_loans);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(oracle_suite)
