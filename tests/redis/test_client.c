/* demos/redis/client.c: the client's connections to a real redis-server,
 * over TLS (verified, the wrong name refused, sessions resumed), and what
 * the server does to them: kills idle ones, restarts under load, refuses
 * past maxclients; and a server that promises an array too long to make
 * room for. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "redis_internal.h"
#include "stranger.h"

static struct tide_redis_stats stats(struct tide_redis_client *c)
{
    struct tide_redis_stats s;
    tide_redis_client_stats(c, &s);
    return s;
}

/* ---- TLS ---- */

static struct tide_redis_options tls_client(struct tide_tls_options *t,
                                            int64_t size)
{
    struct tide_redis_options o = tcp_options(size);
    o.tcp.port = rx->server.tls_port;
    o.tls = t;
    return o;
}

START_TEST(tls_verified)
{
    struct tide_tls_options t = tls_options(NULL);
    struct tide_redis_options o = tls_client(&t, 2);
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "SET", "k", "over tls");
    ck_assert_int_eq(a.status, 0);
    answer_clear(&a);
    a = CMD(c, "GET", "k");
    ck_assert_int_eq(a.status, 0);
    ck_assert_str_eq(a.str, "over tls");
    answer_clear(&a);
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.net.made, 1);
    client_end(c);
}
END_TEST

START_TEST(tls_wrong_name_refused)
{
    struct tide_tls_options t = tls_options("other.example");
    struct tide_redis_options o = tls_client(&t, 1);
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "PING");
    ck_assert_int_eq(a.status, TIDE_ENAME_MISMATCH);
    ck_assert_ptr_null(a.str);
    ck_assert_msg(a.message[0] != '\0', "no message");
    answer_clear(&a);
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.net.made, 0);
    ck_assert_uint_eq(s.failed, 1);
    client_end(c);
}
END_TEST

START_TEST(tls_second_connection_resumed)
{
    struct tide_tls_options t = tls_options(NULL);
    struct tide_redis_options o = tls_client(&t, 1);
    /* every connection retired after one command: each is new */
    o.pool.retire_after = 1;
    struct tide_redis_client *c = client_new(&o);
    for (int i = 0; i < 3; i++) {
        struct answer a = CMD(c, "PING");
        ck_assert_int_eq(a.status, 0);
        answer_clear(&a);
    }
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.net.made, 3);
    ck_assert_uint_ge(s.net.resumed, 2);
    client_end(c);
}
END_TEST

START_TEST(unix_socket)
{
    struct tide_redis_options o = tcp_options(2);
    o.tcp.host = NULL;
    o.tcp.port = 0;
    o.tcp.path = rx->server.unix_path;
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "SET", "k", "over a path");
    ck_assert_int_eq(a.status, 0);
    answer_clear(&a);
    a = CMD(c, "GET", "k");
    ck_assert_str_eq(a.str, "over a path");
    answer_clear(&a);
    a = CMD(c, "CLIENT", "INFO");
    ck_assert_int_eq(a.status, 0);
    ck_assert_msg(strstr(a.str, "flags=U"), "not over the socket: %s", a.str);
    answer_clear(&a);
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.net.made, 1);
    client_end(c);
}
END_TEST

/* ---- codes ---- */

/* Every code a command can be answered with has a name and a sentence of
 * its own: tide_err_name alone knows only tidepool's. */
START_TEST(codes_have_names_and_sentences)
{
    const int own[] = {TIDE_REDIS_EREPLY, TIDE_REDIS_EPROTOCOL,
                       TIDE_REDIS_ETIMEDOUT, TIDE_REDIS_ECLOSED};
    const char *names[] = {"TIDE_REDIS_EREPLY", "TIDE_REDIS_EPROTOCOL",
                           "TIDE_REDIS_ETIMEDOUT", "TIDE_REDIS_ECLOSED"};
    const char *unknown = tide_redis_strerror(-12345);
    for (size_t i = 0; i < 4; i++) {
        ck_assert_str_eq(tide_redis_err_name(own[i]), names[i]);
        ck_assert_str_ne(tide_redis_strerror(own[i]), unknown);
    }
    ck_assert_str_eq(tide_redis_err_name(TIDE_EREFUSED), "TIDE_EREFUSED");
    ck_assert_str_eq(tide_redis_err_name(TIDE_ESETUP), "TIDE_ESETUP");
    ck_assert_str_eq(tide_redis_err_name(-12345), tide_err_name(-12345));
}
END_TEST

/* ---- what the server does ---- */

START_TEST(client_kill_drops_idle_connections)
{
    struct tide_redis_options o = tcp_options(5);
    struct tide_redis_client *c = client_new(&o);
    fill(c, 5);
    struct tide_redis_stats s = stats(c);
    ck_assert_int_eq(s.pool.idle, 5);
    ck_assert_int_eq(redis_clients(&rx->server), 5);
    redisReply *r =
        redis_admin_command(&rx->server, "CLIENT KILL TYPE normal SKIPME yes");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->integer, 5);
    freeReplyObject(r);
    run_ms(100);
    /* dropped while idle, before anyone was handed one */
    s = stats(c);
    ck_assert_int_eq(s.pool.idle, 0);
    ck_assert_uint_eq(s.pool.lost, 5);
    for (int i = 0; i < 5; i++) {
        struct answer a = CMD(c, "PING");
        ck_assert_int_eq(a.status, 0);
        answer_clear(&a);
    }
    s = stats(c);
    ck_assert_uint_eq(s.failed, 0);
    ck_assert_uint_eq(s.discarded, 0);
    ck_assert_uint_eq(s.pool.dirty, 0);
    client_end(c);
}
END_TEST

/* Load through a restart: CONC commands always in flight, each an ECHO of
 * its own number, so a reply delivered to another command shows. */
#define CONC  20
#define TOTAL 400000 /* a bound; the test stops it first */

struct load;

struct slot {
    struct load *l;
    char id[24];
};

struct load {
    struct tide_redis_client *c;
    struct slot slots[CONC];
    long sent, answered, ok, failed, wrong;
    bool stopped;
    int64_t restarted_at;   /* ms, once the server is back */
    int64_t first_ok_after; /* ms, the first reply after that */
    int64_t last_fail;
};

static void send_slot(struct load *l, struct slot *s);

static void on_echo(struct tide_redis_client *c, int status,
                    const struct redisReply *reply, const char *message,
                    void *arg)
{
    (void)c, (void)message;
    struct slot *s = arg;
    struct load *l = s->l;
    l->answered++;
    if (status == 0) {
        l->ok++;
        if (reply->type != REDIS_REPLY_STRING || strcmp(reply->str, s->id))
            l->wrong++;
        if (l->restarted_at && !l->first_ok_after)
            l->first_ok_after = now_ms();
    } else {
        l->failed++;
        l->last_fail = now_ms();
    }
    if (!l->stopped && l->sent < TOTAL)
        send_slot(l, s);
}

static void send_slot(struct load *l, struct slot *s)
{
    snprintf(s->id, sizeof s->id, "id-%ld", l->sent++);
    const char *argv[] = {"ECHO", s->id};
    ck_assert_int_eq(tide_redis_command(l->c, 2, argv, NULL, on_echo, s), 0);
}

/* A client made with o under the load (CONC commands in flight from now
 * on, each sending the next on its answer), served for 300 ms without a
 * failure: what each fault below is put under. */
static void load_start(struct load *l, const struct tide_redis_options *o)
{
    memset(l, 0, sizeof *l);
    l->c = client_new(o);
    for (int i = 0; i < CONC; i++) {
        l->slots[i].l = l;
        send_slot(l, &l->slots[i]);
    }
    run_ms(300);
    ck_assert_int_gt(l->ok, 100);
    ck_assert_int_eq(l->failed, 0);
}

static bool exited(void *server)
{
    return redis_server_exited(server);
}

static bool load_done(void *arg)
{
    struct load *l = arg;
    return l->answered == l->sent && (l->stopped || l->sent >= TOTAL);
}

START_TEST(server_restart_under_load)
{
    struct tide_redis_options o = tcp_options(CONC);
    o.timeout = TIDE_SEC(2);
    static struct load l;
    load_start(&l, &o);
    /* killed under the commands in flight (the server asleep, so they are
     * held there), down for 300 ms while the load keeps asking, then back */
    struct tide_redis_options so = tcp_options(1);
    so.timeout = TIDE_SEC(10);
    struct tide_redis_client *sleeper = client_new(&so);
    struct answer slept = {0};
    const char *sleep_argv[] = {"DEBUG", "SLEEP", "5"};
    ck_assert_int_eq(
        tide_redis_command(sleeper, 3, sleep_argv, NULL, record, &slept), 0);
    run_ms(100);
    redis_server_signal(&rx->server, SIGKILL);
    ck_assert(run_until(exited, &rx->server, 5000));
    run_ms(300);
    ck_assert(redis_server_restart(&rx->server));
    l.restarted_at = now_ms();
    run_ms(2500);
    l.stopped = true;
    ck_assert(run_until(load_done, &l, 5000));
    ck_assert_int_eq(l.wrong, 0);
    ck_assert_int_eq(l.answered, l.sent); /* every command answered */
    ck_assert_int_eq(slept.calls, 1);
    ck_assert_int_ne(slept.status, 0);
    answer_clear(&slept);
    struct tide_redis_stats s = stats(l.c);
    /* the outage was seen: commands cut off, connects refused */
    ck_assert_int_gt(l.failed, 0);
    ck_assert_uint_gt(s.net.failed, 0);
    ck_assert_msg(l.first_ok_after > 0 &&
                      l.first_ok_after - l.restarted_at <= 2000,
                  "served again %lld ms after the restart",
                  (long long)(l.first_ok_after - l.restarted_at));
    /* a handful of connects while down, never one per command */
    ck_assert_msg(s.net.makes < 100, "%llu makes",
                  (unsigned long long)s.net.makes);
    client_end(l.c);
    client_end(sleeper);
}
END_TEST

/* A server that hangs (SIGSTOP) under load, then comes back (SIGCONT):
 * the commands held there time out and cost their connections, no reply
 * ever reaches another command, connects stay bounded by the pool's size
 * while it hangs (the kernel accepts them; their setup's PING waits), and
 * the load is served again as soon as it runs. */
START_TEST(server_stopped_then_continued)
{
    struct tide_redis_options o = tcp_options(CONC);
    o.timeout = TIDE_MS(500);
    static struct load l;
    load_start(&l, &o);
    redis_server_signal(&rx->server, SIGSTOP);
    run_ms(1500);
    long failed_while_stopped = l.failed;
    struct tide_redis_stats s = stats(l.c);
    redis_server_signal(&rx->server, SIGCONT);
    l.restarted_at = now_ms();
    run_ms(1000);
    l.stopped = true;
    ck_assert(run_until(load_done, &l, 5000));
    ck_assert_int_eq(l.wrong, 0);
    ck_assert_int_eq(l.answered, l.sent);
    ck_assert_int_gt(failed_while_stopped, 0);
    ck_assert_uint_gt(s.timeouts, 0);
    ck_assert_msg(s.net.makes <= 2 * CONC, "%llu makes while it hung",
                  (unsigned long long)s.net.makes);
    ck_assert_msg(l.first_ok_after > 0 &&
                      l.first_ok_after - l.restarted_at <= 500,
                  "served again %lld ms after SIGCONT",
                  (long long)(l.first_ok_after - l.restarted_at));
    client_end(l.c);
}
END_TEST

/* maxclients: the server accepts, writes an error and closes. The caller
 * learns it in Redis's own words, and the client does not storm. */
START_TEST(maxclients_refused_clearly)
{
    redisContext *admin = redis_admin(&rx->server);
    ck_assert_ptr_nonnull(admin);
    redisReply *r = redisCommand(admin, "CONFIG SET maxclients 1");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    struct tide_redis_options o = tcp_options(4);
    o.timeout = TIDE_MS(500);
    struct tide_redis_client *c = client_new(&o);
    int64_t start = now_ms();
    int errors = 0, clear = 0;
    char last[256] = "";
    while (now_ms() - start < 2000) {
        struct answer a = CMD(c, "PING");
        ck_assert_int_ne(a.status, 0);
        errors++;
        if (a.status == TIDE_ESETUP &&
            strstr(a.message, "ERR max number of clients reached"))
            clear++;
        snprintf(last, sizeof last, "%s", a.message);
        answer_clear(&a);
    }
    struct tide_redis_stats s = stats(c);
    ck_assert_msg(clear > 0, "no answer said why; the last: %s", last);
    /* a few connects a second, never a storm */
    ck_assert_msg(s.net.makes <= 12, "%llu connects in 2 s",
                  (unsigned long long)s.net.makes);
    r = redisCommand(admin, "CONFIG SET maxclients 100");
    ck_assert_ptr_nonnull(r);
    freeReplyObject(r);
    redisFree(admin);
    /* once there is room, served again (after the backoff) */
    bool served = false;
    for (int64_t t0 = now_ms(); !served && now_ms() - t0 < 3000;) {
        struct answer a = CMD(c, "PING");
        served = a.status == 0;
        answer_clear(&a);
    }
    ck_assert_msg(served, "not served again after %d errors", errors);
    client_end(c);
}
END_TEST

/* ---- what a server that is not Redis sends ---- */

/* An array header is a promise of elements the reader makes room for at
 * once: "*999999999\r\n", 12 bytes, asked hiredis 0.14 for 8 GB, and the
 * command then waited for elements that never came. Past
 * TIDE__REDIS_MAX_ELEMENTS it is a protocol error at once, said. */
START_TEST(an_array_header_past_the_limit_is_refused_at_once)
{
    static const char header[] = "*999999999\r\n";
    struct tide_test_stranger st;
    ck_assert(
        tide_test_stranger_start(&st, header, sizeof header - 1, false, false));
    struct tide_redis_options o = tcp_options(1);
    o.tcp.port = st.port;
    o.timeout = TIDE_SEC(3);
    struct tide_redis_client *c = client_new(&o);
    int64_t t0 = now_ms();
    struct answer a = CMD(c, "PING");
    ck_assert_int_eq(a.status, TIDE_REDIS_EPROTOCOL);
    ck_assert_msg(strstr(a.message, "an array reply of 999999999 elements"),
                  "%s", a.message);
    ck_assert_int_lt(now_ms() - t0, 1000);
    answer_clear(&a);
    client_end(c);
    tide_test_stranger_stop(&st);
    /* at the limit, the reader waits for the elements */
    c = client_new(&o);
    redisReader *r = tide__redis_reader_take(c);
    char at[32];
    int n = snprintf(at, sizeof at, "*%d\r\n", TIDE__REDIS_MAX_ELEMENTS);
    ck_assert_int_eq(redisReaderFeed(r, at, (size_t)n), REDIS_OK);
    void *reply = NULL;
    ck_assert_int_eq(redisReaderGetReply(r, &reply), REDIS_OK);
    ck_assert_ptr_null(reply);
    tide__redis_reader_give(c, r, false);
    client_end(c);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("redis_client");
    TCase *tls = tcase_create("transports");
    redis_fixture_add(tls, 30);
    tcase_add_test(tls, tls_verified);
    tcase_add_test(tls, tls_wrong_name_refused);
    tcase_add_test(tls, tls_second_connection_resumed);
    tcase_add_test(tls, unix_socket);
    tcase_add_test(tls, codes_have_names_and_sentences);
    suite_add_tcase(s, tls);
    TCase *server = tcase_create("server");
    redis_fixture_add(server, 60);
    tcase_add_test(server, client_kill_drops_idle_connections);
    tcase_add_test(server, server_restart_under_load);
    tcase_add_test(server, server_stopped_then_continued);
    tcase_add_test(server, maxclients_refused_clearly);
    tcase_add_test(server, an_array_header_past_the_limit_is_refused_at_once);
    suite_add_tcase(s, server);
    return s;
}

int main(void)
{
    return redis_test_main(make_suite);
}
