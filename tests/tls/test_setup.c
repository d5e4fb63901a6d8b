/* tls/setup.c: the session setup between connected and made. A setup that
 * answers at once or after an exchange hands the pool a clean connection
 * (once per connection, not per loan); one that fails, times out, meets a
 * peer close or leaves bytes unread is a failed make whose message reaches
 * the waiter; the factory giving up (make timeout, cancel, free) is safe
 * with and without setup_abort; over TLS the setup runs after the
 * handshake; and a setup the server always refuses is not stormed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>

#include "fixture.h"

/* ---- the server's side: "PING\r\n" answered with a script's reply, then
 * an echo ---- */

struct script {
    const char *reply; /* to PING; borrowed */
    int pings;
    bool handshaken; /* the connection was past its handshake at PING */
};

static void on_request(struct server_conn *c, struct evbuffer *in, void *arg)
{
    struct script *sc = arg;
    if (!c->user) {
        size_t n;
        char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF_STRICT);
        if (!line)
            return; /* not all of it yet */
        if (strcmp(line, "PING") == 0) {
            sc->pings++;
            sc->handshaken = c->handshaken;
            c->user = sc; /* set up: what follows is echoed */
            bufferevent_write(c->bev, sc->reply, strlen(sc->reply));
        }
        free(line);
    }
    if (c->user)
        bufferevent_write_buffer(c->bev, in);
}

/* ---- the client's side: the setups under test ---- */

enum how {
    AT_ONCE, /* callbacks set, then done inside the setup call */
    FAIL_AT_ONCE,
    PING,    /* "PING\r\n", then the reply decides */
    GREETED, /* waits for a line the server sends first */
    HANG,    /* never answers by itself */
};

struct ctl {
    enum how how;
    int fail_code; /* FAIL_AT_ONCE */
    int started;
    int aborts;
    struct tide_net_setup *token; /* the last one started */
    bool tls_ready;               /* handshake done when the setup began */
};

/* The bufferevent callbacks' arg is the token: with min > 1 several
 * setups run at once. */
static void on_reply(struct bufferevent *bev, void *arg)
{
    struct tide_net_setup *setup = arg;
    size_t n;
    char *line = evbuffer_readln(bufferevent_get_input(bev), &n,
                                 EVBUFFER_EOL_CRLF_STRICT);
    if (!line)
        return;
    if (strcmp(line, "+PONG") == 0)
        tide_net_setup_done(setup);
    else
        tide_net_setup_failed(setup, TIDE_ESETUP, line);
    free(line);
}

static void on_setup_event(struct bufferevent *bev, short what, void *arg)
{
    char why[256];
    int code = tide_net_event_error(bev, what, NULL, why, sizeof why);
    tide_net_setup_failed(arg, code, why);
}

static void nothing_read(struct bufferevent *bev, void *arg)
{
    (void)bev, (void)arg;
}

static void run_setup(struct tide_net_setup *setup, struct bufferevent *bev,
                      void *arg)
{
    struct ctl *ctl = arg;
    ctl->started++;
    ctl->token = setup;
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    ctl->tls_ready = ssl && SSL_is_init_finished(ssl);
    switch (ctl->how) {
    case AT_ONCE: {
        /* what a setup leaves behind must not reach the borrower */
        struct timeval tv = {5, 0};
        bufferevent_setcb(bev, nothing_read, NULL, on_setup_event, setup);
        bufferevent_set_timeouts(bev, &tv, &tv);
        tide_net_setup_done(setup);
        break;
    }
    case FAIL_AT_ONCE:
        tide_net_setup_failed(setup, ctl->fail_code, NULL);
        break;
    case PING:
        bufferevent_setcb(bev, on_reply, NULL, on_setup_event, setup);
        bufferevent_write(bev, "PING\r\n", 6);
        break;
    case GREETED:
        bufferevent_setcb(bev, on_reply, NULL, on_setup_event, setup);
        break;
    case HANG:
        break;
    }
}

static void on_abort(struct tide_net_setup *setup, void *arg)
{
    struct ctl *ctl = arg;
    ck_assert_ptr_eq(setup, ctl->token);
    ctl->aborts++;
    ctl->token = NULL; /* dead from here */
}

/* ---- a pool over a factory with a setup ---- */

struct st {
    struct test_server s;
    struct script script;
    struct ctl ctl;
    struct tide_tcp_factory *f; /* one of the two */
    struct tide_tls_factory *tf;
    struct tide_evpool *pool;
};

struct opts {
    bool tls;
    bool raw_server;
    bool abort;
    const char *reply;
    int64_t setup_timeout;
    int64_t make_timeout; /* 0: 30 s */
    int64_t min;
};

static void start(struct st *t, enum how how, struct opts op)
{
    memset(t, 0, sizeof *t);
    SSL_CTX *sctx =
        op.tls ? server_ctx(fx->pki.good, fx->pki.key, 0, 0, NULL) : NULL;
    ck_assert(server_start(&t->s, fx->base, AF_INET, 0, sctx));
    t->script.reply = op.reply ? op.reply : "+PONG\r\n";
    t->s.raw = op.raw_server;
    if (how == PING || how == GREETED) { /* else a plain echo */
        t->s.on_request = on_request;
        t->s.request_arg = &t->script;
    }
    t->ctl.how = how;
    struct tide_tcp_options tcp = {
        .host = "127.0.0.1",
        .port = t->s.port,
        .setup = run_setup,
        .setup_arg = &t->ctl,
        .setup_abort = op.abort ? on_abort : NULL,
        .setup_timeout = op.setup_timeout,
    };
    struct tide_factory table;
    if (op.tls) {
        struct tide_tls_options o = tls_options("127.0.0.1", &t->s);
        o.tcp = tcp;
        ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &t->tf), 0);
        tide_tls_factory_bind(t->tf, &table);
    } else {
        ck_assert_int_eq(tide_tcp_factory_new(fx->base, &tcp, &t->f), 0);
        tide_tcp_factory_bind(t->f, &table);
    }
    struct tide_evpool_options po = {
        .min = op.min,
        .make_timeout = op.make_timeout ? op.make_timeout : TIDE_SEC(30),
        .seed = 1,
    };
    ck_assert_int_eq(tide_evpool_new(fx->base, &table, &po, &t->pool), 0);
}

static struct tide_net_stats stats(const struct st *t)
{
    struct tide_net_stats ns;
    if (t->tf)
        tide_tls_factory_stats(t->tf, &ns);
    else
        tide_tcp_factory_stats(t->f, &ns);
    return ns;
}

static int last_error(const struct st *t, struct tide_net_detail *d, char *buf,
                      size_t len)
{
    return t->tf ? tide_tls_factory_last_error(t->tf, d, buf, len)
                 : tide_tcp_factory_last_error(t->f, d, buf, len);
}

static void free_factory(struct st *t)
{
    tide_tls_factory_free(t->tf);
    tide_tcp_factory_free(t->f);
    t->tf = NULL;
    t->f = NULL;
}

/* Every connection made was closed, nothing is pending, the server saw
 * every connection go. */
static void stop(struct st *t)
{
    tide_evpool_free(t->pool);
    t->pool = NULL;
    struct tide_net_stats ns = stats(t);
    ck_assert_int_eq(ns.live, 0);
    ck_assert_int_eq(ns.pending, 0);
    ck_assert_uint_eq(ns.made, ns.destroyed);
    free_factory(t);
    server_stop(&t->s);
}

static struct got *acquire(struct st *t, struct got *g)
{
    memset(g, 0, sizeof *g);
    ck_assert_int_eq(tide_evpool_acquire(t->pool, 0, pool_record, g, NULL), 0);
    return g;
}

static struct got *acquire_answer(struct st *t, struct got *g, int ms)
{
    acquire(t, g);
    ck_assert_msg(run_until(answered, g, ms), "no answer within %d ms", ms);
    return g;
}

static bool setup_started(void *arg)
{
    return ((struct ctl *)arg)->started > 0;
}

static bool aborted(void *arg)
{
    return ((struct ctl *)arg)->aborts > 0;
}

static bool server_empty(void *arg)
{
    return server_live(arg) == 0;
}

static int64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- done ---- */

START_TEST(done_at_once_hands_over_a_clean_connection)
{
    struct st t;
    start(&t, AT_ONCE, (struct opts){0});
    struct got g;
    acquire_answer(&t, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    ck_assert_int_eq(t.ctl.started, 1);
    /* the setup's callbacks and timeouts are gone */
    bufferevent_data_cb r = nothing_read, w = nothing_read;
    bufferevent_event_cb e = on_setup_event;
    void *arg = &t;
    bufferevent_getcb(g.bev, &r, &w, &e, &arg);
    ck_assert(r == NULL && w == NULL && e == NULL && arg == NULL);
    ck_assert_int_eq(bufferevent_get_enabled(g.bev), EV_READ | EV_WRITE);
    ck_assert_str_eq(echo(g.bev, "hello", 2000), "hello");
    ck_assert_int_eq(tide_evpool_release(t.pool, g.bev), 0);
    stop(&t);
}
END_TEST

START_TEST(done_after_the_exchange_runs_once_per_connection)
{
    struct st t;
    start(&t, PING, (struct opts){0});
    struct got g;
    acquire_answer(&t, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    ck_assert_int_eq(t.script.pings, 1);
    /* the server is past its PING: the borrower talks to the echo */
    ck_assert_str_eq(echo(g.bev, "hello", 2000), "hello");
    ck_assert_int_eq(tide_evpool_release(t.pool, g.bev), 0);
    /* a second loan of the same connection is not set up again */
    struct bufferevent *first = g.bev;
    acquire_answer(&t, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    ck_assert_ptr_eq(g.bev, first);
    ck_assert_int_eq(t.ctl.started, 1);
    ck_assert_int_eq(t.s.accepted, 1);
    ck_assert_str_eq(echo(g.bev, "again", 2000), "again");
    ck_assert_int_eq(tide_evpool_release(t.pool, g.bev), 0);
    ck_assert_uint_eq(stats(&t).made, 1);
    stop(&t);
}
END_TEST

/* ---- failed ---- */

START_TEST(failed_setup_gives_the_waiter_the_servers_message)
{
    struct st t;
    start(&t, PING, (struct opts){.reply = "-ERR invalid password\r\n"});
    struct got g;
    acquire_answer(&t, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_ESETUP);
    ck_assert_msg(strstr(g.message, "-ERR invalid password") != NULL,
                  "the waiter saw \"%s\"", g.message);
    struct tide_net_detail d;
    char text[320];
    ck_assert_int_eq(last_error(&t, &d, text, sizeof text), TIDE_ESETUP);
    ck_assert_int_eq(d.code, TIDE_ESETUP);
    ck_assert_str_eq(text, g.message);
    char why[320];
    int last = tide_evpool_last_error(t.pool, why, sizeof why);
    ck_assert_msg(last == TIDE_ESETUP, "%s: %s", tide_err_name(last), why);
    struct tide_net_stats ns = stats(&t);
    ck_assert_uint_eq(ns.failed, 1);
    ck_assert_uint_eq(ns.made, 0);
    struct tide_evpool_stats ps;
    tide_evpool_stats(t.pool, &ps);
    ck_assert_uint_eq(ps.make_failures, 1);
    ck_assert_int_eq(ps.live, 0);
    /* the refused connection is closed, not kept */
    ck_assert(run_until(server_empty, &t.s, 2000));
    stop(&t);
}
END_TEST

START_TEST(failed_setup_keeps_a_negative_code_and_maps_the_rest)
{
    struct st t;
    start(&t, FAIL_AT_ONCE, (struct opts){0});
    struct got g;
    t.ctl.fail_code = TIDE_EPEER_CLOSED;
    acquire_answer(&t, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_EPEER_CLOSED);
    run_ms(150);         /* makes are held after a failed one: 120 ms at most */
    t.ctl.fail_code = 7; /* not a code: the setup's failure */
    acquire_answer(&t, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_ESETUP);
    ck_assert_msg(strstr(g.message, tide_strerror(TIDE_ESETUP)) != NULL,
                  "no message given, the code's sentence: \"%s\"", g.message);
    ck_assert_int_eq(t.ctl.started, 2);
    stop(&t);
}
END_TEST

START_TEST(bytes_left_unread_after_done_fail_the_setup)
{
    struct st t;
    start(&t, PING, (struct opts){.reply = "+PONG\r\n+EXTRA\r\n"});
    struct got g;
    acquire_answer(&t, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_ESETUP);
    ck_assert_msg(strstr(g.message, "unread") != NULL, "\"%s\"", g.message);
    ck_assert_uint_eq(stats(&t).made, 0);
    stop(&t);
}
END_TEST

START_TEST(peer_close_during_setup_keeps_the_io_code)
{
    struct st t;
    /* a server that accepts and says nothing; the setup waits for its
     * greeting, then the server closes */
    start(&t, GREETED, (struct opts){.raw_server = true});
    struct got g;
    acquire(&t, &g);
    ck_assert(run_until(setup_started, &t.ctl, 5000));
    ck_assert(!answered(&g));
    server_close_all(&t.s);
    ck_assert(run_until(answered, &g, 5000));
    ck_assert_int_eq(g.status, TIDE_EPEER_CLOSED);
    ck_assert_msg(strstr(g.message, "closed") != NULL, "\"%s\"", g.message);
    stop(&t);
}
END_TEST

/* ---- timeouts and giving up ---- */

START_TEST(setup_timeout_fails_the_make_and_aborts)
{
    struct st t;
    start(&t, HANG,
          (struct opts){.abort = true, .setup_timeout = TIDE_MS(200)});
    struct got g;
    int64_t t0 = ms_now();
    acquire_answer(&t, &g, 5000);
    int64_t took = ms_now() - t0;
    ck_assert_int_eq(g.status, TIDE_ESETUP_TIMEOUT);
    ck_assert_int_ge(took, 190);
    ck_assert_int_lt(took, 2000);
    ck_assert_int_eq(t.ctl.aborts, 1);
    ck_assert_ptr_null(t.ctl.token);
    ck_assert_int_eq(last_error(&t, NULL, NULL, 0), TIDE_ESETUP_TIMEOUT);
    ck_assert(run_until(server_empty, &t.s, 2000));
    stop(&t);
}
END_TEST

START_TEST(setup_timeout_without_abort_takes_the_late_answer)
{
    struct st t;
    start(&t, HANG, (struct opts){.setup_timeout = TIDE_MS(100)});
    struct got g;
    acquire_answer(&t, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_ESETUP_TIMEOUT);
    ck_assert(run_until(server_empty, &t.s, 2000));
    /* the setup answers long after: ignored, nothing made or freed twice */
    tide_net_setup_done(t.ctl.token);
    run_ms(20);
    ck_assert_uint_eq(stats(&t).made, 0);
    struct tide_evpool_stats ps;
    tide_evpool_stats(t.pool, &ps);
    ck_assert_int_eq(ps.live, 0);
    stop(&t);
}
END_TEST

START_TEST(make_timeout_during_setup_aborts_it)
{
    struct st t;
    start(&t, HANG,
          (struct opts){.abort = true,
                        .setup_timeout = TIDE_FOREVER,
                        .make_timeout = TIDE_MS(300)});
    struct got g;
    acquire_answer(&t, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_EMAKETIMEDOUT);
    ck_assert(run_until(aborted, &t.ctl, 2000));
    ck_assert_int_eq(t.ctl.aborts, 1);
    ck_assert_uint_eq(stats(&t).cancelled, 1);
    ck_assert(run_until(server_empty, &t.s, 2000));
    stop(&t);
}
END_TEST

START_TEST(make_timeout_during_setup_without_abort_is_safe)
{
    struct st t;
    start(&t, HANG,
          (struct opts){.setup_timeout = TIDE_FOREVER,
                        .make_timeout = TIDE_MS(300)});
    struct got g;
    acquire_answer(&t, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_EMAKETIMEDOUT);
    ck_assert(run_until(server_empty, &t.s, 2000));
    ck_assert_uint_eq(stats(&t).cancelled, 1);
    tide_net_setup_failed(t.ctl.token, TIDE_ESETUP, "too late");
    run_ms(20);
    ck_assert_uint_eq(stats(&t).failed, 0); /* cancelled, not failed */
    stop(&t);
}
END_TEST

START_TEST(pool_free_during_setup_aborts_it)
{
    struct st t;
    start(&t, HANG, (struct opts){.abort = true});
    struct got g;
    acquire(&t, &g);
    ck_assert(run_until(setup_started, &t.ctl, 5000));
    tide_evpool_free(t.pool); /* cancels the make */
    t.pool = NULL;
    ck_assert_int_eq(t.ctl.aborts, 1);
    ck_assert_int_eq(g.calls, 0); /* a freed pool drops its waiters */
    ck_assert(run_until(server_empty, &t.s, 2000));
    stop(&t);
}
END_TEST

START_TEST(pool_free_during_setup_without_abort_is_safe)
{
    struct st t;
    start(&t, HANG, (struct opts){0});
    struct got g;
    acquire(&t, &g);
    ck_assert(run_until(setup_started, &t.ctl, 5000));
    tide_evpool_free(t.pool);
    t.pool = NULL;
    ck_assert(run_until(server_empty, &t.s, 2000));
    tide_net_setup_done(t.ctl.token); /* late: ignored */
    stop(&t);
}
END_TEST

START_TEST(factory_free_during_setup_aborts_it)
{
    struct st t;
    start(&t, HANG, (struct opts){.abort = true});
    struct got g;
    acquire(&t, &g);
    ck_assert(run_until(setup_started, &t.ctl, 5000));
    free_factory(&t); /* the make is answered TIDE_ECANCELLED */
    ck_assert_int_eq(t.ctl.aborts, 1);
    ck_assert(run_until(answered, &g, 2000));
    ck_assert_int_eq(g.status, TIDE_ECANCELLED);
    ck_assert(run_until(server_empty, &t.s, 2000));
    tide_evpool_free(t.pool);
    server_stop(&t.s);
}
END_TEST

START_TEST(factory_free_during_setup_without_abort_is_safe)
{
    struct st t;
    start(&t, HANG, (struct opts){0});
    struct got g;
    acquire(&t, &g);
    ck_assert(run_until(setup_started, &t.ctl, 5000));
    free_factory(&t);
    ck_assert(run_until(answered, &g, 2000));
    ck_assert_int_eq(g.status, TIDE_ECANCELLED);
    ck_assert(run_until(server_empty, &t.s, 2000));
    /* the token outlived its factory; the late answer only frees it */
    tide_net_setup_failed(t.ctl.token, TIDE_ESETUP, "too late");
    tide_evpool_free(t.pool);
    server_stop(&t.s);
}
END_TEST

/* ---- TLS ---- */

START_TEST(tls_setup_runs_after_the_handshake)
{
    struct st t;
    start(&t, PING, (struct opts){.tls = true});
    struct got g;
    acquire_answer(&t, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    ck_assert(t.ctl.tls_ready);
    /* the server read the setup's bytes decrypted, after its handshake */
    ck_assert_int_eq(t.script.pings, 1);
    ck_assert(t.script.handshaken);
    ck_assert_int_eq(t.s.handshakes, 1);
    ck_assert_str_eq(echo(g.bev, "over tls", 2000), "over tls");
    ck_assert_int_eq(tide_evpool_release(t.pool, g.bev), 0);
    stop(&t);
}
END_TEST

START_TEST(tls_failed_setup_gives_the_servers_message)
{
    struct st t;
    start(&t, PING,
          (struct opts){.tls = true, .reply = "-WRONGPASS invalid\r\n"});
    struct got g;
    acquire_answer(&t, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_ESETUP);
    ck_assert_ptr_nonnull(strstr(g.message, "-WRONGPASS invalid"));
    ck_assert(run_until(server_empty, &t.s, 2000));
    stop(&t);
}
END_TEST

/* ---- no storm ---- */

#define STORM_MS     5000
#define MAX_CONNECTS 25 /* in STORM_MS: a handful a second */

START_TEST(refused_setup_is_not_stormed)
{
    struct st t;
    start(&t, PING,
          (struct opts){.reply = "-ERR invalid password\r\n",
                        .min = 2,
                        .make_timeout = TIDE_SEC(10)});
    run_ms(STORM_MS);
    int connects = t.s.accepted;
    fprintf(stderr, "refused setup, min 2: %d connects in %d ms\n", connects,
            STORM_MS);
    ck_assert_msg(connects <= MAX_CONNECTS, "%d connects in %d ms", connects,
                  STORM_MS);
    ck_assert_int_ge(connects, 3); /* it keeps trying, slowly */
    ck_assert_int_eq(t.script.pings, connects);
    ck_assert_int_eq(t.ctl.started, connects);
    struct tide_evpool_stats ps;
    tide_evpool_stats(t.pool, &ps);
    ck_assert_uint_eq(ps.made, 0);
    char why[320];
    int last = tide_evpool_last_error(t.pool, why, sizeof why);
    ck_assert_msg(last == TIDE_ESETUP, "%s: %s", tide_err_name(last), why);
    stop(&t);
}
END_TEST

/* ---- bad input ---- */

START_TEST(null_tokens_and_bad_setup_options)
{
    tide_net_setup_done(NULL);
    tide_net_setup_failed(NULL, TIDE_ESETUP, "x");
    struct tide_tcp_factory *f = NULL;
    struct tide_tcp_options o = {.host = "127.0.0.1",
                                 .port = 1,
                                 .setup = run_setup,
                                 .setup_timeout = -1};
    ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    ck_assert_ptr_null(f);
    ck_assert_str_eq(tide_err_name(TIDE_ESETUP), "TIDE_ESETUP");
    ck_assert_str_eq(tide_err_name(TIDE_ESETUP_TIMEOUT), "TIDE_ESETUP_TIMEOUT");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("setup");
    TCase *tc = tcase_create("setup");
    fixture_add(tc);
    tcase_add_test(tc, done_at_once_hands_over_a_clean_connection);
    tcase_add_test(tc, done_after_the_exchange_runs_once_per_connection);
    tcase_add_test(tc, failed_setup_gives_the_waiter_the_servers_message);
    tcase_add_test(tc, failed_setup_keeps_a_negative_code_and_maps_the_rest);
    tcase_add_test(tc, bytes_left_unread_after_done_fail_the_setup);
    tcase_add_test(tc, peer_close_during_setup_keeps_the_io_code);
    tcase_add_test(tc, setup_timeout_fails_the_make_and_aborts);
    tcase_add_test(tc, setup_timeout_without_abort_takes_the_late_answer);
    tcase_add_test(tc, make_timeout_during_setup_aborts_it);
    tcase_add_test(tc, make_timeout_during_setup_without_abort_is_safe);
    tcase_add_test(tc, pool_free_during_setup_aborts_it);
    tcase_add_test(tc, pool_free_during_setup_without_abort_is_safe);
    tcase_add_test(tc, factory_free_during_setup_aborts_it);
    tcase_add_test(tc, factory_free_during_setup_without_abort_is_safe);
    tcase_add_test(tc, tls_setup_runs_after_the_handshake);
    tcase_add_test(tc, tls_failed_setup_gives_the_servers_message);
    tcase_add_test(tc, null_tokens_and_bad_setup_options);
    suite_add_tcase(s, tc);
    TCase *storm = tcase_create("storm");
    fixture_add(storm);
    tcase_set_timeout(storm, 30);
    tcase_add_test(storm, refused_setup_is_not_stormed);
    suite_add_tcase(s, storm);
    return s;
}

TIDE_TEST_MAIN(suite)
