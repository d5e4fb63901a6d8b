/* Differential: a pool with an empty ward answers exactly as one without,
 * over random sequences of every operation. */
#include <tidepool/core.h>

#include "rng.h"
#include "runner.h"

static char arena[256];

static void same_answer(struct tide_taken a, struct tide_taken b)
{
    ck_assert_int_eq(a.answer, b.answer);
    ck_assert_ptr_eq(a.item, b.item);
    ck_assert_int_eq(a.span, b.span);
    ck_assert_int_eq(a.guard, b.guard);
}

static void same_counts(struct tide_pool *a, struct tide_pool *b, int64_t now)
{
    ck_assert_int_eq(tide_pool_live(a), tide_pool_live(b));
    ck_assert_int_eq(tide_pool_idle(a), tide_pool_idle(b));
    ck_assert_int_eq(tide_pool_busy(a), tide_pool_busy(b));
    ck_assert(tide_pool_refusal(a, now) == tide_pool_refusal(b, now));
}

START_TEST(empty_ward_answers_exactly_as_no_ward)
{
    uint64_t rng = UINT64_C(0x656d707479);
    const struct tide_ward empty = {0};
    for (int episode = 0; episode < 200; episode++) {
        struct tide_limits l = {
            .size = 1 + rng_below(&rng, 6),
            .idle = 1 + rng_below(&rng, 6),
            .keep = TIDE_MS(1 + rng_below(&rng, 50)),
            .life = TIDE_MS(1 + rng_below(&rng, 300)),
            .spread = rng_roll(&rng),
        };
        struct tide_pool *bare = NULL, *warded = NULL;
        ck_assert_int_eq(tide_pool_new(&l, NULL, 0, &bare), 0);
        ck_assert_int_eq(tide_pool_new(&l, &empty, 0, &warded), 0);
        int64_t now = 0;
        for (int step = 0; step < 5000; step++) {
            now += TIDE_US(rng_below(&rng, 3000));
            double roll = rng_roll(&rng);
            void *item = &arena[rng_below(&rng, sizeof arena)];
            void *out_a[4], *out_b[4];
            switch (rng_below(&rng, 10)) {
            case 0:
            case 1:
            case 2:
                same_answer(tide_pool_take(bare, now, roll),
                            tide_pool_take(warded, now, roll));
                break;
            case 3:
                ck_assert_int_eq(tide_pool_made(bare, item, now),
                                 tide_pool_made(warded, item, now));
                break;
            case 4:
                ck_assert_int_eq(tide_pool_unmade(bare, now, roll),
                                 tide_pool_unmade(warded, now, roll));
                break;
            case 5:
            case 6:
                ck_assert_int_eq(tide_pool_give(bare, item, now),
                                 tide_pool_give(warded, item, now));
                break;
            case 7:
                ck_assert_int_eq(tide_pool_drop(bare, item, now),
                                 tide_pool_drop(warded, item, now));
                break;
            case 8: /* an untried make, and the outcomes that follow it */
                ck_assert_int_eq(tide_pool_made_untried(bare, item, now),
                                 tide_pool_made_untried(warded, item, now));
                tide_pool_tried(bare, now, roll, roll < 0.5);
                tide_pool_tried(warded, now, roll, roll < 0.5);
                tide_pool_report(bare, now, roll < 0.7);
                tide_pool_report(warded, now, roll < 0.7);
                break;
            default: {
                size_t a = tide_pool_evict(bare, now, out_a, 4);
                ck_assert_uint_eq(a, tide_pool_evict(warded, now, out_b, 4));
                for (size_t k = 0; k < a; k++)
                    ck_assert_ptr_eq(out_a[k], out_b[k]);
            }
            }
            same_counts(bare, warded, now);
        }
        tide_pool_free(bare);
        tide_pool_free(warded);
    }
}
END_TEST

static Suite *differential_suite(void)
{
    Suite *s = suite_create("ward_differential");
    TCase *tc = tcase_create("differential");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, empty_ward_answers_exactly_as_no_ward);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(differential_suite)
