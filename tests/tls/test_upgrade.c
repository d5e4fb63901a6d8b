/* tls/setup.c and tls/tls.c: the upgrade in place (STARTTLS) of a TLS
 * factory. A plaintext exchange on the connected socket, then the handshake
 * on the same socket with the verification, SNI and resumption of a direct
 * connection, then the setup over TLS; a refusal, bytes after the
 * go-ahead, a wrong certificate and silence each fail the make with their
 * own code; a make given up during the upgrade calls upgrade_abort. The
 * server is this file's own: a line protocol that turns into TLS on the
 * same socket when asked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>

#include "fixture.h"

/* ---- the server: "READY", then "UPGRADE" answered by the mode, then TLS
 * and an echo ---- */

enum mode {
    GO,          /* "GO", then TLS */
    REFUSE,      /* "NO not now" */
    GO_AND_MORE, /* "GO" and a line more in the same write, then TLS */
    SILENT,      /* never answers UPGRADE */
};

struct up_conn {
    struct up_server *s;
    struct bufferevent *bev;
    struct up_conn *next;
};

struct up_server {
    struct evconnlistener *listener;
    uint16_t port;
    SSL_CTX *ctx;
    enum mode mode;
    int accepted;
    int upgrades;   /* UPGRADE commands seen */
    int handshakes; /* TLS handshakes done */
    int resumed;
    char sni[64];
    struct up_conn *conns;
};

static void conn_free(struct up_conn *c)
{
    struct up_server *s = c->s;
    for (struct up_conn **p = &s->conns; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    bufferevent_free(c->bev);
    free(c);
}

static void on_tls_read(struct bufferevent *bev, void *arg)
{
    (void)arg;
    bufferevent_write_buffer(bev, bufferevent_get_input(bev));
}

static void on_tls_event(struct bufferevent *bev, short what, void *arg)
{
    struct up_conn *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        SSL *ssl = bufferevent_openssl_get_ssl(bev);
        const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
        snprintf(c->s->sni, sizeof c->s->sni, "%s", name ? name : "");
        c->s->handshakes++;
        if (SSL_session_reused(ssl))
            c->s->resumed++;
        return;
    }
    conn_free(c);
}

/* The socket leaves the plain bufferevent for a TLS one, as the client's
 * does. */
static void to_tls(struct up_conn *c)
{
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    bufferevent_setcb(c->bev, NULL, NULL, NULL, NULL);
    bufferevent_setfd(c->bev, -1);
    bufferevent_free(c->bev);
    struct event_base *base = fx->base;
    c->bev = bufferevent_openssl_socket_new(base, fd, SSL_new(c->s->ctx),
                                            BUFFEREVENT_SSL_ACCEPTING,
                                            BEV_OPT_CLOSE_ON_FREE);
    ck_assert_ptr_nonnull(c->bev);
    bufferevent_setcb(c->bev, on_tls_read, NULL, on_tls_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

static void on_plain_read(struct bufferevent *bev, void *arg)
{
    struct up_conn *c = arg;
    size_t n;
    char *line = evbuffer_readln(bufferevent_get_input(bev), &n,
                                 EVBUFFER_EOL_CRLF_STRICT);
    if (!line)
        return;
    bool upgrade = strcmp(line, "UPGRADE") == 0;
    free(line);
    if (!upgrade)
        return;
    c->s->upgrades++;
    /* written straight to the socket, so that it is out before the switch */
    evutil_socket_t fd = bufferevent_getfd(bev);
    switch (c->s->mode) {
    case GO:
        ck_assert_int_eq(send(fd, "GO\r\n", 4, MSG_NOSIGNAL), 4);
        to_tls(c);
        break;
    case GO_AND_MORE:
        ck_assert_int_eq(send(fd, "GO\r\nMORE\r\n", 10, MSG_NOSIGNAL), 10);
        to_tls(c);
        break;
    case REFUSE:
        bufferevent_write(bev, "NO not now\r\n", 12);
        break;
    case SILENT:
        break;
    }
}

static void on_plain_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what;
    conn_free(arg);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *sa, int len, void *arg)
{
    (void)l;
    (void)sa;
    (void)len;
    struct up_server *s = arg;
    struct up_conn *c = calloc(1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    c->s = s;
    c->bev = bufferevent_socket_new(fx->base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->next = s->conns;
    s->conns = c;
    s->accepted++;
    bufferevent_setcb(c->bev, on_plain_read, NULL, on_plain_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    bufferevent_write(c->bev, "READY\r\n", 7);
}

static void up_start(struct up_server *s, enum mode mode, X509 *cert)
{
    memset(s, 0, sizeof *s);
    s->mode = mode;
    s->ctx = server_ctx(cert, fx->pki.key, 0, 0, NULL);
    ck_assert_ptr_nonnull(s->ctx);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    s->listener = evconnlistener_new_bind(
        fx->base, on_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
        (struct sockaddr *)&sa, sizeof sa);
    ck_assert_ptr_nonnull(s->listener);
    socklen_t n = sizeof sa;
    getsockname(evconnlistener_get_fd(s->listener), (struct sockaddr *)&sa, &n);
    s->port = ntohs(sa.sin_port);
}

static void up_stop(struct up_server *s)
{
    while (s->conns)
        conn_free(s->conns);
    evconnlistener_free(s->listener);
    SSL_CTX_free(s->ctx);
}

/* ---- the client's upgrade: read READY, send UPGRADE, GO is done ---- */

struct ctl {
    int started;
    int aborts;
    bool plain; /* the upgrade's bufferevent had no SSL */
    struct tide_net_setup *token;
    int setups;     /* the setup after the handshake */
    bool setup_tls; /* ... ran over a finished handshake */
};

static void on_up_read(struct bufferevent *bev, void *arg)
{
    struct tide_net_setup *up = arg;
    size_t n;
    char *line;
    while ((line = evbuffer_readln(bufferevent_get_input(bev), &n,
                                   EVBUFFER_EOL_CRLF_STRICT))) {
        if (strcmp(line, "READY") == 0) {
            bufferevent_write(bev, "UPGRADE\r\n", 9);
        } else if (strcmp(line, "GO") == 0) {
            free(line);
            tide_net_setup_done(up);
            return;
        } else {
            tide_net_setup_failed(up, TIDE_EUPGRADE_REFUSED, line);
            free(line);
            return;
        }
        free(line);
    }
}

static void on_up_event(struct bufferevent *bev, short what, void *arg)
{
    char why[256];
    int code = tide_net_event_error(bev, what, NULL, why, sizeof why);
    tide_net_setup_failed(arg, code, why);
}

static void run_upgrade(struct tide_net_setup *up, struct bufferevent *bev,
                        void *arg)
{
    struct ctl *ctl = arg;
    ctl->started++;
    ctl->token = up;
    ctl->plain = bufferevent_openssl_get_ssl(bev) == NULL;
    bufferevent_setcb(bev, on_up_read, NULL, on_up_event, up);
}

static void on_abort(struct tide_net_setup *up, void *arg)
{
    struct ctl *ctl = arg;
    ck_assert_ptr_eq(up, ctl->token);
    ctl->aborts++;
    ctl->token = NULL;
}

static void run_setup(struct tide_net_setup *setup, struct bufferevent *bev,
                      void *arg)
{
    struct ctl *ctl = arg;
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    ctl->setups++;
    ctl->setup_tls = ssl && SSL_is_init_finished(ssl);
    tide_net_setup_done(setup);
}

/* ---- a pool over an upgrading factory ---- */

struct ut {
    struct up_server s;
    struct ctl ctl;
    struct tide_tls_factory *f;
    struct test_pool tp;
};

static void start(struct ut *t, enum mode mode, X509 *cert, const char *host,
                  int64_t upgrade_timeout)
{
    memset(t, 0, sizeof *t);
    up_start(&t->s, mode, cert);
    struct tide_tls_options o = {
        .tcp = {.host = host,
                .port = t->s.port,
                .dns = fx->dns,
                .setup = run_setup,
                .setup_arg = &t->ctl},
        .ca_pem = fx->ca_pem,
        .upgrade = run_upgrade,
        .upgrade_arg = &t->ctl,
        .upgrade_abort = on_abort,
        .upgrade_timeout = upgrade_timeout,
    };
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &t->f), 0);
    struct tide_factory table;
    tide_tls_factory_bind(t->f, &table);
    pool_start(&t->tp, &table, 0);
}

static struct tide_net_stats stats(const struct ut *t)
{
    struct tide_net_stats ns;
    tide_tls_factory_stats(t->f, &ns);
    return ns;
}

static void stop(struct ut *t)
{
    pool_stop(&t->tp);
    struct tide_net_stats ns = stats(t);
    ck_assert_int_eq(ns.live, 0);
    ck_assert_int_eq(ns.pending, 0);
    ck_assert_uint_eq(ns.made, ns.destroyed);
    tide_tls_factory_free(t->f);
    run_ms(20);
    up_stop(&t->s);
}

START_TEST(upgrade_then_handshake_then_setup_over_tls)
{
    struct ut t;
    start(&t, GO, fx->pki.good, "localhost", 0);
    struct got g;
    acquire_wait(&t.tp, &g, 5000);
    ck_assert_int_eq(g.status, 0);
    ck_assert(t.ctl.plain);
    ck_assert_int_eq(t.s.upgrades, 1);
    ck_assert_int_eq(t.ctl.setups, 1);
    ck_assert(t.ctl.setup_tls);
    ck_assert_ptr_nonnull(bufferevent_openssl_get_ssl(g.bev));
    ck_assert_str_eq(echo(g.bev, "over tls\n", 2000), "over tls\n");
    /* the server's side of the handshake ends at the latest by the echo */
    ck_assert_int_eq(t.s.handshakes, 1);
    ck_assert_str_eq(t.s.sni, "localhost"); /* SNI as for a direct one */
    ck_assert_int_eq(tide_evpool_release(t.tp.pool, g.bev), 0);
    stop(&t);
}
END_TEST

/* A second connection offers the first one's session, as a direct TLS
 * connection would. */
START_TEST(upgraded_connections_resume_the_session)
{
    struct ut t;
    start(&t, GO, fx->pki.good, "localhost", 0);
    struct got a, b;
    acquire_wait(&t.tp, &a, 5000);
    ck_assert_int_eq(a.status, 0);
    ck_assert_str_eq(echo(a.bev, "x\n", 2000), "x\n"); /* tickets arrive */
    acquire_wait(&t.tp, &b, 5000);
    ck_assert_int_eq(b.status, 0);
    ck_assert(tide_tls_resumed(b.bev));
    ck_assert_str_eq(echo(b.bev, "y\n", 2000), "y\n");
    ck_assert_int_eq(t.s.resumed, 1);
    ck_assert_uint_eq(stats(&t).resumed, 1);
    tide_evpool_release(t.tp.pool, a.bev);
    tide_evpool_release(t.tp.pool, b.bev);
    stop(&t);
}
END_TEST

START_TEST(refused_upgrade_keeps_its_code_and_the_servers_words)
{
    struct ut t;
    start(&t, REFUSE, fx->pki.good, "localhost", 0);
    struct got g;
    acquire_wait(&t.tp, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_EUPGRADE_REFUSED);
    ck_assert_msg(strstr(g.message, "NO not now"), "%s", g.message);
    ck_assert_int_eq(t.s.handshakes, 0);
    ck_assert_int_eq(t.ctl.setups, 0);
    char buf[256];
    ck_assert_int_eq(tide_tls_factory_last_error(t.f, NULL, buf, sizeof buf),
                     TIDE_EUPGRADE_REFUSED);
    ck_assert_ptr_nonnull(strstr(buf, "upgrade to TLS"));
    stop(&t);
}
END_TEST

/* What came in plaintext after the go-ahead is no answer over TLS. */
START_TEST(bytes_after_the_go_ahead_fail_the_upgrade)
{
    struct ut t;
    start(&t, GO_AND_MORE, fx->pki.good, "localhost", 0);
    struct got g;
    acquire_wait(&t.tp, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_EUPGRADE);
    ck_assert_msg(strstr(g.message, "after the go-ahead"), "%s", g.message);
    ck_assert_int_eq(t.s.handshakes, 0);
    ck_assert_int_eq(t.ctl.setups, 0);
    stop(&t);
}
END_TEST

START_TEST(upgraded_handshake_verifies_the_name)
{
    struct ut t;
    start(&t, GO, fx->pki.other, "localhost", 0);
    struct got g;
    acquire_wait(&t.tp, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_ENAME_MISMATCH);
    ck_assert_int_eq(t.s.upgrades, 1);
    ck_assert_int_eq(t.ctl.setups, 0);
    stop(&t);
}
END_TEST

START_TEST(upgraded_handshake_refuses_an_untrusted_chain)
{
    struct ut t;
    start(&t, GO, fx->pki.stranger, "localhost", 0);
    struct got g;
    acquire_wait(&t.tp, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_EUNTRUSTED);
    stop(&t);
}
END_TEST

START_TEST(silent_server_times_the_upgrade_out_and_aborts_it)
{
    struct ut t;
    start(&t, SILENT, fx->pki.good, "localhost", TIDE_MS(200));
    struct got g;
    acquire_wait(&t.tp, &g, 5000);
    ck_assert_int_eq(g.status, TIDE_EUPGRADE_TIMEOUT);
    ck_assert_msg(strstr(g.message, "200 ms"), "%s", g.message);
    ck_assert_int_eq(t.ctl.aborts, 1);
    ck_assert_int_eq(t.s.upgrades, 1);
    stop(&t);
}
END_TEST

static bool upgrade_started(void *arg)
{
    return ((struct ctl *)arg)->started > 0;
}

START_TEST(pool_free_during_the_upgrade_aborts_it)
{
    struct ut t;
    start(&t, SILENT, fx->pki.good, "localhost", 0);
    struct got g;
    memset(&g, 0, sizeof g);
    ck_assert_int_eq(tide_evpool_acquire(t.tp.pool, 0, pool_record, &g, NULL),
                     0);
    ck_assert(run_until(upgrade_started, &t.ctl, 5000));
    pool_stop(&t.tp);
    ck_assert_int_eq(t.ctl.aborts, 1);
    ck_assert_ptr_null(t.ctl.token);
    ck_assert_int_eq(stats(&t).pending, 0);
    tide_tls_factory_free(t.f);
    run_ms(20);
    up_stop(&t.s);
}
END_TEST

START_TEST(upgrade_options_are_checked)
{
    struct tide_tls_factory *f = NULL;
    struct tide_tls_options o = {
        .tcp = {.host = "127.0.0.1", .port = 1},
        .insecure_skip_verify = true,
    };
    struct ctl ctl;
    o.upgrade_arg = &ctl; /* details without an upgrade */
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    o.upgrade_arg = NULL;
    o.upgrade_timeout = TIDE_SEC(1);
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    o.upgrade = run_upgrade;
    o.upgrade_timeout = -1;
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), TIDE_EINVAL);
    ck_assert_ptr_null(f);
    o.upgrade_timeout = TIDE_FOREVER;
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &f), 0);
    tide_tls_factory_free(f);
}
END_TEST

START_TEST(upgrade_codes_are_distinct_and_named)
{
    static const int codes[] = {TIDE_EUPGRADE, TIDE_EUPGRADE_UNOFFERED,
                                TIDE_EUPGRADE_REFUSED, TIDE_EUPGRADE_TIMEOUT};
    static const char *const names[] = {
        "TIDE_EUPGRADE", "TIDE_EUPGRADE_UNOFFERED", "TIDE_EUPGRADE_REFUSED",
        "TIDE_EUPGRADE_TIMEOUT"};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_le(codes[i], -60);
        ck_assert_int_ge(codes[i], -79);
        ck_assert_str_eq(tide_err_name(codes[i]), names[i]);
        ck_assert_str_ne(tide_strerror(codes[i]),
                         "unknown tidepool error code");
        for (size_t j = i + 1; j < 4; j++)
            ck_assert_int_ne(codes[i], codes[j]);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("upgrade");
    TCase *tc = tcase_create("upgrade");
    fixture_add(tc);
    tcase_add_test(tc, upgrade_then_handshake_then_setup_over_tls);
    tcase_add_test(tc, upgraded_connections_resume_the_session);
    tcase_add_test(tc, refused_upgrade_keeps_its_code_and_the_servers_words);
    tcase_add_test(tc, bytes_after_the_go_ahead_fail_the_upgrade);
    tcase_add_test(tc, upgraded_handshake_verifies_the_name);
    tcase_add_test(tc, upgraded_handshake_refuses_an_untrusted_chain);
    tcase_add_test(tc, silent_server_times_the_upgrade_out_and_aborts_it);
    tcase_add_test(tc, pool_free_during_the_upgrade_aborts_it);
    tcase_add_test(tc, upgrade_options_are_checked);
    tcase_add_test(tc, upgrade_codes_are_distinct_and_named);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
