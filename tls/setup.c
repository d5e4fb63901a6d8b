/* Session setup: the protocol's opening exchange (AUTH, SELECT, EHLO, a
 * startup message) on a connected connection, before the pool sees it; and
 * the upgrade (STARTTLS), the same kind of exchange in plaintext before a
 * TLS factory's handshake.
 *
 * The setup answers through a token of its own, separate from the make:
 * the factory may give up on the make first (setup_timeout, the pool's make
 * timeout or cancel, the factory freed), and a setup without setup_abort
 * cannot be told, so it answers later on a token whose make is gone. The
 * token therefore outlives the make until it is answered (or, with
 * setup_abort, until the abort returns) and carries no pointer that could
 * dangle: once let go, it knows neither the make nor the connection.
 *
 * Both phases run on this one token type and timer, one after the other:
 * the upgrade on a plain bufferevent, which gives its socket back to the
 * TLS handshake when it is done, then the setup over TLS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "tls_internal.h"

struct tide_net_setup {
    struct tide__net_make *m; /* NULL once the factory let the token go */
    struct bufferevent *bev;  /* the connection; NULL once let go */
    bool aborting;            /* inside setup_abort: an answer now is
                                 ignored, and the token freed after it */
    bool upgrade;             /* the upgrade before the handshake, not the
                                 setup after it */
};

/* What one phase runs: the setup's hooks, or the upgrade's. */
struct phase {
    tide_setup_cb run;
    void (*abort)(struct tide_net_setup *setup, void *arg);
    void *arg;
    int64_t timeout;
};

static struct phase phase_of(const struct tide_tcp_factory *f, bool upgrade)
{
    if (upgrade)
        return (struct phase){.run = f->tls->upgrade,
                              .abort = f->tls->upgrade_abort,
                              .arg = f->tls->upgrade_arg,
                              .timeout = f->tls->upgrade_timeout};
    return (struct phase){.run = f->setup,
                          .abort = f->setup_abort,
                          .arg = f->setup_arg,
                          .timeout = f->setup_timeout};
}

static void to_timeval(int64_t ns, struct timeval *tv)
{
    tv->tv_sec = (time_t)(ns / TIDE_SEC(1));
    tv->tv_usec = (suseconds_t)((ns % TIDE_SEC(1)) / 1000);
}

/* Closes a connection that never reached the pool, as destroy would: the
 * setup's callbacks first, so none of them runs again, and for TLS a
 * close_notify when the connection is sound (the session stays
 * resumable). */
static void close_conn(struct tide_tcp_factory *f, struct bufferevent *bev)
{
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    if (f->tls)
        tide__tls_close(bev);
    bufferevent_free(bev);
}

/* Ends the setup phase of m: the timer stopped, the token cut loose.
 * Returns the connection, now the caller's. */
static struct bufferevent *detach(struct tide__net_make *m)
{
    struct tide_net_setup *s = m->setup;
    struct bufferevent *bev = s->bev;
    event_del(&m->setup_timer);
    m->setup = NULL;
    s->m = NULL;
    s->bev = NULL;
    return bev;
}

/* The setup failed (code and text set in fail): closed, and the make fails
 * with it. */
static void fail_setup(struct tide__net_make *m,
                       const struct tide__net_fail *fail)
{
    struct tide_net_setup *s = m->setup;
    struct bufferevent *bev = detach(m);
    free(s);
    close_conn(m->f, bev);
    tide__net_make_failed(m, fail);
}

void tide__net_setup_abort(struct tide__net_make *m)
{
    struct tide_net_setup *s = m->setup;
    if (!s)
        return;
    struct tide_tcp_factory *f = m->f;
    struct phase ph = phase_of(f, s->upgrade);
    struct bufferevent *bev = detach(m);
    if (ph.abort) {
        s->aborting = true;
        ph.abort(s, ph.arg); /* bev still open while it runs */
        free(s);
    }
    /* else the token waits for its answer, which then frees it */
    close_conn(f, bev);
}

static void on_setup_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide__net_make *m = arg;
    struct tide__net_fail fail;
    memset(&fail, 0, sizeof fail);
    if (m->setup->upgrade)
        tide__net_fail_set(
            &fail, TIDE_EUPGRADE_TIMEOUT,
            "upgrade to TLS with %s: no answer within %lld ms", m->f->host,
            (long long)(m->f->tls->upgrade_timeout / TIDE_MS(1)));
    else
        tide__net_fail_set(&fail, TIDE_ESETUP_TIMEOUT,
                           "session setup with %s: no answer within %lld ms",
                           m->f->host,
                           (long long)(m->f->setup_timeout / TIDE_MS(1)));
    tide__net_setup_abort(m);
    tide__net_make_failed(m, &fail);
}

/* Runs one phase on bev (taken): the token made, the timer armed, the
 * hook called. m may be gone when this returns. */
static void start_phase(struct tide__net_make *m, struct bufferevent *bev,
                        bool upgrade)
{
    struct tide_tcp_factory *f = m->f;
    struct phase ph = phase_of(f, upgrade);
    struct tide_net_setup *s = calloc(1, sizeof *s);
    if (!s) {
        struct tide__net_fail fail;
        memset(&fail, 0, sizeof fail);
        tide__net_fail_set(&fail, TIDE_ENOMEM,
                           "connected to %s, but out of memory for the "
                           "session setup",
                           f->host);
        close_conn(f, bev);
        tide__net_make_failed(m, &fail);
        return;
    }
    s->m = m;
    s->bev = bev;
    s->upgrade = upgrade;
    m->setup = s;
    event_assign(&m->setup_timer, f->base, -1, 0, on_setup_timeout, m);
    if (ph.timeout != TIDE_FOREVER) {
        struct timeval tv;
        to_timeval(ph.timeout, &tv);
        event_add(&m->setup_timer, &tv);
    }
    ph.run(s, bev, ph.arg); /* may answer, and so end m, at once */
}

void tide__net_setup_start(struct tide__net_make *m, struct bufferevent *bev)
{
    if (!m->f->setup) {
        tide__net_make_done(m, bev);
        return;
    }
    start_phase(m, bev, false);
}

void tide__net_upgrade_start(struct tide__net_make *m, evutil_socket_t fd)
{
    struct tide_tcp_factory *f = m->f;
    /* closes the socket on every failure path; the upgrade's success takes
     * it back (see upgrade_done) */
    struct bufferevent *bev = bufferevent_socket_new(
        f->base, fd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    if (!bev) {
        close(fd);
        struct tide__net_fail fail;
        memset(&fail, 0, sizeof fail);
        tide__net_fail_set(&fail, TIDE_ENOMEM,
                           "connected to %s, but out of memory", f->host);
        tide__net_make_failed(m, &fail);
        return;
    }
    tide__net_hand_over(bev);
    start_phase(m, bev, true);
}

/* The server said "go ahead": the socket leaves the plain bufferevent for
 * the handshake. Anything already read past the go-ahead came in plaintext
 * and would be read as if it came over TLS (the STARTTLS injection of RFC
 * 7457 2.2), so it fails the make, as would bytes the upgrade left to
 * write. */
static void upgrade_done(struct tide_net_setup *s)
{
    struct tide__net_make *m = s->m;
    size_t in = evbuffer_get_length(bufferevent_get_input(s->bev));
    size_t out = evbuffer_get_length(bufferevent_get_output(s->bev));
    if (in > 0 || out > 0) {
        struct tide__net_fail fail;
        memset(&fail, 0, sizeof fail);
        tide__net_fail_set(&fail, TIDE_EUPGRADE,
                           "upgrade to TLS with %s: done with %zu bytes "
                           "received after the go-ahead and %zu not yet sent",
                           m->f->host, in, out);
        fail_setup(m, &fail);
        return;
    }
    struct bufferevent *bev = detach(m);
    free(s);
    evutil_socket_t fd = bufferevent_getfd(bev);
    /* a socket bufferevent forgets its socket without closing it, so the
     * free below leaves it open for the handshake */
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    bufferevent_setfd(bev, -1);
    bufferevent_free(bev);
    tide__tls_handshake(m, fd);
}

/* An answer on a token the factory let go: ignored. Outside setup_abort
 * the answer is the token's last use, so it is freed here. */
static bool let_go(struct tide_net_setup *s)
{
    if (s->m)
        return false;
    if (!s->aborting)
        free(s);
    return true;
}

void tide_net_setup_done(struct tide_net_setup *s)
{
    if (!s || let_go(s))
        return;
    if (s->upgrade) {
        upgrade_done(s);
        return;
    }
    struct tide__net_make *m = s->m;
    size_t left = evbuffer_get_length(bufferevent_get_input(s->bev));
    if (left > 0) {
        /* the next borrower would read them as its own answer */
        struct tide__net_fail fail;
        memset(&fail, 0, sizeof fail);
        tide__net_fail_set(&fail, TIDE_ESETUP,
                           "session setup with %s: done with %zu bytes left "
                           "unread",
                           m->f->host, left);
        fail_setup(m, &fail);
        return;
    }
    struct bufferevent *bev = detach(m);
    free(s);
    tide__net_hand_over(bev); /* the setup's callbacks and timeouts go */
    tide__net_make_done(m, bev);
}

void tide_net_setup_failed(struct tide_net_setup *s, int code,
                           const char *message)
{
    if (!s || let_go(s))
        return;
    struct tide__net_make *m = s->m;
    struct tide__net_fail fail;
    memset(&fail, 0, sizeof fail);
    int fallback = s->upgrade ? TIDE_EUPGRADE : TIDE_ESETUP;
    code = code < 0 ? code : fallback;
    tide__net_fail_set(&fail, code, "%s with %s: %s",
                       s->upgrade ? "upgrade to TLS" : "session setup",
                       m->f->host, message ? message : tide_strerror(code));
    fail_setup(m, &fail);
}
