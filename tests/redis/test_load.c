/* demos/load.c with the Redis client, as redis_load runs it: a closed-loop
 * run that runs out of time with commands in flight, then the client freed
 * and the run disposed of. Run in a child process (this binary again) that
 * exits 0 when it has nothing left open: under AddressSanitizer a
 * bufferevent, buffer or SSL object left behind makes that exit a leak
 * report (and an abort), and in any build a connection left behind keeps
 * its socket open. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "fixture.h"
#include "load.h"
#include "load_child.h"
#include "loop.h"

struct run {
    struct tide_redis_options options;
    struct tide_redis_client *client;
};

static void on_reply(struct tide_redis_client *c, int status,
                     const struct redisReply *reply, const char *message,
                     void *arg)
{
    (void)c;
    tide_demo_load_answered(arg, status == 0 && reply, message, status);
}

static int send_ping(struct tide_demo_req *r, void *arg)
{
    struct run *run = arg;
    const char *argv[] = {"PING"};
    return tide_redis_command(run->client, 1, argv, NULL, on_reply, r);
}

static uint64_t made(void *arg)
{
    struct run *run = arg;
    struct tide_redis_stats s;
    tide_redis_client_stats(run->client, &s);
    return s.net.made;
}

static const struct tide_demo_load_ops ops = {
    .send = send_ping,
    .strerror = tide_redis_strerror,
    .made = made,
};

static bool open_client(struct event_base *base, void *arg)
{
    struct run *run = arg;
    return tide_redis_client_new(base, &run->options, &run->client) == 0;
}

static void close_client(void *arg)
{
    struct run *run = arg;
    tide_redis_client_free(run->client);
}

/* The child, a fresh process of this binary (no libevent debug mode,
 * whose table of events would keep whatever is left reachable and so
 * hidden from the leak check): the client freed with its last commands in
 * flight. ca_file: "-" for plain TCP. */
static int out_of_time(int port, const char *ca_file, int conc)
{
    struct tide_tls_options t = {.ca_file = ca_file};
    struct run run = {
        .options = {
            .tcp = {.host = "127.0.0.1", .port = port},
            .tls = strcmp(ca_file, "-") != 0 ? &t : NULL,
            .pool = {.limits = TIDE_LIMITS(.size = conc), .seed = 1},
        }};
    return tide_test_load_out_of_time(&ops, &run, conc, open_client,
                                      close_client);
}

#define CHILD_MODE "--out-of-time"

/* Runs this binary as the child (at most 30 s) and asserts it exited 0. */
static void run_child(bool tls, int conc)
{
    char port[16], n[16];
    snprintf(port, sizeof port, "%d",
             tls ? rx->server.tls_port : rx->server.port);
    snprintf(n, sizeof n, "%d", conc);
    char *const argv[] = {
        "test_load", CHILD_MODE, port, tls ? rx->server.ca_path : "-", n, NULL};
    char why[64];
    ck_assert_msg(tide_test_child_run_self(argv, 30000, why, sizeof why),
                  "the run %s", why);
}

START_TEST(out_of_time_leaves_nothing_tcp)
{
    run_child(false, 4);
}
END_TEST

START_TEST(out_of_time_leaves_nothing_tcp_one)
{
    run_child(false, 1);
}
END_TEST

START_TEST(out_of_time_leaves_nothing_tls)
{
    run_child(true, 4);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("redis_load");
    TCase *tc = tcase_create("out_of_time");
    redis_fixture_add(tc, 60);
    tcase_add_test(tc, out_of_time_leaves_nothing_tcp);
    tcase_add_test(tc, out_of_time_leaves_nothing_tcp_one);
    tcase_add_test(tc, out_of_time_leaves_nothing_tls);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], CHILD_MODE) == 0)
        return out_of_time(atoi(argv[2]), argv[3], atoi(argv[4]));
    return redis_test_main(make_suite);
}
