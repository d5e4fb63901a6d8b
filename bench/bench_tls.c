/* TLS and TCP benchmark: requests per second against an echo server on
 * loopback, over pooled connections and over a new connection per request,
 * all measured in one run with repetitions alternating, each beside the same
 * work done by hand with libevent and OpenSSL and no pool.
 *
 * A request is 64 bytes written on a connection; it is done when the 64
 * bytes have come back (and match). INFLIGHT (4) requests are kept in
 * flight in every scenario: each completion starts the next request.
 *
 *   (a) pooled TLS      a tide_tls_factory pool of 4, made once: a request
 *                       is acquire -> write -> read the echo -> release.
 *   (b) TLS, full       the same with retire_after = 1 (a connection is
 *                       destroyed when it comes back, so every acquire makes
 *                       one: TCP connect, TLS handshake, and close_notify at
 *                       the end) and the factory's no_resumption: every
 *                       handshake is a full one.
 *   (c) TLS, resumed    as (b) with session resumption on (the preset): each
 *                       handshake offers a ticket from the factory's cache.
 *                       The share of handshakes that resumed
 *                       (tide_tls_resumed) is printed.
 *   (d) pooled TCP      a tide_tcp_factory pool of 4.
 *   (e) TCP, new        as (d) with retire_after = 1.
 * The pools of (b), (c) and (e) keep no minimum, so no connection is made
 * ahead of the acquire that needs it: each request waits for its connect
 * (and handshake), as a client without a pool does.
 *
 * Baselines, "by hand": the same five with libevent and OpenSSL only, the
 * least a careful client does. Its own socket (non-blocking, close-on-exec,
 * TCP_NODELAY) handed to a bufferevent while it connects; for TLS an SSL
 * with the same verification (the chain, and the IP address), the request
 * written at CONNECTED, SSL_shutdown before the free, sessions kept from
 * the new-session callback in a LIFO of 8 and each offered once. Pooled: each
 * of the 4 request chains keeps one connection for good. What tidepool adds
 * is the difference; what the goals ask of TLS itself shows in the ratios
 * of the baselines.
 *
 * The server: the tests' TLS and TCP echo servers (tests/tls/servers.c), on
 * 127.0.0.1, with a certificate from a test CA made at run time
 * (tests/tls/certs.c: EC P-256, SAN IP:127.0.0.1), in a thread of their own
 * with their own event_base. A remote server does its half of each
 * handshake (signing, key exchange, tickets) on its own CPU; in the client's
 * thread that half would be charged to the client's figures, and the ratios
 * would measure the server as much as the client. With two cores the
 * client's loop and the server's get one each, at the price of a
 * cross-thread wake-up per exchange (which any real network's latency
 * dwarfs). Each thread's CPU time per request is printed beside the wall
 * time, so the split stays visible when another process takes a core.
 * TCP_NODELAY is set on the listening sockets (Linux passes it to the
 * accepted ones), as real TLS servers do. Without it the server writes its
 * two TLS 1.3 session tickets in two writes, Nagle holds the second until
 * the client's delayed ACK of the first (40 ms), and the echo waits behind
 * it: (b) ran at 89 requests a second instead of 1,300.
 *
 * Protocol: what both ends choose with the presets: TLS 1.3, X25519,
 * TLS_AES_256_GCM_SHA384, ECDSA P-256 certificates; the server (OpenSSL)
 * sends two tickets after a full handshake and one after a resumed one. A
 * resumed TLS 1.3 handshake still runs an X25519 exchange on both sides
 * (psk_dhe_ke); it skips the certificate, its signature and its
 * verification.
 *
 * Timing as in bench_evloop: each side is calibrated to fill `target` of
 * wall time a repetition (which warms pools, session caches, allocators and
 * the server), then 5 repetitions of all ten alternate, and the median of
 * each figure is reported, so a noisy neighbour hits all alike.
 *
 * Goals (from the issue): (a) >= 15x (b) in requests per second; (c) costs at
 * most half of (b) (time a request); (a) within 1.5x of (d). A missed goal is
 * printed as such, and the exit status stays 0.
 *
 * Usage: bench_tls [--quick]   (--quick: about 1/10 of the time, for CI)
 *
 * New connections on loopback leave the client's side in TIME_WAIT (the
 * client closes first); Linux reuses those ports for loopback connects
 * (net.ipv4.tcp_tw_reuse = 2, its preset) a second later, which keeps (e)
 * within the ephemeral ports. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <tidepool/evloop.h>
#include <tidepool/tls.h>

#include "certs.h"
#include "servers.h"

#define REPS      5
#define INFLIGHT  4    /* requests in flight, in every scenario */
#define REQ_BYTES 64   /* a request, and its echo */
#define STALL_SEC 10   /* a round still running after this long dies */
#define SESSIONS  8    /* the baseline's session LIFO */
#define GOAL_AB   15.0 /* (a) over (b), requests per second, at least */
#define GOAL_CB   0.5  /* (c) over (b), time a request, at most */
#define GOAL_DA   1.5  /* (d) over (a), requests per second, at most */
#define BUSY_LOW                                                               \
    0.8 /* client CPU / wall below this: the server shared                     \
           the client's core */

static const char request[REQ_BYTES] =
    "tidepool bench_tls: sixty-four bytes of request, echoed back...";

/* ---- plumbing ---- */

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "bench_tls: %s%s%s\n", what, detail ? ": " : "",
            detail ? detail : "");
    exit(1);
}

static void set_nodelay(evutil_socket_t fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        die("TCP_NODELAY", strerror(errno));
}

/* ---- the server thread ---- */

struct server {
    struct event_base *base;
    struct test_server tls;
    struct test_server tcp;
    int stop_pipe[2]; /* a byte written here stops the thread */
    struct event *stop;
    pthread_t thread;
    clockid_t cpu; /* the thread's CPU clock */
};

/* From the server thread: stop listening and close every connection; the
 * loop then runs dry (the freed bufferevents' finalizers first) and
 * returns. */
static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct server *s = arg;
    server_stop(&s->tls);
    server_stop(&s->tcp);
    event_free(s->stop);
    s->stop = NULL;
}

static void *server_main(void *arg)
{
    struct server *s = arg;
    if (event_base_dispatch(s->base) < 0)
        die("the server's loop failed", NULL);
    return NULL;
}

/* Both servers on 127.0.0.1, started here and then handed to their thread:
 * from then on only that thread touches them (and their counters), until it
 * is joined. The ports are read by the client: never written again. */
static void server_open(struct server *s, const struct pki *pki)
{
    memset(s, 0, sizeof *s);
    s->base = event_base_new();
    if (!s->base)
        die("event_base_new failed", NULL);
    SSL_CTX *ctx = server_ctx(pki->good, pki->key, 0, 0, NULL);
    if (!ctx)
        die("the server's SSL_CTX could not be made", NULL);
    if (!server_start(&s->tls, s->base, AF_INET, 0, ctx) ||
        !server_start(&s->tcp, s->base, AF_INET, 0, NULL))
        die("the echo servers could not listen on 127.0.0.1", strerror(errno));
    set_nodelay(evconnlistener_get_fd(s->tls.listener));
    set_nodelay(evconnlistener_get_fd(s->tcp.listener));
    if (pipe(s->stop_pipe) != 0)
        die("pipe failed", strerror(errno));
    s->stop = event_new(s->base, s->stop_pipe[0], EV_READ, on_stop, s);
    if (!s->stop || event_add(s->stop, NULL) != 0)
        die("the server's stop event could not be added", NULL);
    int rc = pthread_create(&s->thread, NULL, server_main, s);
    if (rc != 0)
        die("pthread_create failed", strerror(rc));
    rc = pthread_getcpuclockid(s->thread, &s->cpu);
    if (rc != 0)
        die("pthread_getcpuclockid failed", strerror(rc));
}

static void server_close(struct server *s)
{
    char b = 0;
    if (write(s->stop_pipe[1], &b, 1) != 1)
        die("could not stop the server thread", strerror(errno));
    int rc = pthread_join(s->thread, NULL);
    if (rc != 0)
        die("pthread_join failed", strerror(rc));
    event_base_free(s->base);
    close(s->stop_pipe[0]);
    close(s->stop_pipe[1]);
}

/* ---- a side: requests on a loop of its own ---- */

struct side;

struct chain {
    struct side *s;
    struct bufferevent *bev; /* the connection of the request under way;
                                the baseline's pooled one between them */
};

struct side {
    const char *name;
    bool tls;
    bool pooled;
    struct event_base *base;
    struct event *watchdog;
    struct chain chains[INFLIGHT];
    /* begins a request on c; its connection then calls request_send */
    void (*begin)(struct chain *c);
    /* the echo came back: give the connection back, or close it */
    void (*finish)(struct chain *c);
    uint64_t (*made)(struct side *s); /* connections made so far */
    uint64_t want;                    /* requests this round */
    uint64_t started;
    uint64_t done;
    uint64_t handshakes; /* new TLS connections used, ... */
    uint64_t resumed;    /* ... of them on a resumed session */
    uint64_t per_rep;    /* requests a repetition */
    /* per repetition: wall, client CPU, server CPU, ns a request */
    double wall[REPS];
    double client_cpu[REPS];
    double server_cpu[REPS];
    double m_wall, m_client, m_server;
    uint64_t requests; /* in the repetitions */
    uint64_t conns;    /* connections made in them */
};

static void request_begin(struct chain *c)
{
    c->s->started++;
    c->s->begin(c);
}

static void on_echo(struct bufferevent *bev, void *arg)
{
    struct chain *c = arg;
    struct side *s = c->s;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n = evbuffer_get_length(in);
    if (n < REQ_BYTES)
        return;
    if (n > REQ_BYTES)
        die(s->name, "more bytes came back than were sent");
    if (memcmp(evbuffer_pullup(in, REQ_BYTES), request, REQ_BYTES) != 0)
        die(s->name, "the echo differs from the request");
    evbuffer_drain(in, REQ_BYTES);
    s->finish(c);
    s->done++;
    if (s->started < s->want)
        request_begin(c);
    else if (s->done == s->want)
        event_base_loopbreak(s->base);
}

static void on_conn_event(struct bufferevent *bev, short what, void *arg);

/* A new TLS connection is about to carry its request. */
static void count_handshake(struct side *s, bool resumed)
{
    if (!s->tls || s->pooled)
        return;
    s->handshakes++;
    if (resumed)
        s->resumed++;
}

/* The connection is ready (lent, or connected by hand): send. */
static void request_send(struct chain *c, struct bufferevent *bev)
{
    struct side *s = c->s;
    c->bev = bev;
    bufferevent_setcb(bev, on_echo, NULL, on_conn_event, c);
    if (bufferevent_write(bev, request, REQ_BYTES) != 0)
        die(s->name, "bufferevent_write failed");
}

static void on_stall(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct side *s = arg;
    char text[64];
    snprintf(text, sizeof text, "a round ran past %d s", STALL_SEC);
    die(s->name, text);
}

/* Runs `want` requests, INFLIGHT at a time, through the side's loop. */
static void side_round(struct side *s, uint64_t want)
{
    s->want = want;
    s->started = s->done = 0;
    for (int i = 0; i < INFLIGHT && s->started < want; i++)
        request_begin(&s->chains[i]);
    struct timeval tv = {STALL_SEC, 0};
    event_add(s->watchdog, &tv);
    if (event_base_dispatch(s->base) < 0)
        die(s->name, "the loop failed");
    event_del(s->watchdog);
    if (s->done != want)
        die(s->name, "the loop stopped before every request was done");
}

static void side_init(struct side *s, const char *name, bool tls, bool pooled)
{
    memset(s, 0, sizeof *s);
    s->name = name;
    s->tls = tls;
    s->pooled = pooled;
    s->base = event_base_new();
    if (!s->base)
        die("event_base_new failed", NULL);
    s->watchdog = evtimer_new(s->base, on_stall, s);
    if (!s->watchdog)
        die("evtimer_new failed", NULL);
    for (int i = 0; i < INFLIGHT; i++)
        s->chains[i].s = s;
}

/* After the side's connections are freed: libevent closes their sockets
 * (and frees their SSLs) from the loop. */
static void side_dispose(struct side *s)
{
    event_free(s->watchdog);
    event_base_loop(s->base, EVLOOP_NONBLOCK);
    event_base_free(s->base);
}

/* ---- tidepool: a pool over a TLS or TCP factory ---- */

struct tide_side {
    struct side side; /* first: the callbacks get the side */
    struct tide_tls_factory *tls;
    struct tide_tcp_factory *tcp;
    struct tide_evpool *pool;
};

static void on_conn_event(struct bufferevent *bev, short what, void *arg)
{
    struct chain *c = arg;
    char text[256];
    (void)tide_net_event_error(bev, what, NULL, text, sizeof text);
    die(c->s->name, text);
}

static void on_acquired(struct tide_evpool *pool, int status, void *resource,
                        const struct tide_why *why, void *arg)
{
    (void)pool;
    struct chain *c = arg;
    if (status != 0)
        die(c->s->name, why->message);
    count_handshake(c->s, tide_tls_resumed(resource));
    request_send(c, resource);
}

static void tide_begin(struct chain *c)
{
    struct tide_side *t = (struct tide_side *)(void *)c->s;
    if (tide_evpool_acquire(t->pool, 0, on_acquired, c, NULL) != 0)
        die(c->s->name, "acquire refused");
}

static void tide_finish(struct chain *c)
{
    struct tide_side *t = (struct tide_side *)(void *)c->s;
    struct bufferevent *bev = c->bev;
    c->bev = NULL;
    int rc = tide_evpool_release(t->pool, bev);
    if (rc != 0)
        die(c->s->name, tide_strerror(rc));
}

static uint64_t tide_made(struct side *s)
{
    struct tide_side *t = (struct tide_side *)(void *)s;
    struct tide_net_stats st;
    if (t->tls)
        tide_tls_factory_stats(t->tls, &st);
    else
        tide_tcp_factory_stats(t->tcp, &st);
    return st.made;
}

static void tide_open(struct tide_side *t, const char *name, bool tls,
                      bool pooled, bool resumption, const struct server *srv,
                      const char *ca_pem)
{
    memset(t, 0, sizeof *t);
    struct side *s = &t->side;
    side_init(s, name, tls, pooled);
    s->begin = tide_begin;
    s->finish = tide_finish;
    s->made = tide_made;
    struct tide_factory table;
    int rc;
    if (tls) {
        struct tide_tls_options o = {
            .tcp = {.host = "127.0.0.1", .port = srv->tls.port},
            .ca_pem = ca_pem,
            .no_resumption = !resumption,
        };
        rc = tide_tls_factory_new(s->base, &o, &t->tls);
        if (rc != 0)
            die(name, tide_strerror(rc));
        tide_tls_factory_bind(t->tls, &table);
    } else {
        struct tide_tcp_options o = {.host = "127.0.0.1",
                                     .port = srv->tcp.port};
        rc = tide_tcp_factory_new(s->base, &o, &t->tcp);
        if (rc != 0)
            die(name, tide_strerror(rc));
        tide_tcp_factory_bind(t->tcp, &table);
    }
    struct tide_evpool_options po = {
        .limits = {.size = INFLIGHT, .idle = INFLIGHT},
        .min = pooled ? INFLIGHT : 0,
        .retire_after = pooled ? 0 : 1,
    };
    rc = tide_evpool_new(s->base, &table, &po, &t->pool);
    if (rc != 0)
        die(name, tide_strerror(rc));
}

static void tide_close(struct tide_side *t)
{
    tide_evpool_free(t->pool);
    tide_tls_factory_free(t->tls);
    tide_tcp_factory_free(t->tcp);
    side_dispose(&t->side);
}

/* ---- by hand: libevent and OpenSSL, no pool ---- */

struct hand_side {
    struct side side; /* first: the callbacks get the side */
    SSL_CTX *ctx;     /* TLS only */
    struct sockaddr_in addr;
    SSL_SESSION *sessions[SESSIONS]; /* newest last */
    int n_sessions;
    uint64_t made;
};

static int hand_new_session(SSL *ssl, SSL_SESSION *sess)
{
    struct hand_side *h = SSL_get_app_data(ssl);
    if (!h || !SSL_SESSION_is_resumable(sess))
        return 0;
    if (h->n_sessions == SESSIONS) { /* full: the oldest goes */
        SSL_SESSION_free(h->sessions[0]);
        memmove(h->sessions, h->sessions + 1,
                (SESSIONS - 1) * sizeof h->sessions[0]);
        h->n_sessions--;
    }
    h->sessions[h->n_sessions++] = sess;
    return 1; /* the LIFO holds the reference */
}

static void hand_close(struct bufferevent *bev)
{
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    if (ssl && SSL_is_init_finished(ssl))
        (void)SSL_shutdown(ssl); /* keeps the session resumable */
    ERR_clear_error();
    bufferevent_free(bev);
}

static void on_hand_event(struct bufferevent *bev, short what, void *arg)
{
    struct chain *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        count_handshake(c->s,
                        SSL_session_reused(bufferevent_openssl_get_ssl(bev)));
        request_send(c, bev);
        return;
    }
    char text[256];
    unsigned long e = bufferevent_get_openssl_error(bev);
    snprintf(text, sizeof text, "event 0x%x, errno %d, openssl %lx", what,
             EVUTIL_SOCKET_ERROR(), e);
    die(c->s->name, text);
}

static void hand_connect(struct chain *c)
{
    struct hand_side *h = (struct hand_side *)(void *)c->s;
    struct side *s = &h->side;
    evutil_socket_t fd =
        socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die(s->name, strerror(errno));
    set_nodelay(fd);
    if (connect(fd, (struct sockaddr *)&h->addr, sizeof h->addr) != 0 &&
        errno != EINPROGRESS)
        die(s->name, strerror(errno));
    h->made++;
    struct bufferevent *bev;
    if (!s->tls) {
        bev = bufferevent_socket_new(
            s->base, fd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
        if (!bev)
            die(s->name, "bufferevent_socket_new failed");
        bufferevent_enable(bev, EV_READ | EV_WRITE);
        request_send(c, bev); /* written once the socket connects */
        return;
    }
    SSL *ssl = SSL_new(h->ctx);
    if (!ssl)
        die(s->name, "SSL_new failed");
    SSL_set_app_data(ssl, h);
    SSL_set_verify(ssl, SSL_VERIFY_PEER, NULL);
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1") != 1)
        die(s->name, "X509_VERIFY_PARAM_set1_ip_asc failed");
    if (h->n_sessions > 0) { /* the newest, used once */
        SSL_SESSION *sess = h->sessions[--h->n_sessions];
        if (SSL_set_session(ssl, sess) != 1)
            die(s->name, "SSL_set_session failed");
        SSL_SESSION_free(sess);
    }
    bev = bufferevent_openssl_socket_new(
        s->base, fd, ssl, BUFFEREVENT_SSL_CONNECTING,
        BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    if (!bev)
        die(s->name, "bufferevent_openssl_socket_new failed");
    c->bev = bev;
    bufferevent_setcb(bev, NULL, NULL, on_hand_event, c);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void hand_begin(struct chain *c)
{
    if (c->bev) /* pooled, connected: send on it */
        request_send(c, c->bev);
    else
        hand_connect(c);
}

static void hand_finish(struct chain *c)
{
    if (c->s->pooled)
        return;
    struct bufferevent *bev = c->bev;
    c->bev = NULL;
    hand_close(bev);
}

static uint64_t hand_made(struct side *s)
{
    return ((struct hand_side *)(void *)s)->made;
}

static void hand_open(struct hand_side *h, const char *name, bool tls,
                      bool pooled, bool resumption, const struct server *srv,
                      const char *ca_pem)
{
    memset(h, 0, sizeof *h);
    struct side *s = &h->side;
    side_init(s, name, tls, pooled);
    s->begin = hand_begin;
    s->finish = hand_finish;
    s->made = hand_made;
    h->addr.sin_family = AF_INET;
    h->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    h->addr.sin_port = htons(tls ? srv->tls.port : srv->tcp.port);
    if (!tls)
        return;
    h->ctx = SSL_CTX_new(TLS_client_method());
    BIO *bio = BIO_new_mem_buf(ca_pem, -1);
    X509 *ca = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
    if (!h->ctx || !ca ||
        SSL_CTX_set_min_proto_version(h->ctx, TLS1_2_VERSION) != 1 ||
        X509_STORE_add_cert(SSL_CTX_get_cert_store(h->ctx), ca) != 1)
        die(name, "the client's SSL_CTX could not be made");
    X509_free(ca);
    BIO_free(bio);
    if (resumption) {
        SSL_CTX_set_session_cache_mode(
            h->ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(h->ctx, hand_new_session);
    }
}

static void hand_close_side(struct hand_side *h)
{
    for (int i = 0; i < INFLIGHT; i++)
        if (h->side.chains[i].bev)
            hand_close(h->side.chains[i].bev);
    for (int i = 0; i < h->n_sessions; i++)
        SSL_SESSION_free(h->sessions[i]);
    side_dispose(&h->side);
    SSL_CTX_free(h->ctx);
}

/* ---- timing ---- */

/* Finds how many requests fill `target` ns of wall time. */
static uint64_t calibrate(struct side *s, double target)
{
    uint64_t want = 2 * INFLIGHT;
    for (;;) {
        int64_t t0 = bench_mono_ns();
        side_round(s, want);
        double took = (double)(bench_mono_ns() - t0);
        if (took >= target / 8) {
            double n = (double)want * target / took;
            return n >= INFLIGHT ? (uint64_t)n : INFLIGHT;
        }
        want *= 2;
    }
}

/* Calibrates every side, then runs REPS repetitions of each, alternating. */
static void measure(struct side **sides, size_t n, const struct server *srv,
                    double target)
{
    for (size_t k = 0; k < n; k++)
        sides[k]->per_rep = calibrate(sides[k], target);
    for (size_t k = 0; k < n; k++) {
        sides[k]->handshakes = sides[k]->resumed = 0;
        sides[k]->conns = sides[k]->made(sides[k]);
    }
    for (int i = 0; i < REPS; i++) {
        for (size_t k = 0; k < n; k++) {
            struct side *s = sides[k];
            int64_t w0 = bench_mono_ns();
            int64_t c0 = bench_clock(CLOCK_THREAD_CPUTIME_ID);
            int64_t s0 = bench_clock(srv->cpu);
            side_round(s, s->per_rep);
            double r = (double)s->per_rep;
            s->wall[i] = (double)(bench_mono_ns() - w0) / r;
            s->client_cpu[i] =
                (double)(bench_clock(CLOCK_THREAD_CPUTIME_ID) - c0) / r;
            s->server_cpu[i] = (double)(bench_clock(srv->cpu) - s0) / r;
            s->requests += s->per_rep;
        }
    }
    for (size_t k = 0; k < n; k++) {
        struct side *s = sides[k];
        s->conns = s->made(s) - s->conns;
        s->m_wall = bench_median(s->wall, REPS);
        s->m_client = bench_median(s->client_cpu, REPS);
        s->m_server = bench_median(s->server_cpu, REPS);
    }
}

/* ---- report ---- */

static void print_header(void)
{
    printf("  %-20s %-44s| %-14s| %s\n", "", "tidepool", "by hand", "tidepool");
    printf("  %-20s %7s %8s %7s %7s %5s %5s | %7s %6s | %5s %s\n", "", "req/s",
           "us/req", "client", "server", "busy", "conn", "req/s", "client",
           "/hand", " resumed");
}

static void print_row(const struct side *t, const struct side *h)
{
    printf(
        "  %-20s %7.0f %8.1f %7.1f %7.1f %4.0f%% %5.2f | %7.0f %6.1f | %5.2f",
        t->name, 1e9 / t->m_wall, t->m_wall / 1e3, t->m_client / 1e3,
        t->m_server / 1e3, 100.0 * t->m_client / t->m_wall,
        (double)t->conns / (double)t->requests, 1e9 / h->m_wall,
        h->m_client / 1e3, t->m_wall / h->m_wall);
    if (t->handshakes > 0)
        printf("  %.1f%% | %.1f%%",
               100.0 * (double)t->resumed / (double)t->handshakes,
               100.0 * (double)h->resumed / (double)h->handshakes);
    printf("\n");
}

static void print_goal(const char *what, double value, double by_hand,
                       const char *cmp, double goal, bool met)
{
    printf("  %-46s %7.2f %9.2f   goal %s %-4g %s\n", what, value, by_hand, cmp,
           goal, met ? "ok" : "goal missed");
}

enum { A, B, C, D, E, N };

static const char *const names[N] = {
    "(a) pooled TLS", "(b) new TLS, full", "(c) new TLS, resumed",
    "(d) pooled TCP", "(e) new TCP",
};

int main(int argc, char **argv)
{
    double target = 4e8; /* ns of wall time a repetition, per side */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            target = 4e7;
        } else {
            fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    int64_t t0 = bench_mono_ns();

    struct pki pki;
    if (!pki_make(&pki))
        die("the test certificates could not be made", NULL);
    char *ca_pem = pki_pem(pki.ca);
    if (!ca_pem)
        die("the test CA could not be written as PEM", NULL);
    struct server srv;
    server_open(&srv, &pki);

    static const struct {
        bool tls, pooled, resumption;
    } how[N] = {
        [A] = {.tls = true, .pooled = true, .resumption = true},
        [B] = {.tls = true},
        [C] = {.tls = true, .resumption = true},
        [D] = {.pooled = true},
        [E] = {0},
    };
    struct tide_side tide[N];
    struct hand_side hand[N];
    struct side *sides[2 * N];
    for (int k = 0; k < N; k++) {
        tide_open(&tide[k], names[k], how[k].tls, how[k].pooled,
                  how[k].resumption, &srv, ca_pem);
        hand_open(&hand[k], names[k], how[k].tls, how[k].pooled,
                  how[k].resumption, &srv, ca_pem);
        /* the two (e) sides five apart: their TIME_WAIT ports age between */
        sides[k] = &tide[k].side;
        sides[N + k] = &hand[k].side;
    }

    struct event_base *probe = event_base_new();
    printf("tidepool TLS bench (%s, libevent %s, %s):\n%d-byte echo on "
           "127.0.0.1, %d requests in flight, the server in a thread of its "
           "own;\nmedian of %d, repetitions alternating; by hand: the same "
           "with libevent and OpenSSL, no pool\n\n",
           OpenSSL_version(OPENSSL_VERSION), event_get_version(),
           probe ? event_base_get_method(probe) : "?", REQ_BYTES, INFLIGHT,
           REPS);
    if (probe)
        event_base_free(probe);
    fflush(stdout);

    measure(sides, 2 * N, &srv, target);

    print_header();
    for (int k = 0; k < N; k++)
        print_row(&tide[k].side, &hand[k].side);
    printf("  client, server: each thread's CPU us a request; busy: client "
           "CPU / wall (near 100%%:\n  the client is the bottleneck, as "
           "against a remote server); conn: connections made a\n  request; "
           "/hand: wall time over by hand's; resumed: handshakes that "
           "resumed (tidepool | by hand)\n");

    const struct side *t[N], *h[N];
    for (int k = 0; k < N; k++) {
        t[k] = &tide[k].side;
        h[k] = &hand[k].side;
    }
    double ab = t[B]->m_wall / t[A]->m_wall; /* = req/s a over req/s b */
    double cb = t[C]->m_wall / t[B]->m_wall;
    double da = t[A]->m_wall / t[D]->m_wall;
    printf("\nratios (wall time)                              tidepool   by "
           "hand\n");
    print_goal("a/b: req/s, pooled TLS over full handshakes", ab,
               h[B]->m_wall / h[A]->m_wall, ">=", GOAL_AB, ab >= GOAL_AB);
    print_goal("c/b: time a request, resumed over full", cb,
               h[C]->m_wall / h[B]->m_wall, "<=", GOAL_CB, cb <= GOAL_CB);
    print_goal("d/a: req/s, pooled TCP over pooled TLS", da,
               h[A]->m_wall / h[D]->m_wall, "<=", GOAL_DA, da <= GOAL_DA);
    printf("  the same from the client's CPU time alone:  a/b %.2f, c/b "
           "%.2f, d/a %.2f\n",
           t[B]->m_client / t[A]->m_client, t[C]->m_client / t[B]->m_client,
           t[A]->m_client / t[D]->m_client);
    double busy =
        (t[B]->m_client + t[C]->m_client) / (t[B]->m_wall + t[C]->m_wall);
    if (busy < BUSY_LOW)
        printf("  note: the client was busy %.0f%% of the time in (b) and "
               "(c): it waited for the server,\n  which had no core of its "
               "own (another process?), so the wall ratios carry the\n  "
               "server's costs too; the CPU ratios are the client's alone\n",
               100.0 * busy);

    printf("\nwhat a new connection adds to a pooled request, client CPU us "
           "(tidepool, by hand)\n");
    printf("  TCP connect and close            %7.1f %7.1f\n",
           (t[E]->m_client - t[D]->m_client) / 1e3,
           (h[E]->m_client - h[D]->m_client) / 1e3);
    printf("  TLS, full handshake              %7.1f %7.1f\n",
           (t[B]->m_client - t[A]->m_client) / 1e3,
           (h[B]->m_client - h[A]->m_client) / 1e3);
    printf("  TLS, resumed handshake           %7.1f %7.1f\n",
           (t[C]->m_client - t[A]->m_client) / 1e3,
           (h[C]->m_client - h[A]->m_client) / 1e3);
    fflush(stdout);

    for (int k = 0; k < N; k++) {
        tide_close(&tide[k]);
        hand_close_side(&hand[k]);
    }
    server_close(&srv);
    printf("\nserver: %d TLS handshakes (%d resumed), %d TCP connections; "
           "%.1f s\n",
           srv.tls.handshakes, srv.tls.resumptions, srv.tcp.accepted,
           (double)(bench_mono_ns() - t0) / 1e9);
    free(ca_pem);
    pki_free(&pki);
    return 0;
}
