#include "servers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>

static int on_servername(SSL *ssl, int *alert, void *arg)
{
    (void)alert;
    struct test_server *s = arg;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    snprintf(s->sni, sizeof s->sni, "%s", name ? name : "");
    return SSL_TLSEXT_ERR_OK;
}

static int on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    struct test_server *s = arg;
    unsigned char *chosen;
    if (!s->alpn_offer ||
        SSL_select_next_proto(&chosen, outlen,
                              (const unsigned char *)s->alpn_offer,
                              (unsigned int)s->alpn_offer_len, in,
                              inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = chosen;
    snprintf(s->alpn, sizeof s->alpn, "%.*s", (int)*outlen, chosen);
    return SSL_TLSEXT_ERR_OK;
}

SSL_CTX *server_ctx(X509 *cert, EVP_PKEY *key, int min_version, int max_version,
                    X509 *client_ca)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx)
        return NULL;
    if (SSL_CTX_use_certificate(ctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey(ctx, key) != 1 ||
        (min_version && SSL_CTX_set_min_proto_version(ctx, min_version) != 1) ||
        (max_version && SSL_CTX_set_max_proto_version(ctx, max_version) != 1)) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    static const unsigned char sid[] = "tidepool-test";
    SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
    if (client_ca) {
        X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), client_ca);
        SSL_CTX_set_verify(
            ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    return ctx;
}

static void conn_free(struct server_conn *c)
{
    struct test_server *s = c->s;
    struct server_conn **at = &s->conns;
    while (*at != c)
        at = &(*at)->next;
    *at = c->next;
    if (c->bev)
        bufferevent_free(c->bev); /* closes the socket, frees the SSL */
    else if (c->raw >= 0)
        close(c->raw);
    free(c);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct server_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (c->s->on_request)
        c->s->on_request(c, in, c->s->request_arg);
    else if (c->s->echo)
        bufferevent_write_buffer(bev, in);
    else
        evbuffer_drain(in, evbuffer_get_length(in));
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct server_conn *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        SSL *ssl = bufferevent_openssl_get_ssl(bev);
        c->handshaken = true;
        c->s->handshakes++;
        if (ssl && SSL_session_reused(ssl)) {
            c->resumed = true;
            c->s->resumptions++;
        }
        return;
    }
    while (bufferevent_get_openssl_error(bev))
        ;
    if (what & BEV_EVENT_EOF) {
        c->peer_closed = true;
        c->s->closed_cleanly++;
    } else
        c->peer_error = true;
    c->s->closed_by_peer++;
    conn_free(c);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *sa, int len, void *arg)
{
    (void)l;
    (void)sa;
    (void)len;
    struct test_server *s = arg;
    /* as real TLS servers do: without it the second TLS 1.3 session ticket
     * waits for a delayed ACK and a fresh connection stalls ~40 ms */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct server_conn *c = calloc(1, sizeof *c);
    c->s = s;
    c->raw = -1;
    c->next = s->conns;
    s->conns = c;
    s->accepted++;
    if (s->close_at_once) {
        /* nothing read, nothing written: the client sees a FIN at once */
        close(fd);
        c->raw = -1;
        conn_free(c);
        return;
    }
    if (s->raw) {
        c->raw = fd;
        return;
    }
    if (s->ctx) {
        SSL *ssl = SSL_new(s->ctx);
        c->bev = bufferevent_openssl_socket_new(
            s->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
            BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    } else {
        c->bev = bufferevent_socket_new(
            s->base, fd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
        c->handshaken = true;
    }
    bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    /* for TLS libevent holds it until the handshake is done */
    if (s->greeting)
        bufferevent_write(c->bev, s->greeting, strlen(s->greeting));
}

static bool loopback(int family, uint16_t port, struct sockaddr_storage *ss,
                     socklen_t *len)
{
    memset(ss, 0, sizeof *ss);
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons(port);
        *len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->sin_port = htons(port);
        *len = sizeof *a;
    }
    return true;
}

static void server_init(struct test_server *s, struct event_base *base,
                        int family, SSL_CTX *ctx)
{
    memset(s, 0, sizeof *s);
    s->echo = true;
    s->base = base;
    s->family = family;
    s->backlog_fd = -1;
    s->ctx = ctx;
    if (ctx) {
        SSL_CTX_set_tlsext_servername_callback(ctx, on_servername);
        SSL_CTX_set_tlsext_servername_arg(ctx, s);
        SSL_CTX_set_alpn_select_cb(ctx, on_alpn, s);
    }
}

static bool listen_on(struct test_server *s, const struct sockaddr *sa,
                      socklen_t len)
{
    s->listener = evconnlistener_new_bind(
        s->base, on_accept, s,
        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 16,
        sa, (int)len);
    return s->listener != NULL;
}

bool server_start_unix(struct test_server *s, struct event_base *base,
                       const char *path, SSL_CTX *ctx)
{
    server_init(s, base, AF_UNIX, ctx);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        return false;
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    snprintf(s->path, sizeof s->path, "%s", path);
    return listen_on(s, (struct sockaddr *)&a, sizeof a);
}

bool server_start(struct test_server *s, struct event_base *base, int family,
                  uint16_t port, SSL_CTX *ctx)
{
    server_init(s, base, family, ctx);
    struct sockaddr_storage ss;
    socklen_t len;
    loopback(family, port, &ss, &len);
    if (!listen_on(s, (struct sockaddr *)&ss, len))
        return false;
    len = sizeof ss;
    getsockname(evconnlistener_get_fd(s->listener), (struct sockaddr *)&ss,
                &len);
    s->port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                       : ((struct sockaddr_in *)&ss)->sin_port);
    return true;
}

bool server_start_full_backlog(struct test_server *s, int family)
{
    memset(s, 0, sizeof *s);
    s->family = family;
    s->backlog_fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_storage ss;
    socklen_t len;
    loopback(family, 0, &ss, &len);
    if (s->backlog_fd < 0 || bind(s->backlog_fd, (struct sockaddr *)&ss, len) ||
        listen(s->backlog_fd, 0) != 0)
        return false;
    len = sizeof ss;
    getsockname(s->backlog_fd, (struct sockaddr *)&ss, &len);
    s->port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                       : ((struct sockaddr_in *)&ss)->sin_port);
    /* fill the accept queue: connect until one hangs */
    loopback(family, s->port, &ss, &len);
    for (int i = 0; i < 8; i++) {
        int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (connect(fd, (struct sockaddr *)&ss, len) != 0 &&
            errno != EINPROGRESS) {
            close(fd);
            return false;
        }
        struct server_conn *c = calloc(1, sizeof *c);
        c->s = s;
        c->raw = fd;
        c->next = s->conns;
        s->conns = c;
        fd_set w;
        FD_ZERO(&w);
        FD_SET(fd, &w);
        struct timeval tv = {0, 100000};
        if (select(fd + 1, NULL, &w, NULL, &tv) == 0)
            return true; /* this one hangs: the queue is full */
    }
    return false;
}

void server_stop(struct test_server *s)
{
    while (s->conns)
        conn_free(s->conns);
    if (s->listener)
        evconnlistener_free(s->listener);
    s->listener = NULL;
    if (s->backlog_fd >= 0)
        close(s->backlog_fd);
    s->backlog_fd = -1;
    if (s->ctx)
        SSL_CTX_free(s->ctx);
    s->ctx = NULL;
    if (s->path[0])
        unlink(s->path);
    s->path[0] = '\0';
}

void server_close_all(struct test_server *s)
{
    while (s->conns) {
        struct server_conn *c = s->conns;
        SSL *ssl = c->bev ? bufferevent_openssl_get_ssl(c->bev) : NULL;
        if (ssl && SSL_is_init_finished(ssl))
            SSL_shutdown(ssl);
        conn_free(c);
    }
}

void server_reset_all(struct test_server *s)
{
    while (s->conns) {
        struct server_conn *c = s->conns;
        evutil_socket_t fd = c->bev ? bufferevent_getfd(c->bev) : c->raw;
        struct linger l = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        SSL *ssl = c->bev ? bufferevent_openssl_get_ssl(c->bev) : NULL;
        if (ssl) /* no close_notify: the socket just dies */
            SSL_set_quiet_shutdown(ssl, 1);
        conn_free(c);
    }
}

void server_send_all(struct test_server *s, const char *text)
{
    for (struct server_conn *c = s->conns; c; c = c->next)
        if (c->bev)
            bufferevent_write(c->bev, text, strlen(text));
}

/* Sends what OpenSSL has queued (a ticket, a key update) right now. */
static void flush_handshake(SSL *ssl)
{
    if (SSL_do_handshake(ssl) != 1)
        ERR_clear_error();
}

void server_ticket_all(struct test_server *s)
{
    for (struct server_conn *c = s->conns; c; c = c->next) {
        SSL *ssl = c->bev ? bufferevent_openssl_get_ssl(c->bev) : NULL;
        if (ssl && SSL_new_session_ticket(ssl) == 1)
            flush_handshake(ssl);
    }
}

void server_key_update_all(struct test_server *s)
{
    for (struct server_conn *c = s->conns; c; c = c->next) {
        SSL *ssl = c->bev ? bufferevent_openssl_get_ssl(c->bev) : NULL;
        if (ssl && SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED) == 1)
            flush_handshake(ssl);
    }
}

int server_live(const struct test_server *s)
{
    int n = 0;
    for (const struct server_conn *c = s->conns; c; c = c->next)
        n++;
    return n;
}
