/* tide_pick: two pools drawn by two rolls; the one whose breaker refuses
 * less, then the one with fewer busy, then the first drawn.
 *
 * The header does not say which pool a roll draws, so these tests do not
 * assume a mapping: with two pools the pair drawn is always both of them,
 * and with more a pool made uniquely worse (or better) than the rest shows
 * whether it was drawn. */
#include <stdbool.h>

#include <tidepool/core.h>

#include "runner.h"

#define T0       TIDE_SEC(1000)
#define MAXPOOLS 8
#define NROLLS   18

static double grid[NROLLS];

static void setup(void)
{
    for (int i = 0; i < 16; i++)
        grid[i] = i / 16.0;
    grid[16] = 0.999;
    grid[17] = 0.3333;
}

/* One pool to pick from. `breaker`: give it a ward with a breaker (preset
 * ADAPTIVE, refusal 0); `down`: deactivate that breaker so it refuses
 * everything; `busy`: lend that many first. */
struct spec {
    bool breaker;
    bool down;
    int busy;
};

static int items[MAXPOOLS][8];

static struct tide_pool *pool(int index, struct spec s)
{
    struct tide_breaker_options bo = {0};
    struct tide_ward ward = {.breaker = &bo};
    struct tide_pool *p = NULL;
    ck_assert_int_eq(
        tide_pool_new(NULL, s.breaker || s.down ? &ward : NULL, T0, &p), 0);
    for (int i = 0; i < s.busy; i++) {
        struct tide_taken t = tide_pool_take(p, T0, 0.5);
        ck_assert_int_eq(t.answer, TIDE_MAKE);
        ck_assert_int_eq(tide_pool_made(p, &items[index][i], T0), 0);
    }
    ck_assert_int_eq(tide_pool_busy(p), s.busy);
    if (s.down)
        tide_breaker_deactivate(tide_pool_breaker(p), T0);
    ck_assert_double_eq(tide_pool_refusal(p, T0), s.down ? 1.0 : 0.0);
    return p;
}

static void build(struct tide_pool **pools, const struct spec *specs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        pools[i] = pool((int)i, specs[i]);
}

static void release(struct tide_pool **pools, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tide_pool_free(pools[i]);
}

/* Every pair of rolls on the grid picks `want`. */
static void assert_always(struct tide_pool **pools, size_t n, int want)
{
    for (int i = 0; i < NROLLS; i++)
        for (int j = 0; j < NROLLS; j++)
            ck_assert_msg(tide_pick(pools, n, T0, grid[i], grid[j]) == want,
                          "rolls %g %g picked %d, want %d", grid[i], grid[j],
                          tide_pick(pools, n, T0, grid[i], grid[j]), want);
}

START_TEST(no_pools_is_minus_one)
{
    struct tide_pool *pools[1] = {NULL};
    ck_assert_int_eq(tide_pick(NULL, 0, T0, 0.5, 0.5), -1);
    ck_assert_int_eq(tide_pick(pools, 0, T0, 0.0, 0.999), -1);
}
END_TEST

START_TEST(one_pool_is_index_zero)
{
    struct tide_pool *pools[1];
    const struct spec specs[] = {{.down = true, .busy = 2}};
    build(pools, specs, 1);
    assert_always(pools, 1, 0);
    release(pools, 1);
}
END_TEST

START_TEST(the_two_drawn_are_distinct)
{
    /* One pool busier than all the others can only win if it is drawn
     * twice. */
    const size_t sizes[] = {2, 3, 5};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        size_t n = sizes[z];
        for (size_t k = 0; k < n; k++) {
            struct spec specs[MAXPOOLS] = {{0}};
            specs[k].busy = 1;
            struct tide_pool *pools[MAXPOOLS];
            build(pools, specs, n);
            for (int i = 0; i < NROLLS; i++)
                for (int j = 0; j < NROLLS; j++) {
                    int got = tide_pick(pools, n, T0, grid[i], grid[j]);
                    ck_assert_int_ge(got, 0);
                    ck_assert_int_lt(got, (int)n);
                    ck_assert_msg(got != (int)k,
                                  "n %zu rolls %g %g drew pool %zu twice", n,
                                  grid[i], grid[j], k);
                }
            release(pools, n);
        }
    }
}
END_TEST

START_TEST(lower_refusal_wins)
{
    struct tide_pool *pools[2];
    const struct spec down_first[] = {{.down = true}, {.breaker = true}};
    build(pools, down_first, 2);
    assert_always(pools, 2, 1);
    release(pools, 2);
    const struct spec down_second[] = {{.breaker = true}, {.down = true}};
    build(pools, down_second, 2);
    assert_always(pools, 2, 0);
    release(pools, 2);
}
END_TEST

START_TEST(lower_refusal_wins_over_fewer_busy)
{
    struct tide_pool *pools[2];
    const struct spec with_breaker[] = {{.down = true, .busy = 0},
                                        {.breaker = true, .busy = 3}};
    build(pools, with_breaker, 2);
    assert_always(pools, 2, 1);
    release(pools, 2);
    const struct spec without_breaker[] = {{.busy = 3},
                                           {.down = true, .busy = 0}};
    build(pools, without_breaker, 2);
    assert_always(pools, 2, 0);
    release(pools, 2);
}
END_TEST

START_TEST(equal_refusal_fewer_busy_wins)
{
    struct tide_pool *pools[2];
    const struct spec no_breakers[] = {{.busy = 3}, {.busy = 1}};
    build(pools, no_breakers, 2);
    assert_always(pools, 2, 1);
    release(pools, 2);
    const struct spec both_up[] = {{.breaker = true, .busy = 1},
                                   {.breaker = true, .busy = 2}};
    build(pools, both_up, 2);
    assert_always(pools, 2, 0);
    release(pools, 2);
    const struct spec both_down[] = {{.down = true, .busy = 2},
                                     {.down = true, .busy = 0}};
    build(pools, both_down, 2);
    assert_always(pools, 2, 1);
    release(pools, 2);
}
END_TEST

START_TEST(tie_goes_to_the_first_drawn)
{
    enum { N = 3 };
    const struct spec ties[][N] = {
        {{0}, {0}, {0}},
        {{.busy = 1}, {.breaker = true, .busy = 1}, {.busy = 1}},
        {{.down = true, .busy = 2},
         {.down = true, .busy = 2},
         {.down = true, .busy = 2}},
    };
    for (size_t c = 0; c < sizeof ties / sizeof ties[0]; c++) {
        struct tide_pool *pools[N];
        build(pools, ties[c], N);
        for (int i = 0; i < NROLLS; i++) {
            /* Among equals the second roll decides nothing ... */
            int first = tide_pick(pools, N, T0, grid[i], 0.0);
            for (int j = 0; j < NROLLS; j++)
                ck_assert_int_eq(tide_pick(pools, N, T0, grid[i], grid[j]),
                                 first);
            /* ... and the pool the first roll drew is drawn whatever the
             * second: made the best, it always wins. */
            struct spec best[N] = {{.busy = 1}, {.busy = 1}, {.busy = 1}};
            best[first].busy = 0;
            struct tide_pool *other[N];
            build(other, best, N);
            for (int j = 0; j < NROLLS; j++)
                ck_assert_int_eq(tide_pick(other, N, T0, grid[i], grid[j]),
                                 first);
            release(other, N);
        }
        release(pools, N);
    }
}
END_TEST

START_TEST(first_roll_can_draw_every_pool)
{
    enum { N = 4 };
    const struct spec specs[N] = {{0}};
    struct tide_pool *pools[N];
    build(pools, specs, N);
    bool seen[N] = {false};
    for (int i = 0; i < 64; i++) {
        int got = tide_pick(pools, N, T0, i / 64.0, 0.5);
        ck_assert_int_ge(got, 0);
        ck_assert_int_lt(got, N);
        seen[got] = true;
    }
    for (int k = 0; k < N; k++)
        ck_assert_msg(seen[k], "pool %d never drawn first", k);
    release(pools, N);
}
END_TEST

START_TEST(second_roll_can_draw_every_other_pool)
{
    /* With the first drawn the busiest, the second drawn always wins, so
     * the answer names it. */
    enum { N = 4 };
    const struct spec equal[N] = {{0}};
    struct tide_pool *pools[N];
    build(pools, equal, N);
    for (int i = 0; i < NROLLS; i++) {
        int first = tide_pick(pools, N, T0, grid[i], 0.0);
        struct spec specs[N] = {{0}};
        specs[first].busy = 1;
        struct tide_pool *other[N];
        build(other, specs, N);
        bool seen[N] = {false};
        for (int j = 0; j < 64; j++)
            seen[tide_pick(other, N, T0, grid[i], j / 64.0)] = true;
        for (int k = 0; k < N; k++)
            ck_assert_msg(seen[k] == (k != first),
                          "first %d: pool %d drawn second: %d", first, k,
                          seen[k]);
        release(other, N);
    }
    release(pools, N);
}
END_TEST

static Suite *pick_suite(void)
{
    Suite *s = suite_create("pick");
    TCase *tc = tcase_create("pick");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, no_pools_is_minus_one);
    tcase_add_test(tc, one_pool_is_index_zero);
    tcase_add_test(tc, the_two_drawn_are_distinct);
    tcase_add_test(tc, lower_refusal_wins);
    tcase_add_test(tc, lower_refusal_wins_over_fewer_busy);
    tcase_add_test(tc, equal_refusal_fewer_busy_wins);
    tcase_add_test(tc, tie_goes_to_the_first_drawn);
    tcase_add_test(tc, first_roll_can_draw_every_pool);
    tcase_add_test(tc, second_roll_can_draw_every_other_pool);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(pick_suite)
