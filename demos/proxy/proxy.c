/* The proxy: its listener (accepting paused for a moment when accept()
 * fails for want of descriptors), its clients (client.c), drain and free.
 * See proxy.h, and proxy_internal.h for the parts. */
#include "proxy_internal.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

/* The listener hands sockets over non-blocking and close-on-exec. */
static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg)
{
    (void)l;
    (void)salen;
    struct px *px = arg;
    struct client *c = calloc(1, sizeof *c);
    if (!c) {
        evutil_closesocket(fd);
        return;
    }
    c->px = px;
    c->fd = fd;
    /* a response relayed from an HTTP/2 stream may go in more than one
     * send (its frames read apart): under Nagle the second waited for the
     * client's delayed ACK, 40 ms */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
    c->url = NO_VALUE;
    c->reason = NO_VALUE;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, c->peer,
                  sizeof c->peer);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, c->peer,
                  sizeof c->peer);
    http_parser_init(&c->req_parser, HTTP_REQUEST);
    c->req_parser.data = c;
    event_assign(&c->rd, px->base, fd, EV_READ | EV_PERSIST,
                 px__on_client_readable, c);
    event_assign(&c->wr, px->base, fd, EV_WRITE | EV_PERSIST,
                 px__on_client_writable, c);
    event_assign(&c->reap, px->base, -1, 0, px__on_reap, c);
    event_assign(&c->timer, px->base, -1, 0, px__on_client_timeout, c);
    if (event_add(&c->rd, NULL) != 0 ||
        event_add(&c->timer, &px->client_tv) != 0) {
        event_del(&c->rd);
        evutil_closesocket(fd);
        free(c);
        return;
    }
    c->next = px->clients;
    if (px->clients)
        px->clients->prev = c;
    px->clients = c;
    px->stats.clients++;
}

/* How long accepting stops after accept() failed. At the descriptor limit
 * (EMFILE, ENFILE), the connection it could not take stays in the
 * backlog, so the listener is readable again at once and each try fails
 * again: the proxy spun at 100% CPU until a descriptor freed, starving
 * the clients it has. nginx stops for its accept_mutex_delay (500 ms), a
 * span chosen for passing its accept lock between workers; a tenth of a
 * second costs ten failed accepts a second while the limit lasts, and
 * keeps a client waiting in the backlog at most that long after a
 * descriptor frees. */
#define ACCEPT_PAUSE_MS 100

/* accept() failed otherwise than for a connection aborted or a signal
 * (those libevent retries itself): for want of descriptors, or of memory
 * (ENOBUFS, ENOMEM), which a retry at once does not mend either. */
static void on_accept_error(struct evconnlistener *l, void *arg)
{
    struct px *px = arg;
    px->stats.accept_pauses++;
    evconnlistener_disable(l);
    struct timeval pause = {.tv_usec = ACCEPT_PAUSE_MS * 1000};
    event_add(&px->accept_resume, &pause);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct px *px = arg;
    if (px->listener)
        evconnlistener_enable(px->listener);
}

static void on_drained(evutil_socket_t fd, short what, void *arg);

/* A span of ns as libevent takes it, worked out once for every use. */
static struct timeval timeval_of(int64_t ns)
{
    return (struct timeval){.tv_sec = (time_t)(ns / TIDE_SEC(1)),
                            .tv_usec = (suseconds_t)(ns % TIDE_SEC(1) / 1000)};
}

int px_new(struct event_base *base, struct tide_group *group,
           const struct px_options *o, struct px **out)
{
    struct px_options opt = o ? *o : (struct px_options){0};
    struct px *px = calloc(1, sizeof *px);
    if (!px)
        return -1;
    px->base = base;
    px->group = group;
    px->acquire_timeout =
        opt.acquire_timeout ? opt.acquire_timeout : TIDE_SEC(5);
    px->response_tv =
        timeval_of(opt.response_timeout ? opt.response_timeout : TIDE_SEC(30));
    px->max_body = opt.max_body ? opt.max_body : (size_t)64 << 20;
    px->retry_503 = opt.retry_503;
    px->client_tv =
        timeval_of(opt.client_timeout ? opt.client_timeout : TIDE_SEC(60));
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)opt.listen_port)};
    if (inet_pton(AF_INET, opt.listen_host ? opt.listen_host : "127.0.0.1",
                  &sin.sin_addr) != 1) {
        free(px);
        errno = EINVAL; /* not an IPv4 literal */
        return -1;
    }
    px->listener = evconnlistener_new_bind(
        base, on_accept, px, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
        (struct sockaddr *)&sin, sizeof sin);
    if (!px->listener) {
        int e = errno; /* bind's or listen's, for the caller */
        free(px);
        errno = e;
        return -1;
    }
    struct sockaddr_in bound;
    socklen_t bl = sizeof bound;
    getsockname(evconnlistener_get_fd(px->listener), (struct sockaddr *)&bound,
                &bl);
    px->port = ntohs(bound.sin_port);
    event_assign(&px->drained, base, -1, 0, on_drained, px);
    event_assign(&px->accept_resume, base, -1, 0, on_accept_resume, px);
    evconnlistener_set_error_cb(px->listener, on_accept_error);
    *out = px;
    return 0;
}

int px_port(const struct px *p)
{
    return p->port;
}

static void on_drained(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct px *p = arg;
    if (p->on_drained && !p->clients)
        p->on_drained(p, p->drained_arg);
}

void px_drain(struct px *p, px_drained_cb done, void *arg)
{
    p->on_drained = done;
    p->drained_arg = arg;
    if (!p->draining) {
        p->draining = true;
        /* the port is let go at once: a restarted proxy can take it */
        evconnlistener_free(p->listener);
        p->listener = NULL;
        event_del(&p->accept_resume);
        for (struct client *c = p->clients, *next; c; c = next) {
            next = c->next;
            c->req_keep_alive = false; /* closed after this exchange */
            /* between requests: nothing in flight to wait for */
            if (c->state == C_READING && !c->req_begun &&
                px_buf_size(&c->in) == 0)
                px__client_kill(c);
        }
    }
    if (!p->clients)
        event_active(&p->drained, EV_TIMEOUT, 0);
}

void px_free(struct px *p)
{
    if (!p)
        return;
    p->draining = false; /* no drained callback from here */
    while (p->clients)
        px__client_free(p->clients);
    event_del(&p->drained);
    event_del(&p->accept_resume);
    if (p->listener)
        evconnlistener_free(p->listener);
    free(p);
}

void px_stats(const struct px *p, struct px_stats *out)
{
    *out = p->stats;
}
