/* tls/watch.c under load: a connection with application data nobody read is
 * never lent, over TCP and TLS, wherever the bytes sit when it comes back:
 * in the bufferevent's input buffer, still in the socket, or (TLS) already
 * decrypted in OpenSSL's buffer. And what is not application data (a TLS 1.3
 * session ticket, a key update) waiting in the socket at release does not
 * cost the connection.
 *
 * The load: 50 callers share a pool of 16 connections for 3,000 loans
 * against a server whose every reply starts with the id of the request it
 * answers. One borrower in three gives its connection back with the reply
 * left unread, in each of the places in turn; every borrower checks that the
 * first bytes it reads name its own request. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>

#include "fixture.h"

#define CALLERS  50
#define POOLSIZE 16
#define LOANS    3000
#define ID_LEN   9 /* "%08u:" */
/* One reply is one TLS record (the server writes it whole), larger than the
 * chain libevent reserves for a small read: a borrower that reads with a
 * high watermark gets part of the record, and the rest stays decrypted in
 * OpenSSL's buffer. */
#define REPLY_LEN 4096
#define PEEK_WM   16    /* the watermark of such a borrower */
#define RUN_BOUND 25000 /* ms for all the loans of one case */

/* How a borrower gives its connection back. */
enum manner {
    TIDY,       /* reads the whole reply, then releases */
    HALF_READ,  /* the rest of the reply left in the input buffer */
    IN_SOCKET,  /* reading off before the reply came: it waits in the socket */
    IN_OPENSSL, /* read through a watermark: the rest of the record waits,
                   decrypted, in OpenSSL's buffer (TLS) */
};

struct load;

struct caller {
    struct load *l;
    struct bufferevent *bev;
    unsigned id;
    enum manner manner;
    size_t n;           /* reply bytes read so far */
    bool checked;       /* the first bytes were compared with the id */
    struct event *tick; /* IN_SOCKET: waits for the reply to arrive */
    int ticks_after;    /* ... and a little longer */
};

struct load {
    struct test_server s;
    struct tide_tcp_factory *tcp;
    struct tide_tls_factory *tls;
    struct tide_evpool *pool;
    bool is_tls;
    int manners; /* misbehaviours in turn: 3 with TLS, 2 without */
    struct caller callers[CALLERS];
    unsigned next_id;
    int started;  /* acquires issued */
    int answers;  /* acquire callbacks */
    int failed;   /* ... with an error */
    int finished; /* callers with nothing left to do */
    int wrong;    /* replies read by a caller they were not for */
    int broken;   /* connection errors seen by a borrower */
    int tidy;
    int dirty[4];    /* releases left unread, by manner */
    int forced;      /* IN_OPENSSL releases with bytes in OpenSSL's buffer */
    int not_arrived; /* IN_SOCKET releases whose reply was not in the socket */
    bool replied[LOANS + 1];
    struct server_conn *replied_by[LOANS + 1];
    char last_error[256];
};

/* ---- the server: each request "%08u\n" answered by REPLY_LEN bytes that
 * start "%08u:" ---- */

static void answer(struct server_conn *c, struct evbuffer *in, void *arg)
{
    struct load *l = arg;
    char line[ID_LEN + 1];
    while (evbuffer_get_length(in) >= ID_LEN) {
        evbuffer_remove(in, line, ID_LEN);
        line[ID_LEN] = '\0';
        unsigned id = (unsigned)strtoul(line, NULL, 10);
        static char reply[REPLY_LEN];
        memset(reply, 'r', sizeof reply);
        snprintf(reply, ID_LEN + 1, "%08u:", id);
        reply[ID_LEN] = 'r'; /* snprintf's NUL */
        reply[REPLY_LEN - 1] = '\n';
        /* one write: one chain, so one TLS record */
        bufferevent_write(c->bev, reply, sizeof reply);
        if (id <= LOANS) {
            l->replied[id] = true;
            l->replied_by[id] = c;
        }
    }
}

/* ---- callers ---- */

static void next_loan(struct caller *k);

static void give_back(struct caller *k, bool discard)
{
    struct bufferevent *bev = k->bev;
    k->bev = NULL;
    evtimer_del(k->tick); /* an IN_SOCKET wait ended early */
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    int rc = discard ? tide_evpool_discard(k->l->pool, bev)
                     : tide_evpool_release(k->l->pool, bev);
    ck_assert_int_eq(rc, 0);
    next_loan(k);
}

/* The first bytes a borrower reads must name its own request. */
static bool check_first(struct caller *k, struct evbuffer *in)
{
    if (k->checked || evbuffer_get_length(in) < ID_LEN)
        return true;
    k->checked = true;
    char want[ID_LEN + 1];
    char got[ID_LEN];
    snprintf(want, sizeof want, "%08u:", k->id);
    evbuffer_copyout(in, got, ID_LEN);
    if (memcmp(got, want, ID_LEN) == 0)
        return true;
    k->l->wrong++;
    return false;
}

static void on_reply(struct bufferevent *bev, void *arg)
{
    struct caller *k = arg;
    struct load *l = k->l;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (!check_first(k, in)) {
        give_back(k, true); /* the stream is out of step: useless */
        return;
    }
    if (!k->checked)
        return;
    switch (k->manner) {
    case TIDY: {
        size_t n = evbuffer_get_length(in);
        if (n > REPLY_LEN - k->n)
            n = REPLY_LEN - k->n;
        evbuffer_drain(in, n);
        k->n += n;
        if (k->n < REPLY_LEN)
            return;
        l->tidy++;
        give_back(k, false);
        return;
    }
    case HALF_READ:
        if (evbuffer_get_length(in) < REPLY_LEN)
            return; /* all of it in the input buffer first */
        evbuffer_drain(in, REPLY_LEN / 2);
        l->dirty[HALF_READ]++;
        give_back(k, false);
        return;
    case IN_OPENSSL: {
        /* take what came through the watermark; the record's rest is
         * OpenSSL's now, and nothing more comes from the socket */
        evbuffer_drain(in, evbuffer_get_length(in));
        if (SSL_pending(bufferevent_openssl_get_ssl(bev)) > 0)
            l->forced++;
        l->dirty[IN_OPENSSL]++;
        give_back(k, false);
        return;
    }
    case IN_SOCKET:
        return; /* bytes read before reading was turned off: not its reply */
    }
}

static void on_broken(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what;
    struct caller *k = arg;
    k->l->broken++;
    give_back(k, true);
}

static bool readable(struct bufferevent *bev)
{
    struct pollfd p = {.fd = bufferevent_getfd(bev), .events = POLLIN};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* IN_SOCKET: released once the server has written the reply out (its
 * output is empty), the socket shows it, and one more tick has passed. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct caller *k = arg;
    struct load *l = k->l;
    struct server_conn *c = l->replied[k->id] ? l->replied_by[k->id] : NULL;
    bool out =
        c && c->bev && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0;
    if (out && readable(k->bev))
        k->ticks_after++;
    if (k->ticks_after < 2) {
        struct timeval tv = {0, 1000};
        evtimer_add(k->tick, &tv);
        return;
    }
    if (evbuffer_get_length(bufferevent_get_input(k->bev)) > 0)
        l->not_arrived++; /* read after all: the case was not made */
    l->dirty[IN_SOCKET]++;
    give_back(k, false);
}

static enum manner manner_of(const struct load *l, unsigned id)
{
    if (id % 3 != 0)
        return TIDY;
    return (enum manner)(HALF_READ + (id / 3) % (unsigned)l->manners);
}

static void lend(struct caller *k, struct bufferevent *bev)
{
    struct load *l = k->l;
    k->bev = bev;
    k->id = ++l->next_id;
    k->manner = manner_of(l, k->id);
    k->n = 0;
    k->checked = false;
    k->ticks_after = 0;
    char req[ID_LEN + 1];
    snprintf(req, sizeof req, "%08u\n", k->id);
    bufferevent_setcb(bev, on_reply, NULL, on_broken, k);
    if (k->manner == IN_OPENSSL)
        bufferevent_setwatermark(bev, EV_READ, 0, PEEK_WM);
    bufferevent_write(bev, req, ID_LEN);
    if (k->manner == IN_SOCKET) {
        /* before the loop sends the request: no reply can be read yet */
        bufferevent_disable(bev, EV_READ);
        struct timeval tv = {0, 1000};
        evtimer_add(k->tick, &tv);
    }
}

static void on_answer(struct tide_evpool *pool, int status, void *resource,
                      const struct tide_why *why, void *arg)
{
    (void)pool;
    struct caller *k = arg;
    struct load *l = k->l;
    l->answers++;
    if (status != 0) {
        l->failed++;
        snprintf(l->last_error, sizeof l->last_error, "%s: %s",
                 tide_err_name(status), why->message);
        next_loan(k);
        return;
    }
    lend(k, resource);
}

static void next_loan(struct caller *k)
{
    struct load *l = k->l;
    if (l->started >= LOANS) {
        l->finished++;
        return;
    }
    l->started++;
    ck_assert_int_eq(
        tide_evpool_acquire(l->pool, TIDE_SEC(10), on_answer, k, NULL), 0);
}

static bool all_finished(void *arg)
{
    struct load *l = arg;
    return l->finished == CALLERS;
}

/* ---- a run ---- */

static void start(struct load *l, int tls_version)
{
    memset(l, 0, sizeof *l);
    l->is_tls = tls_version != 0;
    l->manners = l->is_tls ? 3 : 2;
    SSL_CTX *ctx = NULL;
    if (l->is_tls) {
        ctx = server_ctx(fx->pki.good, fx->pki.key, tls_version, tls_version,
                         NULL);
        ck_assert_ptr_nonnull(ctx);
    }
    ck_assert(server_start(&l->s, fx->base, AF_INET, 0, ctx));
    l->s.on_request = answer;
    l->s.request_arg = l;
    struct tide_factory table;
    if (l->is_tls) {
        struct tide_tls_options o = tls_options("127.0.0.1", &l->s);
        ck_assert_int_eq(tide_tls_factory_new(fx->base, &o, &l->tls), 0);
        tide_tls_factory_bind(l->tls, &table);
    } else {
        struct tide_tcp_options o = {.host = "127.0.0.1", .port = l->s.port};
        ck_assert_int_eq(tide_tcp_factory_new(fx->base, &o, &l->tcp), 0);
        tide_tcp_factory_bind(l->tcp, &table);
    }
    /* A borrower here leaves a reply unread on purpose, a new
     * connection's first loan too: each such is a failed make, and the
     * preset would hold makes after each (callers who need one wait out
     * the hold, and those that waited are refused at the next failure).
     * This load is about what is lent, so makes are held 1 ns. */
    static const struct tide_backoff no_hold = {
        .base = 1, .cap = 1, .jitter = TIDE_JITTER_RIGID};
    struct tide_evpool_options po = {
        .limits = TIDE_LIMITS(.size = POOLSIZE, .idle = POOLSIZE),
        .ward = {.backoff = &no_hold},
        .make_timeout = TIDE_SEC(30),
        .acquire_timeout = TIDE_SEC(30),
        .seed = 1,
    };
    ck_assert_int_eq(tide_evpool_new(fx->base, &table, &po, &l->pool), 0);
    for (int i = 0; i < CALLERS; i++) {
        l->callers[i].l = l;
        l->callers[i].tick = evtimer_new(fx->base, on_tick, &l->callers[i]);
    }
}

static struct tide_net_stats net_stats(const struct load *l)
{
    struct tide_net_stats st;
    if (l->is_tls)
        tide_tls_factory_stats(l->tls, &st);
    else
        tide_tcp_factory_stats(l->tcp, &st);
    return st;
}

static void stop(struct load *l)
{
    tide_evpool_free(l->pool);
    struct tide_net_stats st = net_stats(l);
    ck_assert_int_eq(st.live, 0);
    ck_assert_uint_eq(st.destroyed, st.made);
    if (l->is_tls)
        tide_tls_factory_free(l->tls);
    else
        tide_tcp_factory_free(l->tcp);
    for (int i = 0; i < CALLERS; i++)
        event_free(l->callers[i].tick);
    server_stop(&l->s);
}

static void run_load(int tls_version)
{
    struct load *l = calloc(1, sizeof *l);
    ck_assert_ptr_nonnull(l);
    start(l, tls_version);
    for (int i = 0; i < CALLERS; i++)
        next_loan(&l->callers[i]);
    bool done = run_until(all_finished, l, RUN_BOUND);
    struct tide_evpool_stats ps;
    tide_evpool_stats(l->pool, &ps);
    int dirty =
        l->dirty[HALF_READ] + l->dirty[IN_SOCKET] + l->dirty[IN_OPENSSL];
    fprintf(stderr,
            "%s: %d loans, %d tidy, dirty %d half-read, %d in the socket, "
            "%d in OpenSSL (%d with bytes there); %d wrong; made %llu, "
            "destroyed %llu, lost %llu\n",
            tls_version == TLS1_3_VERSION   ? "TLS 1.3"
            : tls_version == TLS1_2_VERSION ? "TLS 1.2"
                                            : "TCP",
            l->answers, l->tidy, l->dirty[HALF_READ], l->dirty[IN_SOCKET],
            l->dirty[IN_OPENSSL], l->forced, l->wrong,
            (unsigned long long)ps.made, (unsigned long long)ps.destroyed,
            (unsigned long long)ps.lost);
    ck_assert_msg(done, "%d of %d callers finished in %d ms", l->finished,
                  CALLERS, RUN_BOUND);
    /* nobody read another's reply */
    ck_assert_int_eq(l->wrong, 0);
    /* every acquire answered, and none failed */
    ck_assert_int_eq(l->answers, LOANS);
    ck_assert_msg(l->failed == 0, "%d acquires failed, the last: %s", l->failed,
                  l->last_error);
    ck_assert_int_eq(l->broken, 0);
    ck_assert_int_eq(l->tidy + dirty, LOANS);
    /* each place was really tried, and the bytes were where they should be */
    ck_assert_int_gt(l->dirty[HALF_READ], LOANS / 10);
    ck_assert_int_gt(l->dirty[IN_SOCKET], LOANS / 10);
    ck_assert_int_eq(l->not_arrived, 0);
    if (l->is_tls) {
        ck_assert_int_gt(l->dirty[IN_OPENSSL], LOANS / 10);
        ck_assert_int_eq(l->forced, l->dirty[IN_OPENSSL]);
    }
    /* every dirty release was destroyed, and nothing else was */
    ck_assert_uint_eq(ps.destroyed, (uint64_t)dirty);
    ck_assert_uint_eq(ps.dirty, (uint64_t)dirty);
    ck_assert_uint_eq(ps.made, ps.destroyed + (uint64_t)ps.idle);
    ck_assert_int_eq(ps.lent, 0);
    ck_assert_uint_eq(ps.lost, 0);
    stop(l);
    free(l);
}

START_TEST(tcp_unread_reply_is_never_lent)
{
    run_load(0);
}
END_TEST

START_TEST(tls13_unread_reply_is_never_lent)
{
    run_load(TLS1_3_VERSION);
}
END_TEST

START_TEST(tls12_unread_reply_is_never_lent)
{
    run_load(TLS1_2_VERSION);
}
END_TEST

/* ---- what is not data, waiting in the socket at release ---- */

struct one {
    struct test_server s;
    struct tide_tls_factory *f;
    struct test_pool tp;
    struct got g;
};

static void one_start(struct one *o)
{
    SSL_CTX *ctx = server_ctx(fx->pki.good, fx->pki.key, 0, 0, NULL);
    ck_assert_ptr_nonnull(ctx);
    SSL_CTX_set_num_tickets(ctx, 1);
    ck_assert(server_start(&o->s, fx->base, AF_INET, 0, ctx));
    struct tide_tls_options opt = tls_options("127.0.0.1", &o->s);
    ck_assert_int_eq(tide_tls_factory_new(fx->base, &opt, &o->f), 0);
    struct tide_factory table;
    tide_tls_factory_bind(o->f, &table);
    pool_start(&o->tp, &table, 0);
    acquire_wait(&o->tp, &o->g, 5000);
    ck_assert_int_eq(o->g.status, 0);
    /* the echo also lets OpenSSL read the ticket after the handshake */
    ck_assert_str_eq(echo(o->g.bev, "warm", 2000), "warm");
}

static struct tide_net_stats one_stats(struct one *o)
{
    struct tide_net_stats st;
    tide_tls_factory_stats(o->f, &st);
    return st;
}

static void one_stop(struct one *o)
{
    pool_stop(&o->tp);
    ck_assert_int_eq(one_stats(o).live, 0);
    tide_tls_factory_free(o->f);
    server_stop(&o->s);
}

static bool bev_readable(void *arg)
{
    return readable(arg);
}

/* Reading off, the server's record arrives, then the release: the checks
 * must read the record themselves to tell what it is. */
static void record_waits_then_release(struct one *o,
                                      void (*send)(struct test_server *))
{
    struct bufferevent *bev = o->g.bev;
    bufferevent_disable(bev, EV_READ);
    send(&o->s);
    ck_assert(run_until(bev_readable, bev, 2000));
    run_ms(5);
    ck_assert_int_eq(tide_evpool_release(o->tp.pool, bev), 0);
    struct tide_evpool_stats ps;
    tide_evpool_stats(o->tp.pool, &ps);
    ck_assert_int_eq(ps.idle, 1); /* kept */
    acquire_wait(&o->tp, &o->g, 2000);
    ck_assert_int_eq(o->g.status, 0);
    ck_assert_ptr_eq(o->g.bev, bev); /* the same connection */
    ck_assert_str_eq(echo(bev, "still here", 2000), "still here");
    ck_assert_int_eq(one_stats(o).made, 1);
    ck_assert_int_eq(one_stats(o).lost, 0);
    ck_assert_int_eq(tide_evpool_release(o->tp.pool, bev), 0);
}

START_TEST(ticket_in_the_socket_at_release_keeps_the_connection)
{
    struct one o;
    one_start(&o);
    ck_assert_int_eq(one_stats(&o).sessions_received, 1);
    record_waits_then_release(&o, server_ticket_all);
    ck_assert_int_eq(one_stats(&o).sessions_received, 2); /* it was read */
    one_stop(&o);
}
END_TEST

START_TEST(key_update_in_the_socket_at_release_keeps_the_connection)
{
    struct one o;
    one_start(&o);
    record_waits_then_release(&o, server_key_update_all);
    one_stop(&o);
}
END_TEST

static void send_data(struct test_server *s)
{
    server_send_all(s, "unasked\r\n");
}

START_TEST(data_record_in_the_socket_at_release_is_not_kept)
{
    struct one o;
    one_start(&o);
    struct bufferevent *bev = o.g.bev;
    bufferevent_disable(bev, EV_READ);
    send_data(&o.s);
    ck_assert(run_until(bev_readable, bev, 2000));
    run_ms(5);
    ck_assert_int_eq(tide_evpool_release(o.tp.pool, bev), 0);
    struct tide_evpool_stats ps;
    tide_evpool_stats(o.tp.pool, &ps);
    ck_assert_int_eq(ps.idle, 0);
    ck_assert_uint_eq(ps.destroyed, 1);
    one_stop(&o);
}
END_TEST

/* Over TLS as over TCP, lending and release ask the socket nothing while
 * nothing stirred: fifty exchanges over one kept connection cost no
 * SSL_peek, and the session ticket sent after the handshake was consumed
 * all the same (by the bufferevent's own reads). */
START_TEST(tls_lend_and_release_ask_the_socket_nothing)
{
    struct one o;
    one_start(&o);
    struct bufferevent *bev = o.g.bev;
    ck_assert_int_eq(tide_evpool_release(o.tp.pool, bev), 0);
    uint64_t looks = one_stats(&o).looks;
    for (int i = 0; i < 50; i++) {
        acquire_wait(&o.tp, &o.g, 2000);
        ck_assert_int_eq(o.g.status, 0);
        ck_assert_ptr_eq(o.g.bev, bev);
        ck_assert_str_eq(echo(bev, "again", 2000), "again");
        ck_assert_int_eq(tide_evpool_release(o.tp.pool, bev), 0);
    }
    ck_assert_uint_eq(one_stats(&o).looks, looks);
    ck_assert_uint_eq(one_stats(&o).made, 1);
    ck_assert_uint_eq(one_stats(&o).sessions_received, 1);
    one_stop(&o);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("unread");
    TCase *tc = tcase_create("load");
    fixture_add(tc);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tcp_unread_reply_is_never_lent);
    tcase_add_test(tc, tls13_unread_reply_is_never_lent);
    tcase_add_test(tc, tls12_unread_reply_is_never_lent);
    suite_add_tcase(s, tc);

    tc = tcase_create("records");
    fixture_add(tc);
    tcase_add_test(tc, ticket_in_the_socket_at_release_keeps_the_connection);
    tcase_add_test(tc,
                   key_update_in_the_socket_at_release_keeps_the_connection);
    tcase_add_test(tc, data_record_in_the_socket_at_release_is_not_kept);
    tcase_add_test(tc, tls_lend_and_release_ask_the_socket_nothing);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(suite)
