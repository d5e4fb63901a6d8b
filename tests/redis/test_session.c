/* demos/redis/session.c against a real redis-server: a command that leaves
 * its connection in a session of its own (an open MULTI or WATCH, SELECT,
 * SUBSCRIBE, CLIENT SETNAME, QUIT) is answered, and its connection never
 * serves the next command, which gets its own reply from the session the
 * setup made; a transaction or WATCH ended in its own pipeline keeps the
 * connection. Each pool has one connection, so a connection given back
 * would be the next command's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

static struct tide_redis_stats stats(struct tide_redis_client *c)
{
    struct tide_redis_stats s;
    tide_redis_client_stats(c, &s);
    return s;
}

static void expect_str(struct tide_redis_client *c, const char *key,
                       const char *want)
{
    struct answer a = CMD(c, "GET", key);
    ck_assert_msg(a.status == 0 && a.type == REDIS_REPLY_STRING,
                  "GET %s: status %d, type %d, '%s'", key, a.status, a.type,
                  a.str ? a.str : a.message);
    ck_assert_str_eq(a.str, want);
    answer_clear(&a);
}

static void ok(struct tide_redis_client *c, int argc, const char *const *argv)
{
    struct answer a = cmd(c, 5000, argc, argv);
    ck_assert_msg(a.status == 0, "%s: %s", argv[0], a.message);
    answer_clear(&a);
}
#define OK(c, ...)                                                             \
    ok((c),                                                                    \
       (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)),    \
       (const char *[]){__VA_ARGS__})

/* A client whose pool holds one connection: one given back is the next
 * command's, so a session it kept would show in that command's reply. */
static struct tide_redis_client *client_of_one(void)
{
    struct tide_redis_options o = tcp_options(1);
    return client_new(&o);
}

/* Sends the n commands as one pipeline (asserted taken) and waits until
 * the last is answered: each records into its own struct answer (its
 * arg), and the replies come in order, so all are in then. */
static void pipeline_wait(struct tide_redis_client *c, size_t n,
                          const struct tide_redis_cmd *cmds)
{
    ck_assert_int_eq(tide_redis_pipeline(c, n, cmds), 0);
    ck_assert(run_until(answered, cmds[n - 1].arg, 5000));
}

START_TEST(multi_left_open_never_lent)
{
    struct tide_redis_client *c = client_of_one();
    OK(c, "SET", "k", "v");
    struct answer a = CMD(c, "MULTI");
    ck_assert_int_eq(a.status, 0);
    ck_assert_str_eq(a.str, "OK");
    answer_clear(&a);
    /* not "+QUEUED": the transaction's connection is gone */
    expect_str(c, "k", "v");
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.retired, 1);
    ck_assert_uint_eq(s.pool.retired, 1);
    ck_assert_uint_eq(s.discarded, 0);
    ck_assert_uint_eq(s.net.made, 2);
    /* MULTI ... EXEC in one pipeline leaves the session as it was: the
     * connection goes back and serves the next command */
    struct answer got[3] = {{0}};
    const char *multi[] = {"MULTI"};
    const char *set[] = {"SET", "k", "w"};
    const char *exec[] = {"EXEC"};
    struct tide_redis_cmd cmds[] = {
        {.argc = 1, .argv = multi, .cb = record, .arg = &got[0]},
        {.argc = 3, .argv = set, .cb = record, .arg = &got[1]},
        {.argc = 1, .argv = exec, .cb = record, .arg = &got[2]},
    };
    pipeline_wait(c, 3, cmds);
    ck_assert_str_eq(got[1].str, "QUEUED");
    ck_assert_int_eq(got[2].type, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(got[2].elements, 1);
    for (int i = 0; i < 3; i++)
        answer_clear(&got[i]);
    expect_str(c, "k", "w");
    s = stats(c);
    ck_assert_uint_eq(s.retired, 1);
    ck_assert_uint_eq(s.net.made, 2);
    client_end(c);
}
END_TEST

START_TEST(select_never_lent)
{
    struct tide_redis_client *c = client_of_one();
    OK(c, "SET", "k", "db0");
    OK(c, "select", "5"); /* any case */
    expect_str(c, "k", "db0");
    /* what needs the session runs in one pipeline with it */
    struct answer got[2] = {{0}};
    const char *select[] = {"SELECT", "5"};
    const char *set[] = {"SET", "k", "db5"};
    struct tide_redis_cmd cmds[] = {
        {.argc = 2, .argv = select, .cb = record, .arg = &got[0]},
        {.argc = 3, .argv = set, .cb = record, .arg = &got[1]},
    };
    pipeline_wait(c, 2, cmds);
    ck_assert_int_eq(got[1].status, 0);
    answer_clear(&got[0]);
    answer_clear(&got[1]);
    expect_str(c, "k", "db0");
    redisContext *ad = redis_admin(&rx->server);
    ck_assert_ptr_nonnull(ad);
    redisReply *r = redisCommand(ad, "SELECT 5");
    freeReplyObject(r);
    r = redisCommand(ad, "GET k");
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r->str, "db5");
    freeReplyObject(r);
    redisFree(ad);
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.retired, 2);
    ck_assert_uint_eq(s.discarded, 0);
    client_end(c);
}
END_TEST

START_TEST(subscribe_never_lent)
{
    struct tide_redis_client *c = client_of_one();
    OK(c, "SET", "k", "v");
    struct answer a = CMD(c, "SUBSCRIBE", "news");
    ck_assert_int_eq(a.status, 0);
    ck_assert_int_eq(a.type, REDIS_REPLY_ARRAY);
    answer_clear(&a);
    /* not "-ERR Can't execute 'get'" from a subscribed session */
    expect_str(c, "k", "v");
    /* several channels: a confirmation each, the rest are the session's
     * own bytes, no fault of the server */
    a = CMD(c, "SUBSCRIBE", "a", "b", "c");
    ck_assert_int_eq(a.status, 0);
    answer_clear(&a);
    expect_str(c, "k", "v");
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.retired, 2);
    ck_assert_uint_eq(s.discarded, 0);
    ck_assert_uint_eq(s.pool.dirty, 0);
    /* nobody is left subscribed at the server */
    run_ms(50);
    redisReply *r = redis_admin_command(&rx->server, "PUBLISH news hello");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->integer, 0);
    freeReplyObject(r);
    client_end(c);
}
END_TEST

START_TEST(watch_left_open_never_lent)
{
    struct tide_redis_client *c = client_of_one();
    OK(c, "SET", "k", "v");
    OK(c, "WATCH", "k");
    /* someone else changes k: a connection still watching it would abort
     * the next transaction */
    redisReply *r = redis_admin_command(&rx->server, "SET k other");
    ck_assert_ptr_nonnull(r);
    freeReplyObject(r);
    struct answer got[3] = {{0}};
    const char *multi[] = {"MULTI"};
    const char *incr[] = {"INCR", "n"};
    const char *exec[] = {"EXEC"};
    struct tide_redis_cmd cmds[] = {
        {.argc = 1, .argv = multi, .cb = record, .arg = &got[0]},
        {.argc = 2, .argv = incr, .cb = record, .arg = &got[1]},
        {.argc = 1, .argv = exec, .cb = record, .arg = &got[2]},
    };
    pipeline_wait(c, 3, cmds);
    ck_assert_msg(got[2].type == REDIS_REPLY_ARRAY,
                  "EXEC: type %d (an aborted transaction is nil, 4)",
                  got[2].type);
    for (int i = 0; i < 3; i++)
        answer_clear(&got[i]);
    /* a WATCH its pipeline's EXEC ends keeps the connection */
    uint64_t made = stats(c).net.made;
    struct answer four[4] = {{0}};
    const char *watch[] = {"WATCH", "k"};
    struct tide_redis_cmd wcmds[] = {
        {.argc = 2, .argv = watch, .cb = record, .arg = &four[0]},
        {.argc = 1, .argv = multi, .cb = record, .arg = &four[1]},
        {.argc = 2, .argv = incr, .cb = record, .arg = &four[2]},
        {.argc = 1, .argv = exec, .cb = record, .arg = &four[3]},
    };
    pipeline_wait(c, 4, wcmds);
    ck_assert_int_eq(four[3].type, REDIS_REPLY_ARRAY);
    for (int i = 0; i < 4; i++)
        answer_clear(&four[i]);
    OK(c, "PING");
    ck_assert_uint_eq(stats(c).net.made, made);
    ck_assert_uint_eq(stats(c).retired, 1);
    client_end(c);
}
END_TEST

START_TEST(client_setname_never_lent)
{
    struct tide_redis_client *c = client_of_one();
    OK(c, "CLIENT", "SETNAME", "mine");
    struct answer a = CMD(c, "CLIENT", "GETNAME");
    ck_assert_int_eq(a.status, 0);
    ck_assert_msg(a.type == REDIS_REPLY_NIL, "name '%s'", a.str ? a.str : "");
    answer_clear(&a);
    /* CLIENT's other subcommands keep the connection */
    OK(c, "CLIENT", "ID");
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.retired, 1);
    ck_assert_uint_eq(s.net.made, 2);
    client_end(c);
}
END_TEST

/* QUIT's +OK comes before the server's close: the connection is closed
 * by the client (retired), not left for the pool to find closing, and a
 * command sent from QUIT's callback, in the same pass of the loop, gets a
 * connection of its own. */
struct chain {
    struct answer quit;
    struct answer next;
};

static void after_quit(struct tide_redis_client *c, int status,
                       const struct redisReply *reply, const char *message,
                       void *arg)
{
    struct chain *ch = arg;
    record(c, status, reply, message, &ch->quit);
    const char *echo[] = {"ECHO", "after"};
    ck_assert_int_eq(tide_redis_command(c, 2, echo, NULL, record, &ch->next),
                     0);
}

START_TEST(quit_never_lent)
{
    struct tide_redis_client *c = client_of_one();
    OK(c, "PING");
    static struct chain ch;
    memset(&ch, 0, sizeof ch);
    const char *quit[] = {"QUIT"};
    ck_assert_int_eq(tide_redis_command(c, 1, quit, NULL, after_quit, &ch), 0);
    ck_assert(run_until(answered, &ch.next, 5000));
    ck_assert_int_eq(ch.quit.status, 0);
    ck_assert_msg(ch.next.status == 0, "after QUIT: %s (%d)", ch.next.message,
                  ch.next.status);
    ck_assert_str_eq(ch.next.str, "after");
    answer_clear(&ch.quit);
    answer_clear(&ch.next);
    ck_assert_uint_eq(stats(c).retired, 1);
    client_end(c);
}
END_TEST

/* Commands whose replies the client could not match are refused, none of
 * a pipeline sent: with CLIENT REPLY SKIP first, GET's reply would have
 * answered the CLIENT command and SET and GET would have timed out. */
START_TEST(unanswerable_refused)
{
    struct tide_redis_client *c = client_of_one();
    struct answer got[3] = {{0}};
    const char *skip[] = {"client", "reply", "skip"};
    const char *set[] = {"SET", "k", "v"};
    const char *get[] = {"GET", "k"};
    struct tide_redis_cmd cmds[] = {
        {.argc = 3, .argv = skip, .cb = record, .arg = &got[0]},
        {.argc = 3, .argv = set, .cb = record, .arg = &got[1]},
        {.argc = 2, .argv = get, .cb = record, .arg = &got[2]},
    };
    ck_assert_int_eq(tide_redis_pipeline(c, 3, cmds), TIDE_EINVAL);
    const char *off[] = {"CLIENT", "REPLY", "OFF"};
    ck_assert_int_eq(tide_redis_command(c, 3, off, NULL, record, &got[0]),
                     TIDE_EINVAL);
    const char *hello3[] = {"HELLO", "3"};
    ck_assert_int_eq(tide_redis_command(c, 2, hello3, NULL, record, &got[0]),
                     TIDE_EINVAL);
    run_ms(50);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(got[i].calls, 0);
    redisReply *r = redis_admin_command(&rx->server, "EXISTS k");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->integer, 0); /* nothing was sent */
    freeReplyObject(r);
    /* what the client can answer is sent (and changes the session) */
    struct answer a = CMD(c, "CLIENT", "REPLY", "ON");
    ck_assert_int_eq(a.status, 0);
    answer_clear(&a);
    a = CMD(c, "HELLO", "2");
    ck_assert_int_eq(a.status, 0);
    ck_assert_int_eq(a.type, REDIS_REPLY_ARRAY);
    answer_clear(&a);
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.commands, 2);
    ck_assert_uint_eq(s.retired, 2);
    ck_assert_uint_eq(s.discarded, 0);
    client_end(c);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("redis_session");
    TCase *tc = tcase_create("session");
    redis_fixture_add(tc, 30);
    tcase_add_test(tc, multi_left_open_never_lent);
    tcase_add_test(tc, select_never_lent);
    tcase_add_test(tc, subscribe_never_lent);
    tcase_add_test(tc, watch_left_open_never_lent);
    tcase_add_test(tc, client_setname_never_lent);
    tcase_add_test(tc, quit_never_lent);
    tcase_add_test(tc, unanswerable_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return redis_test_main(make_suite);
}
