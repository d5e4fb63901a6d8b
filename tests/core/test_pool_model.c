/* Model-based test: a million random operations on real pools, each answer
 * checked against the reference model and the invariants after every step
 * (see pool_model.h). Misuse is part of the mix. */
#include <stdio.h>
#include <stdlib.h>

#include "pool_model.h"
#include "rng.h"
#include "runner.h"

void drive_failed(const char *what, const char *file, int line)
{
    ck_abort_msg("%s:%d: model check failed: %s", file, line, what);
}

#define EPISODES 1000
#define STEPS    1000

/* How many loans a resource may carry in an episode. */
enum streams {
    ONE_LOAN, /* streams 1: the exclusive pool */
    SHARED,   /* 2 to 8, pack or spread */
    EITHER,   /* one or the other, by the episode */
    MANY,     /* 60 to 140: rooms in one word (up to 64 streams) or in
                 levels, whose takes and gives go different ways */
};

/* Random limits small enough that every answer comes up often. */
static struct tide_limits random_limits(uint64_t *rng, bool spread,
                                        enum streams streams)
{
    struct tide_limits l = {0};
    l.size = 1 + rng_below(rng, 12);
    l.idle = 1 + rng_below(rng, (uint32_t)l.size + 2);
    l.keep = rng_below(rng, 4) == 0 ? TIDE_FOREVER
                                    : TIDE_MS(1 + rng_below(rng, 200));
    l.life = rng_below(rng, 3) == 0 ? TIDE_FOREVER
                                    : TIDE_MS(1 + rng_below(rng, 1000));
    l.spread = spread && rng_below(rng, 2) ? rng_roll(rng) : 0.0;
    if (streams == SHARED || (streams == EITHER && rng_below(rng, 2)))
        l.streams = 2 + rng_below(rng, 7);
    else if (streams == MANY)
        l.streams = 60 + rng_below(rng, 81);
    l.sharing = rng_below(rng, 2) ? TIDE_SHARING_SPREAD : TIDE_SHARING_PACK;
    return l;
}

/* Demand and preconnect, each on in most episodes: windows short enough
 * that peaks come and go within an episode, every share of retire. */
static void random_demand(uint64_t *rng, struct tide_limits *l)
{
    if (rng_below(rng, 4))
        l->demand = TIDE_MS(1 + rng_below(rng, 400));
    l->retire = rng_below(rng, 4) ? rng_roll(rng) : 1.0;
    if (rng_below(rng, 4))
        l->preconnect = rng_below(rng, 4) ? rng_roll(rng) : 1.0;
}

static void run_episodes_with(uint64_t seed, const struct tide_ward *ward,
                              bool spread, enum streams streams, bool demand,
                              long *shrunk, long *preconnects)
{
    static struct drive d;
    uint64_t rng = seed;
    long ops = 0;
    for (int e = 0; e < EPISODES; e++) {
        struct tide_limits l = random_limits(&rng, spread, streams);
        if (demand)
            random_demand(&rng, &l);
        ck_assert_int_eq(drive_init(&d, &l, ward), 0);
        for (int s = 0; s < STEPS; s++) {
            uint32_t op = (uint32_t)rng_next(&rng);
            uint32_t arg = (uint32_t)rng_next(&rng);
            /* mostly short steps, so idle resources pile up; now and
                             then a long one, so keep and life expire */
            int64_t dt = rng_below(&rng, 8) == 0
                             ? TIDE_US(rng_below(&rng, 50000))
                             : TIDE_US(rng_below(&rng, 500));
            drive_step(&d, op, arg, rng_roll(&rng), dt);
            ops++;
        }
        if (shrunk)
            *shrunk += d.dm_shrunk;
        if (preconnects)
            *preconnects += d.dm_preconnects;
        drive_finish(&d);
    }
    ck_assert_int_ge(ops, 1000000);
}

static void run_episodes(uint64_t seed, const struct tide_ward *ward,
                         bool spread, enum streams streams)
{
    run_episodes_with(seed, ward, spread, streams, false, NULL, NULL);
}

/* Demand's notes, preconnects, shrinks and reads among the rest: each
 * answer as the model's (its window shifted, where the pool keeps a
 * ring), shrink handing back the oldest idle ones only, never below what
 * the peak needs nor below the floor asked. Both show up often. */
START_TEST(million_demand_operations_match_the_model)
{
    long shrunk = 0;
    long preconnects = 0;
    run_episodes_with(UINT64_C(0x64656d616e64), NULL, true, EITHER, true,
                      &shrunk, &preconnects);
    ck_assert_int_gt(shrunk, 1000);
    ck_assert_int_gt(preconnects, 1000);
}
END_TEST

START_TEST(demand_with_full_ward_keeps_invariants)
{
    struct tide_breaker_options breaker = {.window = TIDE_SEC(1)};
    struct tide_bucket_options bucket = {.rate = 2000, .burst = 4};
    struct tide_backoff backoff = {.base = TIDE_MS(1), .cap = TIDE_MS(20)};
    struct tide_shedder_options shedder = {.loan_target = TIDE_MS(50)};
    struct tide_ward w = {.breaker = &breaker,
                          .bucket = &bucket,
                          .backoff = &backoff,
                          .shedder = &shedder};
    run_episodes_with(UINT64_C(0x64656d77), &w, false, EITHER, true, NULL,
                      NULL);
}
END_TEST

START_TEST(million_operations_match_the_model)
{
    run_episodes(UINT64_C(0x7469646570), NULL, true, ONE_LOAN);
}
END_TEST

/* Shared loans: rooms picked by pack and spread, capacities changed and
 * drained, breaks and drops with loans out, exclusive loans, misuse. */
START_TEST(million_shared_operations_match_the_model)
{
    run_episodes(UINT64_C(0x736861726564), NULL, true, SHARED);
}
END_TEST

START_TEST(million_operations_with_many_streams_match_the_model)
{
    run_episodes(UINT64_C(0x6d616e79), NULL, true, MANY);
}
END_TEST

START_TEST(million_operations_with_full_ward_keep_invariants)
{
    /* The guards may refuse where the model would lend or make; every other
     * answer must still match, and nothing may be lost. */
    struct tide_breaker_options breaker = {.window = TIDE_SEC(1)};
    struct tide_bucket_options bucket = {.rate = 2000, .burst = 4};
    struct tide_backoff backoff = {.base = TIDE_MS(1), .cap = TIDE_MS(20)};
    struct tide_shedder_options shedder = {.loan_target = TIDE_MS(50)};
    struct tide_ward w = {.breaker = &breaker,
                          .bucket = &bucket,
                          .backoff = &backoff,
                          .shedder = &shedder};
    run_episodes(UINT64_C(0x77617264), &w, false, EITHER);
}
END_TEST

START_TEST(strikes_breaker_keeps_invariants)
{
    struct tide_breaker_options breaker = {.policy = TIDE_BREAKER_STRIKES,
                                           .strikes = 3,
                                           .cooldown = TIDE_MS(30),
                                           .probes = 2};
    struct tide_ward w = {.breaker = &breaker};
    run_episodes(UINT64_C(0x737472), &w, false, EITHER);
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("pool_model");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, million_operations_match_the_model);
    tcase_add_test(tc, million_shared_operations_match_the_model);
    tcase_add_test(tc, million_operations_with_many_streams_match_the_model);
    tcase_add_test(tc, million_operations_with_full_ward_keep_invariants);
    tcase_add_test(tc, strikes_breaker_keeps_invariants);
    tcase_add_test(tc, million_demand_operations_match_the_model);
    tcase_add_test(tc, demand_with_full_ward_keeps_invariants);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(model_suite)
