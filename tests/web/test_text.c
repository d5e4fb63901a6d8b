/* demos/web/text.c: a row as the terminal simulator's columns, formatted
 * without printf. */
#include <string.h>

#include "engine.h"
#include "runner.h"

static const char *text(const struct web_row *r)
{
    static char buf[WEB_ROW_TEXT];
    size_t n = web_row_text(r, buf);
    ck_assert_uint_eq(n, strlen(buf));
    return buf;
}

START_TEST(row_reads_as_the_heads_say)
{
    struct web_row r = {.second = 7,
                        .phase = WEB_BURST,
                        .lent = 8,
                        .waiting = 254,
                        .made = 3,
                        .queue_full = 107,
                        .served = 541,
                        .p99 = 491520000,
                        .trail = {TIDE_BREAKER_ACTIVE},
                        .n_trail = 1};
    ck_assert_str_eq(text(&r), "  7 burst       8    0  254    3      0       "
                               "0   107    0    541 491.5    0.0% ACTIVE");
}
END_TEST

START_TEST(p99_rounds_half_up_to_a_tenth_of_a_ms)
{
    struct web_row r = {.trail = {0}, .n_trail = 1};
    r.p99 = 1449999;
    ck_assert_ptr_nonnull(strstr(text(&r), "   1.4 "));
    r.p99 = 1450000;
    ck_assert_ptr_nonnull(strstr(text(&r), "   1.5 "));
    r.p99 = 0;
    ck_assert_ptr_nonnull(strstr(text(&r), "   0.0 "));
}
END_TEST

START_TEST(refusal_is_a_percentage_with_a_tenth)
{
    struct web_row r = {.refusal_pm = 1000, .trail = {0}, .n_trail = 1};
    ck_assert_ptr_nonnull(strstr(text(&r), " 100.0% "));
    r.refusal_pm = 7;
    ck_assert_ptr_nonnull(strstr(text(&r), "    0.7% "));
}
END_TEST

START_TEST(trail_shows_the_last_three_states)
{
    struct web_row r = {.trail = {TIDE_BREAKER_ACTIVE, TIDE_BREAKER_INACTIVE,
                                  TIDE_BREAKER_RECOVERING, TIDE_BREAKER_ACTIVE},
                        .n_trail = 4};
    const char *t = text(&r);
    const char *want = "INACTIVE>RECOVERING>ACTIVE";
    ck_assert_str_eq(t + strlen(t) - strlen(want), want);
}
END_TEST

START_TEST(row_fits_its_buffer_at_the_extremes)
{
    struct web_row r = {.second = 3600,
                        .phase = WEB_RECOVERY,
                        .lent = INT64_MAX,
                        .idle = INT64_MIN,
                        .waiting = INT64_MAX,
                        .made = INT64_MAX,
                        .make_failures = INT64_MAX,
                        .timeouts = INT64_MAX,
                        .queue_full = INT64_MAX,
                        .shed = INT64_MAX,
                        .served = INT64_MAX,
                        .p99 = INT64_MAX / 2,
                        .refusal_pm = 1000,
                        .trail = {1, 2, 1, 2},
                        .n_trail = 4};
    char buf[WEB_ROW_TEXT + 8];
    memset(buf, 'x', sizeof buf);
    size_t n = web_row_text(&r, buf);
    ck_assert_uint_lt(n, WEB_ROW_TEXT);
    ck_assert_int_eq(buf[n], '\0');
    ck_assert_int_eq(buf[WEB_ROW_TEXT], 'x');
}
END_TEST

static Suite *text_suite(void)
{
    Suite *s = suite_create("web_text");
    TCase *tc = tcase_create("text");
    tcase_add_test(tc, row_reads_as_the_heads_say);
    tcase_add_test(tc, p99_rounds_half_up_to_a_tenth_of_a_ms);
    tcase_add_test(tc, refusal_is_a_percentage_with_a_tenth);
    tcase_add_test(tc, trail_shows_the_last_three_states);
    tcase_add_test(tc, row_fits_its_buffer_at_the_extremes);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(text_suite)
