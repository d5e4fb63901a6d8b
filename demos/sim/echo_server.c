#include "echo_server.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

struct session {
    struct echo_server *server;
    struct bufferevent *bev;
    struct event *reply; /* answers the pending line after the service time */
    struct session *prev;
    struct session *next;
};

struct echo_server {
    struct event_base *base;
    struct evconnlistener *listener;
    struct sockaddr_in addr;
    struct timeval service;
    struct session *sessions;
};

static void session_free(struct session *s)
{
    struct echo_server *srv = s->server;
    if (s->prev)
        s->prev->next = s->next;
    else
        srv->sessions = s->next;
    if (s->next)
        s->next->prev = s->prev;
    event_free(s->reply);
    bufferevent_free(s->bev);
    free(s);
}

/* Echoes every complete line received so far. */
static void on_reply(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct session *s = arg;
    struct evbuffer *in = bufferevent_get_input(s->bev);
    size_t n;
    char *line;
    while ((line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF))) {
        line[n] = '\n';
        bufferevent_write(s->bev, line, n + 1);
        free(line);
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct session *s = arg;
    if (!evtimer_pending(s->reply, NULL))
        evtimer_add(s->reply, &s->server->service);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        session_free(arg);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *sa, int len, void *arg)
{
    (void)l;
    (void)sa;
    (void)len;
    struct echo_server *srv = arg;
    struct session *s = calloc(1, sizeof *s);
    if (!s) {
        evutil_closesocket(fd);
        return;
    }
    s->server = srv;
    s->bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
    s->reply = evtimer_new(srv->base, on_reply, s);
    s->next = srv->sessions;
    if (srv->sessions)
        srv->sessions->prev = s;
    srv->sessions = s;
    bufferevent_setcb(s->bev, on_read, NULL, on_event, s);
    bufferevent_enable(s->bev, EV_READ | EV_WRITE);
}

bool echo_server_up(struct echo_server *srv)
{
    if (srv->listener)
        return true;
    srv->listener = evconnlistener_new_bind(
        srv->base, on_accept, srv,
        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 128,
        (struct sockaddr *)&srv->addr, sizeof srv->addr);
    if (!srv->listener)
        return false;
    struct sockaddr_in bound;
    socklen_t len = sizeof bound;
    getsockname(evconnlistener_get_fd(srv->listener), (struct sockaddr *)&bound,
                &len);
    srv->addr.sin_port = bound.sin_port; /* keep the port for the next up */
    return true;
}

void echo_server_down(struct echo_server *srv)
{
    if (srv->listener) {
        evconnlistener_free(srv->listener);
        srv->listener = NULL;
    }
    while (srv->sessions)
        session_free(srv->sessions);
}

struct echo_server *echo_server_new(struct event_base *base, int service_ms)
{
    struct echo_server *srv = calloc(1, sizeof *srv);
    if (!srv)
        return NULL;
    srv->base = base;
    srv->addr.sin_family = AF_INET;
    srv->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    srv->service.tv_sec = service_ms / 1000;
    srv->service.tv_usec = (service_ms % 1000) * 1000;
    if (!echo_server_up(srv)) {
        free(srv);
        return NULL;
    }
    return srv;
}

uint16_t echo_server_port(const struct echo_server *srv)
{
    return ntohs(srv->addr.sin_port);
}

void echo_server_free(struct echo_server *srv)
{
    echo_server_down(srv);
    free(srv);
}
