/* tide_strerror / tide_err_name: one table for every code. */
#include <limits.h>
#include <string.h>

#include <tidepool/core.h>

#include "runner.h"

#define CODE(c)                                                                \
    {                                                                          \
        (c), #c                                                                \
    }

static const struct {
    int code;
    const char *name;
} codes[] = {
    CODE(TIDE_EINVAL),     CODE(TIDE_ENOMEM),     CODE(TIDE_ELIMITS),
    CODE(TIDE_EBREAKER),   CODE(TIDE_EBUCKET),    CODE(TIDE_EBACKOFF),
    CODE(TIDE_ESHEDDER),   CODE(TIDE_EDOUBLE),    CODE(TIDE_EUNKNOWN),
    CODE(TIDE_ENORESERVE), CODE(TIDE_EDUPLICATE), CODE(TIDE_ECLOSED),
    CODE(TIDE_EGATE),      CODE(TIDE_ENOTIDLE),   CODE(TIDE_ENOTLENT),
    CODE(TIDE_ESHARED),
};

#define NCODES (sizeof codes / sizeof codes[0])

static const int unknown[] = {1, 42, -100, -1000, INT_MIN, INT_MAX};

#define NUNKNOWN (sizeof unknown / sizeof unknown[0])

START_TEST(every_code_is_named_as_in_the_header)
{
    for (size_t i = 0; i < NCODES; i++) {
        const char *name = tide_err_name(codes[i].code);
        ck_assert_ptr_nonnull(name);
        ck_assert_str_eq(name, codes[i].name);
    }
}
END_TEST

START_TEST(every_code_has_a_distinct_name)
{
    for (size_t i = 0; i < NCODES; i++)
        for (size_t j = i + 1; j < NCODES; j++)
            ck_assert_str_ne(tide_err_name(codes[i].code),
                             tide_err_name(codes[j].code));
}
END_TEST

START_TEST(every_code_has_a_sentence)
{
    for (size_t i = 0; i < NCODES; i++) {
        const char *text = tide_strerror(codes[i].code);
        ck_assert_ptr_nonnull(text);
        ck_assert_msg(strlen(text) > 0, "%s has an empty sentence",
                      codes[i].name);
        ck_assert_str_ne(text, codes[i].name);
    }
}
END_TEST

START_TEST(every_code_has_a_distinct_sentence)
{
    for (size_t i = 0; i < NCODES; i++)
        for (size_t j = i + 1; j < NCODES; j++)
            ck_assert_str_ne(tide_strerror(codes[i].code),
                             tide_strerror(codes[j].code));
}
END_TEST

START_TEST(every_code_is_known_to_the_table)
{
    const char *fallback = tide_strerror(unknown[0]);
    for (size_t i = 0; i < NCODES; i++) {
        ck_assert_str_ne(tide_err_name(codes[i].code), "TIDE_E?");
        ck_assert_str_ne(tide_strerror(codes[i].code), fallback);
    }
}
END_TEST

START_TEST(unknown_code_is_named_question_mark)
{
    for (size_t i = 0; i < NUNKNOWN; i++)
        ck_assert_str_eq(tide_err_name(unknown[i]), "TIDE_E?");
}
END_TEST

START_TEST(unknown_code_still_has_a_sentence)
{
    for (size_t i = 0; i < NUNKNOWN; i++) {
        const char *text = tide_strerror(unknown[i]);
        ck_assert_ptr_nonnull(text);
        ck_assert_int_gt(strlen(text), 0);
    }
}
END_TEST

START_TEST(zero_is_success)
{
    const char *text = tide_strerror(0);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, "success"));
    ck_assert_ptr_nonnull(tide_err_name(0));
    for (size_t i = 0; i < NCODES; i++) {
        ck_assert_str_ne(tide_strerror(codes[i].code), text);
        ck_assert_str_ne(tide_err_name(codes[i].code), tide_err_name(0));
    }
}
END_TEST

static Suite *error_suite(void)
{
    Suite *s = suite_create("error");
    TCase *tc = tcase_create("error");
    tcase_add_test(tc, every_code_is_named_as_in_the_header);
    tcase_add_test(tc, every_code_has_a_distinct_name);
    tcase_add_test(tc, every_code_has_a_sentence);
    tcase_add_test(tc, every_code_has_a_distinct_sentence);
    tcase_add_test(tc, every_code_is_known_to_the_table);
    tcase_add_test(tc, unknown_code_is_named_question_mark);
    tcase_add_test(tc, unknown_code_still_has_a_sentence);
    tcase_add_test(tc, zero_is_success);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(error_suite)
