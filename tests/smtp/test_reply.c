/* demos/smtp/reply.c and data.c: replies read from a buffer (one line,
 * many, split over reads, EHLO's extensions, what is not SMTP) and a
 * message made ready for DATA (CRLF line ends, dot-stuffing, the end).
 * No server needed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "runner.h"
#include "smtp_internal.h"

static int feed(struct evbuffer *in, struct tide__smtp_reply *r,
                const char *bytes)
{
    evbuffer_add(in, bytes, strlen(bytes));
    return tide__smtp_reply_read(in, r);
}

START_TEST(one_line_reply)
{
    struct evbuffer *in = evbuffer_new();
    struct tide__smtp_reply r;
    tide__smtp_reply_clear(&r);
    ck_assert_int_eq(feed(in, &r, "250 2.0.0 OK\r\n"), 1);
    ck_assert_int_eq(r.code, 250);
    ck_assert_str_eq(r.text, "2.0.0 OK");
    tide__smtp_reply_clear(&r);
    ck_assert_int_eq(feed(in, &r, "354\r\n"), 1); /* a code alone */
    ck_assert_int_eq(r.code, 354);
    ck_assert_str_eq(r.text, "");
    evbuffer_free(in);
}
END_TEST

START_TEST(multi_line_reply_split_over_reads_with_extensions)
{
    struct evbuffer *in = evbuffer_new();
    struct tide__smtp_reply r;
    tide__smtp_reply_clear(&r);
    ck_assert_int_eq(feed(in, &r, "250-mx.example hello\r\n250-SIZE 1000"), 0);
    ck_assert_int_eq(feed(in, &r, "\r\n250-STARTTLS\r\n250-AUTH LOGIN PL"), 0);
    ck_assert(r.starttls);
    ck_assert(!r.auth_login); /* not before its line is whole */
    ck_assert_int_eq(feed(in, &r, "AIN\r\n250 HELP\r\nMORE"), 1);
    ck_assert_int_eq(r.code, 250);
    ck_assert_int_eq(r.lines, 5);
    ck_assert(r.auth_login && r.auth_plain);
    ck_assert_str_eq(r.text, "mx.example hello\nSIZE 1000\nSTARTTLS\nAUTH "
                             "LOGIN PLAIN\nHELP");
    ck_assert_uint_eq(evbuffer_get_length(in), 4); /* the next one's bytes */
    evbuffer_free(in);
}
END_TEST

START_TEST(the_first_line_is_no_extension_and_old_auth_is_read)
{
    struct evbuffer *in = evbuffer_new();
    struct tide__smtp_reply r;
    tide__smtp_reply_clear(&r);
    ck_assert_int_eq(feed(in, &r, "250-STARTTLS\r\n250 AUTH=LOGIN\n"), 1);
    ck_assert(!r.starttls); /* the greeting line names the host */
    ck_assert(r.auth_login);
    ck_assert(!r.auth_plain);
    evbuffer_free(in);
}
END_TEST

START_TEST(what_is_not_smtp_is_refused)
{
    static const char *const bad[] = {
        "+PONG\r\n",
        "25 short\r\n",
        "2500 four digits\r\n",
        "250-first\r\n251 other code\r\n",
        "099 low\r\n",
        "250_x\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct evbuffer *in = evbuffer_new();
        struct tide__smtp_reply r;
        tide__smtp_reply_clear(&r);
        ck_assert_msg(feed(in, &r, bad[i]) == -1, "%s", bad[i]);
        evbuffer_free(in);
    }
    /* a line that never ends */
    struct evbuffer *in = evbuffer_new();
    struct tide__smtp_reply r;
    tide__smtp_reply_clear(&r);
    char *big = malloc(TIDE__SMTP_LINE + 10);
    memset(big, 'x', TIDE__SMTP_LINE + 9);
    big[TIDE__SMTP_LINE + 9] = '\0';
    memcpy(big, "250 ", 4);
    ck_assert_int_eq(feed(in, &r, big), -1);
    free(big);
    evbuffer_free(in);
}
END_TEST

/* A line of the longest length allowed is read whatever the reads it
 * comes in: cut between its CR and its LF, the CR held alone was taken for
 * a byte of the line, which was then one too long (found by
 * fuzz_smtp_reply). */
START_TEST(a_line_at_the_limit_is_read_when_cut_in_its_crlf)
{
    size_t n = TIDE__SMTP_LINE + 2;
    char *line = malloc(n + 1);
    memset(line, 'x', n);
    memcpy(line, "250 ", 4);
    memcpy(line + n - 2, "\r\n", 3);
    for (size_t cut = n - 3; cut <= n; cut++) {
        struct evbuffer *in = evbuffer_new();
        struct tide__smtp_reply r;
        tide__smtp_reply_clear(&r);
        evbuffer_add(in, line, cut);
        ck_assert_msg(tide__smtp_reply_read(in, &r) == (cut == n ? 1 : 0),
                      "cut after %zu of %zu bytes", cut, n);
        if (cut < n)
            ck_assert_int_eq(feed(in, &r, line + cut), 1);
        ck_assert_int_eq(r.code, 250);
        evbuffer_free(in);
    }
    /* one byte more is refused, cut anywhere */
    line = realloc(line, n + 2);
    memset(line + n - 2, 'x', 1);
    memcpy(line + n - 1, "\r\n", 3);
    for (size_t cut = n - 2; cut <= n + 1; cut++) {
        struct evbuffer *in = evbuffer_new();
        struct tide__smtp_reply r;
        tide__smtp_reply_clear(&r);
        evbuffer_add(in, line, cut);
        int first = tide__smtp_reply_read(in, &r);
        ck_assert_msg(first == -1 ||
                          (first == 0 && feed(in, &r, line + cut) == -1),
                      "cut after %zu of %zu bytes", cut, n + 1);
        evbuffer_free(in);
    }
    free(line);
}
END_TEST

/* A reply of more lines than TIDE__SMTP_LINES is not one a client waits
 * through (its line count was an int that a server could run past). */
START_TEST(a_reply_past_its_line_count_is_refused)
{
    for (int extra = 0; extra <= 1; extra++) {
        struct evbuffer *in = evbuffer_new();
        struct tide__smtp_reply r;
        tide__smtp_reply_clear(&r);
        for (int i = 1; i < TIDE__SMTP_LINES + extra; i++)
            evbuffer_add(in, "250-x\r\n", 7);
        int rc = feed(in, &r, "250 end\r\n");
        ck_assert_int_eq(rc, (extra ? -1 : 1));
        if (!extra)
            ck_assert_int_eq(r.lines, TIDE__SMTP_LINES);
        evbuffer_free(in);
    }
}
END_TEST

START_TEST(long_text_is_cut_not_overrun)
{
    struct evbuffer *in = evbuffer_new();
    struct tide__smtp_reply r;
    tide__smtp_reply_clear(&r);
    char line[1100];
    memset(line, 'y', sizeof line);
    memcpy(line, "250-", 4);
    memcpy(line + sizeof line - 3, "\r\n", 3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(feed(in, &r, line), 0);
    ck_assert_int_eq(feed(in, &r, "250 end\r\n"), 1);
    ck_assert_uint_eq(strlen(r.text), sizeof r.text - 1);
    evbuffer_free(in);
}
END_TEST

static void check_data(const char *msg, const char *want)
{
    char *out;
    size_t n;
    ck_assert(tide__smtp_data(msg, strlen(msg), &out, &n));
    ck_assert_uint_eq(n, strlen(want));
    ck_assert_msg(memcmp(out, want, n) == 0, "for [%s]: [%.*s]", msg, (int)n,
                  out);
    free(out);
}

START_TEST(data_ends_every_line_in_crlf_and_stuffs_dots)
{
    check_data("a\r\nb\r\n", "a\r\nb\r\n.\r\n");
    check_data("bare\nlf\n", "bare\r\nlf\r\n.\r\n");
    check_data("bare\rcr", "bare\r\ncr\r\n.\r\n");
    check_data("no end", "no end\r\n.\r\n");
    check_data(".\r\n", "..\r\n.\r\n"); /* not the end of the message */
    check_data(".x\n..y\nz.\n", "..x\r\n...y\r\nz.\r\n.\r\n");
    check_data("a\n\n.", "a\r\n\r\n..\r\n.\r\n");
    check_data("", ".\r\n");
    check_data("\n.\n", "\r\n..\r\n.\r\n");
}
END_TEST

/* A length whose doubled room does not fit in a size_t is refused before a
 * byte is read: the room is not allocated small and then overrun. */
START_TEST(data_too_large_to_double_is_refused)
{
    char *out = NULL;
    size_t n = 0;
    ck_assert(!tide__smtp_data("x", SIZE_MAX / 2, &out, &n));
    ck_assert(!tide__smtp_data("x", SIZE_MAX - 2, &out, &n));
    ck_assert_ptr_null(out);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("reply");
    TCase *tc = tcase_create("reply");
    tcase_add_test(tc, one_line_reply);
    tcase_add_test(tc, multi_line_reply_split_over_reads_with_extensions);
    tcase_add_test(tc, the_first_line_is_no_extension_and_old_auth_is_read);
    tcase_add_test(tc, what_is_not_smtp_is_refused);
    tcase_add_test(tc, a_line_at_the_limit_is_read_when_cut_in_its_crlf);
    tcase_add_test(tc, a_reply_past_its_line_count_is_refused);
    tcase_add_test(tc, long_text_is_cut_not_overrun);
    tcase_add_test(tc, data_ends_every_line_in_crlf_and_stuffs_dots);
    tcase_add_test(tc, data_too_large_to_double_is_refused);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
