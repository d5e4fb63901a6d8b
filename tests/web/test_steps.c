/* demos/web/steps.c: the engine's state at every step, on the terminal
 * simulator's run (the presets: 24 seconds, a pool of 8, the burst from 6 s
 * to 10 s) unless a test says. */
#include <stdlib.h>
#include <string.h>

#include "runner.h"
#include "steps.h"

#define SECONDS 24
#define STEPS   (SECONDS * 1000 + 1)

static struct web_engine *engine(void)
{
    double p[WEB_PARAMS];
    web_params_preset(p);
    ck_assert_int_eq((int)p[WEB_P_SECONDS], SECONDS);
    struct web_engine *e = NULL;
    ck_assert_int_eq(web_engine_new(p, &e), 0);
    return e;
}

/* Every step of a preset run into out[STEPS * WEB_STEP_VALUES], the engine
 * run to each of untils[n] in turn (then to the end) through a ring of cap,
 * taken `take` steps at a time. Returns how many steps came. */
static int64_t record(int32_t *out, uint32_t cap, uint32_t take,
                      const int64_t *untils, int n)
{
    struct web_engine *e = engine();
    struct web_steps *s = NULL;
    ck_assert_int_eq(web_steps_new(e, cap, &s), 0);
    int64_t got = 0;
    for (int i = 0; i <= n; i++) {
        int64_t until = i < n ? untils[i] : INT64_MAX;
        /* a full ring stops the run short: take and go on */
        do {
            web_steps_run(s, until);
            uint32_t k;
            do {
                k = web_steps_take(s, out + got * WEB_STEP_VALUES, take);
                got += k;
                ck_assert_int_le(got, STEPS);
            } while (k > 0);
        } while (!web_engine_done(e) && web_engine_now(e) < until);
    }
    ck_assert(web_engine_done(e));
    web_steps_free(s);
    web_engine_free(e);
    return got;
}

static int32_t *steps_buffer(void)
{
    int32_t *v = calloc(STEPS, WEB_STEP_VALUES * sizeof *v);
    ck_assert_ptr_nonnull(v);
    return v;
}

START_TEST(every_millisecond_once_in_order)
{
    int32_t *v = steps_buffer();
    ck_assert_int_eq(record(v, STEPS, STEPS, NULL, 0), STEPS);
    for (int64_t k = 0; k < STEPS; k++)
        ck_assert_int_eq(v[k * WEB_STEP_VALUES + WEB_STEP_MS], k);
    free(v);
}
END_TEST

START_TEST(steps_do_not_depend_on_the_calls)
{
    int32_t *one = steps_buffer(), *many = steps_buffer();
    ck_assert_int_eq(record(one, STEPS, STEPS, NULL, 0), STEPS);
    /* uneven untils as a page's frames give, a ring of 7 taken 3 at a
     * time, so it fills and wraps between the calls */
    int64_t untils[400];
    for (int i = 0; i < 400; i++)
        untils[i] = (int64_t)i * 33333337;
    ck_assert_int_eq(record(many, 7, 3, untils, 400), STEPS);
    ck_assert(!memcmp(one, many, STEPS * WEB_STEP_VALUES * sizeof *one));
    free(one);
    free(many);
}
END_TEST

START_TEST(full_ring_stops_on_its_last_step)
{
    struct web_engine *e = engine();
    struct web_steps *s = NULL;
    ck_assert_int_eq(web_steps_new(e, 10, &s), 0);
    web_steps_run(s, TIDE_SEC(5));
    ck_assert_uint_eq(web_steps_held(s), 10);
    ck_assert_int_eq(web_engine_now(e), TIDE_MS(9));
    int32_t v[12 * WEB_STEP_VALUES];
    ck_assert_uint_eq(web_steps_take(s, v, 4), 4);
    ck_assert_uint_eq(web_steps_held(s), 6);
    web_steps_run(s, TIDE_SEC(5));
    ck_assert_uint_eq(web_steps_held(s), 10);
    ck_assert_uint_eq(web_steps_take(s, v, 12), 10);
    ck_assert_int_eq(v[WEB_STEP_MS], 4);
    ck_assert_int_eq(v[9 * WEB_STEP_VALUES + WEB_STEP_MS], 13);
    web_steps_free(s);
    web_engine_free(e);
}
END_TEST

START_TEST(short_run_stops_between_steps)
{
    struct web_engine *e = engine();
    struct web_steps *s = NULL;
    ck_assert_int_eq(web_steps_new(e, 100, &s), 0);
    web_steps_run(s, TIDE_MS(2) + TIDE_MS(1) / 2);
    ck_assert_uint_eq(web_steps_held(s), 3); /* 0, 1 and 2 ms */
    ck_assert_int_eq(web_engine_now(e), TIDE_MS(2) + TIDE_MS(1) / 2);
    web_steps_run(s, TIDE_MS(3));
    ck_assert_uint_eq(web_steps_held(s), 4);
    web_steps_free(s);
    web_engine_free(e);
}
END_TEST

START_TEST(last_step_is_what_the_last_row_closed_on)
{
    int32_t *v = steps_buffer();
    ck_assert_int_eq(record(v, STEPS, STEPS, NULL, 0), STEPS);
    struct web_engine *e = engine();
    ck_assert_int_eq(web_engine_run(e, INT64_MAX), SECONDS);
    const struct web_row *r = web_engine_row(e, SECONDS - 1);
    const int32_t *last = &v[(STEPS - 1) * WEB_STEP_VALUES];
    ck_assert_int_eq(last[WEB_STEP_LENT], r->lent);
    ck_assert_int_eq(last[WEB_STEP_IDLE], r->idle);
    ck_assert_int_eq(last[WEB_STEP_WAITING], r->waiting);
    web_engine_free(e);
    free(v);
}
END_TEST

START_TEST(steps_see_the_burst_rise_in_milliseconds)
{
    /* the rows see the burst's queue once a second; the steps see it grow
     * from none past the pool's size within its first 100 ms, and the
     * pool lent to its size (8) beside it */
    int32_t *v = steps_buffer();
    ck_assert_int_eq(record(v, STEPS, STEPS, NULL, 0), STEPS);
    const int32_t *start = &v[6000 * WEB_STEP_VALUES];
    ck_assert_int_eq(start[WEB_STEP_WAITING], 0);
    int32_t most = 0, lent = 0;
    for (int k = 6000; k < 6100; k++) {
        const int32_t *x = &v[k * WEB_STEP_VALUES];
        most = x[WEB_STEP_WAITING] > most ? x[WEB_STEP_WAITING] : most;
        lent = x[WEB_STEP_LENT] > lent ? x[WEB_STEP_LENT] : lent;
    }
    ck_assert_int_gt(most, 8);
    ck_assert_int_eq(lent, 8);
    free(v);
}
END_TEST

START_TEST(no_ring_is_refused)
{
    struct web_engine *e = engine();
    struct web_steps *s = NULL;
    ck_assert_int_eq(web_steps_new(e, 0, &s), TIDE_EINVAL);
    ck_assert_ptr_null(s);
    web_engine_free(e);
}
END_TEST

static Suite *steps_suite(void)
{
    Suite *s = suite_create("web_steps");
    TCase *tc = tcase_create("steps");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, every_millisecond_once_in_order);
    tcase_add_test(tc, steps_do_not_depend_on_the_calls);
    tcase_add_test(tc, full_ring_stops_on_its_last_step);
    tcase_add_test(tc, short_run_stops_between_steps);
    tcase_add_test(tc, last_step_is_what_the_last_row_closed_on);
    tcase_add_test(tc, steps_see_the_burst_rise_in_milliseconds);
    tcase_add_test(tc, no_ring_is_refused);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(steps_suite)
