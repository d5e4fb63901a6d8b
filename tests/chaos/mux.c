#include "mux.h"
#include "listen.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/err.h>
#include <tidepool/evloop.h>

/* ---- the server ---- */

/* Frames a connection holds back to answer out of order. */
#define HELD_MAX 64

struct mux_conn {
    struct mux_server *s;
    struct bufferevent *bev;
    struct event *flush; /* reorder: answers what it holds, last first */
    char held[HELD_MAX][MUX_FRAME];
    int n_held;
    struct mux_conn *prev, *next;
};

struct mux_server {
    struct event_base *base;
    struct evconnlistener *listener;
    SSL_CTX *ctx;
    bool reorder;
    int close_every;
    uint64_t frames;
    uint64_t closes;
    uint16_t port;
    struct mux_conn *conns;
};

static void conn_free(struct mux_conn *c)
{
    struct mux_server *s = c->s;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    SSL *ssl = bufferevent_openssl_get_ssl(c->bev);
    if (ssl)
        SSL_set_quiet_shutdown(ssl, 1);
    bufferevent_free(c->bev);
    event_free(c->flush);
    free(c);
}

static void flush_held(struct mux_conn *c)
{
    for (int k = c->n_held; k > 0; k--)
        bufferevent_write(c->bev, c->held[k - 1], MUX_FRAME);
    c->n_held = 0;
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    flush_held(arg);
}

static void server_read(struct bufferevent *bev, void *arg)
{
    struct mux_conn *c = arg;
    struct mux_server *s = c->s;
    struct evbuffer *in = bufferevent_get_input(bev);
    while (evbuffer_get_length(in) >= MUX_FRAME) {
        char frame[MUX_FRAME];
        evbuffer_remove(in, frame, MUX_FRAME);
        s->frames++;
        if (s->close_every > 0 && s->frames % (uint64_t)s->close_every == 0) {
            /* closes with what it read unanswered: FIN, then gone */
            s->closes++;
            conn_free(c);
            return;
        }
        if (!s->reorder) {
            bufferevent_write(bev, frame, MUX_FRAME);
            continue;
        }
        if (c->n_held == HELD_MAX)
            flush_held(c);
        memcpy(c->held[c->n_held++], frame, MUX_FRAME);
        if (!evtimer_pending(c->flush, NULL)) {
            struct timeval ms = {0, 1000};
            evtimer_add(c->flush, &ms);
        }
    }
}

static void server_event(struct bufferevent *bev, short what, void *arg)
{
    if (what & BEV_EVENT_CONNECTED)
        return;
    while (bufferevent_get_openssl_error(bev))
        ;
    ERR_clear_error();
    conn_free(arg);
}

static void server_accept(struct evconnlistener *l, evutil_socket_t fd,
                          struct sockaddr *sa, int len, void *arg)
{
    (void)l, (void)sa, (void)len;
    struct mux_server *s = arg;
    struct mux_conn *c = calloc(1, sizeof *c);
    if (!c) {
        evutil_closesocket(fd);
        return;
    }
    c->s = s;
    c->bev = chaos_accepted(s->base, fd, s->ctx);
    if (!c->bev) {
        free(c);
        return;
    }
    c->flush = evtimer_new(s->base, on_flush, c);
    bufferevent_setcb(c->bev, server_read, NULL, server_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
}

struct mux_server *mux_server_new(struct event_base *base, SSL_CTX *ctx,
                                  bool reorder, int close_every)
{
    struct mux_server *s = calloc(1, sizeof *s);
    if (!s) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    s->base = base;
    s->ctx = ctx;
    s->reorder = reorder;
    s->close_every = close_every;
    s->listener = chaos_listen(base, server_accept, s, &s->port);
    if (!s->listener) {
        mux_server_free(s);
        return NULL;
    }
    return s;
}

void mux_server_free(struct mux_server *s)
{
    if (!s)
        return;
    while (s->conns)
        conn_free(s->conns);
    if (s->listener)
        evconnlistener_free(s->listener);
    SSL_CTX_free(s->ctx);
    free(s);
}

uint16_t mux_server_port(const struct mux_server *s)
{
    return s->port;
}

void mux_server_close_every(struct mux_server *s, int close_every)
{
    s->close_every = close_every;
}

uint64_t mux_server_closes(const struct mux_server *s)
{
    return s->closes;
}

/* ---- the client ---- */

/* One borrower's request in flight on a session. */
struct mux_call {
    uint64_t tag;
    mux_reply_cb cb;
    void *arg;
    struct mux_call *next; /* in the order sent */
};

/* A connection with borrowers: owns its read side until the last one's
 * loan ends. */
struct mux_session {
    struct mux_client *m;
    struct bufferevent *bev;
    struct mux_call *head, *tail;
    int64_t n;
    bool failed;
    struct mux_session *prev, *next;
};

struct mux_client {
    struct tide_evpool *pool;
    bool in_order;
    struct mux_session *sessions;
    struct mux_stats st;
};

/* A stall with borrowers waiting: the peer is gone (a blackhole). */
#define STALL_MS 1000

static void session_read(struct bufferevent *bev, void *arg);
static void session_event(struct bufferevent *bev, short what, void *arg);

static struct mux_session *session_of(const struct mux_client *m,
                                      const void *bev)
{
    for (struct mux_session *s = m->sessions; s; s = s->next)
        if (s->bev == bev)
            return s;
    return NULL;
}

static struct mux_session *session_open(struct mux_client *m,
                                        struct bufferevent *bev)
{
    struct mux_session *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->m = m;
    s->bev = bev;
    s->next = m->sessions;
    if (m->sessions)
        m->sessions->prev = s;
    m->sessions = s;
    m->st.sessions++;
    struct timeval stall = {STALL_MS / 1000, (STALL_MS % 1000) * 1000};
    bufferevent_setcb(bev, session_read, NULL, session_event, s);
    bufferevent_set_timeouts(bev, &stall, &stall);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    return s;
}

/* The last borrower is leaving: the read side goes back to the pool
 * (whose idle watch takes it) before the last loan ends. */
static void session_close(struct mux_session *s)
{
    struct mux_client *m = s->m;
    bufferevent_setcb(s->bev, NULL, NULL, NULL, NULL);
    bufferevent_set_timeouts(s->bev, NULL, NULL);
    if (s->prev)
        s->prev->next = s->next;
    else
        m->sessions = s->next;
    if (s->next)
        s->next->prev = s->prev;
    m->st.sessions--;
    free(s);
}

/* call leaves s (it is s's head in order, anywhere by tag) and gets its
 * answer; its loan then ends, once, as it says. s may be gone after. */
static void finish(struct mux_session *s, struct mux_call *call, int status,
                   const char *frame)
{
    struct mux_call **at = &s->head;
    struct mux_call *before = NULL;
    while (*at != call) {
        before = *at;
        at = &(*at)->next;
    }
    *at = call->next;
    if (s->tail == call)
        s->tail = before;
    s->n--;
    struct mux_client *m = s->m;
    struct bufferevent *bev = s->bev;
    bool good = call->cb(status, frame, call->arg) && status == 0;
    free(call);
    if (s->n == 0)
        session_close(s);
    /* a failed session was broken already: this discard is no second
     * failure */
    int rc = good ? tide_evpool_release(m->pool, bev)
                  : tide_evpool_discard(m->pool, bev);
    if (rc != 0)
        m->st.refused++;
}

/* The connection failed under its borrowers: broken once, every one of
 * them failed, and it goes when the last loan is back. */
static void session_fail(struct mux_session *s)
{
    if (s->failed)
        return;
    s->failed = true;
    struct mux_client *m = s->m;
    if (tide_evpool_break(m->pool, s->bev) == 1) {
        m->st.breaks++;
        if (s->n > m->st.most_at_break)
            m->st.most_at_break = s->n;
    }
    /* the last finish frees s: count first */
    for (int64_t k = s->n; k > 0; k--) {
        m->st.failed++;
        finish(s, s->head, -1, NULL);
    }
}

static uint64_t tag_of(const char *frame)
{
    char hex[17];
    memcpy(hex, frame + 1, 16);
    hex[16] = '\0';
    return frame[0] == '#' ? strtoull(hex, NULL, 16) : 0;
}

static void session_read(struct bufferevent *bev, void *arg)
{
    struct mux_session *s = arg;
    struct mux_client *m = s->m;
    struct evbuffer *in = bufferevent_get_input(bev);
    while (evbuffer_get_length(in) >= MUX_FRAME) {
        char frame[MUX_FRAME];
        evbuffer_remove(in, frame, MUX_FRAME);
        struct mux_call *call = s->head;
        if (!m->in_order) {
            uint64_t tag = tag_of(frame);
            while (call && call->tag != tag)
                call = call->next;
        }
        if (!call) { /* for nobody in flight: the stream is not ours */
            m->st.stray++;
            session_fail(s);
            return;
        }
        m->st.replies++;
        bool last = s->n == 1;
        finish(s, call, 0, frame);
        if (last)
            return; /* s is gone; bytes left are unasked: a dirty release */
    }
}

static void session_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev, (void)what;
    ERR_clear_error();
    session_fail(arg);
}

struct mux_client *mux_client_new(struct tide_evpool *pool, bool in_order)
{
    struct mux_client *m = calloc(1, sizeof *m);
    if (m) {
        m->pool = pool;
        m->in_order = in_order;
    }
    return m;
}

void mux_client_free(struct mux_client *m)
{
    free(m);
}

void mux_send(struct mux_client *m, struct bufferevent *bev, uint64_t tag,
              const char *frame, mux_reply_cb cb, void *arg)
{
    struct mux_session *s = session_of(m, bev);
    if (!s)
        s = session_open(m, bev);
    struct mux_call *call = calloc(1, sizeof *call);
    if (!call)
        abort();
    call->tag = tag;
    call->cb = cb;
    call->arg = arg;
    if (s->tail)
        s->tail->next = call;
    else
        s->head = call;
    s->tail = call;
    s->n++;
    if (s->n > m->st.most_shared)
        m->st.most_shared = s->n;
    m->st.calls++;
    bufferevent_write(bev, frame, MUX_FRAME);
}

int64_t mux_drain_busiest(struct mux_client *m)
{
    struct mux_session *most = NULL;
    for (struct mux_session *s = m->sessions; s; s = s->next)
        if (!s->failed && (!most || s->n > most->n))
            most = s;
    if (!most || tide_evpool_set_streams(m->pool, most->bev, 0) != 0)
        return 0;
    m->st.drains++;
    return most->n;
}

bool mux_holds(const struct mux_client *m, const void *bev)
{
    return session_of(m, bev) != NULL;
}

void mux_client_stats(const struct mux_client *m, struct mux_stats *out)
{
    *out = m->st;
}
