/* tide_version and <tidepool/version.h>: the macros, the string and the
 * library linked at run time all say the version meson's project() holds
 * (handed in as TIDE_TEST_PROJECT_VERSION by the build). */
#include <stdio.h>
#include <string.h>

#include <tidepool/core.h>

#include "runner.h"

START_TEST(string_is_major_minor_patch)
{
    char built[64];
    snprintf(built, sizeof built, "%d.%d.%d", TIDE_VERSION_MAJOR,
             TIDE_VERSION_MINOR, TIDE_VERSION_PATCH);
    ck_assert_str_eq(TIDE_VERSION_STRING, built);
}
END_TEST

START_TEST(header_says_the_project_version)
{
    ck_assert_str_eq(TIDE_VERSION_STRING, TIDE_TEST_PROJECT_VERSION);
}
END_TEST

/* The library is the shared one a program links, so this is the answer a
 * program gets at run time. */
START_TEST(library_says_what_the_header_says)
{
    ck_assert_ptr_nonnull(tide_version());
    ck_assert_str_eq(tide_version(), TIDE_VERSION_STRING);
}
END_TEST

/* The number orders versions: each part in its own byte. */
#if TIDE_VERSION_NUMBER < 0x000100
#error "TIDE_VERSION_NUMBER is below 0.1.0, the first release"
#endif
START_TEST(number_holds_each_part)
{
    ck_assert_int_eq(TIDE_VERSION_NUMBER >> 16, TIDE_VERSION_MAJOR);
    ck_assert_int_eq((TIDE_VERSION_NUMBER >> 8) & 0xff, TIDE_VERSION_MINOR);
    ck_assert_int_eq(TIDE_VERSION_NUMBER & 0xff, TIDE_VERSION_PATCH);
}
END_TEST

static Suite *version_suite(void)
{
    Suite *s = suite_create("version");
    TCase *tc = tcase_create("version");
    tcase_add_test(tc, string_is_major_minor_patch);
    tcase_add_test(tc, header_says_the_project_version);
    tcase_add_test(tc, library_says_what_the_header_says);
    tcase_add_test(tc, number_holds_each_part);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(version_suite)
