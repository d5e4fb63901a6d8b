/* Idle connections: watched while they sit in the pool, checked before
 * they are lent and when they come back.
 *
 * The watch is the bufferevent itself, reading, with the factory's own
 * callbacks (as nginx's upstream keepalive installs a read handler on every
 * cached connection). A read callback means application bytes arrived while
 * nobody asked: unexpected, so the connection is lost unless on_idle_data
 * says the protocol pushes data. An event callback (EOF, reset, error) means
 * the peer is gone. Either way tide_evpool_lost removes and destroys it at
 * once, so no one is handed it. For TLS, reading is also what lets OpenSSL
 * consume post-handshake records (TLS 1.3 session tickets, key updates): they
 * never reach the read callback, so they never count as bytes. The raw socket
 * is never peeked for TLS: a ticket would look like data.
 *
 * The checks before lending and on release cannot wait for the loop: under
 * load a released connection goes to the next waiter before the watch ever
 * reads. So they look everywhere unread application data can sit: the
 * bufferevent's input buffer, the socket, and for TLS OpenSSL's own buffer
 * (a borrower reading through a high watermark leaves the rest of a record
 * there, decrypted, and libevent reads it only when the socket next becomes
 * readable: under the next borrower's reply).
 *
 * The check before lending looks at the socket only when the loop may have
 * polled since the release check found the connection clean: see `rounds`
 * below. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>

#include "net_internal.h"

static void lose(struct tide__net_conn *c, bool data)
{
    struct tide_tcp_factory *f = c->f;
    f->stats.lost++;
    if (data)
        f->stats.lost_data++;
    /* the pool unwatches and destroys it inside this call: c is gone */
    (void)tide_evpool_lost(c->pool, c->bev);
}

static void on_idle_read(struct bufferevent *bev, void *arg)
{
    struct tide__net_conn *c = arg;
    struct tide_tcp_factory *f = c->f;
    if (!c->idle)
        return;
    if (f->on_idle_data && f->on_idle_data(bev, f->idle_data_arg))
        return;
    lose(c, true);
}

static void on_idle_event(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    struct tide__net_conn *c = arg;
    if (!c->idle)
        return;
    if (c->tls)
        (void)tide__net_ssl_error(bev); /* consumed: nobody will read them */
    lose(c, false);
}

void tide__net_watch(struct tide_evpool *pool, void *resource, bool idle,
                     void *arg)
{
    struct tide_tcp_factory *f = arg;
    struct bufferevent *bev = resource;
    struct tide__net_conn *c = tide__net_conn_find(f, bev);
    if (!c)
        return;
    if (!idle) {
        c->idle = false;
        c->pool = NULL;
        tide__net_hand_over(bev);
        return;
    }
    c->idle = true;
    c->pool = pool;
    /* the round's answer stands only for the watch that follows the
     * release check: not after a health check or anything else that had
     * the connection out of the pool since */
    c->checked = c->check_fresh;
    c->check_fresh = false;
    bufferevent_setcb(bev, on_idle_read, NULL, on_idle_event, c);
    bufferevent_set_timeouts(bev, NULL, NULL);
    bufferevent_setwatermark(bev, EV_READ, 0, 0);
    bufferevent_enable(bev, EV_READ);
    /* found closed on release: lost, from the loop (never inside the
     * pool's release), whether or not the socket wakes the watch again */
    if (c->closed)
        bufferevent_trigger_event(bev, BEV_EVENT_EOF, BEV_TRIG_DEFER_CALLBACKS);
    /* bytes left from the loan are unexpected too; decided from the loop,
     * never inside the pool's release */
    else if (evbuffer_get_length(bufferevent_get_input(bev)) > 0)
        bufferevent_trigger(bev, EV_READ,
                            BEV_TRIG_IGNORE_WATERMARKS |
                                BEV_TRIG_DEFER_CALLBACKS);
}

/* What an idle TLS connection holds, once OpenSSL has read what the socket
 * has for it. */
enum tls_state {
    TLS_QUIET,  /* nothing: post-handshake records, if any, were consumed */
    TLS_DATA,   /* application data, whole or part of a record */
    TLS_CLOSED, /* the peer ended it: close_notify, a FIN, a reset */
    TLS_DEAD,   /* failed otherwise: a bad record, an alert */
};

/* Drives the record layer without taking application data: SSL_peek of one
 * byte on the bufferevent's SSL, whose BIO is the non-blocking socket.
 * OpenSSL consumes session tickets and key updates on the way (a key update
 * asks for ours: OpenSSL sends it before the next write) and stops at the
 * first application byte, which stays for whoever reads next. libevent
 * keeps no state about the socket that this read could break: its read
 * event is level-triggered and its flags (read blocked on write) change only
 * in its own calls. */
static enum tls_state tls_probe(SSL *ssl)
{
    char byte;
    /* SSL_get_error reads the thread's error queue: it must start empty,
     * and is left empty, so no stale error reaches libevent's next read or
     * the application */
    ERR_clear_error();
    int n = SSL_peek(ssl, &byte, 1);
    int err = n > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl, n);
    unsigned long e = err == SSL_ERROR_SSL ? ERR_peek_error() : 0;
    ERR_clear_error();
    if (n > 0)
        return TLS_DATA;
    if (err == SSL_ERROR_ZERO_RETURN || err == SSL_ERROR_SYSCALL ||
        (err == SSL_ERROR_SSL &&
         ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING))
        /* close_notify, a reset, a FIN without close_notify */
        return TLS_CLOSED;
    if (err != SSL_ERROR_WANT_READ)
        /* a bad record or an alert; WANT_WRITE: a read that needs a write
         * the socket will not take now, on a connection nobody uses */
        return TLS_DEAD;
    /* no whole record of data; bytes buffered are part of one on its way */
    return SSL_has_pending(ssl) ? TLS_DATA : TLS_QUIET;
}

/* A protocol that pushes data (on_idle_data) sees it in the input buffer,
 * as the callback promises: the records OpenSSL holds decrypted are moved
 * there. Returns false when reading failed. */
static bool tls_pull(struct bufferevent *bev, SSL *ssl)
{
    char chunk[4096];
    struct evbuffer *in = bufferevent_get_input(bev);
    bool ok = true;
    ERR_clear_error();
    int n;
    while (ok && SSL_pending(ssl) > 0 &&
           (n = SSL_read(ssl, chunk, sizeof chunk)) > 0)
        ok = evbuffer_add(in, chunk, (size_t)n) == 0;
    ERR_clear_error();
    return ok && SSL_pending(ssl) == 0;
}

static bool idle_data_kept(struct tide_tcp_factory *f, struct bufferevent *bev)
{
    return evbuffer_get_length(bufferevent_get_input(bev)) == 0 ||
           (f->on_idle_data && f->on_idle_data(bev, f->idle_data_arg));
}

/* ---- rounds ----
 *
 * The process learns that a byte, a FIN or a reset reached an idle socket
 * in one of two ways only: by asking the socket (a peek, SSL_peek) or from
 * the loop's poll, which wakes the watch. A connection the release check
 * found clean and that is lent again before the loop polls is lent on what
 * that check saw. That is what a lend-time peek gives too, for the moment
 * it is made and no later: a byte landing between the check and the loan
 * is no different from one landing just after a lend-time peek, which no
 * check can see (the borrower's protocol copes with both, as an HTTP client
 * retries a request that meets a closing connection). Under load a
 * connection goes back and out again in the same round, so that loan skips
 * the socket (a recv a request on TCP), and keeps every look that costs no
 * call: the input buffer, and for TLS the session's state and the records
 * OpenSSL holds.
 *
 * For TLS as for TCP: the check's SSL_peek read what the socket had and
 * consumed the post-handshake records in it; until a poll reports the
 * socket, nobody reads the session again (the watch's read runs from the
 * poll's result), so OpenSSL's state and buffer are as the check left them.
 *
 * The round is marked by the factory's `round` event, not by libevent's
 * cached time alone: a base without EVENT_BASE_FLAG_PRECISE_TIMER caches a
 * CLOCK_MONOTONIC_COARSE reading (1 to 4 ms ticks), which many polls share.
 * The event is activated by a clean release check at the highest priority;
 * libevent runs its queues empty, highest priority first, before it polls
 * again, so the event runs after the callbacks already queued and before
 * any callback of the next poll, and counts the round as ended. A round cut
 * short (event_base_loopbreak or loopcontinue, a base with dispatch limits)
 * can leave callbacks queued ahead of it that run after the next poll: the
 * cached time, which every poll refreshes, must also be unchanged, so only
 * such a callback within the same clock tick is taken for the same round,
 * and outside the loop (where the cached time is read live) the socket is
 * always asked. */

static void on_round_end(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide_tcp_factory *f = arg;
    f->round_open = false;
    f->rounds++;
}

/* c was found clean by its release check: noted with the round. */
static void note_checked(struct tide__net_conn *c)
{
    struct tide_tcp_factory *f = c->f;
    if (!f->round_assigned) {
        event_assign(&f->round, f->base, -1, 0, on_round_end, f);
        (void)event_priority_set(&f->round, 0);
        f->round_assigned = true;
    }
    if (!f->round_open) {
        event_active(&f->round, EV_TIMEOUT, 0);
        f->round_open = true;
    }
    c->check_fresh = true;
    c->checked_round = f->rounds;
    event_base_gettimeofday_cached(f->base, &c->checked_at);
}

/* Whether the loop has not polled since c's release check found it clean. */
static bool same_round(const struct tide__net_conn *c)
{
    const struct tide_tcp_factory *f = c->f;
    if (!c->checked || c->checked_round != f->rounds || !f->round_open)
        return false;
    struct timeval now;
    event_base_gettimeofday_cached(f->base, &now);
    return now.tv_sec == c->checked_at.tv_sec &&
           now.tv_usec == c->checked_at.tv_usec;
}

void tide__net_rounds_dispose(struct tide_tcp_factory *f)
{
    if (!f->round_assigned)
        return;
    event_del(&f->round);
    event_debug_unassign(&f->round);
    f->round_assigned = false;
    f->round_open = false;
}

/* What a check finds on a connection. */
enum verdict {
    USABLE, /* nothing unread, the peer still there: it can be lent */
    CLOSED, /* nothing unread, but the peer ended the connection (FIN,
               close_notify, reset): lent to nobody, and no failure of the
               backend's when it comes back from a loan */
    DIRTY,  /* bytes nobody read, or a TLS failure: not to be lent either,
               and a release that left it so is the loan's failure */
};

/* Non-blocking: what a check finds. With `look` false the socket is not
 * asked (the release check's answer stands: see rounds). */
static enum verdict usable(struct tide__net_conn *c, bool look)
{
    struct tide_tcp_factory *f = c->f;
    struct bufferevent *bev = c->bev;
    if (!idle_data_kept(f, bev))
        return DIRTY;
    evutil_socket_t fd = bufferevent_getfd(bev);
    if (fd < 0)
        return CLOSED;
    if (c->tls) {
        SSL *ssl = bufferevent_openssl_get_ssl(bev);
        if (!ssl || !SSL_is_init_finished(ssl))
            return DIRTY;
        /* the borrower's reads may have met the close_notify already;
         * what came before it was read, or the input buffer says so */
        if (SSL_get_shutdown(ssl) & (SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN))
            return SSL_has_pending(ssl) ? DIRTY : CLOSED;
        if (!look && !SSL_has_pending(ssl))
            return USABLE;
        switch (tls_probe(ssl)) {
        case TLS_QUIET:
            return USABLE;
        case TLS_CLOSED:
            return CLOSED;
        case TLS_DEAD:
            return DIRTY;
        case TLS_DATA:
            /* a whole record is shown to on_idle_data; part of one is
             * kept like raw bytes on TCP: the rest comes through the
             * socket, and libevent reads it */
            return f->on_idle_data && tls_pull(bev, ssl) &&
                           idle_data_kept(f, bev)
                       ? USABLE
                       : DIRTY;
        }
        return DIRTY;
    }
    /* An EOF or reset libevent already read leaves the socket reading as
     * closed (peek 0), so the peek below sees it too, even while the event
     * callback that reports it is still queued. */
    if (!look)
        return USABLE;
    int err;
    int peek = tide__net_sock_peek(fd, &err);
    if (peek < 0)
        return CLOSED; /* FIN or reset waiting on the socket */
    /* raw bytes: data that nobody asked for, unless the protocol pushes
     * (bytes before a FIN show first: they are unread, so dirty) */
    return peek == 0 || f->on_idle_data ? USABLE : DIRTY;
}

bool tide__net_alive(void *resource, void *arg)
{
    struct tide__net_conn *c = tide__net_conn_find(arg, resource);
    if (!c)
        return false;
    /* alive() on a never-lent connection must look at the socket: no
     * release check or idle watch has, and a server that speaks first or
     * closes at once has its greeting or its FIN there already, before
     * the first loan (the pool asks as the make is answered). A make is
     * not the lend path, so this costs a busy pool nothing. */
    if (c->fresh) {
        c->fresh = false;
        return usable(c, true) == USABLE;
    }
    bool look = !same_round(c);
    c->checked = false; /* lent or destroyed now: a check for each loan */
    return usable(c, look) == USABLE;
}

bool tide__net_reusable(void *resource, void *arg)
{
    struct tide__net_conn *c = tide__net_conn_find(arg, resource);
    /* a request half written would be finished by the next borrower's */
    if (!c || evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)
        return false;
    switch (usable(c, true)) {
    case USABLE:
        note_checked(c);
        return true;
    case CLOSED:
        /* The exchange was whole and the server then ended the connection
         * (an HTTP/1.0 answer, a keep-alive limit, an idle timeout): the
         * loan served, and refusing it here would count a failure of the
         * backend's. It goes back unnoted, so the check before any lending
         * asks the socket again, and the watch reports it lost from the
         * loop. */
        c->closed = true;
        return true;
    case DIRTY:
        return false;
    }
    return false;
}
