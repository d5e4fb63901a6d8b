/* smtp_load as a user runs it, against the fixture's aiosmtpd: every
 * number it reads is read whole and a bad one is refused by name (exit 2),
 * as are --cacert and --name without --starttls; a run that fails says
 * why, with the sender's own code named (a 421 greeting, a server that
 * never greets); a run that cannot succeed (nothing listens, a server
 * that is not SMTP, a failure that repeats) stops with the cause rather
 * than waiting out --seconds; an early exit (a certificate file that is not
 * there) frees what it made. The program is built from demos/smtp/smtp_load.c
 * beside this test (its path is argv[1]), with the same sanitizers: under
 * AddressSanitizer a leak on any of these paths makes its exit nonzero. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "load_child.h"
#include "stranger.h"

static const char *prog; /* the smtp_load under test */

#define RUN(ms, ...) TIDE_TEST_PROG(prog, NULL, ms, __VA_ARGS__)
#define EXPECT       TIDE_TEST_EXPECT

START_TEST(bad_numbers_are_refused_by_name)
{
    struct tide_test_prog_run r = RUN(10000, "--port", "abc");
    EXPECT(r, 2, "--port", "'abc'");
    r = RUN(10000, "-m", "0");
    EXPECT(r, 2, "-m", "'0'", "100");
    r = RUN(10000, "--max-messages", "1x");
    EXPECT(r, 2, "--max-messages", "'1x'");
    r = RUN(10000, "--seconds", "");
    EXPECT(r, 2, "--seconds", "''");
    r = RUN(10000, "--starttls");
    EXPECT(r, 2, "--starttls needs --cacert");
}
END_TEST

/* --cacert or --name without --starttls: the user meant a TLS run, and a
 * plaintext one would be measured in its place (its figures read as the
 * TLS ones), so the run is refused. */
START_TEST(tls_options_without_starttls_are_refused)
{
    struct tide_test_prog_run r =
        RUN(10000, "--host", "127.0.0.1", "--cacert", "ca.pem");
    EXPECT(r, 2, "--cacert", "--starttls");
    r = RUN(10000, "--host", "127.0.0.1", "--name", "mail.example");
    EXPECT(r, 2, "--name", "--starttls");
}
END_TEST

START_TEST(good_run)
{
    server_up(&(struct smtp_server_opts){0});
    char port[16];
    snprintf(port, sizeof port, "%d", sx->server.port);
    struct tide_test_prog_run r = RUN(60000, "--port", port, "-c", "2", "-n",
                                      "10", "-d", "100", "--seconds", "30");
    EXPECT(r, 0, "");
    ck_assert_msg(strstr(r.out, "plain reuse c2: 10 messages"), "stdout: %s",
                  r.out);
}
END_TEST

START_TEST(missing_cacert_frees_everything)
{
    server_up(&(struct smtp_server_opts){0});
    char port[16];
    snprintf(port, sizeof port, "%d", sx->server.port);
    struct tide_test_prog_run r = RUN(10000, "--port", port, "--starttls",
                                      "--cacert", "/nonexistent/ca.pem");
    EXPECT(r, 1, "smtp_load: ");
}
END_TEST

START_TEST(greeting_421_is_named)
{
    server_up(&(struct smtp_server_opts){.greet421 = true});
    char port[16];
    snprintf(port, sizeof port, "%d", sx->server.port);
    struct tide_test_prog_run r = RUN(30000, "--port", port, "-n", "3",
                                      "--warmup", "0", "--seconds", "10");
    EXPECT(r, 1, "first error: ", "421");
    /* the sender's own code by its name, not tidepool's "TIDE_E?" */
    ck_assert_msg(!strstr(r.err, "TIDE_E?"), "stderr:\n%.1500s", r.err);
}
END_TEST

START_TEST(refused_port_stops_at_once)
{
    int port, fd = tide_test_refusing_port(&port);
    ck_assert_int_ge(fd, 0);
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    struct tide_test_prog_run r = RUN(40000, "--port", p, "--seconds", "30");
    close(fd);
    EXPECT(r, 1, "stopped: nothing listens there", "Connection refused",
           "(TIDE_EREFUSED)");
    tide_test_prog_expect_soon(&r, 5000);
}
END_TEST

/* A server that greets in another protocol, or with garbage: no retry
 * makes it SMTP. */
START_TEST(not_smtp_stops_at_once)
{
    static const char *const greetings[] = {
        "SSH-2.0-OpenSSH_9.2\r\n",
        "\x16\x03\x01garbage\r\n",
    };
    for (size_t i = 0; i < sizeof greetings / sizeof greetings[0]; i++) {
        struct tide_test_stranger st;
        ck_assert(tide_test_stranger_start(&st, greetings[i],
                                           strlen(greetings[i]), true, false));
        char p[16];
        snprintf(p, sizeof p, "%d", st.port);
        struct tide_test_prog_run r =
            RUN(40000, "--port", p, "--seconds", "30");
        tide_test_stranger_stop(&st);
        EXPECT(r, 1, "stopped: the server does not speak SMTP",
               "(TIDE_SMTP_EPROTOCOL)");
        tide_test_prog_expect_soon(&r, 5000);
    }
}
END_TEST

/* An HTTP server waits for a request and an SMTP client for a greeting:
 * nothing is said until the greeting's wait ends (the setup timeout,
 * 5 s). One such wait is not proof (a server can be slow); the run stops
 * when it repeats: with -c 1, at the second, after about 10 s. */
START_TEST(silent_server_stops_when_it_repeats)
{
    struct tide_test_stranger st;
    ck_assert(tide_test_stranger_start(
        &st, TIDE_TEST_HTTP_400, sizeof TIDE_TEST_HTTP_400 - 1, false, true));
    char p[16];
    snprintf(p, sizeof p, "%d", st.port);
    struct tide_test_prog_run r =
        RUN(40000, "--port", p, "-n", "5", "--seconds", "30");
    tide_test_stranger_stop(&st);
    EXPECT(r, 1, "stopped: the failure repeats (2 answers in a row, none good)",
           "no answer", "(TIDE_ESETUP_TIMEOUT)",
           "first error (in the warm-up)");
    tide_test_prog_expect_soon(&r, 15000);
    ck_assert_int_ge(r.ms, 9000); /* two waits of 5 s */
}
END_TEST

/* A server that accepts and closes at once: stopped once every message
 * in flight failed twice in a row. */
START_TEST(a_failure_that_repeats_stops_the_run)
{
    struct tide_test_stranger st;
    ck_assert(tide_test_stranger_start(&st, "", 0, true, true));
    char p[16];
    snprintf(p, sizeof p, "%d", st.port);
    struct tide_test_prog_run r =
        RUN(40000, "--port", p, "-c", "3", "--seconds", "30");
    tide_test_stranger_stop(&st);
    EXPECT(r, 1,
           "stopped: the failure repeats (6 answers in a row, none good)");
    tide_test_prog_expect_soon(&r, 5000);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("smtp_load_cli");
    TCase *tc = tcase_create("cli");
    smtp_fixture_add(tc, 90);
    tcase_add_test(tc, bad_numbers_are_refused_by_name);
    tcase_add_test(tc, tls_options_without_starttls_are_refused);
    tcase_add_test(tc, good_run);
    tcase_add_test(tc, missing_cacert_frees_everything);
    tcase_add_test(tc, greeting_421_is_named);
    tcase_add_test(tc, refused_port_stops_at_once);
    tcase_add_test(tc, not_smtp_stops_at_once);
    tcase_add_test(tc, silent_server_stops_when_it_repeats);
    tcase_add_test(tc, a_failure_that_repeats_stops_the_run);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s PATH-OF-SMTP_LOAD\n", argv[0]);
        return 2;
    }
    prog = argv[1];
    return smtp_test_main(make_suite);
}
