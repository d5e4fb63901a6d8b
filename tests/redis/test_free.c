/* demos/redis/client.c: freeing a client with commands in flight. Whatever
 * state each command's connection is in (lent with its request sent and
 * the reply not yet come, being connected, handshaken or set up, not
 * asked for yet), the free closes every connection exactly once: once the
 * loop has run dry no descriptor of the client is left, no event is left
 * on the base and the server sees every connection close. The commands
 * are dropped unanswered, as redis.h promises: no callback runs after the
 * free. Under AddressSanitizer the process's exit proves that nothing the
 * connections held (bufferevents, buffers, SSL objects) was left behind. */
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "loop.h"

#define IN_FLIGHT 10

static struct tide_redis_stats stats(struct tide_redis_client *c)
{
    struct tide_redis_stats s;
    tide_redis_client_stats(c, &s);
    return s;
}

static struct tide_redis_options options(struct tide_tls_options *t,
                                         int64_t size)
{
    struct tide_redis_options o = tcp_options(size);
    if (t) {
        o.tcp.port = rx->server.tls_port;
        o.tls = t;
    }
    return o;
}

static void send_ping(struct tide_redis_client *c, struct answer *a)
{
    const char *argv[] = {"PING"};
    ck_assert_int_eq(tide_redis_command(c, 1, argv, NULL, record, a), 0);
}

/* Only the run's own tick is left on the base: every event of the client
 * and every finalizer of its bufferevents has run. */
static bool dry(void *arg)
{
    (void)arg;
    return event_base_get_num_events(
               rx->base, EVENT_BASE_COUNT_ADDED | EVENT_BASE_COUNT_ACTIVE) <= 1;
}

static bool server_empty(void *arg)
{
    (void)arg;
    return redis_clients(&rx->server) == 0;
}

/* After a free: the loop runs dry, and with it every descriptor of the
 * client is closed (fds: those open before it was made); the server sees
 * each connection go. */
static void run_dry(int fds)
{
    ck_assert_msg(
        run_until(dry, NULL, 2000),
        "%d events still on the base 2 s after the free",
        event_base_get_num_events(rx->base, EVENT_BASE_COUNT_ADDED |
                                                EVENT_BASE_COUNT_ACTIVE));
    ck_assert_msg(tide_test_open_fds() == fds,
                  "%d descriptors open after the free, %d before the client",
                  tide_test_open_fds(), fds);
    ck_assert_msg(run_until(server_empty, NULL, 3000),
                  "the server still has %ld clients",
                  redis_clients(&rx->server));
}

/* Every state at once, held there by the server itself: DEBUG SLEEP keeps
 * it from answering anything for half a second (and BLPOP on an empty list
 * holds its own connection), so two commands are lent with their requests
 * sent, four connections are connected (TCP) or
 * handshaking (TLS) with their setup unanswered, two makes have only just
 * begun and two commands wait for a connection. */
static void free_every_state(bool tls)
{
    struct tide_tls_options t = tls_options(NULL);
    struct tide_redis_options o = options(tls ? &t : NULL, 8);
    int fds = tide_test_open_fds();
    struct tide_redis_client *c = client_new(&o);
    fill(c, 2);
    struct answer a[IN_FLIGHT];
    memset(a, 0, sizeof a);
    const char *sleep[] = {"DEBUG", "SLEEP", "0.5"};
    ck_assert_int_eq(tide_redis_command(c, 3, sleep, NULL, record, &a[0]), 0);
    /* a list nobody pushes to: blocked, whichever the server reads first */
    const char *pop[] = {"BLPOP", "tidepool:none", "5"};
    ck_assert_int_eq(tide_redis_command(c, 3, pop, NULL, record, &a[1]), 0);
    run_ms(30); /* both written; the server sleeps */
    for (int i = 2; i < 6; i++)
        send_ping(c, &a[i]);
    run_ms(50); /* connected (or handshaking), setup sent, unanswered */
    send_ping(c, &a[6]);
    send_ping(c, &a[7]);
    /* one pass: the pool starts their makes, which go no further */
    event_base_loop(rx->base, EVLOOP_NONBLOCK);
    send_ping(c, &a[8]);
    send_ping(c, &a[9]);
    struct tide_redis_stats s = stats(c);
    ck_assert_int_eq(s.pool.lent, 2);
    ck_assert_int_eq(s.pool.making, 6);
    /* the eight commands without a connection wait: six on a make each,
     * two for a connection given back */
    ck_assert_int_eq(s.pool.waiting, 8);
    ck_assert_int_eq(s.net.pending, 6);
    ck_assert_int_ge(s.net.attempts, 6); /* four of them reached a socket */
    for (int i = 0; i < IN_FLIGHT; i++)
        ck_assert_int_eq(a[i].calls, 0);

    tide_redis_client_free(c);
    run_dry(fds);
    for (int i = 0; i < IN_FLIGHT; i++) {
        ck_assert_msg(a[i].calls == 0, "command %d answered after the free", i);
        answer_clear(&a[i]);
    }
}

START_TEST(free_every_state_tcp)
{
    free_every_state(false);
}
END_TEST

START_TEST(free_every_state_tls)
{
    free_every_state(true);
}
END_TEST

/* Freed after 0 to 21 ms of a burst from an empty pool: each round catches
 * the makes somewhere else (the dial, the connect, the handshake, the
 * setup's PING) and the first commands lent or answered. A command
 * answered before the free was answered once; none is answered after. */
static void free_during_burst(bool tls)
{
    static const int after_ms[] = {0, 1, 2, 3, 5, 8, 13, 21};
    for (size_t r = 0; r < sizeof after_ms / sizeof after_ms[0]; r++) {
        struct tide_tls_options t = tls_options(NULL);
        struct tide_redis_options o = options(tls ? &t : NULL, 4);
        int fds = tide_test_open_fds();
        struct tide_redis_client *c = client_new(&o);
        struct answer a[IN_FLIGHT];
        memset(a, 0, sizeof a);
        for (int i = 0; i < IN_FLIGHT; i++)
            send_ping(c, &a[i]);
        if (after_ms[r] > 0)
            run_ms(after_ms[r]);
        int before[IN_FLIGHT];
        for (int i = 0; i < IN_FLIGHT; i++) {
            before[i] = a[i].calls;
            ck_assert_int_le(a[i].calls, 1);
            if (a[i].calls)
                ck_assert_int_eq(a[i].status, 0);
        }
        tide_redis_client_free(c);
        run_dry(fds);
        for (int i = 0; i < IN_FLIGHT; i++) {
            ck_assert_msg(a[i].calls == before[i],
                          "round %zu: command %d answered after the free", r,
                          i);
            answer_clear(&a[i]);
        }
    }
}

START_TEST(free_during_burst_tcp)
{
    free_during_burst(false);
}
END_TEST

START_TEST(free_during_burst_tls)
{
    free_during_burst(true);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("redis_free");
    TCase *tc = tcase_create("in_flight");
    redis_fixture_add(tc, 60);
    tcase_add_test(tc, free_every_state_tcp);
    tcase_add_test(tc, free_every_state_tls);
    tcase_add_test(tc, free_during_burst_tcp);
    tcase_add_test(tc, free_during_burst_tls);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return redis_test_main(make_suite);
}
