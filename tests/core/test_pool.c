/* tests for core/pool.c: the six answers, the four limits, identity, misuse,
 * and each guard of the ward as the pool applies it. */
#include <string.h>

#include <tidepool/core.h>

#include "rng.h"
#include "runner.h"

/* Resources are the addresses of these; only identity matters. */
static int res[64];

static struct tide_pool *new_pool(struct tide_limits limits,
                                  const struct tide_ward *ward)
{
    struct tide_pool *p = NULL;
    ck_assert_int_eq(tide_pool_new(&limits, ward, 0, &p), 0);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* take -> MAKE -> made(item): the item is lent. */
static void make_one(struct tide_pool *p, void *item, int64_t now)
{
    struct tide_taken t = tide_pool_take(p, now, 0.5);
    ck_assert_int_eq(t.answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, item, now), 0);
}

/* Makes n resources and gives them back, res[0] first. */
static void fill_idle(struct tide_pool *p, int n, int64_t now)
{
    for (int i = 0; i < n; i++)
        make_one(p, &res[i], now);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(tide_pool_give(p, &res[i], now), 1);
}

START_TEST(presets_when_limits_null)
{
    struct tide_pool *p = NULL;
    ck_assert_int_eq(tide_pool_new(NULL, NULL, 0, &p), 0);
    struct tide_limits l = tide_pool_limits(p);
    ck_assert_int_eq(l.size, 10);
    ck_assert_int_eq(l.idle, 10);
    ck_assert_int_eq(l.keep, TIDE_MIN(30));
    ck_assert_int_eq(l.life, TIDE_FOREVER);
    tide_pool_free(p);
}
END_TEST

START_TEST(new_refuses_bad_limits_and_null_out)
{
    struct tide_pool *p = (struct tide_pool *)&res[0];
    struct tide_limits bad = {.size = -1};
    ck_assert_int_eq(tide_pool_new(&bad, NULL, 0, &p), TIDE_ELIMITS);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(tide_pool_new(NULL, NULL, 0, NULL), TIDE_EINVAL);
    struct tide_backoff b = {.factor = 0.5};
    struct tide_ward w = {.backoff = &b};
    ck_assert_int_eq(tide_pool_new(NULL, &w, 0, &p), TIDE_EBACKOFF);
    struct tide_bucket_options bo = {.rate = -1};
    w = (struct tide_ward){.bucket = &bo};
    ck_assert_int_eq(tide_pool_new(NULL, &w, 0, &p), TIDE_EBUCKET);
    struct tide_breaker_options br = {.policy = TIDE_BREAKER_CUSTOM};
    w = (struct tide_ward){.breaker = &br};
    ck_assert_int_eq(tide_pool_new(NULL, &w, 0, &p), TIDE_EBREAKER);
    struct tide_shedder_options so = {.decrease = 1.5};
    w = (struct tide_ward){.shedder = &so};
    ck_assert_int_eq(tide_pool_new(NULL, &w, 0, &p), TIDE_ESHEDDER);
}
END_TEST

START_TEST(empty_pool_answers_make_and_reserves)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2), NULL);
    struct tide_taken t = tide_pool_take(p, 0, 0.5);
    ck_assert_int_eq(t.answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_live(p), 1);
    ck_assert_int_eq(tide_pool_busy(p), 1);
    ck_assert_int_eq(tide_pool_idle(p), 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(made_registers_as_lent)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), NULL);
    make_one(p, &res[0], 0);
    ck_assert_int_eq(tide_pool_live(p), 1);
    ck_assert_int_eq(tide_pool_busy(p), 1);
    ck_assert_int_eq(tide_pool_idle(p), 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(give_keeps_it_idle)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), NULL);
    make_one(p, &res[0], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 1), 1);
    ck_assert_int_eq(tide_pool_idle(p), 1);
    ck_assert_int_eq(tide_pool_busy(p), 0);
    ck_assert_int_eq(tide_pool_live(p), 1);
    tide_pool_free(p);
}
END_TEST

START_TEST(take_hands_out_most_recently_returned)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), NULL);
    fill_idle(p, 3, 0); /* given back 0, 1, 2 */
    ck_assert_ptr_eq(tide_pool_take(p, 1, 0.5).item, &res[2]);
    ck_assert_ptr_eq(tide_pool_take(p, 1, 0.5).item, &res[1]);
    ck_assert_int_eq(tide_pool_give(p, &res[2], 2), 1);
    struct tide_taken t = tide_pool_take(p, 3, 0.5);
    ck_assert_int_eq(t.answer, TIDE_READY);
    ck_assert_ptr_eq(t.item, &res[2]);
    tide_pool_free(p);
}
END_TEST

START_TEST(give_past_idle_limit_is_not_kept)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 5, .idle = 2), NULL);
    for (int i = 0; i < 3; i++)
        make_one(p, &res[i], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 1), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[1], 1), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[2], 1), 0);
    ck_assert_int_eq(tide_pool_live(p), 2);
    ck_assert_int_eq(tide_pool_idle(p), 2);
    /* not kept means gone: giving it again is unknown, not double */
    ck_assert_int_eq(tide_pool_give(p, &res[2], 2), TIDE_EUNKNOWN);
    tide_pool_free(p);
}
END_TEST

START_TEST(wait_when_every_slot_in_use)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2), NULL);
    make_one(p, &res[0], 0);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_WAIT);
    ck_assert_int_eq(tide_pool_live(p), 2);
    tide_pool_free(p);
}
END_TEST

/* must_wait is the promise a queue's server relies on to skip a take: it
 * says yes only where take answers WAIT, and no wherever take would make,
 * lend, or refuse (closed, or a breaker that is down). */
START_TEST(must_wait_exactly_where_take_waits)
{
    struct tide_breaker_options bo = {.policy = TIDE_BREAKER_STRIKES,
                                      .strikes = 5};
    struct tide_ward w = {.breaker = &bo};
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2), &w);
    ck_assert(!tide_pool_must_wait(NULL));
    ck_assert(!tide_pool_must_wait(p)); /* room: take makes */
    make_one(p, &res[0], 0);
    ck_assert(!tide_pool_must_wait(p));
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert(tide_pool_must_wait(p)); /* one lent, one being made */
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_WAIT);
    ck_assert_int_eq(tide_pool_made(p, &res[1], 0), 0);
    ck_assert(tide_pool_must_wait(p));
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_WAIT);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert(!tide_pool_must_wait(p)); /* one idle: take lends */
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_READY);
    ck_assert(tide_pool_must_wait(p));
    /* full, but the breaker is down: take refuses, so no wait */
    tide_breaker_deactivate(tide_pool_breaker(p), 0);
    ck_assert(!tide_pool_must_wait(p));
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_SHED);
    tide_breaker_activate(tide_pool_breaker(p), 0);
    ck_assert(tide_pool_must_wait(p));
    (void)tide_pool_close(p, NULL, 0);
    ck_assert(!tide_pool_must_wait(p)); /* closed: take refuses */
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_SHED);
    tide_pool_free(p);
}
END_TEST

START_TEST(stale_after_keep_is_out_of_pool_and_count)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.keep = TIDE_SEC(10)), NULL);
    fill_idle(p, 1, 0);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(10) - 1, 0.5).answer,
                     TIDE_READY);
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(10)), 1);
    struct tide_taken t = tide_pool_take(p, TIDE_SEC(20), 0.5);
    ck_assert_int_eq(t.answer, TIDE_STALE);
    ck_assert_ptr_eq(t.item, &res[0]);
    ck_assert_int_eq(tide_pool_live(p), 0);
    ck_assert_int_eq(tide_pool_idle(p), 0);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(20), 0.5).answer, TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

START_TEST(life_retires_a_resource_reused_all_along)
{
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.keep = TIDE_SEC(10), .life = TIDE_SEC(60)), NULL);
    make_one(p, &res[0], 0);
    /* lent and given back every 5 s: never idle past keep */
    int64_t now = 0;
    for (; now < TIDE_SEC(60); now += TIDE_SEC(5)) {
        ck_assert_int_eq(tide_pool_give(p, &res[0], now), 1);
        struct tide_taken t = tide_pool_take(p, now + TIDE_SEC(5) - 1, 0.5);
        if (now + TIDE_SEC(5) - 1 < TIDE_SEC(60))
            ck_assert_int_eq(t.answer, TIDE_READY);
        else
            ck_assert_int_eq(t.answer, TIDE_STALE);
    }
    tide_pool_free(p);
}
END_TEST

START_TEST(give_does_not_reset_birth)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.life = TIDE_SEC(60)), NULL);
    make_one(p, &res[0], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(59)), 1);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(60), 0.5).answer, TIDE_STALE);
    tide_pool_free(p);
}
END_TEST

START_TEST(unknown_give_fills_reservation_born_now)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.life = TIDE_SEC(60)), NULL);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    /* made() skipped: the give fills the reservation at t = 30 s */
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(30)), 1);
    ck_assert_int_eq(tide_pool_live(p), 1);
    ck_assert_int_eq(tide_pool_busy(p), 0);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(89), 0.5).answer, TIDE_READY);
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(89)), 1);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(90), 0.5).answer, TIDE_STALE);
    tide_pool_free(p);
}
END_TEST

START_TEST(drop_keeps_live_count_honest)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 1), NULL);
    make_one(p, &res[0], 0);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_WAIT);
    ck_assert_int_eq(tide_pool_drop(p, &res[0], 1), 0);
    ck_assert_int_eq(tide_pool_live(p), 0);
    ck_assert_int_eq(tide_pool_take(p, 1, 0.5).answer, TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

START_TEST(drop_removes_an_idle_one_found_dead)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), NULL);
    fill_idle(p, 3, 0);
    ck_assert_int_eq(tide_pool_drop(p, &res[1], 1), 0);
    ck_assert_int_eq(tide_pool_idle(p), 2);
    ck_assert_ptr_eq(tide_pool_take(p, 2, 0.5).item, &res[2]);
    ck_assert_ptr_eq(tide_pool_take(p, 2, 0.5).item, &res[0]);
    ck_assert_int_eq(tide_pool_take(p, 2, 0.5).answer, TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

START_TEST(unknown_drop_fills_reservation_then_drops)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 1), NULL);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_drop(p, &res[0], 1), 0);
    ck_assert_int_eq(tide_pool_live(p), 0);
    ck_assert_int_eq(tide_pool_drop(p, &res[0], 1), TIDE_EUNKNOWN);
    tide_pool_free(p);
}
END_TEST

START_TEST(evict_hands_back_past_keep_or_life)
{
    struct tide_pool *p = new_pool(
        TIDE_LIMITS(.keep = TIDE_SEC(10), .life = TIDE_SEC(100)), NULL);
    make_one(p, &res[0], 0);            /* dies at 100 s */
    make_one(p, &res[1], TIDE_SEC(50)); /* dies at 150 s */
    make_one(p, &res[2], TIDE_SEC(50));
    ck_assert_int_eq(tide_pool_give(p, &res[1], TIDE_SEC(80)), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(95)), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[2], TIDE_SEC(95)), 1);
    void *out[8];
    /* at 100 s: res[0] past life; res[1] idle 20 s, past keep */
    size_t n = tide_pool_evict(p, TIDE_SEC(100), out, 8);
    ck_assert_uint_eq(n, 2);
    ck_assert(out[0] == &res[1] || out[1] == &res[1]);
    ck_assert(out[0] == &res[0] || out[1] == &res[0]);
    ck_assert_int_eq(tide_pool_live(p), 1);
    ck_assert_int_eq(tide_pool_evict(p, TIDE_SEC(100), out, 8), 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(evict_stops_at_n_and_continues)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.keep = TIDE_SEC(1)), NULL);
    fill_idle(p, 5, 0);
    void *out[2];
    ck_assert_uint_eq(tide_pool_evict(p, TIDE_SEC(2), out, 2), 2);
    ck_assert_uint_eq(tide_pool_evict(p, TIDE_SEC(2), out, 2), 2);
    ck_assert_uint_eq(tide_pool_evict(p, TIDE_SEC(2), out, 2), 1);
    ck_assert_int_eq(tide_pool_live(p), 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(close_hands_back_idle_and_refuses_after)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), NULL);
    make_one(p, &res[3], 0);
    for (int i = 0; i < 3; i++)
        make_one(p, &res[i], 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(tide_pool_give(p, &res[i], 0), 1);
    void *out[8];
    ck_assert_uint_eq(tide_pool_close(p, out, 8), 3);
    ck_assert_int_eq(tide_pool_idle(p), 0);
    ck_assert_int_eq(tide_pool_live(p), 1);
    struct tide_taken t = tide_pool_take(p, 1, 0.5);
    ck_assert_int_eq(t.answer, TIDE_SHED);
    ck_assert_int_eq(t.guard, TIDE_GUARD_CLOSED);
    /* the lent one comes back and is not kept: the caller closes it */
    ck_assert_int_eq(tide_pool_give(p, &res[3], 1), 0);
    ck_assert_int_eq(tide_pool_live(p), 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(double_give_is_reported_and_counts_stay)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), NULL);
    fill_idle(p, 1, 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 1), TIDE_EDOUBLE);
    ck_assert_int_eq(tide_pool_idle(p), 1);
    ck_assert_int_eq(tide_pool_live(p), 1);
    ck_assert_int_eq(tide_pool_busy(p), 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(unknown_give_without_reservation_is_reported)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), NULL);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), TIDE_EUNKNOWN);
    ck_assert_int_eq(tide_pool_drop(p, &res[0], 0), TIDE_EUNKNOWN);
    ck_assert_int_eq(tide_pool_give(p, NULL, 0), TIDE_EINVAL);
    ck_assert_int_eq(tide_pool_give_at(p, 0, NULL, 0), TIDE_EINVAL);
    ck_assert_uint_eq(tide_pool_slot(p, NULL), TIDE_NO_SLOT);
    ck_assert_int_eq(tide_pool_live(p), 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(made_without_reservation_is_reported)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), NULL);
    ck_assert_int_eq(tide_pool_made(p, &res[0], 0), TIDE_ENORESERVE);
    ck_assert_int_eq(tide_pool_unmade(p, 0, 0.5), TIDE_ENORESERVE);
    ck_assert_int_eq(tide_pool_live(p), 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(made_twice_with_one_item_is_reported)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), NULL);
    make_one(p, &res[0], 0);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, &res[0], 0), TIDE_EDUPLICATE);
    ck_assert_int_eq(tide_pool_made(p, NULL, 0), TIDE_EINVAL);
    ck_assert_int_eq(tide_pool_live(p), 2); /* the reservation stays open */
    ck_assert_int_eq(tide_pool_made(p, &res[1], 0), 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(unmade_frees_the_reservation)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 1), NULL);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_WAIT);
    ck_assert_int_eq(tide_pool_unmade(p, 1, 0.5), 0);
    ck_assert_int_eq(tide_pool_live(p), 0);
    ck_assert_int_eq(tide_pool_take(p, 1, 0.5).answer, TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

START_TEST(spread_shortens_life_by_the_make_roll)
{
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.life = TIDE_SEC(100), .spread = 0.5), NULL);
    /* roll 0 keeps the whole life; roll 0.8 takes 0.8 x 0.5 = 40% off */
    ck_assert_int_eq(tide_pool_take(p, 0, 0.0).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, &res[0], 0), 0);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.8).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, &res[1], 0), 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[1], 0), 1);
    void *out[4];
    ck_assert_uint_eq(tide_pool_evict(p, TIDE_SEC(60) - 1, out, 4), 0);
    ck_assert_uint_eq(tide_pool_evict(p, TIDE_SEC(60), out, 4), 1);
    ck_assert_ptr_eq(out[0], &res[1]);
    ck_assert_uint_eq(tide_pool_evict(p, TIDE_SEC(100) - 1, out, 4), 0);
    ck_assert_uint_eq(tide_pool_evict(p, TIDE_SEC(100), out, 4), 1);
    tide_pool_free(p);
}
END_TEST

START_TEST(unlimited_size_grows)
{
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.size = TIDE_UNLIMITED, .idle = 100), NULL);
    static int many[1000];
    for (int i = 0; i < 1000; i++) {
        ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
        ck_assert_int_eq(tide_pool_made(p, &many[i], 0), 0);
    }
    ck_assert_int_eq(tide_pool_live(p), 1000);
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(tide_pool_give(p, &many[i], 1), i < 100 ? 1 : 0);
    ck_assert_int_eq(tide_pool_live(p), 100);
    ck_assert_ptr_eq(tide_pool_take(p, 2, 0.5).item, &many[99]);
    tide_pool_free(p);
}
END_TEST

START_TEST(grow_makes_room_even_with_idle)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 3), NULL);
    fill_idle(p, 2, 0);
    ck_assert_int_eq(tide_pool_grow(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_live(p), 3);
    ck_assert_int_eq(tide_pool_grow(p, 0, 0.5).answer, TIDE_WAIT);
    ck_assert_int_eq(tide_pool_made(p, &res[2], 0), 0);
    ck_assert_int_eq(tide_pool_give(p, &res[2], 0), 1);
    ck_assert_int_eq(tide_pool_idle(p), 3);
    tide_pool_free(p);
}
END_TEST

START_TEST(held_resource_is_busy_and_not_lent)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2), NULL);
    fill_idle(p, 2, 0);
    ck_assert_int_eq(tide_pool_hold(p, &res[1]), 0);
    ck_assert_int_eq(tide_pool_idle(p), 1);
    ck_assert_int_eq(tide_pool_busy(p), 1);
    ck_assert_int_eq(tide_pool_live(p), 2);
    ck_assert_ptr_eq(tide_pool_take(p, 1, 0.5).item, &res[0]);
    ck_assert_int_eq(tide_pool_take(p, 1, 0.5).answer, TIDE_WAIT);
    ck_assert_int_eq(tide_pool_hold(p, &res[0]), TIDE_ENOTIDLE);
    ck_assert_int_eq(tide_pool_hold(p, &res[9]), TIDE_EUNKNOWN);
    tide_pool_free(p);
}
END_TEST

START_TEST(held_resource_keeps_its_rest_time)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.keep = TIDE_SEC(10)), NULL);
    make_one(p, &res[0], 0);
    make_one(p, &res[1], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_hold(p, &res[0]), 0);
    ck_assert_int_eq(tide_pool_give(p, &res[1], TIDE_SEC(5)), 1);
    /* checked and back at 6 s: still rested since 0, below res[1] */
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(6)), 1);
    void *out[4];
    ck_assert_uint_eq(tide_pool_evict(p, TIDE_SEC(10), out, 4), 1);
    ck_assert_ptr_eq(out[0], &res[0]);
    ck_assert_ptr_eq(tide_pool_take(p, TIDE_SEC(10), 0.5).item, &res[1]);
    tide_pool_free(p);
}
END_TEST

START_TEST(held_resource_dropped_when_check_fails)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), NULL);
    fill_idle(p, 1, 0);
    ck_assert_int_eq(tide_pool_hold(p, &res[0]), 0);
    ck_assert_int_eq(tide_pool_drop(p, &res[0], 1), 0);
    ck_assert_int_eq(tide_pool_live(p), 0);
    tide_pool_free(p);
}
END_TEST

/* A take answers the item the last push put on the top without reading the
 * slot (pushed_place in pool_internal.h); an unhold writes that place
 * without a push, and the held one put back there is what take lends, not
 * the one pushed there before (which is lent). */
START_TEST(held_one_back_on_top_is_lent_not_the_last_pushed)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 3), NULL);
    for (int i = 0; i < 3; i++)
        make_one(p, &res[i], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 1), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[1], 2), 1);
    ck_assert_int_eq(tide_pool_hold(p, &res[1]), 0);
    ck_assert_int_eq(tide_pool_give(p, &res[2], 3), 1); /* where res[1] was */
    ck_assert_ptr_eq(tide_pool_take(p, 4, 0.5).item, &res[2]);
    /* the check ends well: rested since 2, it goes back above res[0] */
    ck_assert_int_eq(tide_pool_give(p, &res[1], 5), 1);
    struct tide_taken t = tide_pool_take(p, 6, 0.5);
    ck_assert_int_eq(t.answer, TIDE_READY);
    ck_assert_ptr_eq(t.item, &res[1]);
    ck_assert_ptr_eq(tide_pool_take(p, 7, 0.5).item, &res[0]);
    ck_assert_int_eq(tide_pool_take(p, 8, 0.5).answer, TIDE_WAIT);
    tide_pool_free(p);
}
END_TEST

/* A burst through a pool big enough for take to fetch ahead (16,384 slots
 * and more): the whole pool out, back in a scrambled order, out again in
 * the reverse of that order, each exactly once, and twice over. */
START_TEST(burst_through_a_big_pool_lends_each_once_newest_first)
{
    enum { N = 20000 };
    static char items[N];
    static void *order[N];
    static unsigned char seen[N];
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.size = N, .keep = TIDE_FOREVER), NULL);
    for (int i = 0; i < N; i++) {
        make_one(p, &items[i], 0);
        order[i] = &items[i];
    }
    uint64_t rng = 22;
    for (int round = 0; round < 2; round++) {
        for (int i = N - 1; i > 0; i--) {
            uint32_t j = rng_below(&rng, (uint32_t)i + 1);
            void *t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < N; i++)
            ck_assert_int_eq(tide_pool_give(p, order[i], 1 + round), 1);
        memset(seen, 0, sizeof seen);
        for (int i = N - 1; i >= 0; i--) {
            struct tide_taken t = tide_pool_take(p, 2 + round, 0.5);
            ck_assert_int_eq(t.answer, TIDE_READY);
            ck_assert_ptr_eq(t.item, order[i]);
            ck_assert_int_eq(seen[(char *)t.item - items]++, 0);
        }
        ck_assert_int_eq(tide_pool_idle(p), 0);
        ck_assert_int_eq(tide_pool_take(p, 3 + round, 0.5).answer, TIDE_WAIT);
    }
    tide_pool_free(p);
}
END_TEST

/* A clock behind the time a resource came back (the caller's clock stepped
 * back) is a rest of 0, not a rest past keep: take's quick test sees a huge
 * difference, and the exact one behind it lends. */
START_TEST(clock_behind_the_give_lends_not_stale)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.keep = TIDE_SEC(10)), NULL);
    make_one(p, &res[0], TIDE_SEC(100));
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(100)), 1);
    struct tide_taken t = tide_pool_take(p, TIDE_SEC(50), 0.5);
    ck_assert_int_eq(t.answer, TIDE_READY);
    ck_assert_ptr_eq(t.item, &res[0]);
    ck_assert_int_eq(tide_pool_give(p, &res[0], TIDE_SEC(50)), 1);
    /* and keep still retires it once its rest does reach keep */
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(60), 0.5).answer, TIDE_STALE);
    tide_pool_free(p);
}
END_TEST

/* Holes left in the idle stack by drops, closed by the compaction a give
 * runs when the stack's top has reached its last place, must not change
 * the order take lends in: the most recently returned first. */
START_TEST(idle_order_holds_when_holes_are_closed)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 8), NULL);
    fill_idle(p, 8, 0); /* every place of the stack used */
    ck_assert_int_eq(tide_pool_drop(p, &res[3], 1), 0);
    ck_assert_int_eq(tide_pool_drop(p, &res[5], 1), 0);
    for (int i = 8; i < 10; i++) {
        ck_assert_int_eq(tide_pool_grow(p, 2, 0.5).answer, TIDE_MAKE);
        ck_assert_int_eq(tide_pool_made(p, &res[i], 2), 0);
    }
    /* the stack is full with two holes: the first give closes them */
    ck_assert_int_eq(tide_pool_give(p, &res[8], 3), 1);
    ck_assert_int_eq(tide_pool_give(p, &res[9], 4), 1);
    ck_assert_int_eq(tide_pool_drop(p, &res[6], 5), 0);
    ck_assert_int_eq(tide_pool_drop(p, &res[1], 5), 0);
    ck_assert_int_eq(tide_pool_idle(p), 6);
    static const int order[] = {9, 8, 7, 4, 2, 0};
    for (int k = 0; k < 6; k++) {
        struct tide_taken t = tide_pool_take(p, 6, 0.5);
        ck_assert_int_eq(t.answer, TIDE_READY);
        ck_assert_ptr_eq(t.item, &res[order[k]]);
    }
    ck_assert_int_eq(tide_pool_take(p, 6, 0.5).answer, TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

/* The idle stack stays ordered by rest time through a compaction, a growth
 * of the books and a hold given back: evict, which retires the oldest
 * first, hands every one back in the order they came back. */
START_TEST(idle_order_holds_across_growth)
{
    struct tide_pool *p =
        new_pool(TIDE_LIMITS(.size = TIDE_UNLIMITED, .keep = TIDE_MS(1)), NULL);
    static int many[96];
    for (int i = 0; i < 64; i++) {
        ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
        ck_assert_int_eq(tide_pool_made(p, &many[i], 0), 0);
    }
    for (int i = 0; i < 64; i++)
        ck_assert_int_eq(tide_pool_give(p, &many[i], TIDE_US(i)), 1);
    for (int i = 0; i < 20; i++) /* the oldest: holes at the bottom */
        ck_assert_int_eq(tide_pool_drop(p, &many[i], TIDE_US(64)), 0);
    /* the first of these gives finds the stack full and compacts it */
    for (int i = 64; i < 84; i++) {
        ck_assert_int_eq(tide_pool_grow(p, TIDE_US(i), 0.5).answer, TIDE_MAKE);
        ck_assert_int_eq(tide_pool_made(p, &many[i], TIDE_US(i)), 0);
        ck_assert_int_eq(tide_pool_give(p, &many[i], TIDE_US(i)), 1);
    }
    /* 64 live in 64 slots: these two make the books grow */
    for (int i = 84; i < 86; i++) {
        ck_assert_int_eq(tide_pool_grow(p, TIDE_US(i), 0.5).answer, TIDE_MAKE);
        ck_assert_int_eq(tide_pool_made(p, &many[i], TIDE_US(i)), 0);
    }
    for (int i = 84; i < 86; i++)
        ck_assert_int_eq(tide_pool_give(p, &many[i], TIDE_US(i)), 1);
    /* a check on one in the middle: back at its place, not on top */
    ck_assert_int_eq(tide_pool_hold(p, &many[40]), 0);
    ck_assert_int_eq(tide_pool_give(p, &many[40], TIDE_US(90)), 1);
    ck_assert_int_eq(tide_pool_idle(p), 66);
    void *out[96];
    size_t n = tide_pool_evict(p, TIDE_US(90) + TIDE_MS(10), out, 96);
    ck_assert_uint_eq(n, 66);
    for (int k = 0; k < 66; k++)
        ck_assert_ptr_eq(out[k], &many[20 + k]);
    ck_assert_int_eq(tide_pool_live(p), 0);
    tide_pool_free(p);
}
END_TEST

START_TEST(refusal_is_zero_without_breaker)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), NULL);
    ck_assert(tide_pool_refusal(p, 0) == 0.0);
    ck_assert_ptr_null(tide_pool_breaker(p));
    tide_pool_free(p);
}
END_TEST

/* ---- the ward, as the pool applies it ---- */

START_TEST(inactive_breaker_sheds_even_with_idle)
{
    struct tide_breaker_options bo = {0};
    struct tide_ward w = {.breaker = &bo};
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), &w);
    fill_idle(p, 2, 0);
    tide_breaker_deactivate(tide_pool_breaker(p), 1);
    struct tide_taken t = tide_pool_take(p, 1, 0.99);
    ck_assert_int_eq(t.answer, TIDE_SHED);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BREAKER);
    ck_assert(tide_pool_refusal(p, 1) == 1.0);
    tide_breaker_activate(tide_pool_breaker(p), 2);
    ck_assert_int_eq(tide_pool_take(p, 2, 0.99).answer, TIDE_READY);
    tide_pool_free(p);
}
END_TEST

START_TEST(adaptive_breaker_refuses_makes_after_failures)
{
    struct tide_breaker_options bo = {.k = 2};
    struct tide_ward w = {.breaker = &bo};
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), &w);
    /* 9 failed makes: p = (9 - 0) / 10 = 0.9 */
    for (int i = 0; i < 9; i++) {
        ck_assert_int_eq(tide_pool_take(p, 0, 0.999).answer, TIDE_MAKE);
        ck_assert_int_eq(tide_pool_unmade(p, 0, 0.5), 0);
    }
    ck_assert_double_eq_tol(tide_pool_refusal(p, 0), 0.9, 1e-9);
    struct tide_taken t = tide_pool_take(p, 0, 0.5);
    ck_assert_int_eq(t.answer, TIDE_SHED);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BREAKER);
    /* a roll above the share is let through */
    ck_assert_int_eq(tide_pool_take(p, 0, 0.95).answer, TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

/* Successes made through the pool count in the breaker's share as those
 * reported to it directly do. */
START_TEST(adaptive_breaker_counts_successes_made_through_the_pool)
{
    struct tide_breaker_options bo = {.k = 2};
    struct tide_ward w = {.breaker = &bo};
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 64), &w);
    for (int i = 0; i < 10; i++)
        make_one(p, &res[i], 0);
    ck_assert_double_eq(tide_pool_refusal(p, 0), 0.0);
    /* 30 failed: p = (40 - 2 x 10) / 41 */
    for (int i = 0; i < 30; i++) {
        ck_assert_int_eq(tide_pool_take(p, 0, 0.999).answer, TIDE_MAKE);
        ck_assert_int_eq(tide_pool_unmade(p, 0, 0.5), 0);
    }
    ck_assert_double_eq_tol(tide_pool_refusal(p, 0), 20.0 / 41.0, 1e-12);
    /* and they slide out of the window with their tick */
    ck_assert_double_eq(tide_pool_refusal(p, TIDE_MIN(3)), 0.0);
    tide_pool_free(p);
}
END_TEST

START_TEST(strikes_breaker_forgives_failures_after_a_make)
{
    struct tide_breaker_options bo = {.policy = TIDE_BREAKER_STRIKES,
                                      .strikes = 3};
    struct tide_ward w = {.breaker = &bo};
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), &w);
    struct tide_breaker *b = tide_pool_breaker(p);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 2; i++) {
            ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
            ck_assert_int_eq(tide_pool_unmade(p, 0, 0.5), 0);
        }
        ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_ACTIVE);
        make_one(p, &res[round], 0); /* two in a row, then one made */
    }
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
        ck_assert_int_eq(tide_pool_unmade(p, 0, 0.5), 0);
    }
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_INACTIVE);
    tide_pool_free(p);
}
END_TEST

START_TEST(recovering_admits_bounded_probes)
{
    struct tide_breaker_options bo = {.policy = TIDE_BREAKER_STRIKES,
                                      .strikes = 2,
                                      .cooldown = TIDE_SEC(5),
                                      .probes = 1};
    struct tide_ward w = {.breaker = &bo};
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), &w);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
        ck_assert_int_eq(tide_pool_unmade(p, 0, 0.5), 0);
    }
    struct tide_breaker *b = tide_pool_breaker(p);
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_INACTIVE);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(4), 0.5).answer, TIDE_SHED);
    /* after the cooldown: one probe, the next is refused */
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(5), 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_RECOVERING);
    struct tide_taken t = tide_pool_take(p, TIDE_SEC(5), 0.5);
    ck_assert_int_eq(t.answer, TIDE_SHED);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BREAKER);
    ck_assert_int_eq(tide_pool_made(p, &res[0], TIDE_SEC(6)), 0);
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_ACTIVE);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(6), 0.5).answer, TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

/* Only a failure holds makes: not the pool's creation, nor a success,
 * whatever the clock says after them. */
START_TEST(backoff_holds_nothing_without_a_failure)
{
    struct tide_backoff bk = {.jitter = TIDE_JITTER_RIGID};
    struct tide_ward w = {.backoff = &bk};
    struct tide_pool *p = NULL;
    struct tide_limits l = TIDE_LIMITS(0);
    ck_assert_int_eq(tide_pool_new(&l, &w, TIDE_SEC(10), &p), 0);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(9), 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_unmade(p, TIDE_SEC(9), 0.5), 0);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(9), 0.5).answer, TIDE_LATER);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(10), 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, &res[0], TIDE_SEC(10)), 0);
    ck_assert_int_eq(tide_pool_take(p, TIDE_SEC(8), 0.5).answer, TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

START_TEST(backoff_holds_makes_after_a_failure)
{
    struct tide_backoff bk = {.jitter = TIDE_JITTER_RIGID};
    struct tide_ward w = {.backoff = &bk};
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), &w);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_unmade(p, 0, 0.5), 0);
    struct tide_taken t = tide_pool_take(p, TIDE_MS(30), 0.5);
    ck_assert_int_eq(t.answer, TIDE_LATER);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BACKOFF);
    ck_assert_int_eq(t.span, TIDE_MS(70));
    /* the second failure in a row doubles the delay */
    ck_assert_int_eq(tide_pool_take(p, TIDE_MS(100), 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_unmade(p, TIDE_MS(100), 0.5), 0);
    t = tide_pool_take(p, TIDE_MS(100), 0.5);
    ck_assert_int_eq(t.answer, TIDE_LATER);
    ck_assert_int_eq(t.span, TIDE_MS(200));
    /* a success resets it */
    ck_assert_int_eq(tide_pool_take(p, TIDE_MS(300), 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, &res[0], TIDE_MS(300)), 0);
    ck_assert_int_eq(tide_pool_take(p, TIDE_MS(300), 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_unmade(p, TIDE_MS(300), 0.5), 0);
    t = tide_pool_take(p, TIDE_MS(300), 0.5);
    ck_assert_int_eq(t.span, TIDE_MS(100));
    tide_pool_free(p);
}
END_TEST

START_TEST(bucket_spaces_makes_out)
{
    struct tide_bucket_options bo = {.rate = 10, .burst = 1};
    struct tide_ward w = {.bucket = &bo};
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), &w);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    struct tide_taken t = tide_pool_take(p, TIDE_MS(40), 0.5);
    ck_assert_int_eq(t.answer, TIDE_LATER);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BUCKET);
    ck_assert_int_eq(t.span, TIDE_MS(60));
    ck_assert_int_eq(tide_pool_take(p, TIDE_MS(100), 0.5).answer, TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

START_TEST(bucket_does_not_hold_idle_resources)
{
    struct tide_bucket_options bo = {.rate = 1, .burst = 1};
    struct tide_ward w = {.bucket = &bo};
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), &w);
    fill_idle(p, 1, 0);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_READY);
    tide_pool_free(p);
}
END_TEST

START_TEST(shedder_sheds_on_loop_lag)
{
    struct tide_shedder_options so = {.lag_target = TIDE_MS(50)};
    struct tide_ward w = {.shedder = &so};
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), &w);
    fill_idle(p, 3, 0);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_READY);
    /* one lent, lag 200 ms: ceiling = max(1, 1 x 0.5) = 1 */
    tide_pool_overload(p, 1, TIDE_MS(200));
    struct tide_taken t = tide_pool_take(p, 2, 0.5);
    ck_assert_int_eq(t.answer, TIDE_SHED);
    ck_assert_int_eq(t.guard, TIDE_GUARD_SHEDDER);
    tide_pool_free(p);
}
END_TEST

START_TEST(every_refusal_names_its_guard)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 1), NULL);
    make_one(p, &res[0], 0);
    struct tide_taken t = tide_pool_take(p, 0, 0.5);
    ck_assert_int_eq(t.answer, TIDE_WAIT);
    ck_assert_int_eq(t.guard, TIDE_GUARD_NONE);
    ck_assert_ptr_null(t.item);
    tide_pool_free(p);
}
END_TEST

/* made_untried leaves the make's outcome open: the breaker hears nothing
 * and the backoff keeps its count until tried() settles it. */
START_TEST(made_untried_waits_for_tried)
{
    struct tide_breaker_options bo = {.policy = TIDE_BREAKER_STRIKES,
                                      .strikes = 3};
    struct tide_backoff bk = {.jitter = TIDE_JITTER_RIGID};
    struct tide_ward w = {.breaker = &bo, .backoff = &bk};
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), &w);
    struct tide_breaker *b = tide_pool_breaker(p);
    /* a server that accepts and closes at once, three times: each make
     * "succeeds", each resource dies before its first loan */
    int64_t now = 0;
    for (int k = 0; k < 3; k++) {
        struct tide_taken t = tide_pool_take(p, now, 0.5);
        ck_assert_int_eq(t.answer, TIDE_MAKE);
        ck_assert_int_eq(tide_pool_made_untried(p, &res[k], now), 0);
        ck_assert_int_eq(tide_pool_give(p, &res[k], now), 1);
        ck_assert_int_eq(tide_pool_drop(p, &res[k], now), 0);
        tide_pool_tried(p, now, 0.5, false);
        /* backoff grows from its count: 100, 200, 400 ms */
        t = tide_pool_take(p, now, 0.5);
        ck_assert_int_eq(t.answer, k < 2 ? TIDE_LATER : TIDE_SHED);
        if (k < 2)
            ck_assert_int_eq(t.span, TIDE_MS(100) << k);
        now += TIDE_MS(100) << k;
    }
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_INACTIVE);
    tide_pool_free(p);
}
END_TEST

START_TEST(tried_ok_is_the_makes_success)
{
    struct tide_breaker_options bo = {.policy = TIDE_BREAKER_STRIKES,
                                      .strikes = 2};
    struct tide_backoff bk = {.jitter = TIDE_JITTER_RIGID};
    struct tide_ward w = {.breaker = &bo, .backoff = &bk};
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), &w);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_unmade(p, 0, 0.5), 0); /* failure 1 */
    int64_t now = TIDE_MS(100);
    ck_assert_int_eq(tide_pool_take(p, now, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made_untried(p, &res[0], now), 0);
    /* untried: the failure count stays until tried settles it */
    tide_pool_tried(p, now, 0.5, true);
    ck_assert_int_eq(tide_pool_take(p, now, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_unmade(p, now, 0.5), 0); /* failure 1 again */
    ck_assert_int_eq(tide_breaker_state(tide_pool_breaker(p)),
                     TIDE_BREAKER_ACTIVE);
    struct tide_taken t = tide_pool_take(p, now, 0.5);
    ck_assert_int_eq(t.answer, TIDE_LATER);
    ck_assert_int_eq(t.span, TIDE_MS(100)); /* counted from 0 again */
    tide_pool_free(p);
}
END_TEST

/* report feeds the breaker only: an accepted release forgives strikes,
 * a discard adds one, and backoff is not touched. */
START_TEST(report_feeds_the_breaker_not_the_backoff)
{
    struct tide_breaker_options bo = {.policy = TIDE_BREAKER_STRIKES,
                                      .strikes = 2};
    struct tide_backoff bk = {.jitter = TIDE_JITTER_RIGID};
    struct tide_ward w = {.breaker = &bo, .backoff = &bk};
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), &w);
    struct tide_breaker *b = tide_pool_breaker(p);
    make_one(p, &res[0], 0);
    tide_pool_report(p, 0, false);
    tide_pool_report(p, 0, true);
    tide_pool_report(p, 0, false);
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_ACTIVE);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_READY);
    tide_pool_report(p, 0, false);
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_INACTIVE);
    tide_breaker_activate(b, 0);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE); /* no hold */
    tide_pool_free(p);
    /* without a breaker, a report is harmless */
    p = new_pool(TIDE_LIMITS(0), NULL);
    tide_pool_report(p, 0, false);
    tide_pool_report(p, 0, true);
    tide_pool_tried(p, 0, 0.5, false);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

/* Makes held while makes fail: after a failed make, takes and grows
 * alike answer LATER until the delay has passed; then one make (a probe)
 * goes at a time, the rest WAIT on it, until one succeeds; a failure of
 * the probe holds again, longer; a success lifts both at once. */
START_TEST(failed_make_holds_makes_then_lets_one_probe_through)
{
    struct tide_backoff bk = {.jitter = TIDE_JITTER_RIGID};
    struct tide_ward w = {.backoff = &bk};
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 8), &w);
    int res[4];
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_unmade(p, 0, 0.5), 0);
    struct tide_taken t = tide_pool_take(p, TIDE_MS(30), 0.5);
    ck_assert_int_eq(t.answer, TIDE_LATER);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BACKOFF);
    ck_assert_int_eq(t.span, TIDE_MS(70));
    t = tide_pool_grow(p, TIDE_MS(30), 0.5);
    ck_assert_int_eq(t.answer, TIDE_LATER);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BACKOFF);
    /* the hold is over: one probe, and the next waits on it */
    ck_assert_int_eq(tide_pool_take(p, TIDE_MS(100), 0.5).answer, TIDE_MAKE);
    t = tide_pool_take(p, TIDE_MS(100), 0.5);
    ck_assert_int_eq(t.answer, TIDE_WAIT);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BACKOFF);
    t = tide_pool_grow(p, TIDE_MS(100), 0.5);
    ck_assert_int_eq(t.answer, TIDE_WAIT);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BACKOFF);
    ck_assert_int_eq(tide_pool_busy(p), 1); /* nothing else reserved */
    struct tide_pool_guards g;
    tide_pool_guards(p, TIDE_MS(100), &g);
    ck_assert(g.backoff_probing);
    /* made, though not proven yet: the next make may go (nobody waits on
     * another's loan), and is the next probe */
    ck_assert_int_eq(tide_pool_made_untried(p, &res[0], TIDE_MS(101)), 0);
    tide_pool_guards(p, TIDE_MS(101), &g);
    ck_assert(!g.backoff_probing);
    ck_assert_int_eq(tide_pool_take(p, TIDE_MS(101), 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_take(p, TIDE_MS(101), 0.5).answer, TIDE_WAIT);
    /* the first dies before it served: held again, for the next delay
     * (the make under way runs on) */
    tide_pool_tried(p, TIDE_MS(102), 0.5, false);
    ck_assert_int_eq(tide_pool_drop(p, &res[0], TIDE_MS(102)), 0);
    t = tide_pool_take(p, TIDE_MS(102), 0.5);
    ck_assert_int_eq(t.answer, TIDE_LATER);
    ck_assert_int_eq(t.span, TIDE_MS(200));
    tide_pool_guards(p, TIDE_MS(102), &g);
    ck_assert(!g.backoff_probing);
    ck_assert_int_eq(g.backoff_failures, 2);
    /* the next probe succeeds: makes go on at once, side by side */
    ck_assert_int_eq(tide_pool_take(p, TIDE_MS(302), 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_take(p, TIDE_MS(302), 0.5).answer, TIDE_WAIT);
    ck_assert_int_eq(tide_pool_made(p, &res[1], TIDE_MS(303)), 0);
    ck_assert_int_eq(tide_pool_take(p, TIDE_MS(303), 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_take(p, TIDE_MS(303), 0.5).answer, TIDE_MAKE);
    tide_pool_guards(p, TIDE_MS(303), &g);
    ck_assert(!g.backoff_probing);
    ck_assert_int_eq(g.backoff_failures, 0);
    ck_assert_int_eq(g.backoff_hold, 0);
    tide_pool_free(p);
}
END_TEST

/* Makes that succeed are never held or serialised, with a backoff or
 * without; and without one a failure holds nothing (a bare pool). */
START_TEST(makes_that_succeed_are_never_held)
{
    struct tide_backoff bk = {0};
    struct tide_ward w = {.backoff = &bk};
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 8), &w);
    int res[8];
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(tide_pool_made(p, &res[k], 0), 0);
    tide_pool_free(p);
    p = new_pool(TIDE_LIMITS(.size = 8), NULL);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_unmade(p, 0, 0.5), 0);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    tide_pool_free(p);
}
END_TEST

/* lendable: something idle, or room beside other loans; a resource that
 * is broken or drained offers none, whatever its count. */
START_TEST(lendable_is_idle_or_room_beside_loans)
{
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 2), NULL);
    int res[2];
    ck_assert(!tide_pool_lendable(p));
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, &res[0], 0), 0);
    ck_assert(!tide_pool_lendable(p)); /* lent: no room with streams 1 */
    ck_assert_int_eq(tide_pool_give(p, &res[0], 1), 1);
    ck_assert(tide_pool_lendable(p));
    tide_pool_free(p);
    p = new_pool(TIDE_LIMITS(.size = 2, .streams = 3), NULL);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_made(p, &res[1], 0), 0);
    ck_assert(tide_pool_lendable(p)); /* one loan of three */
    ck_assert_int_eq(tide_pool_set_streams(p, &res[1], 0), 1);
    ck_assert(!tide_pool_lendable(p)); /* drained */
    tide_pool_free(p);
    ck_assert(!tide_pool_lendable(NULL));
}
END_TEST

/* While a breaker recovers it decides who probes, and sheds the rest at
 * once, rather than have them wait on the backoff's probe. */
START_TEST(recovering_breaker_sheds_beside_the_probe)
{
    struct tide_breaker_options bo = {
        .policy = TIDE_BREAKER_STRIKES, .strikes = 1, .cooldown = TIDE_MS(10)};
    struct tide_backoff bk = {.jitter = TIDE_JITTER_RIGID};
    struct tide_ward w = {.breaker = &bo, .backoff = &bk};
    struct tide_pool *p = new_pool(TIDE_LIMITS(.size = 8), &w);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_unmade(p, 0, 0.5), 0);
    ck_assert_int_eq(tide_breaker_state(tide_pool_breaker(p)),
                     TIDE_BREAKER_INACTIVE);
    ck_assert_int_eq(tide_pool_take(p, TIDE_MS(200), 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_breaker_state(tide_pool_breaker(p)),
                     TIDE_BREAKER_RECOVERING);
    struct tide_taken t = tide_pool_take(p, TIDE_MS(200), 0.5);
    ck_assert_int_eq(t.answer, TIDE_SHED);
    ck_assert_int_eq(t.guard, TIDE_GUARD_BREAKER);
    tide_pool_free(p);
}
END_TEST

/* The guards read back what they hold: tokens spent, a hold after a
 * failure, a ceiling cut by lag; absent ones read -1 or 0. */
START_TEST(guards_read_back_what_they_hold)
{
    struct tide_pool_guards g;
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), NULL);
    tide_pool_guards(p, 0, &g);
    ck_assert(g.bucket_tokens == -1.0 && g.shedder_ceiling == -1.0);
    ck_assert_int_eq(g.backoff_hold, 0);
    tide_pool_free(p);
    struct tide_bucket_options bu = {.rate = 10, .burst = 2};
    struct tide_backoff bk = {.jitter = TIDE_JITTER_RIGID};
    struct tide_shedder_options sh = {0};
    struct tide_ward w = {.bucket = &bu, .backoff = &bk, .shedder = &sh};
    p = new_pool(TIDE_LIMITS(.size = 8), &w);
    tide_pool_guards(p, 0, &g);
    ck_assert(g.bucket_tokens == 2.0);
    ck_assert(g.shedder_ceiling == 8.0);
    ck_assert_int_eq(tide_pool_take(p, 0, 0.5).answer, TIDE_MAKE);
    ck_assert_int_eq(tide_pool_unmade(p, 0, 0.5), 0);
    tide_pool_guards(p, 0, &g);
    ck_assert(g.bucket_tokens == 1.0);
    ck_assert_int_eq(g.backoff_hold, TIDE_MS(100));
    ck_assert_int_eq(g.backoff_failures, 1);
    tide_pool_guards(p, TIDE_MS(40), &g);
    ck_assert_int_eq(g.backoff_hold, TIDE_MS(60));
    tide_pool_overload(p, TIDE_MS(40), TIDE_SEC(1)); /* the loop lags */
    tide_pool_guards(p, TIDE_MS(40), &g);
    ck_assert(g.shedder_ceiling < 8.0);
    tide_pool_guards(NULL, 0, &g);
    ck_assert(g.bucket_tokens == -1.0);
    tide_pool_guards(p, 0, NULL);
    tide_pool_free(p);
}
END_TEST

/* NULL where a pool or a resource belongs: an error code or a calm
 * nothing, never a crash. */
START_TEST(null_is_answered_calmly)
{
    void *out[4];
    ck_assert_int_eq(tide_pool_take(NULL, 0, 0.5).answer, TIDE_SHED);
    ck_assert_int_eq(tide_pool_take(NULL, 0, 0.5).guard, TIDE_GUARD_CLOSED);
    ck_assert_int_eq(tide_pool_grow(NULL, 0, 0.5).answer, TIDE_SHED);
    ck_assert_int_eq(tide_pool_take_idle(NULL, 0).answer, TIDE_SHED);
    ck_assert_int_eq(tide_pool_made(NULL, &res[0], 0), TIDE_EINVAL);
    ck_assert_int_eq(tide_pool_made_untried(NULL, &res[0], 0), TIDE_EINVAL);
    ck_assert_int_eq(tide_pool_unmade(NULL, 0, 0.5), TIDE_EINVAL);
    ck_assert_int_eq(tide_pool_give(NULL, &res[0], 0), TIDE_EINVAL);
    ck_assert_int_eq(tide_pool_give_at(NULL, 0, &res[0], 0), TIDE_EINVAL);
    ck_assert_uint_eq(tide_pool_slot(NULL, &res[0]), TIDE_NO_SLOT);
    ck_assert_int_eq(tide_pool_drop(NULL, &res[0], 0), TIDE_EINVAL);
    ck_assert_int_eq(tide_pool_hold(NULL, &res[0]), TIDE_EINVAL);
    ck_assert_uint_eq(tide_pool_evict(NULL, 0, out, 4), 0);
    ck_assert_uint_eq(tide_pool_close(NULL, out, 4), 0);
    ck_assert_int_eq(tide_pool_live(NULL), 0);
    ck_assert_int_eq(tide_pool_idle(NULL), 0);
    ck_assert_int_eq(tide_pool_busy(NULL), 0);
    ck_assert(tide_pool_refusal(NULL, 0) == 0.0);
    ck_assert_ptr_null(tide_pool_breaker(NULL));
    ck_assert_int_eq(tide_pool_limits(NULL).size, 10);
    tide_pool_overload(NULL, 0, 1);
    tide_pool_tried(NULL, 0, 0.5, true);
    tide_pool_report(NULL, 0, false);
    tide_pool_free(NULL);
    struct tide_pool *p = new_pool(TIDE_LIMITS(0), NULL);
    ck_assert_int_eq(tide_pool_made(p, NULL, 0), TIDE_EINVAL);
    ck_assert_int_eq(tide_pool_give(p, NULL, 0), TIDE_EINVAL);
    ck_assert_int_eq(tide_pool_drop(p, NULL, 0), TIDE_EINVAL);
    ck_assert_int_eq(tide_pool_hold(p, NULL), TIDE_EINVAL);
    ck_assert_uint_eq(tide_pool_evict(p, 0, NULL, 4), 0);
    make_one(p, &res[0], 0);
    ck_assert_int_eq(tide_pool_give(p, &res[0], 0), 1);
    ck_assert_uint_eq(tide_pool_close(p, NULL, 4), 0); /* closed, none out */
    ck_assert_uint_eq(tide_pool_close(p, out, 4), 1);
    struct tide_pool *const none[2] = {NULL, NULL};
    ck_assert_int_ge(tide_pick(none, 2, 0, 0.1, 0.9), 0);
    tide_pool_free(p);
}
END_TEST

static Suite *pool_suite(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tcase_create("answers");
    tcase_add_test(tc, presets_when_limits_null);
    tcase_add_test(tc, new_refuses_bad_limits_and_null_out);
    tcase_add_test(tc, empty_pool_answers_make_and_reserves);
    tcase_add_test(tc, made_registers_as_lent);
    tcase_add_test(tc, give_keeps_it_idle);
    tcase_add_test(tc, take_hands_out_most_recently_returned);
    tcase_add_test(tc, give_past_idle_limit_is_not_kept);
    tcase_add_test(tc, wait_when_every_slot_in_use);
    tcase_add_test(tc, must_wait_exactly_where_take_waits);
    tcase_add_test(tc, stale_after_keep_is_out_of_pool_and_count);
    tcase_add_test(tc, life_retires_a_resource_reused_all_along);
    tcase_add_test(tc, give_does_not_reset_birth);
    tcase_add_test(tc, unknown_give_fills_reservation_born_now);
    tcase_add_test(tc, drop_keeps_live_count_honest);
    tcase_add_test(tc, drop_removes_an_idle_one_found_dead);
    tcase_add_test(tc, unknown_drop_fills_reservation_then_drops);
    tcase_add_test(tc, evict_hands_back_past_keep_or_life);
    tcase_add_test(tc, evict_stops_at_n_and_continues);
    tcase_add_test(tc, close_hands_back_idle_and_refuses_after);
    tcase_add_test(tc, spread_shortens_life_by_the_make_roll);
    tcase_add_test(tc, unlimited_size_grows);
    tcase_add_test(tc, refusal_is_zero_without_breaker);
    tcase_add_test(tc, grow_makes_room_even_with_idle);
    tcase_add_test(tc, held_resource_is_busy_and_not_lent);
    tcase_add_test(tc, held_resource_keeps_its_rest_time);
    tcase_add_test(tc, held_resource_dropped_when_check_fails);
    tcase_add_test(tc, idle_order_holds_when_holes_are_closed);
    tcase_add_test(tc, idle_order_holds_across_growth);
    tcase_add_test(tc, held_one_back_on_top_is_lent_not_the_last_pushed);
    tcase_add_test(tc, burst_through_a_big_pool_lends_each_once_newest_first);
    tcase_add_test(tc, clock_behind_the_give_lends_not_stale);
    suite_add_tcase(s, tc);

    tc = tcase_create("misuse");
    tcase_add_test(tc, double_give_is_reported_and_counts_stay);
    tcase_add_test(tc, unknown_give_without_reservation_is_reported);
    tcase_add_test(tc, made_without_reservation_is_reported);
    tcase_add_test(tc, made_twice_with_one_item_is_reported);
    tcase_add_test(tc, unmade_frees_the_reservation);
    suite_add_tcase(s, tc);

    tc = tcase_create("ward");
    tcase_add_test(tc, inactive_breaker_sheds_even_with_idle);
    tcase_add_test(tc, adaptive_breaker_refuses_makes_after_failures);
    tcase_add_test(tc, adaptive_breaker_counts_successes_made_through_the_pool);
    tcase_add_test(tc, strikes_breaker_forgives_failures_after_a_make);
    tcase_add_test(tc, recovering_admits_bounded_probes);
    tcase_add_test(tc, backoff_holds_makes_after_a_failure);
    tcase_add_test(tc, backoff_holds_nothing_without_a_failure);
    tcase_add_test(tc, bucket_spaces_makes_out);
    tcase_add_test(tc, bucket_does_not_hold_idle_resources);
    tcase_add_test(tc, shedder_sheds_on_loop_lag);
    tcase_add_test(tc, every_refusal_names_its_guard);
    tcase_add_test(tc, made_untried_waits_for_tried);
    tcase_add_test(tc, failed_make_holds_makes_then_lets_one_probe_through);
    tcase_add_test(tc, makes_that_succeed_are_never_held);
    tcase_add_test(tc, lendable_is_idle_or_room_beside_loans);
    tcase_add_test(tc, recovering_breaker_sheds_beside_the_probe);
    tcase_add_test(tc, tried_ok_is_the_makes_success);
    tcase_add_test(tc, report_feeds_the_breaker_not_the_backoff);
    tcase_add_test(tc, null_is_answered_calmly);
    tcase_add_test(tc, guards_read_back_what_they_hold);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(pool_suite)
