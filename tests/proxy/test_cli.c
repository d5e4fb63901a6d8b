/* demos/proxy as a user runs it: every bad option or value is refused by
 * name, with the value, exit 2 (numbers read whole and in range, so none
 * wraps a span in ns); --listen is required and an IPv4 literal; a port in
 * use or an upstream that cannot be set up says why, exit 1. The program
 * is built from demos/proxy beside this test (its path is argv[1]), with
 * the same sanitizers: under AddressSanitizer a leak on an early exit
 * makes its exit nonzero, and so fails the test. No server is needed: the
 * upstreams named are never connected to. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "load_child.h"
#include "runner.h"

static const char *prog; /* the proxy under test */

#define RUN(...) TIDE_TEST_PROG(prog, NULL, 10000, __VA_ARGS__)
#define EXPECT   TIDE_TEST_EXPECT

/* Every bad value of one option: exit 2, the option and the value said. */
static void refused(const char *option, const char *value)
{
    char quoted[128];
    snprintf(quoted, sizeof quoted, "'%s'", value);
    struct tide_test_prog_run r =
        strcmp(option, "--upstream") == 0
            ? RUN("--listen", "127.0.0.1:0", "--upstream", value)
        : strcmp(option, "--listen") == 0
            ? RUN("--listen", value, "--upstream", "127.0.0.1:9")
            : RUN("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
                  option, value);
    EXPECT(r, 2, option, quoted);
    ck_assert_msg(!strstr(r.out, "listening"), "it ran: %s", r.out);
}

START_TEST(bad_upstreams_are_refused_by_name)
{
    const char *bad[] = {
        "garbage",      "127.0.0.1:99999", "127.0.0.1:", ":80",
        "tls://",       "tls://:443",      "::1:80",     "127.0.0.1:0",
        "127.0.0.1:-1", "127.0.0.1:8x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused("--upstream", bad[i]);
}
END_TEST

START_TEST(bad_numbers_are_refused_by_name)
{
    const char *sizes[] = {"0",           "-3", "abc", "10abc",
                           "99999999999", " 3", "+3",  ""};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        refused("--pool-size", sizes[i]);
    /* in ns these were a signed overflow, then a 503 on every request */
    refused("--acquire-timeout", "9300000000000");
    refused("--acquire-timeout", "0");
    refused("--keep", "99999999999999");
    refused("--keep", "0");
    refused("--cap", "-1");
    refused("--breaker-strikes", "0");
    refused("--breaker-cooldown", "1.5");
    refused("--backoff-base", "99999999999999999999");
    refused("--connect-timeout", "x");
    refused("--response-timeout", "-100");
}
END_TEST

START_TEST(a_missing_value_or_unknown_option_is_said)
{
    struct tide_test_prog_run r = RUN("--listen", "127.0.0.1:0", "--upstream",
                                      "127.0.0.1:9", "--pool-size");
    EXPECT(r, 2, "--pool-size needs a value");
    r = RUN("--listen", "127.0.0.1:0", "--upstream");
    EXPECT(r, 2, "--upstream needs a value");
    r = RUN("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
            "--pool-sise", "4");
    EXPECT(r, 2, "unknown option '--pool-sise'");
    r = RUN("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
            "--backoff-base", "3000", "--backoff-cap", "1000");
    EXPECT(r, 2, "--backoff-base", "--backoff-cap");
}
END_TEST

START_TEST(listen_is_required_and_an_ipv4_literal)
{
    /* it used to listen on a random port */
    struct tide_test_prog_run r = RUN("--upstream", "127.0.0.1:9");
    EXPECT(r, 2, "no --listen");
    r = RUN("--listen", "127.0.0.1:0");
    EXPECT(r, 2, "no --upstream");
    refused("--listen", "999.1.1.1:1");
    refused("--listen", "localhost:8080");
    refused("--listen", "127.0.0.1:65536");
    refused("--listen", "127.0.0.1");
    r = RUN("--listen", "localhost:8080", "--upstream", "127.0.0.1:9");
    EXPECT(r, 2, "IPv4 literal");
}
END_TEST

START_TEST(a_port_in_use_says_why_and_frees_everything)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(fd, 1), 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    char listen_at[32];
    snprintf(listen_at, sizeof listen_at, "127.0.0.1:%d", ntohs(a.sin_port));
    /* two upstreams made before the listener fails: all freed (ASan) */
    struct tide_test_prog_run r =
        RUN("--listen", listen_at, "--upstream", "127.0.0.1:9", "--upstream",
            "127.0.0.1:10");
    close(fd);
    EXPECT(r, 1, "cannot listen on", listen_at, "Address already in use");
}
END_TEST

START_TEST(a_missing_ca_file_says_why_and_frees_everything)
{
    struct tide_test_prog_run r =
        RUN("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
            "--upstream", "tls://127.0.0.1:10", "--ca", "/nonexistent/ca.pem");
    EXPECT(r, 1, "tls://127.0.0.1:10", "/nonexistent/ca.pem");
}
END_TEST

START_TEST(help_lists_the_ward_options)
{
    struct tide_test_prog_run r = RUN("--help");
    EXPECT(r, 0, "");
    const char *words[] = {"--breaker-strikes", "--breaker-cooldown",
                           "--no-breaker",      "--backoff-base",
                           "--backoff-cap",     "--no-backoff"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        ck_assert_msg(strstr(r.out, words[i]), "no %s in:\n%s", words[i],
                      r.out);
}
END_TEST

static Suite *cli_suite(void)
{
    Suite *s = suite_create("proxy_cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bad_upstreams_are_refused_by_name);
    tcase_add_test(tc, bad_numbers_are_refused_by_name);
    tcase_add_test(tc, a_missing_value_or_unknown_option_is_said);
    tcase_add_test(tc, listen_is_required_and_an_ipv4_literal);
    tcase_add_test(tc, a_port_in_use_says_why_and_frees_everything);
    tcase_add_test(tc, a_missing_ca_file_says_why_and_frees_everything);
    tcase_add_test(tc, help_lists_the_ward_options);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_cli PROXY\n");
        return 2;
    }
    prog = argv[1];
    return tide_test_run(cli_suite());
}
