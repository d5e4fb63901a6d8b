/* demos/redis/command.c against a real redis-server: replies of every
 * type, binary-safe values, pipelines answered in order, an error reply
 * that keeps its connection, and the faults that must cost a connection
 * (a timeout, a pipeline cut off half-way) without a reply ever reaching
 * the wrong command. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "loop.h"

static struct tide_redis_stats stats(struct tide_redis_client *c)
{
    struct tide_redis_stats s;
    tide_redis_client_stats(c, &s);
    return s;
}

START_TEST(set_get_incr_mget)
{
    struct tide_redis_options o = tcp_options(2);
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "SET", "greeting", "hello");
    ck_assert_int_eq(a.status, 0);
    ck_assert_int_eq(a.type, REDIS_REPLY_STATUS);
    ck_assert_str_eq(a.str, "OK");
    answer_clear(&a);
    a = CMD(c, "GET", "greeting");
    ck_assert_int_eq(a.type, REDIS_REPLY_STRING);
    ck_assert_str_eq(a.str, "hello");
    answer_clear(&a);
    for (long long i = 1; i <= 3; i++) {
        a = CMD(c, "INCR", "counter");
        ck_assert_int_eq(a.type, REDIS_REPLY_INTEGER);
        ck_assert_int_eq(a.integer, i);
        answer_clear(&a);
    }
    a = CMD(c, "GET", "missing");
    ck_assert_int_eq(a.status, 0);
    ck_assert_int_eq(a.type, REDIS_REPLY_NIL);
    answer_clear(&a);

    /* an array reply, read through the client's own callback */
    struct answer m = {0};
    const char *argv[] = {"MGET", "greeting", "counter", "missing"};
    ck_assert_int_eq(tide_redis_command(c, 4, argv, NULL, record, &m), 0);
    ck_assert(run_until(answered, &m, 5000));
    ck_assert_int_eq(m.type, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(m.elements, 3);
    answer_clear(&m);

    /* one connection served everything, and went back each time */
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.net.made, 1);
    ck_assert_uint_eq(s.replies, 7);
    ck_assert_uint_eq(s.pool.dirty, 0);
    client_end(c);
}
END_TEST

/* The array's elements, checked where they are. */
struct mget_check {
    int calls;
    bool ok;
};

static void check_mget(struct tide_redis_client *c, int status,
                       const struct redisReply *reply, const char *message,
                       void *arg)
{
    (void)c, (void)message;
    struct mget_check *m = arg;
    m->calls++;
    m->ok = status == 0 && reply->type == REDIS_REPLY_ARRAY &&
            reply->elements == 3 &&
            reply->element[0]->type == REDIS_REPLY_STRING &&
            strcmp(reply->element[0]->str, "hello") == 0 &&
            reply->element[1]->type == REDIS_REPLY_STRING &&
            strcmp(reply->element[1]->str, "3") == 0 &&
            reply->element[2]->type == REDIS_REPLY_NIL;
}

static bool mget_answered(void *arg)
{
    return ((struct mget_check *)arg)->calls > 0;
}

START_TEST(mget_elements_in_order)
{
    struct tide_redis_options o = tcp_options(1);
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "SET", "greeting", "hello");
    answer_clear(&a);
    a = CMD(c, "SET", "counter", "3");
    answer_clear(&a);
    struct mget_check m = {0};
    const char *argv[] = {"MGET", "greeting", "counter", "missing"};
    ck_assert_int_eq(tide_redis_command(c, 4, argv, NULL, check_mget, &m), 0);
    ck_assert(run_until(mget_answered, &m, 5000));
    ck_assert_int_eq(m.calls, 1);
    ck_assert(m.ok);
    client_end(c);
}
END_TEST

START_TEST(binary_values_up_to_1mib)
{
    struct tide_redis_options o = tcp_options(2);
    struct tide_redis_client *c = client_new(&o);
    const size_t sizes[] = {0, 1, 2, 1000, 16384, 65537, 1 << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        char *v = malloc(n + 1);
        ck_assert_ptr_nonnull(v);
        /* every byte value, NUL and CR LF among them */
        for (size_t i = 0; i < n; i++)
            v[i] = (char)(i * 7 + k);
        if (n >= 2)
            memcpy(v + n / 2 - 1, "\r\n", 2);
        const char *set[] = {"SET", "blob", v};
        size_t set_len[] = {3, 4, n};
        struct answer a = {0};
        ck_assert_int_eq(tide_redis_command(c, 3, set, set_len, record, &a), 0);
        ck_assert(run_until(answered, &a, 5000));
        ck_assert_int_eq(a.status, 0);
        answer_clear(&a);
        const char *get[] = {"GET", "blob"};
        ck_assert_int_eq(tide_redis_command(c, 2, get, NULL, record, &a), 0);
        ck_assert(run_until(answered, &a, 5000));
        ck_assert_int_eq(a.status, 0);
        ck_assert_int_eq(a.type, REDIS_REPLY_STRING);
        ck_assert_uint_eq(a.len, n);
        ck_assert_msg(memcmp(a.str, v, n) == 0, "%zu bytes came back changed",
                      n);
        answer_clear(&a);
        a = CMD(c, "STRLEN", "blob");
        ck_assert_int_eq(a.integer, (long long)n);
        answer_clear(&a);
        free(v);
    }
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.net.made, 1);
    ck_assert_uint_eq(s.discarded, 0);
    client_end(c);
}
END_TEST

#define PIPELINE 200

/* A 20 MiB value both ways: sent in one write, read whole through many
 * reads, on one connection that goes back clean. */
START_TEST(reply_of_20mib_whole)
{
    struct tide_redis_options o = tcp_options(1);
    o.timeout = TIDE_SEC(20); /* slow under the sanitizers */
    struct tide_redis_client *c = client_new(&o);
    size_t n = 20u << 20;
    char *v = malloc(n);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < n; i++)
        v[i] = (char)('a' + i % 26);
    const char *set[] = {"SET", "big", v};
    const size_t lens[] = {3, 3, n};
    struct answer a = {0};
    ck_assert_int_eq(tide_redis_command(c, 3, set, lens, record, &a), 0);
    ck_assert(run_until(answered, &a, 20000));
    ck_assert_int_eq(a.status, 0);
    answer_clear(&a);
    const char *get[] = {"GET", "big"};
    a = cmd(c, 20000, 2, get);
    ck_assert_int_eq(a.status, 0);
    ck_assert_int_eq(a.type, REDIS_REPLY_STRING);
    ck_assert_uint_eq(a.len, n);
    ck_assert(memcmp(a.str, v, n) == 0);
    answer_clear(&a);
    free(v);
    a = CMD(c, "ECHO", "after");
    ck_assert_str_eq(a.str, "after");
    answer_clear(&a);
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.net.made, 1);
    ck_assert_uint_eq(s.discarded, 0);
    ck_assert_uint_eq(s.pool.dirty, 0);
    client_end(c);
}
END_TEST

START_TEST(pipeline_in_order)
{
    struct tide_redis_options o = tcp_options(4);
    struct tide_redis_client *c = client_new(&o);
    static struct answer got[PIPELINE];
    static struct tide_redis_cmd cmds[PIPELINE];
    static char keys[PIPELINE][16];
    static const char *argv[PIPELINE][3];
    memset(got, 0, sizeof got);
    /* INCR of one counter numbers the replies as the server ran them; an
     * ECHO between tells each command its own */
    for (int i = 0; i < PIPELINE; i++) {
        snprintf(keys[i], sizeof keys[i], "echo-%d", i);
        if (i % 2) {
            argv[i][0] = "ECHO";
            argv[i][1] = keys[i];
            cmds[i] = (struct tide_redis_cmd){
                .argc = 2, .argv = argv[i], .cb = record, .arg = &got[i]};
        } else {
            argv[i][0] = "INCR";
            argv[i][1] = "seq";
            cmds[i] = (struct tide_redis_cmd){
                .argc = 2, .argv = argv[i], .cb = record, .arg = &got[i]};
        }
    }
    ck_assert_int_eq(tide_redis_pipeline(c, PIPELINE, cmds), 0);
    ck_assert(run_until(answered, &got[PIPELINE - 1], 5000));
    for (int i = 0; i < PIPELINE; i++) {
        ck_assert_int_eq(got[i].calls, 1);
        ck_assert_int_eq(got[i].status, 0);
        ck_assert_int_eq(got[i].order, i + 1);
        if (i % 2)
            ck_assert_str_eq(got[i].str, keys[i]);
        else
            ck_assert_int_eq(got[i].integer, i / 2 + 1);
        answer_clear(&got[i]);
    }
    /* one connection, given back clean */
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.net.made, 1);
    ck_assert_int_eq(s.pool.idle, 1);
    client_end(c);
}
END_TEST

START_TEST(error_reply_keeps_connection)
{
    struct tide_redis_options o = tcp_options(1);
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "SET", "word", "abc");
    answer_clear(&a);
    a = CMD(c, "INCR", "word");
    ck_assert_int_eq(a.status, TIDE_REDIS_EREPLY);
    ck_assert_int_eq(a.type, REDIS_REPLY_ERROR);
    ck_assert_msg(strstr(a.message, "ERR value is not an integer") == a.message,
                  "message: %s", a.message);
    answer_clear(&a);
    a = CMD(c, "NOSUCHCOMMAND");
    ck_assert_int_eq(a.status, TIDE_REDIS_EREPLY);
    ck_assert_msg(strstr(a.message, "ERR unknown command") == a.message,
                  "message: %s", a.message);
    answer_clear(&a);
    a = CMD(c, "PING");
    ck_assert_int_eq(a.status, 0);
    ck_assert_str_eq(a.str, "PONG");
    answer_clear(&a);
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.net.made, 1);
    ck_assert_uint_eq(s.discarded, 0);
    ck_assert_uint_eq(s.pool.dirty, 0);
    ck_assert_uint_eq(s.error_replies, 2);
    client_end(c);
}
END_TEST

START_TEST(timeout_discards_connection)
{
    struct tide_redis_options o = tcp_options(1);
    o.timeout = TIDE_MS(200);
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "PING");
    answer_clear(&a);
    int64_t t0 = now_ms();
    a = CMD(c, "DEBUG", "SLEEP", "0.6");
    int64_t took = now_ms() - t0;
    ck_assert_int_eq(a.status, TIDE_REDIS_ETIMEDOUT);
    ck_assert_ptr_null(a.str);
    ck_assert_msg(took >= 190 && took < 500, "timed out after %lld ms",
                  (long long)took);
    answer_clear(&a);
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.discarded, 1);
    ck_assert_uint_eq(s.timeouts, 1);
    /* once the server is awake, the next command has a connection of its
     * own, and its own reply, not the sleeper's +OK */
    run_ms(500);
    a = CMD(c, "ECHO", "mine");
    ck_assert_int_eq(a.status, 0);
    ck_assert_str_eq(a.str, "mine");
    answer_clear(&a);
    s = stats(c);
    ck_assert_uint_eq(s.net.made, 2);
    client_end(c);
}
END_TEST

/* A pipeline whose second command blocks: the first reply is read, the
 * rest never comes within the timeout. The connection must not go back
 * (the blocked command's reply would reach the next borrower): proven by
 * the next command's own reply, and by the server, where the blocked
 * client is gone, so an element pushed afterwards stays in the list. */
START_TEST(half_read_pipeline_never_reaches_next)
{
    struct tide_redis_options o = tcp_options(1);
    o.timeout = TIDE_MS(300);
    struct tide_redis_client *c = client_new(&o);
    struct answer got[3] = {{0}};
    const char *set[] = {"SET", "a", "1"};
    const char *pop[] = {"BLPOP", "queue", "0"};
    const char *get[] = {"GET", "a"};
    struct tide_redis_cmd cmds[] = {
        {.argc = 3, .argv = set, .cb = record, .arg = &got[0]},
        {.argc = 3, .argv = pop, .cb = record, .arg = &got[1]},
        {.argc = 2, .argv = get, .cb = record, .arg = &got[2]},
    };
    ck_assert_int_eq(tide_redis_pipeline(c, 3, cmds), 0);
    ck_assert(run_until(answered, &got[2], 3000));
    ck_assert_int_eq(got[0].status, 0);
    ck_assert_str_eq(got[0].str, "OK");
    ck_assert_int_eq(got[1].status, TIDE_REDIS_ETIMEDOUT);
    ck_assert_int_eq(got[2].status, TIDE_REDIS_ETIMEDOUT);
    ck_assert_int_lt(got[0].order, got[1].order);
    for (int i = 0; i < 3; i++)
        answer_clear(&got[i]);
    struct answer a = CMD(c, "ECHO", "next");
    ck_assert_int_eq(a.status, 0);
    ck_assert_str_eq(a.str, "next");
    answer_clear(&a);
    run_ms(50);
    redisReply *r = redis_admin_command(&rx->server, "RPUSH queue x");
    ck_assert_ptr_nonnull(r);
    freeReplyObject(r);
    r = redis_admin_command(&rx->server, "LLEN queue");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->integer, 1); /* nobody popped it */
    freeReplyObject(r);
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.discarded, 1);
    ck_assert_uint_eq(s.net.made, 2);
    client_end(c);
}
END_TEST

/* Commands that time out waiting for a connection to a server that
 * refuses them (the backoff holds the reconnects back) say why: the last
 * connect's failure, not only the timeout. */
START_TEST(timeout_waiting_says_why)
{
    struct tide_redis_options o = tcp_options(1);
    o.tcp.port = tide_test_free_port(); /* nothing listens there */
    ck_assert_int_gt(o.tcp.port, 0);
    o.timeout = TIDE_MS(300);
    struct tide_redis_client *c = client_new(&o);
    struct answer got[8] = {{0}};
    const char *ping[] = {"PING"};
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(tide_redis_command(c, 1, ping, NULL, record, &got[i]),
                         0);
    ck_assert(run_until(answered, &got[7], 3000));
    int held = 0;
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(got[i].calls, 1);
        ck_assert_msg(got[i].status == TIDE_EREFUSED ||
                          got[i].status == TIDE_EUNAVAILABLE,
                      "status %d: %s", got[i].status, got[i].message);
        ck_assert_msg(strstr(got[i].message, "Connection refused"),
                      "command %d (%s): %s", i,
                      tide_redis_strerror(got[i].status), got[i].message);
        if (got[i].status == TIDE_EUNAVAILABLE) {
            held++;
            ck_assert_msg(strstr(got[i].message, "makes are held"),
                          "message: %s", got[i].message);
        }
        answer_clear(&got[i]);
    }
    /* the backoff held some back: told so, with the refusal behind it,
     * as soon as the hold outlasted their timeout, not at the timeout */
    ck_assert_int_gt(held, 0);
    ck_assert_uint_eq(stats(c).timeouts, 0);
    client_end(c);
    /* a command without a timeout of its own waits the pool's: against a
     * server that refuses, it is answered with the refusal (its make's,
     * or held behind one) well before that, never with a timeout */
    o.timeout = TIDE_FOREVER;
    o.pool.acquire_timeout = TIDE_MS(300);
    c = client_new(&o);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(tide_redis_command(c, 1, ping, NULL, record, &got[i]),
                         0);
    ck_assert(run_until(answered, &got[3], 3000));
    for (int i = 0; i < 4; i++) {
        ck_assert_int_ne(got[i].status, TIDE_REDIS_ETIMEDOUT);
        ck_assert_msg(strstr(got[i].message, "Connection refused"),
                      "message: %s", got[i].message);
        answer_clear(&got[i]);
    }
    ck_assert_uint_eq(stats(c).timeouts, 0);
    client_end(c);
}
END_TEST

/* Callbacks that free the client, or send more, from inside. */
struct reentry {
    struct tide_redis_client *c;
    int calls;
    int more; /* commands still to send from callbacks */
};

static void send_more(struct tide_redis_client *c, int status,
                      const struct redisReply *reply, const char *message,
                      void *arg)
{
    (void)status, (void)reply, (void)message;
    struct reentry *r = arg;
    r->calls++;
    if (r->more > 0) {
        r->more--;
        const char *argv[] = {"PING"};
        ck_assert_int_eq(tide_redis_command(c, 1, argv, NULL, send_more, r), 0);
    }
}

static void free_inside(struct tide_redis_client *c, int status,
                        const struct redisReply *reply, const char *message,
                        void *arg)
{
    (void)status, (void)reply, (void)message;
    struct reentry *r = arg;
    r->calls++;
    tide_redis_client_free(c);
}

static bool reentry_done(void *arg)
{
    struct reentry *r = arg;
    return r->more == 0 && r->calls > 0;
}

START_TEST(callbacks_send_and_free)
{
    struct tide_redis_options o = tcp_options(2);
    struct tide_redis_client *c = client_new(&o);
    struct reentry r = {.c = c, .more = 50};
    const char *argv[] = {"PING"};
    ck_assert_int_eq(tide_redis_command(c, 1, argv, NULL, send_more, &r), 0);
    ck_assert(run_until(reentry_done, &r, 5000));
    run_ms(20);
    ck_assert_int_eq(r.calls, 51);
    /* a pipeline whose first callback frees the client: the rest are
     * dropped, without callbacks */
    struct reentry f = {.c = c};
    struct tide_redis_cmd cmds[] = {
        {.argc = 1, .argv = argv, .cb = free_inside, .arg = &f},
        {.argc = 1, .argv = argv, .cb = free_inside, .arg = &f},
    };
    ck_assert_int_eq(tide_redis_pipeline(c, 2, cmds), 0);
    ck_assert(run_until(reentry_done, &f, 5000));
    run_ms(50);
    ck_assert_int_eq(f.calls, 1);
    for (int i = 0; i < 200 && redis_clients(&rx->server) != 0; i++)
        run_ms(10);
    ck_assert_int_eq(redis_clients(&rx->server), 0);
}
END_TEST

START_TEST(bad_arguments_refused)
{
    struct tide_redis_options o = tcp_options(1);
    struct tide_redis_client *c = client_new(&o);
    const char *argv[] = {"PING", NULL};
    struct answer a = {0};
    ck_assert_int_eq(tide_redis_command(NULL, 1, argv, NULL, record, &a),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_redis_command(c, 0, argv, NULL, record, &a),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_redis_command(c, 2, argv, NULL, record, &a),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_redis_command(c, 1, argv, NULL, NULL, &a),
                     TIDE_EINVAL);
    ck_assert_int_eq(tide_redis_pipeline(c, 0, NULL), TIDE_EINVAL);
    /* lengths no memory could hold (a wrong argvlen) are refused, not
     * summed past SIZE_MAX into a small buffer and copied over it */
    const char *set[] = {"SET", "k", "v"};
    const size_t huge[] = {3, 1, SIZE_MAX - 20};
    ck_assert_int_eq(tide_redis_command(c, 3, set, huge, record, &a),
                     TIDE_EINVAL);
    const size_t halves[] = {3, SIZE_MAX / 2, SIZE_MAX / 2};
    ck_assert_int_eq(tide_redis_command(c, 3, set, halves, record, &a),
                     TIDE_EINVAL);
    struct tide_redis_cmd big = {
        .argc = 3, .argv = set, .argvlen = halves, .cb = record, .arg = &a};
    ck_assert_int_eq(tide_redis_pipeline(c, SIZE_MAX / 8, &big), TIDE_EINVAL);
    struct tide_redis_client *none = NULL;
    struct tide_redis_options bad = o;
    bad.user = "alice"; /* a user without a password */
    ck_assert_int_eq(tide_redis_client_new(rx->base, &bad, &none), TIDE_EINVAL);
    ck_assert_ptr_null(none);
    run_ms(20);
    ck_assert_int_eq(a.calls, 0);
    client_end(c);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("redis_command");
    TCase *tc = tcase_create("command");
    redis_fixture_add(tc, 30);
    tcase_add_test(tc, set_get_incr_mget);
    tcase_add_test(tc, mget_elements_in_order);
    tcase_add_test(tc, binary_values_up_to_1mib);
    tcase_add_test(tc, reply_of_20mib_whole);
    tcase_add_test(tc, pipeline_in_order);
    tcase_add_test(tc, error_reply_keeps_connection);
    tcase_add_test(tc, timeout_discards_connection);
    tcase_add_test(tc, half_read_pipeline_never_reaches_next);
    tcase_add_test(tc, timeout_waiting_says_why);
    tcase_add_test(tc, callbacks_send_and_free);
    tcase_add_test(tc, bad_arguments_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return redis_test_main(make_suite);
}
