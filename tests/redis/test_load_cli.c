/* redis_load as a user runs it, against the fixture's redis-server: every
 * number it reads is read whole and a bad one is refused by name (exit 2);
 * a run that fails says why, the warm-up's failures and connections that
 * never came included; a send the pool refuses is said once and stops the
 * run; a run that cannot succeed (nothing listens, no socket at the path,
 * a server that is not Redis, a failure that repeats) stops at once with
 * the cause; AUTH and SELECT come from its options. The program is built from
 * demos/redis/redis_load.c beside this test (its path is argv[1]), with
 * the same sanitizers: under AddressSanitizer a leak on any of these
 * paths, the early exits included, makes its exit nonzero. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fixture.h"
#include "load_child.h"
#include "stranger.h"

static const char *prog; /* the redis_load under test */

#define RUN(ms, ...)          TIDE_TEST_PROG(prog, NULL, ms, __VA_ARGS__)
#define RUN_ENV(env, ms, ...) TIDE_TEST_PROG(prog, env, ms, __VA_ARGS__)
#define EXPECT                TIDE_TEST_EXPECT

static void port_str(char *buf, size_t len, int port)
{
    snprintf(buf, len, "%d", port);
}

START_TEST(bad_numbers_are_refused_by_name)
{
    /* each was read as something else: 6379, 10, a late EINVAL, a silent
     * exit 1 */
    struct tide_test_prog_run r = RUN(10000, "--port", "abc");
    EXPECT(r, 2, "--port", "'abc'");
    r = RUN(10000, "-n", "10x");
    EXPECT(r, 2, "-n", "'10x'");
    r = RUN(10000, "--port", "99999");
    EXPECT(r, 2, "--port", "'99999'", "65535");
    r = RUN(10000, "-n", "100000000000");
    EXPECT(r, 2, "-n", "'100000000000'");
    r = RUN(10000, "-c", "0");
    EXPECT(r, 2, "-c", "'0'");
    r = RUN(10000, "--seconds", "5x");
    EXPECT(r, 2, "--seconds", "'5x'");
    r = RUN(10000, "--warmup", "-1");
    EXPECT(r, 2, "--warmup", "'-1'");
    r = RUN(10000, "-d", " 3");
    EXPECT(r, 2, "-d", "' 3'");
    r = RUN(10000, "--db", "x");
    EXPECT(r, 2, "--db", "'x'");
    r = RUN(10000, "--preconnect", "101");
    EXPECT(r, 2, "--preconnect", "'101'");
    r = RUN(10000, "--port");
    EXPECT(r, 2, "--port needs a value");
    r = RUN(10000, "--prot", "1");
    EXPECT(r, 2, "unknown option '--prot'");
}
END_TEST

START_TEST(good_numbers_run)
{
    char port[16];
    port_str(port, sizeof port, rx->server.port);
    struct tide_test_prog_run r =
        RUN(30000, "--port", port, "-n", "20", "-c", "2", "--seconds", "10");
    EXPECT(r, 0, "");
    ck_assert_msg(strstr(r.out, "tcp GET c2: 20 requests"), "stdout: %s",
                  r.out);
}
END_TEST

/* The configuration for throughput on a few connections: --preconnect
 * opens the next connection once the callers fill a share of the open
 * ones' room, so 50 callers on streams 64 spread over all 4 connections
 * rather than queue on one (the CSV line's last column: connections made,
 * the warm-up's included). */
START_TEST(preconnect_spreads_over_the_connections)
{
    char port[16];
    port_str(port, sizeof port, rx->server.port);
    struct tide_test_prog_run r =
        RUN(30000, "--port", port, "-n", "2000", "-c", "50", "--streams", "64",
            "--conns", "4", "--spread", "--preconnect", "20", "--csv",
            "--seconds", "20");
    EXPECT(r, 0, "");
    const char *last = strrchr(r.out, ',');
    ck_assert_msg(last && strtol(last + 1, NULL, 10) == 4, "stdout: %s", r.out);
    /* without it, one connection carries all 50 */
    r = RUN(30000, "--port", port, "-n", "2000", "-c", "50", "--streams", "64",
            "--conns", "4", "--spread", "--csv", "--seconds", "20");
    EXPECT(r, 0, "");
    last = strrchr(r.out, ',');
    ck_assert_msg(last && strtol(last + 1, NULL, 10) == 1, "stdout: %s", r.out);
}
END_TEST

/* A CA file that is not there is named, with the system's reason, and
 * the exit is 1 with everything freed (under the suite's sanitizers a
 * leak would end it with LeakSanitizer's own code instead). */
START_TEST(missing_cacert_named)
{
    char port[16];
    port_str(port, sizeof port, rx->server.tls_port);
    struct tide_test_prog_run r =
        RUN(10000, "--port", port, "--tls", "--cacert", "/nonexistent/ca.pem");
    EXPECT(r, 1, "--cacert /nonexistent/ca.pem: No such file or directory");
    /* a file that holds no certificate is named too */
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/not-a-ca.pem", rx->server.child.dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fputs("this is no certificate\n", f);
    ck_assert_int_eq(fclose(f), 0);
    r = RUN(10000, "--port", port, "--tls", "--cacert", file);
    EXPECT(r, 1, "TIDE_ETLS_CONFIG", "--cacert ", "not-a-ca.pem: ");
}
END_TEST

/* --help is asked for, not a mistake: the options on stdout, exit 0. */
START_TEST(help_says_options_exit_0)
{
    struct tide_test_prog_run r = RUN(10000, "--help");
    EXPECT(r, 0, "");
    ck_assert_msg(strstr(r.out, "usage: redis_load") &&
                      strstr(r.out, "--password-file FILE") &&
                      strstr(r.out, "--reconnect") &&
                      strstr(r.out, "--preconnect PCT"),
                  "stdout: %s", r.out);
    ck_assert_msg(!strstr(r.err, "unknown option"), "stderr: %s", r.err);
}
END_TEST

START_TEST(refused_port_stops_at_once)
{
    int port, fd = tide_test_refusing_port(&port);
    ck_assert_int_ge(fd, 0);
    char p[16];
    port_str(p, sizeof p, port);
    struct tide_test_prog_run r = RUN(30000, "--port", p, "--seconds", "20");
    close(fd);
    EXPECT(r, 1, "stopped: nothing listens there", "Connection refused",
           "(TIDE_EREFUSED)");
    tide_test_prog_expect_soon(&r, 5000);
}
END_TEST

START_TEST(unix_socket_missing_stops_at_once)
{
    struct tide_test_prog_run r =
        RUN(30000, "--unix", "/nonexistent.sock", "--seconds", "20");
    EXPECT(r, 1, "stopped: no such socket", "/nonexistent.sock",
           "No such file or directory", "(TIDE_ENOSOCKET)");
    tide_test_prog_expect_soon(&r, 5000);
}
END_TEST

/* A plain file or a directory at the path: the connect is refused, as
 * with a socket nobody listens on, so the path itself is looked at. */
START_TEST(unix_path_not_a_socket_stops_at_once)
{
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/plain", rx->server.child.dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fclose(f), 0);
    struct tide_test_prog_run r = RUN(30000, "--unix", file, "--seconds", "20");
    EXPECT(r, 1, "stopped: ", "plain is not a socket but a regular file",
           "(TIDE_EREFUSED)");
    tide_test_prog_expect_soon(&r, 5000);
    r = RUN(30000, "--unix", rx->server.child.dir, "--seconds", "20");
    EXPECT(r, 1, "is not a socket but a directory");
    tide_test_prog_expect_soon(&r, 5000);
}
END_TEST

/* A socket file left behind by a server that is gone. */
START_TEST(unix_socket_nobody_listens_stops_at_once)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/gone.sock", rx->server.child.dir);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    ck_assert_uint_lt(strlen(path), sizeof a.sun_path);
    memcpy(a.sun_path, path, strlen(path) + 1);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    close(fd); /* the file stays, and nothing listens on it */
    struct tide_test_prog_run r = RUN(30000, "--unix", path, "--seconds", "20");
    EXPECT(r, 1, "stopped: nothing listens on the socket", "Connection refused",
           "(TIDE_EREFUSED)");
    tide_test_prog_expect_soon(&r, 5000);
}
END_TEST

/* An HTTP server answers the setup's PING with a 400; another server
 * speaks garbage first. Neither is Redis, and no retry makes it one. */
START_TEST(not_redis_stops_at_once)
{
    static const char garbage[] = "\x16\x03\x01garbage\r\n";
    struct {
        const char *bytes;
        size_t len;
        bool first;
        const char *said;
    } servers[] = {
        {TIDE_TEST_HTTP_400, sizeof TIDE_TEST_HTTP_400 - 1, false, "\"H\""},
        {garbage, sizeof garbage - 1, true, "\"\\x16\""},
    };
    for (size_t i = 0; i < sizeof servers / sizeof servers[0]; i++) {
        struct tide_test_stranger st;
        ck_assert(tide_test_stranger_start(&st, servers[i].bytes,
                                           servers[i].len, servers[i].first,
                                           servers[i].first ? false : true));
        char p[16];
        port_str(p, sizeof p, st.port);
        struct tide_test_prog_run r =
            RUN(30000, "--port", p, "--seconds", "20");
        tide_test_stranger_stop(&st);
        EXPECT(r, 1, "stopped: the server does not speak Redis",
               "Protocol error", servers[i].said, "(TIDE_REDIS_EPROTOCOL)");
        tide_test_prog_expect_soon(&r, 5000);
    }
}
END_TEST

/* A server that accepts and closes at once (one at its limit, one going
 * down): no single failure says it is hopeless, so the run goes on until
 * every request in flight failed twice in a row, and stops then. */
START_TEST(a_failure_that_repeats_stops_the_run)
{
    struct tide_test_stranger st;
    ck_assert(tide_test_stranger_start(&st, "", 0, true, true));
    char p[16];
    port_str(p, sizeof p, st.port);
    struct tide_test_prog_run r =
        RUN(30000, "--port", p, "-c", "4", "--seconds", "20");
    tide_test_stranger_stop(&st);
    EXPECT(r, 1,
           "stopped: the failure repeats (8 answers in a row, none good)");
    tide_test_prog_expect_soon(&r, 5000);
    ck_assert_int_ge(st.accepted, 2);
}
END_TEST

START_TEST(tls_to_plain_port_says_why)
{
    /* the server reads the ClientHello as a command it waits to end: the
     * handshake ends at its timeout (4 s) only */
    char port[16];
    port_str(port, sizeof port, rx->server.port);
    struct tide_test_prog_run r =
        RUN(30000, "--port", port, "--tls", "--cacert", rx->server.ca_path,
            "-c", "1", "-n", "5", "--seconds", "7");
    EXPECT(r, 1, "first error (in the warm-up)", "TLS handshake",
           "(TIDE_EHANDSHAKE_TIMEOUT)");
    /* before that timeout: the make still running is said */
    r = RUN(30000, "--port", port, "--tls", "--cacert", rx->server.ca_path,
            "-c", "1", "-n", "5", "--seconds", "1");
    EXPECT(r, 1, "none failed", "1 still running");
}
END_TEST

START_TEST(queue_full_said_once_and_stops)
{
    char port[16];
    port_str(port, sizeof port, rx->server.port);
    int64_t t0 = now_ms();
    struct tide_test_prog_run r = RUN(30000, "--port", port, "-c", "100000",
                                      "-n", "10", "--seconds", "20");
    EXPECT(r, 1, "too many callers waiting", "(TIDE_EQUEUEFULL)");
    ck_assert_msg(tide_test_count(r.err, "too many callers waiting") == 1,
                  "stderr:\n%.2000s", r.err);
    ck_assert_msg(r.err_lines <= 5, "%d lines on stderr:\n%.2000s", r.err_lines,
                  r.err);
    /* stopped, not run out of its 20 s */
    ck_assert_msg(now_ms() - t0 < 10000, "ran %lld ms",
                  (long long)(now_ms() - t0));
    ck_assert_ptr_null(strstr(r.err, "out of time"));
}
END_TEST

static void require_password(const char *password)
{
    char command[128];
    snprintf(command, sizeof command, "CONFIG SET requirepass %s", password);
    redisReply *reply = redis_admin_command(&rx->server, command);
    ck_assert_msg(reply && reply->type != REDIS_REPLY_ERROR, "%s: %s", command,
                  reply ? reply->str : "no reply");
    freeReplyObject(reply);
    snprintf(rx->server.password, sizeof rx->server.password, "%s", password);
}

START_TEST(wrong_password_says_wrongpass)
{
    require_password("s3cret");
    char port[16];
    port_str(port, sizeof port, rx->server.port);
    const char *const env[] = {"REDIS_PASSWORD=wrong", NULL};
    struct tide_test_prog_run r =
        RUN_ENV(env, 30000, "--port", port, "-c", "1", "-n", "5", "--warmup",
                "0", "--seconds", "10");
    EXPECT(r, 1, "first error: ", "WRONGPASS", "(TIDE_ESETUP)");
    /* and none at all: Redis's own NOAUTH */
    r = RUN(30000, "--port", port, "-c", "1", "-n", "5", "--warmup", "0",
            "--seconds", "10");
    EXPECT(r, 1, "NOAUTH");
}
END_TEST

START_TEST(right_password_and_db_run)
{
    require_password("s3cret");
    char port[16], file[PATH_MAX];
    port_str(port, sizeof port, rx->server.port);
    snprintf(file, sizeof file, "%s/password", rx->server.child.dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs("s3cret\n", f), 0);
    ck_assert_int_eq(fclose(f), 0);
    /* from the file, as the default ACL user, into database 3 */
    struct tide_test_prog_run r =
        RUN(30000, "--port", port, "--password-file", file, "--user", "default",
            "--db", "3", "-t", "set", "-c", "2", "-n", "20", "--seconds", "10");
    EXPECT(r, 0, "");
    ck_assert_msg(strstr(r.out, "20 requests"), "stdout: %s", r.out);
    redisReply *reply = redis_admin_command(&rx->server, "INFO keyspace");
    ck_assert_ptr_nonnull(reply);
    ck_assert_msg(reply->type == REDIS_REPLY_STRING &&
                      strstr(reply->str, "db3:keys=1") &&
                      !strstr(reply->str, "db0:"),
                  "keyspace: %s", reply->str);
    freeReplyObject(reply);
    /* from the environment */
    const char *const env[] = {"REDIS_PASSWORD=s3cret", NULL};
    r = RUN_ENV(env, 30000, "--port", port, "-c", "2", "-n", "20", "--seconds",
                "10");
    EXPECT(r, 0, "");
    /* an empty file is refused by name */
    f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fclose(f), 0);
    r = RUN(10000, "--port", port, "--password-file", file);
    EXPECT(r, 2, "--password-file", "no password");
}
END_TEST

/* A session the server refuses for good (a database that does not exist,
 * a wrong password) stops the run at the first refusal, said in Redis's
 * words, instead of every request waiting out the backoff until the run
 * is out of time. */
START_TEST(refused_session_stops_at_once)
{
    char port[16];
    port_str(port, sizeof port, rx->server.port);
    int64_t t0 = now_ms();
    struct tide_test_prog_run r =
        RUN(30000, "--port", port, "--db", "99", "--seconds", "20");
    EXPECT(r, 1, "refuses the session", "DB index is out of range",
           "(TIDE_ESETUP)");
    ck_assert_msg(!strstr(r.err, "out of time"), "stderr: %s", r.err);
    ck_assert_msg(now_ms() - t0 < 5000, "took %lld ms",
                  (long long)(now_ms() - t0));
    require_password("s3cret");
    const char *const env[] = {"REDIS_PASSWORD=wrong", NULL};
    t0 = now_ms();
    r = RUN_ENV(env, 30000, "--port", port, "--seconds", "20");
    EXPECT(r, 1, "refuses the session", "WRONGPASS");
    ck_assert_msg(now_ms() - t0 < 5000, "took %lld ms",
                  (long long)(now_ms() - t0));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("redis_load_cli");
    TCase *tc = tcase_create("cli");
    redis_fixture_add(tc, 90);
    tcase_add_test(tc, bad_numbers_are_refused_by_name);
    tcase_add_test(tc, good_numbers_run);
    tcase_add_test(tc, preconnect_spreads_over_the_connections);
    tcase_add_test(tc, missing_cacert_named);
    tcase_add_test(tc, help_says_options_exit_0);
    tcase_add_test(tc, refused_port_stops_at_once);
    tcase_add_test(tc, unix_socket_missing_stops_at_once);
    tcase_add_test(tc, unix_path_not_a_socket_stops_at_once);
    tcase_add_test(tc, unix_socket_nobody_listens_stops_at_once);
    tcase_add_test(tc, not_redis_stops_at_once);
    tcase_add_test(tc, a_failure_that_repeats_stops_the_run);
    tcase_add_test(tc, tls_to_plain_port_says_why);
    tcase_add_test(tc, queue_full_said_once_and_stops);
    tcase_add_test(tc, wrong_password_says_wrongpass);
    tcase_add_test(tc, right_password_and_db_run);
    tcase_add_test(tc, refused_session_stops_at_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s PATH-OF-REDIS_LOAD\n", argv[0]);
        return 2;
    }
    prog = argv[1];
    return redis_test_main(make_suite);
}
