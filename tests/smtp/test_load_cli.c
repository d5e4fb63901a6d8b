/* smtp_load as a user runs it, against the fixture's aiosmtpd: every
 * number it reads is read whole and a bad one is refused by name (exit 2),
 * as are --cacert and --name without --starttls; a run that fails says
 * why, with the sender's own code named (a 421 greeting, a server that
 * never greets); an early exit (a certificate file that is not there)
 * frees what it made. The program is built from demos/smtp/smtp_load.c
 * beside this test (its path is argv[1]), with the same sanitizers: under
 * AddressSanitizer a leak on any of these paths makes its exit nonzero. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture.h"
#include "load_child.h"

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

/* A port that takes connections (the kernel's backlog) and never says a
 * word, as a server of another protocol does; the listener's descriptor. */
static int silent_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(fd, 16), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

START_TEST(silent_server_says_why)
{
    int port, fd = silent_listener(&port);
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    /* the greeting's wait ends at the setup timeout, 5 s */
    struct tide_test_prog_run r =
        RUN(30000, "--port", p, "-n", "5", "--seconds", "8");
    close(fd);
    EXPECT(r, 1, "first error (in the warm-up)", "no answer",
           "(TIDE_ESETUP_TIMEOUT)");
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
    tcase_add_test(tc, silent_server_says_why);
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
