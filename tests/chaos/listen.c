#include "listen.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

struct evconnlistener *chaos_listen(struct event_base *base,
                                    evconnlistener_cb cb, void *arg,
                                    uint16_t *port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct evconnlistener *l = evconnlistener_new_bind(
        base, cb, arg,
        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 128,
        (struct sockaddr *)&a, sizeof a);
    if (!l)
        return NULL;
    socklen_t len = sizeof a;
    if (getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&a, &len)) {
        evconnlistener_free(l);
        return NULL;
    }
    *port = ntohs(a.sin_port);
    return l;
}

struct bufferevent *chaos_accepted(struct event_base *base, evutil_socket_t fd,
                                   SSL_CTX *ctx)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const int opts = BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS;
    struct bufferevent *bev = NULL;
    if (ctx) {
        SSL *ssl = SSL_new(ctx);
        if (ssl) {
            /* libevent frees the SSL on some of its error paths and not
             * on others: with a reference of our own, ours is never the
             * last (as tls/tls.c does) */
            SSL_up_ref(ssl);
            bev = bufferevent_openssl_socket_new(
                base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, opts);
            SSL_free(ssl);
        }
    } else {
        bev = bufferevent_socket_new(base, fd, opts);
    }
    if (!bev)
        evutil_closesocket(fd);
    return bev;
}
