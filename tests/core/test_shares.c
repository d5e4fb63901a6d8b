/* tests for shared loans (core/shares.c and the pool's use of it): a
 * resource with room lent before a make, pack and spread, idle only with no
 * loan out, keep and life, capacities changed and drained, a broken shared
 * resource handed back once, exclusive loans, counts and misuse. */
#include <tidepool/core.h>

#include "runner.h"

static int res[64];

static struct tide_pool *new_pool(struct tide_limits limits,
                                  const struct tide_ward *ward)
{
    struct tide_pool *p = NULL;
    ck_assert_int_eq(tide_pool_new(&limits, ward, 0, &p), 0);
    return p;
}

static void make_one(struct tide_pool *p, void *item, int64_t now)
{
    ck_assert_int_eq(tide_pool_take(p, now, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, item, now), 0);
}

/* A make even where a take would lend a resource with room. */
static void grow_one(struct tide_pool *p, void *item, int64_t now)
{
    ck_assert_int_eq(tide_pool_grow(p, now, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, item, now), 0);
}

/* take answers READY with item. */
static void ready(struct tide_pool *p, void *item, int64_t now)
{
    struct tide_taken t = tide_pool_take(p, now, 0.5);
    ck_assert_int_eq(t.answer, TIDE_READY);
    ck_assert_ptr_eq(t.item, item);
}

/* item made and lent `loans` times over. */
static void lend_n(struct tide_pool *p, void *item, int loans, int64_t now)
{
    make_one(p, item, now);
    for (int k = 1; k < loans; k++)
        ready(p, item, now);
}

static int64_t loans_of(struct tide_pool *p, void *item)
{
    struct tide_share s;
    ck_assert_int_eq(tide_pool_share(p, item, &s), 0);
    return s.loans;
}

/* ---- lending ---- */

START_TEST(room_is_lent_before_a_make)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 3), NULL);
    lend_n(p, &res[0], 3, 0);
    ck_assert_int_eq(loans_of(p, &res[0]), 3);
    ck_assert_int_eq(tide_pool_live(p), 1);
    /* full: now a make */
    make_one(p, &res[1], 0);
    ck_assert_int_eq(tide_pool_live(p), 2);
    ck_assert_int_eq(tide_pool_loans(p), 4);
    ready(p, &res[1], 0);
    ready(p, &res[1], 0);
    /* both full, the pool at its size */
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_WAIT);
    ck_assert(tide_pool_must_wait(p));
    tide_pool_free(p);
}
END_TEST

/* Pack: the busiest with room, so the fewest stay open; an idle one only
 * when none with loans has room. */
START_TEST(pack_lends_the_busiest_with_room)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 3, .streams = 4), NULL);
    make_one(p, &res[0], 0);
    grow_one(p, &res[1], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[1], 0), 1);
    ck_assert_int_eq(tide_pool_idle(p), 1);
    ready(p, &res[0], 0); /* 2 loans, busier than the idle one */
    ready(p, &res[0], 0);
    ready(p, &res[0], 0); /* 4: full */
    ready(p, &res[1], 0); /* then the idle one */
    ck_assert_int_eq(tide_pool_idle(p), 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1); /* res[0]: 3 */
    ready(p, &res[0], 0);                               /* 3 loans beats 1 */
    tide_pool_free(p);
}
END_TEST

/* Spread: the least busy, so borrowers queue behind as few as can be: an
 * idle one first, then the one with the fewest loans. */
START_TEST(spread_lends_the_least_busy_idle_first)
{
    struct tide_pool *p = new_pool(
        TIDE_LIMITS(.size = 3, .streams = 4, .sharing = TIDE_SHARING_SPREAD),
        NULL);
    make_one(p, &res[0], 0);
    ready(p, &res[0], 0); /* no idle one: the one with room, not a make */
    ck_assert_int_eq(tide_pool_live(p), 1);
    grow_one(p, &res[1], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[1], 0), 1); /* idle */
    ready(p, &res[1], 0); /* idle first, though res[0] has room */
    ready(p, &res[1], 0); /* 1 loan < 2 */
    ready(p, &res[1], 0); /* 2 and 2: res[1] came to 2 last */
    ready(p, &res[0], 0); /* 2 < 3 */
    ck_assert_int_eq(loans_of(p, &res[0]), 3);
    ck_assert_int_eq(loans_of(p, &res[1]), 3);
    tide_pool_free(p);
}
END_TEST

/* Among equals, the one that came to that count last, as the idle ones
 * go newest first. */
START_TEST(equals_go_newest_first)
{
    struct tide_pool *p = new_pool(
        TIDE_LIMITS(.size = 3, .streams = 4, .sharing = TIDE_SHARING_SPREAD),
        NULL);
    for (int k = 0; k < 3; k++)
        grow_one(p, &res[k], 0);
    /* res[2] came to one loan last */
    ready(p, &res[2], 0);
    ready(p, &res[1], 0); /* res[1] and res[0] at 1, res[1] newer */
    ck_assert_int_eq(tide_pool_give(p, &res[2], 0), 1); /* back to 1 */
    ready(p, &res[2], 0); /* now the newest at 1 */
    tide_pool_free(p);
}
END_TEST

START_TEST(take_idle_lends_room_or_idle_and_never_makes)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 4, .streams = 2), NULL);
    ck_assert_int_eq(tide_pool_take_idle(p, 0).answer, TIDE_WAIT);
    ck_assert_int_eq(tide_pool_live(p), 0);
    make_one(p, &res[0], 0);
    struct tide_taken t = tide_pool_take_idle(p, 0);
    ck_assert_int_eq(t.answer, TIDE_READY);
    ck_assert_ptr_eq(t.item, &res[0]);
    ck_assert_int_eq(tide_pool_take_idle(p, 0).answer, TIDE_WAIT); /* full */
    ck_assert_int_eq(tide_pool_live(p), 1);
    tide_pool_free(p);
}
END_TEST

/* ---- idle, keep, life ---- */

START_TEST(idle_only_with_no_loan_out)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 3), NULL);
    lend_n(p, &res[0], 2, 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_idle(p), 0);
    ck_assert_int_eq(tide_pool_busy(p), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_idle(p), 1);
    ck_assert_int_eq(tide_pool_loans(p), 0);
    /* nothing out: a give now is a double give, and nothing moves */
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), TIDE_EDOUBLE);
    ck_assert_int_eq(tide_pool_idle(p), 1);
    ck_assert_int_eq(tide_pool_live(p), 1);
    /* a check runs only on one with no loan out */
    ready(p, &res[0], 0);
    ck_assert_int_eq(tide_pool_hold(p, &res[0]), TIDE_ENOTIDLE);
    tide_pool_free(p);
}
END_TEST

/* keep counts from the last loan's return, not the first. */
START_TEST(keep_counts_from_the_last_loans_return)
{
    int64_t keep = TIDE_SEC(10);
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.size = 2, .streams = 2, .keep = keep), NULL);
    lend_n(p, &res[0], 2, 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(1)), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(8)), 1);
    void *out[2];
    ck_assert_uint_eq(tide_pool_evict(p, TIDE_SEC(17), out, 2), 0);
    ck_assert_uint_eq(tide_pool_evict(p, TIDE_SEC(18), out, 2), 1);
    tide_pool_free(p);
}
END_TEST

/* Past life no new loan; the last loan back, it is handed over for
 * closing (give answers 0), as a connection draining for its age closes
 * with its last stream. Its birth is kept all along. */
START_TEST(past_life_takes_no_new_loan_and_leaves_with_its_last)
{
    int64_t life = TIDE_SEC(10);
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.size = 2, .streams = 4, .life = life), NULL);
    make_one(p, &res[0], 0);
    ready(p, &res[0], TIDE_SEC(9));
    /* past life: a make, not a third loan */
    make_one(p, &res[1], TIDE_SEC(10));
    ck_assert_int_eq(loans_of(p, &res[0]), 2);
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(11)), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(11)), 0);
    ck_assert_int_eq(tide_pool_live(p), 1);
    /* res[1], born at 10 s, goes idle at 12 s and is fresh; at 20 s its
     * last loan back hands it over too */
    ck_assert_int_eq(tide_pool_give(p, &res[1], TIDE_SEC(12)), 1);
    ready(p, &res[1], TIDE_SEC(19));
    ck_assert_int_eq(tide_pool_give(p, &res[1], TIDE_SEC(20)), 0);
    ck_assert_int_eq(tide_pool_live(p), 0);
    /* exclusive loans alike */
    struct tide_taken t = tide_pool_take_alone(p, TIDE_SEC(30), 0.5);
    ck_assert_int_eq(t.answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, &res[2], TIDE_SEC(30)), 0);
    ck_assert_int_eq(tide_pool_alone(p, &res[2]), 0);
    ck_assert_int_eq(tide_pool_give(p, &res[2], TIDE_SEC(40)), 0);
    ck_assert_int_eq(tide_pool_live(p), 0);
    tide_pool_free(p);
}
END_TEST

/* A resource that passes its life while in a room is taken out by the
 * next pick, not lent. */
START_TEST(room_past_life_is_passed_over)
{
    struct tide_pool *p = new_pool(
        TIDE_LIMITS(.size = 3, .streams = 4, .life = TIDE_SEC(10)), NULL);
    lend_n(p, &res[0], 2, 0);
    grow_one(p, &res[1], TIDE_SEC(5));
    ready(p, &res[0], TIDE_SEC(6)); /* the busiest: 3 loans, res[1] 1 */
    /* at 11 s res[0] is past its life: res[1] takes the loan */
    ready(p, &res[1], TIDE_SEC(11));
    ck_assert_int_eq(loans_of(p, &res[0]), 3);
    ck_assert_int_eq(loans_of(p, &res[1]), 2);
    tide_pool_free(p);
}
END_TEST

/* ---- capacity ---- */

START_TEST(capacity_changes_per_resource_held_to_the_limit)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 8), NULL);
    lend_n(p, &res[0], 3, 0);
    ck_assert_int_eq(tide_pool_set_streams(p, &res[0], 2), 1);
    /* three out above two: they stay out, no new one */
    make_one(p, &res[1], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ready(p, &res[1], 0); /* res[0] at 2 of 2: still full */
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(loans_of(p, &res[0]), 1); /* room again: 1 of 2 */
    ready(p, &res[1], 0); /* pack: res[1], 2 loans, is the busier */
    struct tide_share s;
    ck_assert_int_eq(tide_pool_share(p, &res[0], &s), 0);
    ck_assert_int_eq(s.streams, 2);
    /* raised past the pool's own ceiling: held to it */
    ck_assert_int_eq(tide_pool_set_streams(p, &res[0], 1000), 1);
    ck_assert_int_eq(tide_pool_share(p, &res[0], &s), 0);
    ck_assert_int_eq(s.streams, 8);
    ck_assert_int_eq(tide_pool_set_streams(p, &res[0], -1), TIDE_EINVAL);
    ck_assert_int_eq(tide_pool_set_streams(p, &res[9], 3), TIDE_EUNKNOWN);
    tide_pool_free(p);
}
END_TEST

/* 0 drains: no new loan; the last loan back hands it over. */
START_TEST(capacity_zero_drains_a_lent_one)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 4), NULL);
    lend_n(p, &res[0], 2, 0);
    ck_assert_int_eq(tide_pool_set_streams(p, &res[0], 0), 1);
    struct tide_share s;
    ck_assert_int_eq(tide_pool_share(p, &res[0], &s), 0);
    ck_assert(s.draining && !s.broken);
    ck_assert_int_eq(s.streams, 0);
    make_one(p, &res[1], 0); /* not lent again */
    /* final: a later capacity does not bring it back */
    ck_assert_int_eq(tide_pool_set_streams(p, &res[0], 4), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[1], 0), 1);
    ready(p, &res[1], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 0); /* close it */
    ck_assert_int_eq(tide_pool_live(p), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), TIDE_EUNKNOWN);
    tide_pool_free(p);
}
END_TEST

START_TEST(capacity_zero_on_an_idle_one_hands_it_over_at_once)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 4), NULL);
    make_one(p, &res[0], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_set_streams(p, &res[0], 0), 0);
    ck_assert_int_eq(tide_pool_live(p), 0);
    ck_assert_int_eq(tide_pool_idle(p), 0);
    /* held for a check: it leaves when the check gives it back */
    make_one(p, &res[1], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[1], 0), 1);
    ck_assert_int_eq(tide_pool_hold(p, &res[1]), 0);
    ck_assert_int_eq(tide_pool_set_streams(p, &res[1], 0), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[1], 0), 0);
    ck_assert_int_eq(tide_pool_live(p), 0);
    ck_assert_int_eq(tide_pool_busy(p), 0);
    tide_pool_free(p);
}
END_TEST

/* ---- broken ---- */

START_TEST(broken_takes_no_loan_and_leaves_with_its_last)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 4), NULL);
    lend_n(p, &res[0], 3, 0);
    ck_assert_int_eq(tide_pool_break(p, &res[0]), 1); /* the one failure */
    ck_assert_int_eq(tide_pool_break(p, &res[0]), 0); /* already */
    make_one(p, &res[1], 0);                          /* not lent again */
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_drop(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_break(p, &res[0]), 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 0); /* once: close it */
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), TIDE_EUNKNOWN);
    ck_assert_int_eq(tide_pool_drop(p, &res[0], 0), TIDE_EUNKNOWN);
    ck_assert_int_eq(tide_pool_live(p), 1);
    ck_assert_int_eq(tide_pool_loans(p), 1);
    tide_pool_free(p);
}
END_TEST

/* A discard of one loan is the borrower saying the connection broke: for
 * every loan of it. */
START_TEST(drop_of_one_loan_breaks_it_for_every_loan)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 4), NULL);
    lend_n(p, &res[0], 3, 0);
    ck_assert_int_eq(tide_pool_drop(p, &res[0], 0), 1);
    struct tide_share s;
    ck_assert_int_eq(tide_pool_share(p, &res[0], &s), 0);
    ck_assert(s.broken);
    ck_assert_int_eq(s.loans, 2);
    ck_assert_int_eq(tide_pool_break(p, &res[0]), 0); /* failure counted */
    make_one(p, &res[1], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_drop(p, &res[0], 0), 0); /* the last */
    ck_assert_int_eq(tide_pool_live(p), 1);
    tide_pool_free(p);
}
END_TEST

START_TEST(break_needs_a_loan_out)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 4), NULL);
    make_one(p, &res[0], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_break(p, &res[0]), TIDE_ENOTLENT);
    ck_assert_int_eq(tide_pool_hold(p, &res[0]), 0);
    ck_assert_int_eq(tide_pool_break(p, &res[0]), TIDE_ENOTLENT);
    ck_assert_int_eq(tide_pool_break(p, &res[1]), TIDE_EUNKNOWN);
    ck_assert_int_eq(tide_pool_break(p, NULL), TIDE_EINVAL);
    ck_assert_int_eq(tide_pool_live(p), 1);
    tide_pool_free(p);
}
END_TEST

/* The breaker and backoff hear one failure: what a runtime does with the
 * answers of break, and that a drop changes nothing in the ward. */
START_TEST(one_failure_for_a_broken_shared_resource)
{
    struct tide_breaker_options bo = {.policy = TIDE_BREAKER_STRIKES,
                                      .strikes = 2};
    struct tide_ward w = {.breaker = &bo};
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 8), &w);
    lend_n(p, &res[0], 6, 0);
    /* six borrowers each discard their loan */
    for (int k = 0; k < 6; k++) {
        if (tide_pool_break(p, &res[0]) == 1)
            tide_pool_report(p, 0, false);
        ck_assert_int_eq(tide_pool_drop(p, &res[0], 0), k < 5 ? 1 : 0);
    }
    /* two strikes would have opened it */
    ck_assert_int_eq(tide_breaker_state(tide_pool_breaker(p)),
                     TIDE_BREAKER_ACTIVE);
    tide_pool_free(p);
}
END_TEST

/* ---- exclusive ---- */

START_TEST(alone_takes_an_idle_one_or_a_make_never_one_with_loans)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 3, .streams = 4), NULL);
    make_one(p, &res[0], 0); /* shared, room for 3 more */
    struct tide_taken t = tide_pool_take_alone(p, 0, 0.5);
    ck_assert_int_eq(t.answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, &res[1], 0), 0);
    ck_assert_int_eq(tide_pool_alone(p, &res[1]), 0);
    /* nobody shares it while it is held */
    ready(p, &res[0], 0);
    ready(p, &res[0], 0);
    ready(p, &res[0], 0);
    make_one(p, &res[2], 0); /* res[0] full: res[1] is not lent */
    struct tide_share s;
    ck_assert_int_eq(tide_pool_share(p, &res[1], &s), 0);
    ck_assert(s.alone);
    ck_assert_int_eq(s.loans, 1);
    /* back: idle, then an exclusive take gets it */
    ck_assert_int_eq(tide_pool_give(p, &res[1], 0), 1);
    ck_assert_int_eq(tide_pool_idle(p), 1);
    t = tide_pool_take_idle_alone(p, 0);
    ck_assert_int_eq(t.answer, TIDE_READY);
    ck_assert_ptr_eq(t.item, &res[1]);
    ck_assert_int_eq(tide_pool_share(p, &res[1], &s), 0);
    ck_assert(s.alone);
    /* none idle: an exclusive take only waits, while a shared one lends */
    ck_assert_int_eq(tide_pool_take_idle_alone(p, 0).answer, TIDE_WAIT);
    ck_assert_int_eq(tide_pool_take_alone(p, 0, 0.5).answer, TIDE_WAIT);
    ck_assert(tide_pool_must_wait_alone(p));
    ck_assert(!tide_pool_must_wait(p));
    ready(p, &res[2], 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(alone_needs_the_only_loan)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 4), NULL);
    lend_n(p, &res[0], 2, 0);
    ck_assert_int_eq(tide_pool_alone(p, &res[0]), TIDE_ESHARED);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_alone(p, &res[0]), 0);
    ck_assert_int_eq(tide_pool_alone(p, &res[0]), 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_alone(p, &res[0]), TIDE_ENOTLENT);
    ck_assert_int_eq(tide_pool_alone(p, &res[5]), TIDE_EUNKNOWN);
    tide_pool_free(p);
}
END_TEST

/* must_wait and must_wait_alone say WAIT exactly where each take does. */
START_TEST(must_wait_of_each_kind_is_the_take_of_that_kind)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 1, .streams = 2), NULL);
    ck_assert(!tide_pool_must_wait(p) && !tide_pool_must_wait_alone(p));
    make_one(p, &res[0], 0);
    ck_assert(!tide_pool_must_wait(p)); /* room beside the loan */
    ck_assert(tide_pool_must_wait_alone(p));
    ck_assert_int_eq(tide_pool_take_alone(p, 0, 0.5).answer, TIDE_WAIT);
    ready(p, &res[0], 0);
    ck_assert(tide_pool_must_wait(p));
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_WAIT);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert(!tide_pool_must_wait_alone(p)); /* idle now */
    tide_pool_free(p);
}
END_TEST

/* ---- counts, guards, closing ---- */

START_TEST(loans_and_connections_are_counted_apart)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 4, .streams = 16), NULL);
    ck_assert_int_eq(tide_pool_busiest(p), 0);
    lend_n(p, &res[0], 10, 0);
    ck_assert_int_eq(tide_pool_grow(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_loans(p), 10);
    ck_assert_int_eq(tide_pool_live(p), 2);
    ck_assert_int_eq(tide_pool_busy(p), 2);
    ck_assert_int_eq(tide_pool_busiest(p), 10);
    ck_assert_int_eq(tide_pool_made(p, &res[1], 0), 0);
    ck_assert_int_eq(tide_pool_loans(p), 11);
    for (int k = 0; k < 9; k++)
        ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_busiest(p), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[1], 0), 1);
    ck_assert_int_eq(tide_pool_busiest(p), 0);
    ck_assert_int_eq(tide_pool_loans(p), 0);
    ck_assert_int_eq(tide_pool_idle(p), 2);
    tide_pool_free(p);
}
END_TEST

/* The shedder's ceiling is on loans in flight, from size x streams. */
START_TEST(shedder_counts_loans)
{
    struct tide_shedder_options so = {0};
    struct tide_ward w = {.shedder = &so};
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 8), &w);
    struct tide_pool_guards g;
    tide_pool_guards(p, 0, &g);
    ck_assert(g.shedder_ceiling == 16.0);
    lend_n(p, &res[0], 4, 0);
    /* a lag sample cuts the ceiling to loans in flight (4) x 0.5, and
     * res[0], which has room, is not lent */
    tide_pool_overload(p, TIDE_MS(1), TIDE_MS(200));
    tide_pool_guards(p, TIDE_MS(1), &g);
    ck_assert(g.shedder_ceiling == 2.0);
    struct tide_taken t = tide_pool_take(p, TIDE_MS(1), 0.5);
    ck_assert_int_eq(t.answer, TIDE_SHED);
    ck_assert_int_eq(t.guard, TIDE_GUARD_SHEDDER);
    tide_pool_free(p);
}
END_TEST

START_TEST(inactive_breaker_sheds_shared_takes)
{
    struct tide_breaker_options bo = {0};
    struct tide_ward w = {.breaker = &bo};
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 4), &w);
    make_one(p, &res[0], 0);
    tide_breaker_deactivate(tide_pool_breaker(p), 0);
    struct tide_taken t = tide_pool_take(p, 0, 0.5);
    ck_assert_int_eq(t.answer, TIDE_SHED);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BREAKER);
    t = tide_pool_take_idle(p, 0);
    ck_assert_int_eq(t.answer, TIDE_SHED);
    ck_assert(!tide_pool_must_wait(p));
    tide_pool_free(p);
}
END_TEST

/* Closed: no new loan; the loans out come back, the last closes it. */
START_TEST(close_with_loans_out_hands_back_with_the_last)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 4), NULL);
    lend_n(p, &res[0], 2, 0);
    void *out[2];
    ck_assert_uint_eq(tide_pool_close(p, out, 2), 0);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_SHED);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 0);
    ck_assert_int_eq(tide_pool_live(p), 0);
    tide_pool_free(p);
}
END_TEST

/* An unbounded pool grows its share records with its slots. */
START_TEST(unbounded_pool_grows_its_shares)
{
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.size = TIDE_UNLIMITED, .streams = 2), NULL);
    static int many[300];
    for (int k = 0; k < 300; k++)
        grow_one(p, &many[k], 0);
    for (int k = 0; k < 300; k++)
        ready(p, &many[299 - k], 0); /* pack: the newest at 1 first */
    ck_assert_int_eq(tide_pool_loans(p), 600);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

/* The same calls on a pool of one loan a resource. */
START_TEST(streams_one_answers_the_shared_calls_plainly)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2), NULL);
    struct tide_taken t = tide_pool_take_alone(p, 0, 0.5);
    ck_assert_int_eq(t.answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, &res[0], 0), 0);
    ck_assert_int_eq(tide_pool_alone(p, &res[0]), 0);
    ck_assert_int_eq(tide_pool_set_streams(p, &res[0], 5), 1);
    struct tide_share s;
    ck_assert_int_eq(tide_pool_share(p, &res[0], &s), 0);
    ck_assert_int_eq(s.loans, 1);
    ck_assert_int_eq(s.streams, 1);
    ck_assert(s.alone && !s.broken);
    ck_assert_int_eq(tide_pool_loans(p), 1);
    ck_assert_int_eq(tide_pool_busiest(p), 1);
    ck_assert_int_eq(tide_pool_break(p, &res[0]), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 0); /* broken: close */
    make_one(p, &res[1], 0);
    ck_assert_int_eq(tide_pool_set_streams(p, &res[1], 0), 1);
    ck_assert_int_eq(tide_pool_drop(p, &res[1], 0), 0);
    ck_assert_int_eq(tide_pool_live(p), 0);
    ck_assert_int_eq(tide_pool_loans(p), 0);
    ck_assert_int_eq(tide_pool_busiest(p), 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(give_at_ends_one_shared_loan)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2, .streams = 3), NULL);
    lend_n(p, &res[0], 2, 0);
    uint32_t slot = tide_pool_slot(p, &res[0]);
    ck_assert_int_eq(tide_pool_give_at(p, slot, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_loans(p), 1);
    ck_assert_int_eq(tide_pool_give_at(p, slot, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_idle(p), 1);
    ck_assert_int_eq(tide_pool_give_at(p, slot, &res[0], 0), TIDE_EDOUBLE);
    tide_pool_free(p);
}
END_TEST

static Suite *shares_suite(void)
{
    Suite *s = suite_create("shares");
    TCase *tc = tcase_create("lending");
    tcase_add_test(tc, room_is_lent_before_a_make);
    tcase_add_test(tc, pack_lends_the_busiest_with_room);
    tcase_add_test(tc, spread_lends_the_least_busy_idle_first);
    tcase_add_test(tc, equals_go_newest_first);
    tcase_add_test(tc, take_idle_lends_room_or_idle_and_never_makes);
    suite_add_tcase(s, tc);

    tc = tcase_create("ages");
    tcase_add_test(tc, idle_only_with_no_loan_out);
    tcase_add_test(tc, keep_counts_from_the_last_loans_return);
    tcase_add_test(tc, past_life_takes_no_new_loan_and_leaves_with_its_last);
    tcase_add_test(tc, room_past_life_is_passed_over);
    suite_add_tcase(s, tc);

    tc = tcase_create("capacity");
    tcase_add_test(tc, capacity_changes_per_resource_held_to_the_limit);
    tcase_add_test(tc, capacity_zero_drains_a_lent_one);
    tcase_add_test(tc, capacity_zero_on_an_idle_one_hands_it_over_at_once);
    suite_add_tcase(s, tc);

    tc = tcase_create("broken");
    tcase_add_test(tc, broken_takes_no_loan_and_leaves_with_its_last);
    tcase_add_test(tc, drop_of_one_loan_breaks_it_for_every_loan);
    tcase_add_test(tc, break_needs_a_loan_out);
    tcase_add_test(tc, one_failure_for_a_broken_shared_resource);
    suite_add_tcase(s, tc);

    tc = tcase_create("alone");
    tcase_add_test(tc, alone_takes_an_idle_one_or_a_make_never_one_with_loans);
    tcase_add_test(tc, alone_needs_the_only_loan);
    tcase_add_test(tc, must_wait_of_each_kind_is_the_take_of_that_kind);
    suite_add_tcase(s, tc);

    tc = tcase_create("counts");
    tcase_add_test(tc, loans_and_connections_are_counted_apart);
    tcase_add_test(tc, shedder_counts_loans);
    tcase_add_test(tc, inactive_breaker_sheds_shared_takes);
    tcase_add_test(tc, close_with_loans_out_hands_back_with_the_last);
    tcase_add_test(tc, unbounded_pool_grows_its_shares);
    tcase_add_test(tc, streams_one_answers_the_shared_calls_plainly);
    tcase_add_test(tc, give_at_ends_one_shared_loan);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(shares_suite)
