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
 * The checks before lending and on release ask the socket nothing while
 * what the process already knows vouches for it (nginx and HAProxy lend on
 * the same knowledge). What libevent read is in the input buffer; for TLS,
 * what OpenSSL read is in its own buffer (SSL_has_pending) or its state (a
 * close_notify received, a fatal error). What reached the socket since
 * libevent last read it is told by the bufferevent's read event, which
 * watches the socket the whole time it reads: a poll that found bytes, a
 * FIN or a reset made it active, and its callback may not have run yet (a
 * callback ahead of it in the same pass asks for the connection); a close
 * libevent did read removed it (a socket bufferevent disables reading on
 * EOF or an error, an OpenSSL one stops reading). So while that event is
 * added and not active, nothing came since the last read that the loop has
 * seen, and the socket holds nothing anyone could know of without asking
 * it. Only when it says otherwise (stirred), or reading was off, does a
 * check look at the socket: a peek for TCP, SSL_peek for TLS, which costs
 * a call only on a connection where something did arrive.
 *
 * What no check can see (bytes or a close reaching the socket after the
 * last poll) meets the borrower as the first thing it reads: a close before
 * any byte of its exchange is answered is the stale loan the borrower
 * reports (tide_evpool_stale), and then every connection idle at that
 * moment is looked at once before its next loan (stale_epoch): the peer
 * may have closed them the same way. A borrower that releases must have
 * read its whole answer, as tls.h says; the input buffer, OpenSSL's buffer
 * and reading switched off are what it can leave behind that a check
 * sees.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/bufferevent_struct.h>
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

/* Whether the bufferevent's read event waits on the socket with nothing to
 * report: added (reading on, not held by a watermark, not stopped by a
 * close libevent read) and not made active by a poll whose callback is
 * still to run. libevent keeps these two facts in the event's flags
 * (<event2/event_struct.h>, <event2/bufferevent_struct.h>) and offers no
 * call that tells an active event from an added one: event_pending says
 * EV_READ for both. */
static bool reading_quiet(struct bufferevent *bev)
{
    short flags = bev->ev_read.ev_evcallback.evcb_flags;
    return (flags & EVLIST_INSERTED) &&
           !(flags & (EVLIST_ACTIVE | EVLIST_ACTIVE_LATER));
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
        /* read before hand_over enables reading again, which would hide
         * that libevent stopped it on a close */
        c->stirred = !reading_quiet(bev);
        c->idle = false;
        c->pool = NULL;
        tide__net_hand_over(bev);
        return;
    }
    c->idle = true;
    c->pool = pool;
    c->stirred = false;
    c->epoch = f->stale_epoch;
    bufferevent_setcb(bev, on_idle_read, NULL, on_idle_event, c);
    tide__net_untime(bev);
    tide__net_unmark(bev, EV_READ);
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
 * asked: only what the process holds (the input buffer, OpenSSL's buffer
 * and state) is looked at. */
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
        f->stats.looks++;
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
     * callback that reports it is still queued (libevent disabled reading
     * then, so the check looks). */
    if (!look)
        return USABLE;
    f->stats.looks++;
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
    struct tide_tcp_factory *f = arg;
    struct tide__net_conn *c = tide__net_conn_find(f, resource);
    if (!c || c->closed)
        return false;
    /* Looked at: a connection never lent (nothing read from it vouches
     * for its socket: a server that speaks first; this is its make's
     * last step, not the lend path), one whose watch was stirred, and one
     * idle when a loan of this factory's ended stale. */
    bool look = !c->served || c->stirred || c->epoch != f->stale_epoch;
    c->served = true;
    c->stirred = false;
    c->epoch = f->stale_epoch;
    return usable(c, look) == USABLE;
}

bool tide__net_reusable(void *resource, void *arg)
{
    struct tide__net_conn *c = tide__net_conn_find(arg, resource);
    /* a request half written would be finished by the next borrower's */
    if (!c || evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)
        return false;
    c->served = true;
    /* reading left on and quiet: everything that reached the socket before
     * the last poll was read, and the borrower read its answer whole (or
     * left the rest where the checks see it); otherwise (reading off, a
     * watermark holding it, a poll's news not read yet) the socket is
     * asked */
    switch (usable(c, !reading_quiet(c->bev))) {
    case USABLE:
        return true;
    case CLOSED:
        /* The exchange was whole and the server then ended the connection
         * (an HTTP/1.0 answer, a keep-alive limit, an idle timeout): the
         * loan served, and refusing it here would count a failure of the
         * backend's. It goes back marked, lent to nobody, and the watch
         * reports it lost from the loop. */
        c->closed = true;
        return true;
    case DIRTY:
        return false;
    }
    return false;
}

void tide__net_stale(void *resource, void *arg)
{
    (void)resource;
    struct tide_tcp_factory *f = arg;
    f->stale_epoch++;
}
