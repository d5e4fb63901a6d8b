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
 * is never peeked for TLS while idle: a ticket would look like data. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>

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
    bufferevent_setcb(bev, on_idle_read, NULL, on_idle_event, c);
    bufferevent_set_timeouts(bev, NULL, NULL);
    bufferevent_setwatermark(bev, EV_READ, 0, 0);
    bufferevent_enable(bev, EV_READ);
    /* bytes left from the loan are unexpected too; decided from the loop,
     * never inside the pool's release */
    if (evbuffer_get_length(bufferevent_get_input(bev)) > 0)
        bufferevent_trigger(bev, EV_READ,
                            BEV_TRIG_IGNORE_WATERMARKS |
                                BEV_TRIG_DEFER_CALLBACKS);
}

/* Non-blocking: whether the connection can be lent. */
static bool usable(struct tide__net_conn *c)
{
    struct tide_tcp_factory *f = c->f;
    struct bufferevent *bev = c->bev;
    if (evbuffer_get_length(bufferevent_get_input(bev)) > 0 &&
        !(f->on_idle_data && f->on_idle_data(bev, f->idle_data_arg)))
        return false;
    evutil_socket_t fd = bufferevent_getfd(bev);
    if (fd < 0)
        return false;
    if (c->tls) {
        SSL *ssl = bufferevent_openssl_get_ssl(bev);
        if (!ssl || !SSL_is_init_finished(ssl) ||
            (SSL_get_shutdown(ssl) &
             (SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN)))
            return false;
    }
    /* An EOF or reset libevent already read leaves the socket reading as
     * closed (peek 0), so the peek below sees it too, even while the event
     * callback that reports it is still queued. */
    int err;
    int peek = tide__net_sock_peek(fd, &err);
    if (peek < 0)
        return false; /* FIN or reset waiting on the socket */
    /* raw bytes: on TLS maybe a ticket, left for OpenSSL; on TCP data that
     * nobody asked for, unless the protocol pushes */
    return peek == 0 || c->tls || f->on_idle_data;
}

bool tide__net_alive(void *resource, void *arg)
{
    struct tide__net_conn *c = tide__net_conn_find(arg, resource);
    return c && usable(c);
}

bool tide__net_reusable(void *resource, void *arg)
{
    struct tide__net_conn *c = tide__net_conn_find(arg, resource);
    /* a request half written would be finished by the next borrower's */
    return c && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0 &&
           usable(c);
}
