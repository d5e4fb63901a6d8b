/* demos/redis/check.c: the pool's health check of idle connections is a
 * PING through the factory's check hook. A server that answers keeps its
 * connections; one that does not answer within check_timeout loses them,
 * and the pool makes new ones when asked. */
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

static struct tide_redis_stats stats(struct tide_redis_client *c)
{
    struct tide_redis_stats s;
    tide_redis_client_stats(c, &s);
    return s;
}

START_TEST(idle_connections_pinged_and_kept)
{
    struct tide_redis_options o = tcp_options(3);
    o.pool.health_interval = TIDE_MS(100);
    struct tide_redis_client *c = client_new(&o);
    fill(c, 3);
    run_ms(450);
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_ge(s.checks, 9);
    ck_assert_uint_eq(s.check_failures, 0);
    ck_assert_uint_eq(s.pool.health_failures, 0);
    ck_assert_int_eq(s.pool.idle, 3);
    ck_assert_uint_eq(s.net.made, 3);
    /* the PINGs left nothing behind: the next command reads its own */
    struct answer a = CMD(c, "ECHO", "after checks");
    ck_assert_str_eq(a.str, "after checks");
    answer_clear(&a);
    client_end(c);
}
END_TEST

START_TEST(unanswered_ping_fails_check)
{
    struct tide_redis_options o = tcp_options(3);
    o.pool.health_interval = TIDE_MS(150);
    o.check_timeout = TIDE_MS(100);
    struct tide_redis_client *c = client_new(&o);
    fill(c, 3);
    /* the server asleep for 600 ms: a check round falls into it */
    struct tide_redis_options so = tcp_options(1);
    struct tide_redis_client *sleeper = client_new(&so);
    struct answer slept = {0};
    const char *argv[] = {"DEBUG", "SLEEP", "0.6"};
    ck_assert_int_eq(tide_redis_command(sleeper, 3, argv, NULL, record, &slept),
                     0);
    ck_assert(run_until(answered, &slept, 3000));
    ck_assert_int_eq(slept.status, 0);
    answer_clear(&slept);
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_ge(s.check_failures, 3);
    ck_assert_uint_ge(s.pool.health_failures, 3);
    /* served again on new connections */
    struct answer a = CMD(c, "PING");
    ck_assert_int_eq(a.status, 0);
    ck_assert_str_eq(a.str, "PONG");
    answer_clear(&a);
    s = stats(c);
    ck_assert_uint_gt(s.net.made, 3);
    client_end(c);
    client_end(sleeper);
}
END_TEST

/* A check in flight when the client is freed: its connection is still
 * destroyed once, and nothing is left open. */
START_TEST(free_during_check)
{
    struct tide_redis_options o = tcp_options(2);
    o.pool.health_interval = TIDE_MS(50);
    o.check_timeout = TIDE_SEC(2);
    struct tide_redis_client *c = client_new(&o);
    fill(c, 2);
    struct tide_redis_options so = tcp_options(1);
    struct tide_redis_client *sleeper = client_new(&so);
    struct answer slept = {0};
    const char *argv[] = {"DEBUG", "SLEEP", "0.3"};
    ck_assert_int_eq(tide_redis_command(sleeper, 3, argv, NULL, record, &slept),
                     0);
    run_ms(150); /* a round of PINGs is waiting on the sleeping server */
    struct tide_redis_stats s = stats(c);
    ck_assert_int_eq(s.pool.checking, 2);
    client_end(c);
    ck_assert(run_until(answered, &slept, 3000));
    answer_clear(&slept);
    client_end(sleeper);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("redis_check");
    TCase *tc = tcase_create("check");
    redis_fixture_add(tc, 30);
    tcase_add_test(tc, idle_connections_pinged_and_kept);
    tcase_add_test(tc, unanswered_ping_fails_check);
    tcase_add_test(tc, free_during_check);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return redis_test_main(make_suite);
}
