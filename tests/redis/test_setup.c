/* demos/redis/setup.c: every new connection's opening exchange, before the
 * pool takes it: AUTH with a password or a user and password, SELECT, and
 * the PING that makes a refusing server say why. A refusal is a failed
 * make in Redis's own words, and the reconnects are spaced, never a
 * storm. */
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

static void admin(const char *command)
{
    redisReply *r = redis_admin_command(&rx->server, command);
    ck_assert_msg(r && r->type != REDIS_REPLY_ERROR, "%s: %s", command,
                  r ? r->str : "no reply");
    freeReplyObject(r);
}

static void require_password(const char *password)
{
    char command[128];
    snprintf(command, sizeof command, "CONFIG SET requirepass %s", password);
    admin(command);
    snprintf(rx->server.password, sizeof rx->server.password, "%s", password);
}

START_TEST(auth_password_right)
{
    require_password("s3cret");
    struct tide_redis_options o = tcp_options(2);
    o.password = "s3cret";
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "SET", "k", "v");
    ck_assert_int_eq(a.status, 0);
    answer_clear(&a);
    a = CMD(c, "GET", "k");
    ck_assert_str_eq(a.str, "v");
    answer_clear(&a);
    client_end(c);
    /* without the password, the setup's PING is refused, and says so */
    o.password = NULL;
    c = client_new(&o);
    a = CMD(c, "GET", "k");
    ck_assert_int_eq(a.status, TIDE_ESETUP);
    ck_assert_msg(strstr(a.message, "NOAUTH"), "message: %s", a.message);
    answer_clear(&a);
    client_end(c);
}
END_TEST

START_TEST(auth_wrong_refused_not_stormed)
{
    require_password("s3cret");
    struct tide_redis_options o = tcp_options(4);
    o.password = "wrong";
    o.timeout = TIDE_MS(500);
    struct tide_redis_client *c = client_new(&o);
    int64_t start = now_ms();
    int answers = 0, wrongpass = 0;
    char last[320] = "";
    while (now_ms() - start < 2000) {
        struct answer a = CMD(c, "PING");
        ck_assert_int_ne(a.status, 0);
        answers++;
        if (a.status == TIDE_ESETUP && strstr(a.message, "WRONGPASS"))
            wrongpass++;
        snprintf(last, sizeof last, "%s (%s)", a.message,
                 tide_err_name(a.status));
        answer_clear(&a);
    }
    ck_assert_msg(wrongpass > 0, "never WRONGPASS; the last: %s", last);
    struct tide_redis_stats s = stats(c);
    ck_assert_msg(s.net.makes <= 12, "%llu connects in 2 s",
                  (unsigned long long)s.net.makes);
    ck_assert_uint_ge(s.net.makes, 2);
    ck_assert_uint_eq(s.net.made, 0);
    client_end(c);
}
END_TEST

START_TEST(auth_user_and_password)
{
    admin("ACL SETUSER alice on >alicepw ~* &* +@all");
    struct tide_redis_options o = tcp_options(1);
    o.user = "alice";
    o.password = "alicepw";
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "ACL", "WHOAMI");
    ck_assert_int_eq(a.status, 0);
    ck_assert_str_eq(a.str, "alice");
    answer_clear(&a);
    client_end(c);
    o.password = "bobpw";
    c = client_new(&o);
    a = CMD(c, "ACL", "WHOAMI");
    ck_assert_int_eq(a.status, TIDE_ESETUP);
    ck_assert_msg(strstr(a.message, "WRONGPASS"), "message: %s", a.message);
    answer_clear(&a);
    client_end(c);
}
END_TEST

START_TEST(select_database)
{
    struct tide_redis_options o = tcp_options(2);
    o.db = 3;
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "SET", "where", "db3");
    ck_assert_int_eq(a.status, 0);
    answer_clear(&a);
    client_end(c);
    redisContext *ad = redis_admin(&rx->server);
    ck_assert_ptr_nonnull(ad);
    redisReply *r = redisCommand(ad, "EXISTS where");
    ck_assert_int_eq(r->integer, 0); /* not in db 0 */
    freeReplyObject(r);
    freeReplyObject(redisCommand(ad, "SELECT 3"));
    r = redisCommand(ad, "GET where");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    ck_assert_str_eq(r->str, "db3");
    freeReplyObject(r);
    redisFree(ad);
    /* a database that does not exist: refused in Redis's words */
    o.db = 99;
    c = client_new(&o);
    a = CMD(c, "PING");
    ck_assert_int_eq(a.status, TIDE_ESETUP);
    ck_assert_msg(strstr(a.message, "ERR DB index is out of range"),
                  "message: %s", a.message);
    answer_clear(&a);
    client_end(c);
}
END_TEST

START_TEST(auth_and_select_together)
{
    require_password("s3cret");
    struct tide_redis_options o = tcp_options(1);
    o.password = "s3cret";
    o.db = 2;
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "CLIENT", "INFO");
    ck_assert_int_eq(a.status, 0);
    ck_assert_msg(strstr(a.str, " db=2 "), "not in db 2: %s", a.str);
    answer_clear(&a);
    client_end(c);
}
END_TEST

/* Many commands at once to a server that refuses the password: each is
 * answered once, in Redis's words, those the backoff held back included
 * (told so at once, with the refusal behind it); the server sees a few
 * connects, not one per command. Likewise an ACL user that does not
 * exist. */
static void refused_burst(const char *user, const char *password,
                          const char *words)
{
    struct tide_redis_options o = tcp_options(2);
    o.user = user;
    o.password = password;
    o.timeout = TIDE_MS(400);
    struct tide_redis_client *c = client_new(&o);
    static struct answer got[30];
    memset(got, 0, sizeof got);
    const char *ping[] = {"PING"};
    for (int i = 0; i < 30; i++)
        ck_assert_int_eq(tide_redis_command(c, 1, ping, NULL, record, &got[i]),
                         0);
    ck_assert(run_until(answered, &got[29], 3000));
    run_ms(50);
    int timed_out = 0, held = 0;
    for (int i = 0; i < 30; i++) {
        ck_assert_int_eq(got[i].calls, 1);
        ck_assert_msg(strstr(got[i].message, words), "command %d (%s): %s", i,
                      tide_redis_err_name(got[i].status), got[i].message);
        timed_out += got[i].status == TIDE_REDIS_ETIMEDOUT;
        held += got[i].status == TIDE_EUNAVAILABLE;
        answer_clear(&got[i]);
    }
    ck_assert_int_eq(timed_out, 0);
    ck_assert_int_gt(held, 0);
    struct tide_redis_stats s = stats(c);
    ck_assert_msg(s.net.makes <= 10, "%llu connects for 30 commands",
                  (unsigned long long)s.net.makes);
    ck_assert_uint_eq(s.net.made, 0);
    client_end(c);
}

START_TEST(refused_burst_each_told_once)
{
    require_password("s3cret");
    refused_burst(NULL, "wrong", "WRONGPASS");
    refused_burst("nobody", "s3cret", "WRONGPASS");
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("redis_setup");
    TCase *tc = tcase_create("setup");
    redis_fixture_add(tc, 30);
    tcase_add_test(tc, auth_password_right);
    tcase_add_test(tc, auth_wrong_refused_not_stormed);
    tcase_add_test(tc, auth_user_and_password);
    tcase_add_test(tc, select_database);
    tcase_add_test(tc, auth_and_select_together);
    tcase_add_test(tc, refused_burst_each_told_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return redis_test_main(make_suite);
}
