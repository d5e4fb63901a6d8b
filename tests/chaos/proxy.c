#include "proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

/* One accepted connection and the upstream connection it is forwarded to.
 * The proxy owns both bufferevents; a link is freed as a whole. */
struct link {
    struct chaos_proxy *p;
    struct bufferevent *down; /* to the client (the pool's connection) */
    struct bufferevent *up;   /* to the server; NULL for a silent one */
    struct link *prev, *next;
    int64_t last_io;       /* ms of the last byte either way */
    struct evbuffer *held; /* server bytes held back (latency, handshake) */
    struct event *release; /* sends `held` when due */
    bool spoke;            /* the server's first bytes went out */
    bool junked;           /* junk already sent */
    bool closing;          /* waiting for `down` to flush, then freed */
    uint64_t client_chunks; /* forwarded to the server */
    bool doomed;           /* replied, reads no more, closes late */
    struct event *late_close; /* frees it delay_ms after its last reply */
};

/* At most this many sockets fill a backlog of 0 (Linux queues one more
 * than the backlog). */
#define FILLERS_MAX 8

struct chaos_proxy {
    struct event_base *base;
    uint16_t port;
    uint16_t upstream;
    evutil_socket_t listen_fd; /* -1 while refusing */
    struct event *accept_ev;   /* NULL while not accepting at once */
    struct event *slow_accept; /* one accept per tick (CHAOS_SLOW_ACCEPT) */
    struct event *idle_scan;   /* the idle faults' timer */
    evutil_socket_t fillers[FILLERS_MAX];
    int nfillers;
    enum chaos_fault fault;
    struct chaos_knobs knobs;
    uint64_t client_chunks;
    uint64_t server_chunks;
    struct link *links;
    struct chaos_proxy_stats stats;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct timeval ms_tv(int ms)
{
    return (struct timeval){ms / 1000, (ms % 1000) * 1000};
}

static struct sockaddr_in loopback(uint16_t port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    return a;
}

/* ---- links ---- */

static void link_free(struct link *l)
{
    struct chaos_proxy *p = l->p;
    if (l->prev)
        l->prev->next = l->next;
    else
        p->links = l->next;
    if (l->next)
        l->next->prev = l->prev;
    bufferevent_free(l->down); /* libevent closes the sockets */
    if (l->up)
        bufferevent_free(l->up);
    if (l->release)
        event_free(l->release);
    if (l->late_close)
        event_free(l->late_close);
    evbuffer_free(l->held);
    free(l);
    p->stats.links--;
}

/* The client sees RST instead of FIN: linger 0 makes close() reset. */
static void link_reset(struct link *l)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(bufferevent_getfd(l->down), SOL_SOCKET, SO_LINGER, &lg,
               sizeof lg);
    link_free(l);
}

static void close_links(struct chaos_proxy *p)
{
    while (p->links) {
        p->stats.faults++;
        link_free(p->links);
    }
}

static void send_held(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct link *l = arg;
    l->spoke = true;
    bufferevent_write_buffer(l->down, l->held);
}

/* Holds server bytes back for delay_ms; later bytes queue behind them, so
 * the stream keeps its order. */
static void hold(struct link *l, struct evbuffer *in)
{
    struct chaos_proxy *p = l->p;
    evbuffer_add_buffer(l->held, in);
    if (!evtimer_pending(l->release, NULL)) {
        struct timeval tv = ms_tv(p->knobs.delay_ms);
        evtimer_add(l->release, &tv);
        p->stats.faults++;
    }
}

static void on_down_read(struct bufferevent *bev, void *arg)
{
    struct link *l = arg;
    struct chaos_proxy *p = l->p;
    struct evbuffer *in = bufferevent_get_input(bev);
    l->last_io = now_ms();
    if (!l->up || p->fault == CHAOS_BLACKHOLE || l->doomed) {
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    if (p->fault == CHAOS_RESET_MID_REQUEST &&
        ++p->client_chunks % (uint64_t)p->knobs.every == 0) {
        p->stats.faults++;
        link_reset(l);
        return;
    }
    l->client_chunks++;
    bufferevent_write_buffer(l->up, in);
}

static void on_down_flushed(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct link *l = arg;
    if (l->closing)
        link_free(l);
}

static void on_up_read(struct bufferevent *bev, void *arg)
{
    struct link *l = arg;
    struct chaos_proxy *p = l->p;
    struct evbuffer *in = bufferevent_get_input(bev);
    l->last_io = now_ms();
    if (l->closing || p->fault == CHAOS_BLACKHOLE) {
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    if (p->fault == CHAOS_TRUNCATE &&
        ++p->server_chunks % (uint64_t)p->knobs.every == 0) {
        /* half goes out, the rest never: the link closes once it is sent */
        size_t n = evbuffer_get_length(in);
        evbuffer_remove_buffer(in, bufferevent_get_output(l->down), n / 2);
        evbuffer_drain(in, evbuffer_get_length(in));
        p->stats.faults++;
        l->closing = true;
        bufferevent_disable(l->down, EV_READ);
        bufferevent_disable(l->up, EV_READ);
        if (evbuffer_get_length(bufferevent_get_output(l->down)) == 0)
            link_free(l);
        return;
    }
    if ((p->fault == CHAOS_STALL &&
         ++p->server_chunks % (uint64_t)p->knobs.every == 0) ||
        p->fault == CHAOS_LATENCY ||
        (p->fault == CHAOS_SLOW_HANDSHAKE && !l->spoke) ||
        evbuffer_get_length(l->held) > 0 || evtimer_pending(l->release, NULL)) {
        hold(l, in);
        return;
    }
    l->spoke = true;
    bufferevent_write_buffer(l->down, in);
    if (p->fault == CHAOS_CLOSE_AFTER_REPLY && !l->doomed &&
        l->client_chunks > (uint64_t)p->knobs.spared) {
        /* the server is done with it: what comes next goes unanswered,
         * and the FIN follows the reply only after delay_ms */
        p->stats.faults++;
        l->doomed = true;
        bufferevent_disable(l->up, EV_READ);
        struct timeval tv = ms_tv(p->knobs.delay_ms);
        evtimer_add(l->late_close, &tv);
    }
}

static void on_late_close(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    link_free(arg);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct link *l = arg;
    if (what & BEV_EVENT_CONNECTED)
        return;
    /* either end gone: both go (the echo protocol never half-closes) */
    link_free(l);
}

static void on_accepted(struct chaos_proxy *p, evutil_socket_t fd)
{
    p->stats.accepted++;
    if (p->fault == CHAOS_RESET_ON_CONNECT &&
        p->stats.accepted % (uint64_t)p->knobs.every == 0) {
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(fd);
        p->stats.faults++;
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct link *l = calloc(1, sizeof *l);
    l->p = p;
    l->last_io = now_ms();
    l->held = evbuffer_new();
    l->release = evtimer_new(p->base, send_held, l);
    l->late_close = evtimer_new(p->base, on_late_close, l);
    l->down = bufferevent_socket_new(p->base, fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(l->down, on_down_read, on_down_flushed, on_event, l);
    bufferevent_enable(l->down, EV_READ | EV_WRITE);
    if (p->fault == CHAOS_BLACKHOLE) {
        p->stats.faults++; /* held silent for as long as the client stays */
    } else {
        l->up = bufferevent_socket_new(p->base, -1, BEV_OPT_CLOSE_ON_FREE);
        bufferevent_setcb(l->up, on_up_read, NULL, on_event, l);
        bufferevent_enable(l->up, EV_READ | EV_WRITE);
        struct sockaddr_in a = loopback(p->upstream);
        if (bufferevent_socket_connect(l->up, (struct sockaddr *)&a,
                                       sizeof a) == 0) {
            evutil_socket_t ufd = bufferevent_getfd(l->up);
            setsockopt(ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
    }
    l->next = p->links;
    if (p->links)
        p->links->prev = l;
    p->links = l;
    p->stats.links++;
}

/* Takes up to `max` connections from the accept queue; how many. */
static int accept_some(struct chaos_proxy *p, int max)
{
    int n = 0;
    while (n < max && p->listen_fd >= 0) {
        evutil_socket_t fd =
            accept4(p->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            break;
        on_accepted(p, fd);
        n++;
    }
    return n;
}

static void on_acceptable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    accept_some(arg, 16);
}

/* Each connection accepted late is one fault: it sat in the queue. */
static void on_slow_accept(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct chaos_proxy *p = arg;
    p->stats.faults += (uint64_t)accept_some(p, 1);
}

/* ---- the listener ---- */

static evutil_socket_t bound_socket(uint16_t port, int backlog)
{
    evutil_socket_t fd =
        socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    struct sockaddr_in a = loopback(port);
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(fd, backlog) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void listener_close(struct chaos_proxy *p)
{
    if (p->accept_ev)
        event_free(p->accept_ev);
    p->accept_ev = NULL;
    if (p->slow_accept)
        event_free(p->slow_accept);
    p->slow_accept = NULL;
    if (p->listen_fd >= 0)
        close(p->listen_fd);
    p->listen_fd = -1;
    for (int i = 0; i < p->nfillers; i++)
        close(p->fillers[i]);
    p->nfillers = 0;
}

static bool listener_open(struct chaos_proxy *p)
{
    p->listen_fd = bound_socket(p->port, 128);
    if (p->listen_fd < 0)
        return false;
    if (p->port == 0) {
        struct sockaddr_in a;
        socklen_t len = sizeof a;
        getsockname(p->listen_fd, (struct sockaddr *)&a, &len);
        p->port = ntohs(a.sin_port);
    }
    p->accept_ev = event_new(p->base, p->listen_fd, EV_READ | EV_PERSIST,
                             on_acceptable, p);
    event_add(p->accept_ev, NULL);
    return true;
}

/* A listener with backlog 0 that never accepts, its queue filled by our own
 * connects until one hangs: the kernel then drops every SYN to the port. */
static bool listener_fill(struct chaos_proxy *p)
{
    p->listen_fd = bound_socket(p->port, 0);
    if (p->listen_fd < 0)
        return false;
    struct sockaddr_in a = loopback(p->port);
    while (p->nfillers < FILLERS_MAX) {
        evutil_socket_t fd =
            socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return false;
        p->fillers[p->nfillers++] = fd;
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 &&
            errno != EINPROGRESS)
            return false;
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        if (poll(&pfd, 1, 100) == 0)
            return true; /* this one hangs: the queue is full */
    }
    return false;
}

/* ---- idle faults ---- */

static void on_idle_scan(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct chaos_proxy *p = arg;
    int64_t quiet_since = now_ms() - p->knobs.idle_ms;
    struct link *next;
    for (struct link *l = p->links; l; l = next) {
        next = l->next;
        if (l->closing || !l->up || l->last_io > quiet_since)
            continue;
        if (p->fault == CHAOS_RESET_IDLE) {
            p->stats.faults++;
            link_reset(l);
        } else if (p->fault == CHAOS_IDLE_CLOSE) {
            p->stats.faults++;
            link_free(l);
        } else if (p->fault == CHAOS_IDLE_JUNK && !l->junked) {
            static const char junk[] = "JUNK\r\n";
            l->junked = true;
            p->stats.faults++;
            bufferevent_write(l->down, junk, sizeof junk - 1);
        }
    }
}

/* ---- the proxy ---- */

struct chaos_proxy *chaos_proxy_new(struct event_base *base, uint16_t upstream)
{
    struct chaos_proxy *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->base = base;
    p->upstream = upstream;
    p->listen_fd = -1;
    if (!listener_open(p)) {
        free(p);
        return NULL;
    }
    return p;
}

void chaos_proxy_free(struct chaos_proxy *p)
{
    if (!p)
        return;
    while (p->links)
        link_free(p->links);
    listener_close(p);
    if (p->idle_scan)
        event_free(p->idle_scan);
    free(p);
}

uint16_t chaos_proxy_port(const struct chaos_proxy *p)
{
    return p->port;
}

void chaos_proxy_stats(const struct chaos_proxy *p,
                       struct chaos_proxy_stats *out)
{
    *out = p->stats;
}

static bool idle_fault(enum chaos_fault f)
{
    return f == CHAOS_RESET_IDLE || f == CHAOS_IDLE_CLOSE ||
           f == CHAOS_IDLE_JUNK;
}

bool chaos_proxy_set(struct chaos_proxy *p, enum chaos_fault f,
                     struct chaos_knobs knobs)
{
    enum chaos_fault was = p->fault;
    p->fault = f;
    p->knobs.every = knobs.every > 0 ? knobs.every : 10;
    p->knobs.delay_ms = knobs.delay_ms > 0 ? knobs.delay_ms : 100;
    p->knobs.idle_ms = knobs.idle_ms > 0 ? knobs.idle_ms : 100;
    p->knobs.spared = knobs.spared > 0 ? knobs.spared : 0;

    /* undo what the last fault changed on the listener */
    if (was == CHAOS_REFUSE || was == CHAOS_FULL_BACKLOG ||
        was == CHAOS_SLOW_ACCEPT) {
        listener_close(p);
        if (!listener_open(p))
            return false;
    }
    if (p->idle_scan && !idle_fault(f)) {
        event_free(p->idle_scan);
        p->idle_scan = NULL;
    }

    switch (f) {
    case CHAOS_BLACKHOLE: /* every link open now goes silent */
        p->stats.faults += (uint64_t)p->stats.links;
        return true;
    case CHAOS_REFUSE:
        listener_close(p);
        close_links(p);
        return true;
    case CHAOS_FULL_BACKLOG:
        listener_close(p);
        close_links(p);
        p->stats.faults++;
        return listener_fill(p);
    case CHAOS_SLOW_ACCEPT: {
        event_del(p->accept_ev);
        p->slow_accept = event_new(p->base, -1, EV_PERSIST, on_slow_accept, p);
        struct timeval tv = ms_tv(p->knobs.delay_ms);
        event_add(p->slow_accept, &tv);
        return true;
    }
    case CHAOS_RESET_IDLE:
    case CHAOS_IDLE_CLOSE:
    case CHAOS_IDLE_JUNK:
        if (!p->idle_scan) {
            p->idle_scan = event_new(p->base, -1, EV_PERSIST, on_idle_scan, p);
            struct timeval tv = ms_tv(10);
            event_add(p->idle_scan, &tv);
        }
        return true;
    default:
        return true;
    }
}
