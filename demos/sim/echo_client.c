#include "echo_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* One connect in progress. */
struct attempt {
    struct echo_client *client;
    struct tide_make *token;
    struct bufferevent *bev;
    struct attempt *prev;
    struct attempt *next;
};

struct echo_client {
    struct event_base *base;
    struct sockaddr_in addr;
    struct tide_evpool *pool;
    struct attempt *attempts;
};

static void attempt_end(struct attempt *a)
{
    struct echo_client *c = a->client;
    if (a->prev)
        a->prev->next = a->next;
    else
        c->attempts = a->next;
    if (a->next)
        a->next->prev = a->prev;
    free(a);
}

static void on_connect(struct bufferevent *bev, short what, void *arg)
{
    struct attempt *a = arg;
    struct tide_make *token = a->token;
    if (what & BEV_EVENT_CONNECTED) {
        int one = 1;
        setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one,
                   sizeof one);
        bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
        attempt_end(a);
        tide_evpool_made(token, bev);
        return;
    }
    int err = EVUTIL_SOCKET_ERROR();
    attempt_end(a);
    bufferevent_free(bev);
    tide_evpool_unmade(token, TIDE_EMAKE, evutil_socket_error_to_string(err));
}

static void make(struct tide_evpool *pool, struct tide_make *token, void *arg)
{
    (void)pool;
    struct echo_client *c = arg;
    struct attempt *a = calloc(1, sizeof *a);
    struct bufferevent *bev = a ? bufferevent_socket_new(
                                      c->base, -1,
                                      BEV_OPT_CLOSE_ON_FREE |
                                          BEV_OPT_DEFER_CALLBACKS)
                                : NULL;
    if (!bev) {
        free(a);
        tide_evpool_unmade(token, TIDE_ENOMEM, NULL);
        return;
    }
    a->client = c;
    a->token = token;
    a->bev = bev;
    a->next = c->attempts;
    if (c->attempts)
        c->attempts->prev = a;
    c->attempts = a;
    bufferevent_setcb(bev, NULL, NULL, on_connect, a);
    if (bufferevent_socket_connect(bev, (struct sockaddr *)&c->addr,
                                   sizeof c->addr) != 0) {
        /* a local failure (no socket); refusals arrive as events */
        int err = EVUTIL_SOCKET_ERROR();
        attempt_end(a);
        bufferevent_free(bev);
        tide_evpool_unmade(token, TIDE_EMAKE,
                           evutil_socket_error_to_string(err));
    }
}

/* The pool gave up on a connect (timeout or close): stop it and answer. */
static void cancel(struct tide_make *token, void *arg)
{
    struct echo_client *c = arg;
    for (struct attempt *a = c->attempts; a; a = a->next) {
        if (a->token != token)
            continue;
        struct bufferevent *bev = a->bev;
        attempt_end(a);
        bufferevent_free(bev);
        tide_evpool_unmade(token, TIDE_ECANCELLED, "connect cancelled");
        return;
    }
}

static void destroy(void *resource, void *arg)
{
    (void)arg;
    bufferevent_free(resource);
}

/* Before lending: nothing unread, and the socket not closed by the peer. */
static bool alive(void *resource, void *arg)
{
    (void)arg;
    struct bufferevent *bev = resource;
    if (evbuffer_get_length(bufferevent_get_input(bev)) > 0)
        return false;
    char byte;
    ssize_t n = recv(bufferevent_getfd(bev), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* Any byte or event on an idle connection means the server closed it (or
 * is about to): it is lost. */
static void on_idle_read(struct bufferevent *bev, void *arg)
{
    struct echo_client *c = arg;
    tide_evpool_lost(c->pool, bev);
}

static void on_idle_event(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    struct echo_client *c = arg;
    tide_evpool_lost(c->pool, bev);
}

static void watch(struct tide_evpool *pool, void *resource, bool idle,
                  void *arg)
{
    struct echo_client *c = arg;
    c->pool = pool; /* the idle callbacks report losses to it */
    struct bufferevent *bev = resource;
    if (idle) {
        bufferevent_setcb(bev, on_idle_read, NULL, on_idle_event, arg);
        bufferevent_enable(bev, EV_READ);
    } else {
        bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    }
}

struct echo_client *echo_client_new(struct event_base *base, uint16_t port)
{
    struct echo_client *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->base = base;
    c->addr.sin_family = AF_INET;
    c->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->addr.sin_port = htons(port);
    return c;
}

void echo_client_factory(struct echo_client *c, struct tide_factory *out)
{
    *out = (struct tide_factory){
        .make = make,
        .destroy = destroy,
        .cancel = cancel,
        .alive = alive,
        .watch = watch,
        .arg = c,
    };
}

void echo_client_free(struct echo_client *c)
{
    free(c);
}
