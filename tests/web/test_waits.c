/* demos/web/waits.c: acquire waits over the last minute, for the p99. */
#include <stdlib.h>

#include <tidepool/core.h>

#include "runner.h"
#include "waits.h"

static struct web_waits *waits(void)
{
    struct web_waits *w = malloc(sizeof *w);
    ck_assert_ptr_nonnull(w);
    web_waits_init(w);
    return w;
}

START_TEST(no_waits_is_zero)
{
    struct web_waits *w = waits();
    ck_assert(web_waits_quantile(w, 0, 99) == 0);
    free(w);
}
END_TEST

START_TEST(quantile_is_within_an_eighth_above)
{
    struct web_waits *w = waits();
    const int64_t values[] = {0,           999,          15000,
                              123456,      TIDE_MS(15),  TIDE_MS(499),
                              TIDE_SEC(3), TIDE_SEC(100)};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        web_waits_init(w);
        web_waits_add(w, 0, values[i]);
        int64_t q = web_waits_quantile(w, 0, 99);
        ck_assert_int_ge(q, values[i]);
        ck_assert_int_le(q, values[i] + values[i] / 8 + 1000);
    }
    free(w);
}
END_TEST

START_TEST(p99_ignores_the_top_one_percent)
{
    struct web_waits *w = waits();
    for (int i = 0; i < 990; i++)
        web_waits_add(w, 0, TIDE_MS(1));
    for (int i = 0; i < 10; i++)
        web_waits_add(w, 0, TIDE_SEC(2));
    ck_assert_int_lt(web_waits_quantile(w, 0, 99), TIDE_MS(2));
    web_waits_add(w, 0, TIDE_SEC(2));
    ck_assert_int_ge(web_waits_quantile(w, 0, 99), TIDE_SEC(2));
    free(w);
}
END_TEST

START_TEST(waits_leave_after_a_minute)
{
    struct web_waits *w = waits();
    web_waits_add(w, 3, TIDE_SEC(1));
    ck_assert_int_ge(web_waits_quantile(w, 62, 99), TIDE_SEC(1));
    ck_assert(web_waits_quantile(w, 63, 99) == 0);
    free(w);
}
END_TEST

static Suite *waits_suite(void)
{
    Suite *s = suite_create("web_waits");
    TCase *tc = tcase_create("waits");
    tcase_add_test(tc, no_waits_is_zero);
    tcase_add_test(tc, quantile_is_within_an_eighth_above);
    tcase_add_test(tc, p99_ignores_the_top_one_percent);
    tcase_add_test(tc, waits_leave_after_a_minute);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(waits_suite)
