/* demos/redis/link.c: many callers' commands pipelined over a few shared
 * connections (limits.streams above 1) against a real redis-server:
 * coalesced writes, replies in order, a timeout that fails one command
 * alone, exclusive sessions beside the shared ones, and the chaos run: 50
 * callers and 200,000 commands while the server's connections are killed,
 * the server is stopped and continued, and restarted. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "redis_internal.h"

static struct tide_redis_stats stats(struct tide_redis_client *c)
{
    struct tide_redis_stats s;
    tide_redis_client_stats(c, &s);
    return s;
}

/* A client sharing `size` connections, `streams` loans each. */
static struct tide_redis_options shared_options(int64_t size, int64_t streams)
{
    struct tide_redis_options o = tcp_options(size);
    o.pool.limits.streams = streams;
    return o;
}

/* ---- many callers, one command each, checked against its own ---- */

#define CALLERS 50

struct echo {
    char word[32];
    struct answer a;
};

struct echoes {
    struct echo e[1000];
    int n;
};

static bool echoes_answered(void *arg)
{
    struct echoes *m = arg;
    for (int i = 0; i < m->n; i++)
        if (!m->e[i].a.calls)
            return false;
    return true;
}

static void send_echo(struct tide_redis_client *c, struct echo *e, int i)
{
    snprintf(e->word, sizeof e->word, "word-%d", i);
    const char *argv[] = {"ECHO", e->word};
    ck_assert_int_eq(tide_redis_command(c, 2, argv, NULL, record, &e->a), 0);
}

START_TEST(one_pass_one_write)
{
    struct tide_redis_options o = shared_options(4, 64);
    struct tide_redis_client *c = client_new(&o);
    static struct echoes m;
    memset(&m, 0, sizeof m);
    /* a first command makes the connection; then 50 callers in one pass */
    struct answer a = CMD(c, "PING");
    ck_assert_int_eq(a.status, 0);
    answer_clear(&a);
    uint64_t writes = stats(c).writes;
    m.n = CALLERS;
    for (int i = 0; i < m.n; i++)
        send_echo(c, &m.e[i], i);
    ck_assert(run_until(echoes_answered, &m, 5000));
    for (int i = 0; i < m.n; i++) {
        ck_assert_int_eq(m.e[i].a.calls, 1);
        ck_assert_int_eq(m.e[i].a.status, 0);
        ck_assert_str_eq(m.e[i].a.str, m.e[i].word);
        answer_clear(&m.e[i].a);
    }
    struct tide_redis_stats s = stats(c);
    /* one connection took them all, in one write */
    ck_assert_uint_eq(s.net.made, 1);
    ck_assert_uint_eq(s.writes - writes, 1);
    ck_assert_int_eq(s.pool.busiest, 0);
    client_end(c);
}
END_TEST

START_TEST(spread_over_streams)
{
    /* 16 loans a connection: 50 commands at once need 4 connections */
    struct tide_redis_options o = shared_options(4, 16);
    struct tide_redis_client *c = client_new(&o);
    static struct echoes m;
    memset(&m, 0, sizeof m);
    m.n = CALLERS;
    for (int i = 0; i < m.n; i++)
        send_echo(c, &m.e[i], i);
    ck_assert(run_until(echoes_answered, &m, 5000));
    for (int i = 0; i < m.n; i++) {
        ck_assert_int_eq(m.e[i].a.status, 0);
        ck_assert_str_eq(m.e[i].a.str, m.e[i].word);
        answer_clear(&m.e[i].a);
    }
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_le(s.net.made, 4);
    ck_assert_uint_ge(s.net.made, 2);
    client_end(c);
}
END_TEST

/* A command answered while others share its connection has given its loan
 * back when its callback runs; the connection's last loan is kept through
 * its callback. */
struct loans_seen {
    int64_t loans[2];
    int calls;
};

static void note_loans(struct tide_redis_client *c, int status,
                       const struct redisReply *reply, const char *message,
                       void *arg)
{
    (void)reply, (void)message;
    struct loans_seen *seen = arg;
    ck_assert_int_eq(status, 0);
    struct tide_evpool_stats ps;
    tide_evpool_stats(tide_redis_client_pool(c), &ps);
    seen->loans[seen->calls++] = ps.loans;
}

static bool both_seen(void *arg)
{
    return ((struct loans_seen *)arg)->calls == 2;
}

START_TEST(answered_loan_ends_before_callback)
{
    struct tide_redis_options o = shared_options(1, 4);
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "PING");
    ck_assert_int_eq(a.status, 0);
    answer_clear(&a);
    /* two commands on the one connection, in one write */
    struct loans_seen seen = {0};
    const char *argv[] = {"PING"};
    ck_assert_int_eq(tide_redis_command(c, 1, argv, NULL, note_loans, &seen),
                     0);
    ck_assert_int_eq(tide_redis_command(c, 1, argv, NULL, note_loans, &seen),
                     0);
    ck_assert(run_until(both_seen, &seen, 5000));
    /* the first's callback: only the second's loan is out */
    ck_assert_int_eq(seen.loans[0], 1);
    /* the second's: its own, the connection's last, still out */
    ck_assert_int_eq(seen.loans[1], 1);
    client_end(c);
}
END_TEST

/* A client freed from the callback of a command whose connection carries
 * others: that command's loan ended before its callback, the rest are
 * dropped unanswered (ASan: nothing left behind, nothing used after). */
struct freeing {
    struct tide_redis_client *c;
    int calls;
};

static void free_client(struct tide_redis_client *c, int status,
                        const struct redisReply *reply, const char *message,
                        void *arg)
{
    (void)c, (void)reply, (void)message;
    struct freeing *f = arg;
    ck_assert_int_eq(status, 0);
    f->calls++;
    tide_redis_client_free(f->c);
}

static void count_call(struct tide_redis_client *c, int status,
                       const struct redisReply *reply, const char *message,
                       void *arg)
{
    (void)c, (void)status, (void)reply, (void)message;
    ((struct freeing *)arg)->calls++;
}

static bool freed_once(void *arg)
{
    return ((struct freeing *)arg)->calls > 0;
}

START_TEST(free_from_a_shared_callback)
{
    struct tide_redis_options o = shared_options(1, 8);
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "PING");
    ck_assert_int_eq(a.status, 0);
    answer_clear(&a);
    struct freeing first = {.c = c}, rest = {0};
    const char *argv[] = {"PING"};
    ck_assert_int_eq(tide_redis_command(c, 1, argv, NULL, free_client, &first),
                     0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(
            tide_redis_command(c, 1, argv, NULL, count_call, &rest), 0);
    ck_assert(run_until(freed_once, &first, 5000));
    run_ms(50);
    ck_assert_int_eq(first.calls, 1);
    ck_assert_int_eq(rest.calls, 0);
}
END_TEST

/* A pipeline's commands stay together and in order among other callers'. */
struct piped {
    char key[32], value[32];
    struct answer set, get, incr;
};

START_TEST(pipelines_stay_together)
{
    struct tide_redis_options o = shared_options(2, 32);
    struct tide_redis_client *c = client_new(&o);
    static struct piped p[40];
    static struct echoes m;
    memset(p, 0, sizeof p);
    memset(&m, 0, sizeof m);
    m.n = 40;
    for (int i = 0; i < 40; i++) {
        snprintf(p[i].key, sizeof p[i].key, "piped:%d", i);
        snprintf(p[i].value, sizeof p[i].value, "value-%d", i);
        const char *set[] = {"SET", p[i].key, p[i].value};
        const char *get[] = {"GET", p[i].key};
        const char *incr[] = {"INCR", p[i].value};
        struct tide_redis_cmd cmds[] = {
            {.argc = 3, .argv = set, .cb = record, .arg = &p[i].set},
            {.argc = 2, .argv = get, .cb = record, .arg = &p[i].get},
            {.argc = 2, .argv = incr, .cb = record, .arg = &p[i].incr},
        };
        ck_assert_int_eq(tide_redis_pipeline(c, 3, cmds), 0);
        send_echo(c, &m.e[i], i);
    }
    ck_assert(run_until(echoes_answered, &m, 5000));
    ck_assert(run_until(answered, &p[39].incr, 5000));
    for (int i = 0; i < 40; i++) {
        ck_assert_str_eq(p[i].set.str, "OK");
        ck_assert_str_eq(p[i].get.str, p[i].value);
        ck_assert_int_eq(p[i].incr.integer, 1);
        /* in order: SET, GET, INCR */
        ck_assert_int_lt(p[i].set.order, p[i].get.order);
        ck_assert_int_lt(p[i].get.order, p[i].incr.order);
        ck_assert_str_eq(m.e[i].a.str, m.e[i].word);
        answer_clear(&p[i].set);
        answer_clear(&p[i].get);
        answer_clear(&p[i].incr);
        answer_clear(&m.e[i].a);
    }
    client_end(c);
}
END_TEST

/* ---- a timeout fails its own command only ---- */

START_TEST(one_timeout_among_1000)
{
    struct tide_redis_options o = shared_options(1, 2048);
    struct tide_redis_client *c = client_new(&o);
    static struct echoes m;
    memset(&m, 0, sizeof m);
    struct answer a = CMD(c, "PING");
    answer_clear(&a);
    /* the slow one first on the connection: the 1,000 behind it wait for
     * it (0.3 s, within their 5 s), it alone has 50 ms */
    struct answer slow = {0};
    const char *sleep[] = {"DEBUG", "SLEEP", "0.3"};
    struct tide_redis_cmd one = {
        .argc = 3, .argv = sleep, .cb = record, .arg = &slow};
    ck_assert_int_eq(tide_redis_pipeline_timed(c, TIDE_MS(50), 1, &one), 0);
    m.n = 1000;
    for (int i = 0; i < m.n; i++)
        send_echo(c, &m.e[i], i);
    ck_assert(run_until(answered, &slow, 1000));
    ck_assert_int_eq(slow.status, TIDE_REDIS_ETIMEDOUT);
    /* answered at its timeout, the rest still waiting */
    ck_assert_int_eq(m.e[0].a.calls, 0);
    ck_assert(run_until(echoes_answered, &m, 5000));
    for (int i = 0; i < m.n; i++) {
        ck_assert_int_eq(m.e[i].a.calls, 1);
        ck_assert_int_eq(m.e[i].a.status, 0);
        ck_assert_str_eq(m.e[i].a.str, m.e[i].word);
        answer_clear(&m.e[i].a);
    }
    ck_assert_int_eq(slow.calls, 1);
    answer_clear(&slow);
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.late, 1);
    ck_assert_uint_eq(s.late_replies, 1);
    ck_assert_uint_eq(s.timeouts, 1);
    ck_assert_uint_eq(s.failed, 1);
    /* the connection stayed */
    ck_assert_uint_eq(s.net.made, 1);
    ck_assert_uint_eq(s.discarded, 0);
    a = CMD(c, "PING");
    ck_assert_str_eq(a.str, "PONG");
    answer_clear(&a);
    client_end(c);
}
END_TEST

START_TEST(late_replies_bounded)
{
    /* every command times out on a stopped server: past late_max the
     * connection is given up, and everything on it fails */
    struct tide_redis_options o = shared_options(1, 64);
    o.timeout = TIDE_MS(100);
    o.late_max = 4;
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "PING");
    answer_clear(&a);
    redis_server_signal(&rx->server, SIGSTOP);
    static struct echoes m;
    memset(&m, 0, sizeof m);
    m.n = 8;
    for (int i = 0; i < m.n; i++)
        send_echo(c, &m.e[i], i);
    ck_assert(run_until(echoes_answered, &m, 2000));
    for (int i = 0; i < m.n; i++) {
        ck_assert_int_eq(m.e[i].a.calls, 1);
        ck_assert_int_eq(m.e[i].a.status, TIDE_REDIS_ETIMEDOUT);
        answer_clear(&m.e[i].a);
    }
    struct tide_redis_stats s = stats(c);
    ck_assert_int_eq(s.pool.lent, 0);
    ck_assert_uint_eq(s.pool.broken, 1);
    redis_server_signal(&rx->server, SIGCONT);
    a = CMD(c, "PING");
    ck_assert_str_eq(a.str, "PONG");
    answer_clear(&a);
    client_end(c);
}
END_TEST

/* ---- a broken connection ---- */

START_TEST(unwritten_commands_move)
{
    /* the server closes a connection whose query passes 1 MB: a 32 MB
     * SET is cut off after what the sockets' buffers took, and the
     * commands queued behind it never left the client */
    redisReply *r = redis_admin_command(
        &rx->server, "CONFIG SET client-query-buffer-limit 1mb");
    ck_assert_ptr_nonnull(r);
    freeReplyObject(r);
    struct tide_redis_options o = shared_options(2, 64);
    struct tide_redis_client *c = client_new(&o);
    struct answer a = CMD(c, "PING");
    answer_clear(&a);
    size_t big_len = 32u << 20;
    char *big = malloc(big_len);
    ck_assert_ptr_nonnull(big);
    memset(big, 'v', big_len);
    const char *set[] = {"SET", "big", big};
    size_t set_len[] = {3, 3, big_len};
    struct answer big_set = {0};
    ck_assert_int_eq(tide_redis_command(c, 3, set, set_len, record, &big_set),
                     0);
    free(big); /* copied */
    static struct echoes m;
    memset(&m, 0, sizeof m);
    m.n = 10;
    for (int i = 0; i < m.n; i++)
        send_echo(c, &m.e[i], i);
    ck_assert(run_until(answered, &big_set, 5000));
    ck_assert(run_until(echoes_answered, &m, 5000));
    /* the SET may have run (its bytes went out): it fails */
    ck_assert_int_ne(big_set.status, 0);
    ck_assert_int_eq(big_set.calls, 1);
    answer_clear(&big_set);
    /* the others went again, on another connection, once */
    for (int i = 0; i < m.n; i++) {
        ck_assert_int_eq(m.e[i].a.calls, 1);
        ck_assert_int_eq(m.e[i].a.status, 0);
        ck_assert_str_eq(m.e[i].a.str, m.e[i].word);
        answer_clear(&m.e[i].a);
    }
    struct tide_redis_stats s = stats(c);
    ck_assert_uint_eq(s.moved, 10);
    ck_assert_uint_eq(s.pool.broken, 1);
    ck_assert_uint_eq(s.net.made, 2);
    client_end(c);
}
END_TEST

/* ---- exclusive sessions beside shared commands ---- */

static bool echo_done(void *arg)
{
    return ((struct echo *)arg)->a.calls > 0;
}

START_TEST(blocking_beside_shared)
{
    struct tide_redis_options o = shared_options(4, 64);
    struct tide_redis_client *c = client_new(&o);
    struct answer blpop = {0};
    const char *argv[] = {"BLPOP", "nothing:here", "1"};
    ck_assert_int_eq(tide_redis_command(c, 3, argv, NULL, record, &blpop), 0);
    run_ms(50);
    /* shared commands are answered while BLPOP blocks its connection */
    int64_t t0 = now_ms();
    static struct echo e;
    memset(&e, 0, sizeof e);
    send_echo(c, &e, 7);
    ck_assert(run_until(echo_done, &e, 900));
    ck_assert_int_lt(now_ms() - t0, 500);
    ck_assert_int_eq(blpop.calls, 0);
    ck_assert_str_eq(e.a.str, "word-7");
    answer_clear(&e.a);
    ck_assert(run_until(answered, &blpop, 3000));
    ck_assert_int_eq(blpop.status, 0);
    ck_assert_int_eq(blpop.type, REDIS_REPLY_NIL);
    answer_clear(&blpop);
    /* 2 connections: the BLPOP's alone, the ECHO's shared */
    ck_assert_uint_eq(stats(c).net.made, 2);
    client_end(c);
}
END_TEST

START_TEST(transaction_alone)
{
    struct tide_redis_options o = shared_options(2, 64);
    struct tide_redis_client *c = client_new(&o);
    struct answer r[4] = {{0}};
    const char *multi[] = {"MULTI"};
    const char *incr[] = {"INCR", "tx:n"};
    const char *exec[] = {"EXEC"};
    struct tide_redis_cmd cmds[] = {
        {.argc = 1, .argv = multi, .cb = record, .arg = &r[0]},
        {.argc = 2, .argv = incr, .cb = record, .arg = &r[1]},
        {.argc = 2, .argv = incr, .cb = record, .arg = &r[2]},
        {.argc = 1, .argv = exec, .cb = record, .arg = &r[3]},
    };
    static struct echoes m;
    memset(&m, 0, sizeof m);
    m.n = 20;
    for (int i = 0; i < 10; i++)
        send_echo(c, &m.e[i], i);
    ck_assert_int_eq(tide_redis_pipeline(c, 4, cmds), 0);
    for (int i = 10; i < 20; i++)
        send_echo(c, &m.e[i], i);
    ck_assert(run_until(answered, &r[3], 5000));
    ck_assert(run_until(echoes_answered, &m, 5000));
    ck_assert_str_eq(r[1].str, "QUEUED");
    ck_assert_int_eq(r[3].type, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r[3].elements, 2);
    for (int i = 0; i < 4; i++)
        answer_clear(&r[i]);
    for (int i = 0; i < m.n; i++) {
        ck_assert_str_eq(m.e[i].a.str, m.e[i].word);
        answer_clear(&m.e[i].a);
    }
    struct answer a = CMD(c, "GET", "tx:n");
    ck_assert_str_eq(a.str, "2");
    answer_clear(&a);
    client_end(c);
}
END_TEST

struct sub {
    struct tide_redis_subscription *handle;
    int confirmations;
    int messages;
    int wrong;
    int failures;
    int next; /* the number the next message must carry */
};

static void on_message(struct tide_redis_client *c, int status,
                       const struct redisReply *reply, const char *message,
                       void *arg)
{
    (void)c, (void)message;
    struct sub *s = arg;
    if (status != 0 || !reply) {
        s->failures++;
        return;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
        s->wrong++;
        return;
    }
    const char *kind = reply->element[0]->str;
    if (strcmp(kind, "subscribe") == 0) {
        s->confirmations++;
        return;
    }
    char want[32];
    snprintf(want, sizeof want, "msg-%d", s->next++);
    if (strcmp(kind, "message") != 0 ||
        strcmp(reply->element[2]->str, want) != 0)
        s->wrong++;
    else
        s->messages++;
}

static bool subscribed(void *arg)
{
    return ((struct sub *)arg)->confirmations > 0;
}

#define PUBLISHED 2000

struct publisher {
    struct tide_redis_client *c;
    int sent, answered, bad;
    char data[32];
};

static void published(struct tide_redis_client *c, int status,
                      const struct redisReply *reply, const char *message,
                      void *arg)
{
    (void)c, (void)message;
    struct publisher *p = arg;
    p->answered++;
    if (status != 0 || !reply || reply->type != REDIS_REPLY_INTEGER ||
        reply->integer != 1)
        p->bad++;
}

static bool all_published(void *arg)
{
    struct publisher *p = arg;
    return p->answered == PUBLISHED;
}

static bool all_received(void *arg)
{
    struct sub *s = arg;
    return s->messages + s->wrong >= PUBLISHED;
}

START_TEST(subscriber_gets_every_message)
{
    /* one connection for the subscriber, one for everything else: the
     * PUBLISHes reach the server in the order they were sent */
    struct tide_redis_options o = shared_options(2, 4096);
    struct tide_redis_client *c = client_new(&o);
    static struct sub s;
    memset(&s, 0, sizeof s);
    const char *argv[] = {"SUBSCRIBE", "news"};
    ck_assert_int_eq(
        tide_redis_subscribe(c, 2, argv, NULL, on_message, &s, &s.handle), 0);
    ck_assert(run_until(subscribed, &s, 3000));
    static struct publisher p;
    memset(&p, 0, sizeof p);
    static struct echoes m;
    memset(&m, 0, sizeof m);
    /* PUBLISHes in order on the shared connections, with other callers'
     * commands between them */
    for (int i = 0; i < PUBLISHED; i++) {
        snprintf(p.data, sizeof p.data, "msg-%d", i);
        const char *pub[] = {"PUBLISH", "news", p.data};
        ck_assert_int_eq(tide_redis_command(c, 3, pub, NULL, published, &p), 0);
        if (i % 2 == 0 && m.n < 1000)
            send_echo(c, &m.e[m.n], m.n), m.n++;
        if (i % 100 == 99)
            run_ms(1);
    }
    ck_assert(run_until(all_published, &p, 5000));
    ck_assert(run_until(all_received, &s, 5000));
    ck_assert(run_until(echoes_answered, &m, 5000));
    ck_assert_int_eq(p.bad, 0);
    ck_assert_int_eq(s.wrong, 0);
    ck_assert_int_eq(s.failures, 0);
    ck_assert_int_eq(s.messages, PUBLISHED);
    for (int i = 0; i < m.n; i++) {
        ck_assert_str_eq(m.e[i].a.str, m.e[i].word);
        answer_clear(&m.e[i].a);
    }
    tide_redis_unsubscribe(c, s.handle);
    run_ms(20);
    ck_assert_int_eq(s.failures, 0);
    ck_assert_uint_eq(stats(c).retired, 1);
    client_end(c);
}
END_TEST

/* Unsubscribing from inside the message callback: no call after it. */
struct quitter {
    struct tide_redis_client *c;
    struct tide_redis_subscription *handle;
    int calls;
    int status;
};

static void quit_on_message(struct tide_redis_client *c, int status,
                            const struct redisReply *reply, const char *message,
                            void *arg)
{
    (void)reply, (void)message;
    struct quitter *q = arg;
    q->calls++;
    q->status = status;
    if (status == 0 && q->calls == 2) /* the confirmation, then a message */
        tide_redis_unsubscribe(c, q->handle);
}

static bool quitter_called_twice(void *arg)
{
    return ((struct quitter *)arg)->calls >= 2;
}

START_TEST(unsubscribe_from_callback)
{
    struct tide_redis_options o = shared_options(2, 64);
    struct tide_redis_client *c = client_new(&o);
    static struct quitter q;
    memset(&q, 0, sizeof q);
    const char *argv[] = {"PSUBSCRIBE", "ne*"};
    ck_assert_int_eq(
        tide_redis_subscribe(c, 2, argv, NULL, quit_on_message, &q, &q.handle),
        0);
    run_ms(100);
    ck_assert_int_eq(q.calls, 1);
    for (int i = 0; i < 3; i++) {
        struct answer a = CMD(c, "PUBLISH", "news", "x");
        answer_clear(&a);
    }
    ck_assert(run_until(quitter_called_twice, &q, 2000));
    run_ms(50);
    ck_assert_int_eq(q.calls, 2);
    ck_assert_int_eq(q.status, 0);
    client_end(c);
}
END_TEST

/* A subscriber's connection killed by the server: one failure, then
 * nothing. */
START_TEST(subscriber_killed_fails_once)
{
    struct tide_redis_options o = shared_options(2, 64);
    struct tide_redis_client *c = client_new(&o);
    static struct sub s;
    memset(&s, 0, sizeof s);
    const char *argv[] = {"SUBSCRIBE", "news"};
    ck_assert_int_eq(
        tide_redis_subscribe(c, 2, argv, NULL, on_message, &s, &s.handle), 0);
    ck_assert(run_until(subscribed, &s, 3000));
    redisReply *r = redis_admin_command(&rx->server, "CLIENT KILL TYPE pubsub");
    ck_assert_ptr_nonnull(r);
    freeReplyObject(r);
    run_ms(200);
    ck_assert_int_eq(s.failures, 1);
    ck_assert_int_eq(s.wrong, 0);
    client_end(c);
}
END_TEST

/* ---- chaos: 50 callers, 200,000 commands, a server in trouble ---- */

#define CHAOS_COMMANDS 200000

enum kind { ECHO, INCR, PIPE };

struct caller;

/* One command's record: what it asked, how often it was answered. */
struct call {
    struct caller *who;
    int calls;
};

struct chaos {
    struct tide_redis_client *c;
    struct caller *callers;
    long issued;   /* commands sent */
    long answered; /* answers */
    long ok;
    long failed;
    long wrong;
    long twice; /* an answer for a command answered already */
    long incr_twice;
    long next_id;
    int tick;
    int faults; /* stopped, continued, restarted */
    struct event *driver;
    struct event *fault;
    bool stopped; /* SIGSTOP sent */
    bool done;
};

struct caller {
    struct chaos *x;
    struct event *again; /* a pause after a failure */
    long id;             /* its current request's */
    enum kind kind;
    char key[48], value[48];
    int parts, left; /* commands in the request, not yet answered */
    struct call calls[3];
};

static void caller_next(struct caller *k);

static void caller_answered(struct caller *k, bool failed)
{
    if (--k->left > 0)
        return;
    if (failed) { /* back off a little: the server may be down */
        struct timeval ms = {0, 5000};
        evtimer_add(k->again, &ms);
        return;
    }
    caller_next(k);
}

static void on_chaos(struct tide_redis_client *c, int status,
                     const struct redisReply *reply, const char *message,
                     void *arg)
{
    (void)c, (void)message;
    struct call *call = arg;
    struct caller *k = call->who;
    struct chaos *x = k->x;
    if (call->calls++ > 0) {
        x->twice++;
        return;
    }
    x->answered++;
    int part = (int)(call - k->calls);
    if (status != 0) {
        x->failed++;
        caller_answered(k, true);
        return;
    }
    bool right = false;
    if (k->kind == ECHO) {
        right = reply->type == REDIS_REPLY_STRING &&
                strcmp(reply->str, k->value) == 0;
    } else if (k->kind == INCR || part == 2) {
        right = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
        if (reply->type == REDIS_REPLY_INTEGER && reply->integer > 1)
            x->incr_twice++;
    } else if (part == 0) { /* SET */
        right =
            reply->type == REDIS_REPLY_STATUS && strcmp(reply->str, "OK") == 0;
    } else { /* GET, in the same pipeline as its SET */
        right = reply->type == REDIS_REPLY_STRING &&
                strcmp(reply->str, k->value) == 0;
    }
    if (right)
        x->ok++;
    else
        x->wrong++;
    caller_answered(k, false);
}

static void caller_next(struct caller *k)
{
    struct chaos *x = k->x;
    if (x->issued >= CHAOS_COMMANDS || x->done)
        return;
    k->id = x->next_id++;
    k->kind = (enum kind)(k->id % 3);
    snprintf(k->key, sizeof k->key, "chaos:%ld", k->id);
    snprintf(k->value, sizeof k->value, "value:%ld", k->id);
    memset(k->calls, 0, sizeof k->calls);
    for (int i = 0; i < 3; i++)
        k->calls[i].who = k;
    const char *echo[] = {"ECHO", k->value};
    const char *incr[] = {"INCR", k->key};
    const char *set[] = {"SET", k->key, k->value};
    const char *get[] = {"GET", k->key};
    char counter[64];
    snprintf(counter, sizeof counter, "%s:n", k->key);
    const char *incr2[] = {"INCR", counter};
    struct tide_redis_cmd cmds[3];
    if (k->kind == ECHO) {
        cmds[0] =
            (struct tide_redis_cmd){2, echo, NULL, on_chaos, &k->calls[0]};
        k->parts = 1;
    } else if (k->kind == INCR) {
        cmds[0] =
            (struct tide_redis_cmd){2, incr, NULL, on_chaos, &k->calls[0]};
        k->parts = 1;
    } else {
        cmds[0] = (struct tide_redis_cmd){3, set, NULL, on_chaos, &k->calls[0]};
        cmds[1] = (struct tide_redis_cmd){2, get, NULL, on_chaos, &k->calls[1]};
        cmds[2] =
            (struct tide_redis_cmd){2, incr2, NULL, on_chaos, &k->calls[2]};
        k->parts = 3;
    }
    k->left = k->parts;
    int rc = tide_redis_pipeline(x->c, (size_t)k->parts, cmds);
    ck_assert_msg(rc == 0, "pipeline: %s", tide_redis_strerror(rc));
    x->issued += k->parts;
    if ((x->faults == 0 && x->issued >= CHAOS_COMMANDS / 4) ||
        (x->faults == 2 && x->issued >= CHAOS_COMMANDS * 3 / 5))
        if (!evtimer_pending(x->fault, NULL))
            event_active(x->fault, EV_TIMEOUT, 1);
}

static void on_again(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    caller_next(arg);
}

/* Every 200 ms the server's connections are killed. */
static void on_drive(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct chaos *x = arg;
    x->tick++;
    if (!x->stopped) {
        redisReply *r = redis_admin_command(
            &rx->server, "CLIENT KILL TYPE normal SKIPME yes");
        if (r)
            freeReplyObject(r);
    }
}

/* A quarter of the way the server is stopped (SIGSTOP) for 1.5 s, past
 * the commands' 1 s timeout (their late replies come after SIGCONT); at
 * 60 % it is restarted: whatever the speed of the machine, each fault
 * meets commands in flight. */
static void on_fault(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct chaos *x = arg;
    if (x->faults == 0) {
        redis_server_signal(&rx->server, SIGSTOP);
        x->stopped = true;
        x->faults++;
        struct timeval span = {1, 500000};
        evtimer_add(x->fault, &span);
    } else if (x->faults == 1) {
        redis_server_signal(&rx->server, SIGCONT);
        x->stopped = false;
        x->faults++;
    } else if (x->faults == 2) {
        redis_server_stop(&rx->server);
        ck_assert(redis_server_restart(&rx->server));
        x->faults++;
    }
}

static bool chaos_over(void *arg)
{
    struct chaos *x = arg;
    return x->answered >= x->issued && x->issued >= CHAOS_COMMANDS;
}

START_TEST(chaos_every_command_answered_once)
{
    struct tide_redis_options o = shared_options(4, 16);
    o.timeout = TIDE_SEC(1);
    static struct chaos x;
    memset(&x, 0, sizeof x);
    x.c = client_new(&o);
    static struct caller callers[CALLERS];
    memset(callers, 0, sizeof callers);
    x.callers = callers;
    for (int i = 0; i < CALLERS; i++) {
        callers[i].x = &x;
        callers[i].again = evtimer_new(rx->base, on_again, &callers[i]);
    }
    x.driver = event_new(rx->base, -1, EV_PERSIST, on_drive, &x);
    x.fault = evtimer_new(rx->base, on_fault, &x);
    struct timeval period = {0, 200000};
    event_add(x.driver, &period);
    for (int i = 0; i < CALLERS; i++)
        caller_next(&callers[i]);
    bool over = run_until(chaos_over, &x, 150000);
    event_free(x.driver);
    event_free(x.fault);
    if (x.stopped)
        redis_server_signal(&rx->server, SIGCONT);
    x.done = true;
    ck_assert_msg(over, "%ld of %ld answered, %ld issued", x.answered,
                  (long)CHAOS_COMMANDS, x.issued);
    for (int i = 0; i < CALLERS; i++)
        event_free(callers[i].again);
    struct tide_redis_stats s = stats(x.c);
    printf("chaos: %ld commands, %ld ok, %ld failed, %ld wrong; %" PRIu64
           " connections, %" PRIu64 " broken, %" PRIu64 " moved, %" PRIu64
           " late, %" PRIu64 " writes, %d kills\n",
           x.issued, x.ok, x.failed, x.wrong, s.net.made, s.pool.broken,
           s.moved, s.late, s.writes, x.tick);
    ck_assert_int_eq(x.issued, CHAOS_COMMANDS);
    ck_assert_int_eq(x.answered, x.issued);
    ck_assert_int_eq(x.twice, 0);
    ck_assert_int_eq(x.wrong, 0);
    ck_assert_int_eq(x.incr_twice, 0);
    ck_assert_int_gt(x.ok, CHAOS_COMMANDS / 2);
    /* the faults did happen */
    ck_assert_int_eq(x.faults, 3);
    ck_assert_int_ge(x.tick, 3);
    ck_assert_uint_gt(s.pool.broken, 0);
    client_end(x.c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redis_shared");
    TCase *tc = tcase_create("shared");
    redis_fixture_add(tc, 60);
    tcase_add_test(tc, one_pass_one_write);
    tcase_add_test(tc, spread_over_streams);
    tcase_add_test(tc, answered_loan_ends_before_callback);
    tcase_add_test(tc, free_from_a_shared_callback);
    tcase_add_test(tc, pipelines_stay_together);
    tcase_add_test(tc, one_timeout_among_1000);
    tcase_add_test(tc, late_replies_bounded);
    tcase_add_test(tc, unwritten_commands_move);
    tcase_add_test(tc, blocking_beside_shared);
    tcase_add_test(tc, transaction_alone);
    tcase_add_test(tc, subscriber_gets_every_message);
    tcase_add_test(tc, unsubscribe_from_callback);
    tcase_add_test(tc, subscriber_killed_fails_once);
    suite_add_tcase(s, tc);
    TCase *chaos = tcase_create("chaos");
    redis_fixture_add(chaos, 240);
    tcase_add_test(chaos, chaos_every_command_answered_once);
    suite_add_tcase(s, chaos);
    return s;
}

int main(void)
{
    return redis_test_main(suite);
}
