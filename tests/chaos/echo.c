#include "echo.h"
#include "listen.h"

#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/err.h>

/* One accepted connection; the server owns it and its bufferevent. */
struct echo_conn {
    struct chaos_echo *e;
    struct bufferevent *bev;
    struct echo_conn *prev, *next;
};

struct chaos_echo {
    struct event_base *base;
    struct evconnlistener *listener;
    SSL_CTX *ctx; /* NULL: plain TCP */
    uint16_t port;
    struct echo_conn *conns;
};

static void conn_free(struct echo_conn *c)
{
    struct chaos_echo *e = c->e;
    if (c->prev)
        c->prev->next = c->next;
    else
        e->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    SSL *ssl = bufferevent_openssl_get_ssl(c->bev);
    if (ssl) /* a peer that went away gets no close_notify */
        SSL_set_quiet_shutdown(ssl, 1);
    bufferevent_free(c->bev); /* closes the socket, frees the SSL */
    free(c);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    (void)arg;
    bufferevent_write_buffer(bev, bufferevent_get_input(bev));
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    if (what & BEV_EVENT_CONNECTED)
        return;
    /* a failed handshake or a reset leaves OpenSSL errors behind; they
     * belong to this connection only */
    while (bufferevent_get_openssl_error(bev))
        ;
    ERR_clear_error();
    conn_free(arg);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *sa, int len, void *arg)
{
    (void)l, (void)sa, (void)len;
    struct chaos_echo *e = arg;
    struct echo_conn *c = calloc(1, sizeof *c);
    if (!c) {
        evutil_closesocket(fd);
        return;
    }
    c->e = e;
    c->bev = chaos_accepted(e->base, fd, e->ctx);
    if (!c->bev) {
        free(c);
        return;
    }
    bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    c->next = e->conns;
    if (e->conns)
        e->conns->prev = c;
    e->conns = c;
}

struct chaos_echo *chaos_echo_new(struct event_base *base, SSL_CTX *ctx)
{
    struct chaos_echo *e = calloc(1, sizeof *e);
    if (!e) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    e->base = base;
    e->ctx = ctx;
    e->listener = chaos_listen(base, on_accept, e, &e->port);
    if (!e->listener) {
        chaos_echo_free(e);
        return NULL;
    }
    return e;
}

void chaos_echo_free(struct chaos_echo *e)
{
    if (!e)
        return;
    while (e->conns)
        conn_free(e->conns);
    if (e->listener)
        evconnlistener_free(e->listener);
    SSL_CTX_free(e->ctx);
    free(e);
}

uint16_t chaos_echo_port(const struct chaos_echo *e)
{
    return e->port;
}

SSL_CTX *chaos_echo_tls_ctx(X509 *cert, EVP_PKEY *key)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx)
        return NULL;
    if (SSL_CTX_use_certificate(ctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey(ctx, key) != 1) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    static const unsigned char sid[] = "tidepool-chaos";
    SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
    return ctx;
}
