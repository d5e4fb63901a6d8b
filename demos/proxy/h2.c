/* The HTTP/2 upstream exchange (h2c://, h2:// upstreams): each client
 * request is a stream on a connection shared with others, framed by
 * libnghttp2.
 *
 * The connection: the TCP or TLS factory opens it (TLS offering and
 * requiring ALPN h2), and its session setup (h2_setup) sends the client
 * preface and SETTINGS and waits for the server's SETTINGS, so the pool
 * never lends a connection whose stream limit is unknown. Right after the
 * pool took it (tide_net_setup_done made it, lending it to one waiter at
 * most: the others are served from the loop) its capacity becomes the
 * server's SETTINGS_MAX_CONCURRENT_STREAMS (tide_evpool_set_streams, held
 * to H2_STREAMS_MAX), and it follows every later SETTINGS. Before that
 * first SETTINGS the session takes the peer's limit as 1
 * (peer_max_concurrent_streams), so nothing is ever sent above it.
 *
 * The factory the pool sees wraps the TCP or TLS one: this file reads the
 * connection for its whole life, idle or lent (frames come while idle:
 * PING, SETTINGS, GOAWAY), so the idle watch, alive and reusable are
 * HTTP/2's own, and the health check of an idle connection is a PING.
 * Each loan is one stream: the pool counts loans, this file routes frames
 * to the client of each stream (the stream's user data).
 *
 * Flow control: the response's DATA of a stream is consumed (a
 * WINDOW_UPDATE let go) only as its client takes the bytes, so a slow
 * client shuts its own stream's window and no other; the connection's
 * window is large. Request bodies go as the peer's windows allow
 * (nghttp2 keeps to them), a bounded piece at a time from the client.
 *
 * Ends of a stream: a whole response releases the loan; a RST_STREAM
 * fails that request alone (502, or REFUSED_STREAM: sent again when
 * idempotent); the proxy's timeout resets it (504). A GOAWAY drains the
 * connection (capacity 0): nghttp2 closes the streams above its
 * last-stream-id as REFUSED_STREAM (sent again when idempotent, else
 * 502), those below finish. A connection that fails (EOF, reset, a
 * protocol error) is broken once for the pool and fails each stream. */
#include "h2.h"
#include "h2_mem.h"
#include "proxy_internal.h"
#include "target.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <limits.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <tidepool/tls.h>

/* The most streams the proxy opens on one connection, whatever a server
 * offers (limits.streams of an h2 upstream's pool). */
#define H2_STREAMS_MAX 256
/* Each stream's receive window: a response's bytes a slow client may have
 * queued beside what the proxy holds for it before its stream stops. */
#define H2_STREAM_WINDOW (256 * 1024)
/* The connection's receive window: shared by every stream, so large that
 * streams shut by slow clients cannot close it for the others. */
#define H2_CONN_WINDOW ((1 << 30) - 1)
/* Output queued to the upstream above which no more frames are made until
 * it drains (the write callback pumps again). */
#define H2_OUTPUT_HIGH (256 * 1024)
/* How long a health check's PING may wait for its ACK. */
#define H2_PING_TIMEOUT_S 5

struct h2conn;

/* A stream as nghttp2 knows it: its user data and its body's source. It
 * outlives its client's interest (a client that left, a stream reset
 * while its HEADERS still waited for room), until nghttp2 closes it. */
struct h2stream {
    struct client *c; /* NULL once the client left it */
    /* of the response's head (on_header): its Content-Length, the
     * index of that field in c->resp_headers, and whether it announced
     * trailers */
    bool has_length;
    size_t length_at;
    bool trailer;
    struct h2stream *next; /* in the connection's streams */
    struct h2stream *prev;
};

struct px_h2_upstream {
    struct tide_factory inner; /* the TCP or TLS factory's table */
    struct tide_evpool *pool;  /* the upstream's pool (px_h2_upstream_bind) */
    bool tls;
    char authority[300]; /* host:port, for requests with no Host */
    /* connections in their setup: found by the factory's setup_abort */
    struct h2conn *setting_up;
    /* the one being handed to the pool (tide_net_setup_done): its
     * bufferevent's callbacks are cleared meanwhile, so the factory's
     * hooks find it here */
    struct h2conn *making;
    /* the streams' silence timeout as a libevent common timeout (every
     * stream's timer has the same length, so an add is an append to one
     * queue, not a heap insert among all the timers): for stream_tv_for
     * on stream_tv_base */
    const struct timeval *stream_tv;
    struct timeval stream_tv_for;
    struct event_base *stream_tv_base;
};

/* Header fields for a HEADERS frame, laid out in one text (names and
 * values by offset, as the text moves when it grows), then turned into
 * nghttp2's list, which it copies. The connection keeps the storage from
 * one request to the next: once grown, a request's head allocates nothing
 * here. */
struct field_at {
    size_t name;
    size_t namelen;
    size_t value; /* the value runs to the next field's name */
};

struct fields {
    struct px_buf text;
    struct field_at *at;
    nghttp2_nv *nv;
    size_t n;
    size_t cap;
};

struct h2conn {
    struct px_h2_upstream *up;
    struct bufferevent *bev;
    nghttp2_session *s;
    struct tide_net_setup *setup; /* until the server's SETTINGS came */
    struct tide_check *check;     /* a PING in flight */
    struct event ping_timer;
    struct event pull;    /* on_pull */
    struct px_buf wbuf;   /* conn_pump's frames */
    struct event pump_ev; /* on_pump */
    bool pump_armed;
    /* a stream's body was taken (read_body) since pull_more last found no
     * client to pull: only then are the streams looked through */
    bool pull_due;
    struct fields fields;     /* a HEADERS frame's, as it is made */
    struct px_h2_mem mem;     /* the session's allocator's free blocks */
    struct h2stream *streams; /* streams nghttp2 has not closed yet */
    struct h2stream *seen;    /* stream_of's last, of id seen_id */
    int32_t seen_id;
    struct h2conn *next_setup; /* in up->setting_up */
    struct h2conn *prev_setup;
    bool idle;         /* watched idle by the pool */
    bool goaway;       /* a GOAWAY came: drained */
    bool broken;       /* failed: no stream more */
    bool made;         /* the pool holds it */
    bool settings_due; /* a SETTINGS came: tell the pool its limit */
    bool ping_acked;
    /* destroy came while this file was inside the session (depth): the
     * session and the connection go when the outermost call unwinds */
    int depth;
    bool destroy_due;
    bool pump_due;
};

static void conn_enter(struct h2conn *h)
{
    h->depth++;
}

static void conn_pump(struct h2conn *h);
static void conn_free(struct h2conn *h);
static bool conn_leave(struct h2conn *h);
static void setup_unlink(struct h2conn *h);
static void on_written(struct bufferevent *bev, void *arg);
static void on_event(struct bufferevent *bev, short what, void *arg);

/* Clients whose body nghttp2 took (read_body): more of it may be parsed
 * now, as after a write to an HTTP/1.1 upstream (on_upstream_written).
 * From the loop (pull_more): a client's parse may be what made nghttp2
 * take its body (body_flush), and must not be entered again from there. */
static void on_pump(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct h2conn *h = arg;
    h->pump_armed = false;
    conn_pump(h);
}

static void on_pull(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct h2conn *h = arg;
    h->depth++;
    for (bool again = true; again && !h->destroy_due;) {
        again = false;
        for (struct h2stream *t = h->streams; t; t = t->next)
            if (t->c && t->c->h2_pull) {
                t->c->h2_pull = false;
                px__client_pump(t->c);
                again = true;
                break;
            }
    }
    conn_leave(h);
}

static void pull_more(struct h2conn *h)
{
    if (!h->pull_due)
        return; /* the common case: no body went, no walk of the streams */
    for (struct h2stream *t = h->streams; t; t = t->next)
        if (t->c && t->c->h2_pull) {
            event_active(&h->pull, EV_TIMEOUT, 0);
            return;
        }
    h->pull_due = false;
}

/* Leaves the session; false when the connection went meanwhile. */
static bool conn_leave(struct h2conn *h)
{
    if (--h->depth > 0)
        return !h->destroy_due;
    if (h->destroy_due) {
        conn_free(h);
        return false;
    }
    /* what the calls inside submitted goes once the loop round's other
     * callbacks ran: the streams of every client read in it in one send */
    if (!h->pump_armed) {
        h->pump_armed = true;
        event_active(&h->pump_ev, EV_TIMEOUT, 0);
    }
    pull_more(h);
    return !h->destroy_due;
}

/* ---- the connection's frames out ---- */

/* Makes frames while the upstream takes them (nghttp2 keeps to the peer's
 * windows and stream limit itself). Deferred while inside the session:
 * nghttp2 may not be asked to send from its own callbacks. */
static void conn_pump(struct h2conn *h)
{
    if (h->depth > 0 || (!h->made && !h->setup)) {
        h->pump_due = h->depth > 0;
        return;
    }
    h->pump_due = false;
    /* inside the session: mem_send calls back (a stream closed as its
     * END_STREAM or RST went), and what those calls do (a client's next
     * request, the last loan of a draining connection back: its destroy)
     * must wait for it to return */
    h->depth++;
    struct evbuffer *out = bufferevent_get_output(h->bev);
    size_t queued = evbuffer_get_length(out);
    /* the frames of this round in one piece: on plain TCP with nothing
     * queued before them they go in one send, as an HTTP/1.1 request
     * does (upstream_write), with no write event added and removed */
    px_buf_clear(&h->wbuf);
    while (queued + px_buf_size(&h->wbuf) < H2_OUTPUT_HIGH) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(h->s, &p);
        if (n <= 0)
            break;
        px_buf_add(&h->wbuf, (const char *)p, (size_t)n);
    }
    h->depth--;
    if (h->destroy_due) {
        conn_free(h);
        return;
    }
    if (h->pump_due && !h->pump_armed) {
        h->pump_armed = true; /* more was submitted meanwhile */
        event_active(&h->pump_ev, EV_TIMEOUT, 0);
    }
    size_t n = px_buf_size(&h->wbuf), sent = 0;
    if (n == 0)
        return;
    if (!h->up->tls && queued == 0) {
        ssize_t k = send(bufferevent_getfd(h->bev), px_buf_data(&h->wbuf), n,
                         MSG_NOSIGNAL);
        sent = k > 0 ? (size_t)k : 0;
    }
    if (sent < n)
        bufferevent_write(h->bev, px_buf_data(&h->wbuf) + sent, n - sent);
}

/* ---- a stream's client ---- */

/* A new stream of h for c. */
static struct h2stream *stream_new(struct h2conn *h, struct client *c)
{
    struct h2stream *t = calloc(1, sizeof *t);
    if (!t)
        abort(); /* a demo: out of memory ends it */
    t->c = c;
    t->next = h->streams;
    if (h->streams)
        h->streams->prev = t;
    h->streams = t;
    return t;
}

/* nghttp2 closed the stream (or the session went). */
static void stream_free(struct h2conn *h, struct h2stream *t)
{
    if (h->seen == t)
        h->seen = NULL;
    if (t->prev)
        t->prev->next = t->next;
    else
        h->streams = t->next;
    if (t->next)
        t->next->prev = t->prev;
    if (t->c)
        t->c->h2s = NULL;
    free(t);
}

/* The client leaves its stream (closed, reset or given up); the stream
 * itself stays nghttp2's until it closes it. */
static void stream_unlink(struct client *c)
{
    if (!c->h2)
        return;
    if (c->h2s)
        c->h2s->c = NULL;
    c->h2s = NULL;
    event_del(&c->h2_timer);
    c->h2 = NULL;
}

/* The loan ends. A stream's end leaves the connection whole, so its loan
 * is released whatever the exchange's outcome, unless the connection
 * itself failed (discard: broken for every loan, one failure). */
bool px__h2_give_back(struct client *c, enum give how)
{
    struct h2conn *h = c->h2;
    if (h) {
        /* the client leaves first: the RST's frame closes a stream that
         * is nobody's */
        bool reset = c->h2_open && !h->broken && !h->destroy_due;
        /* what was held back for it opens the connection's window again
         * (its stream's own is gone with it) */
        if (c->h2_owed > 0 && !h->broken && !h->destroy_due)
            nghttp2_session_consume_connection(h->s, c->h2_owed);
        c->h2_open = false;
        stream_unlink(c);
        if (reset) {
            /* given up before its end: the stream alone is reset */
            conn_enter(h);
            nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, c->h2_stream,
                                      NGHTTP2_CANCEL);
            conn_leave(h);
        }
    }
    px_buf_clear(&c->h2_body);
    c->h2_owed = 0;
    switch (how) {
    case GIVE_ABANDON:
        c->px->stats.abandoned++;
        break;
    case GIVE_DISCARD:
        c->px->stats.discarded++;
        break;
    default:
        break;
    }
    if (how == GIVE_DISCARD)
        (void)tide_group_discard(c->px->group, c->up, c->ub);
    else
        (void)tide_group_release(c->px->group, c->up, c->ub);
    c->ub = NULL;
    c->up = NULL;
    c->h2_exchange = false;
    return false;
}

/* The stream failed before its end: sent again on another connection when
 * the upstream did not process it (retry: a REFUSED_STREAM, a GOAWAY above
 * it, a connection lost before any byte of it came) and it is idempotent
 * and was not sent again yet; else 502, or a cut when half of the response
 * is out already. */
static void stream_failed(struct client *c, enum give how, bool retry,
                          const char *why)
{
    bool any = c->any_byte;
    px__h2_give_back(c, how);
    if (retry && !any && px__idempotent(c->method) && !c->retried &&
        !c->retry_outgrown) {
        c->retried = true;
        px__exchange_again(c);
        return;
    }
    bool cut = c->head_sent; /* refuse kills the client then */
    if (cut) {
        /* the head waits for the body's first bytes (on_frame_recv): a
         * connection lost between the two closed the client with nothing
         * of its response sent, where the head and then the cut go */
        px__client_flush(c);
    }
    px__exchange_refuse(c, why);
    if (!cut && c->state != C_DEAD)
        px__client_flush(c);
}

/* The proxy's own timeout on a stream: reset, 504 (a cut once half of the
 * response is out). */
static void on_stream_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct client *c = arg;
    struct h2conn *h = c->h2;
    if (!h)
        return;
    conn_enter(h);
    px__h2_give_back(c, GIVE_RELEASE); /* resets the stream */
    if (c->head_sent) {
        c->px->stats.aborted++;
        px__client_flush(c); /* the head, if it waited for a body */
        px__client_kill(c);
    } else {
        c->px->stats.errors_504++;
        px__client_write_error(c, 504, "Gateway Timeout", NULL,
                               "the upstream did not answer in time");
        px__client_next(c);
        if (c->state != C_DEAD)
            px__client_flush(c);
    }
    conn_leave(h);
}

/* The response's silence counts from now (response_tv), unless the
 * stream waits for its client (owed bytes) or for its request's body. */
static void stream_timer(struct client *c)
{
    if (!c->h2)
        return; /* the stream is gone: no silence to time */
    if (c->h2_owed > 0) {
        event_del(&c->h2_timer);
        return;
    }
    struct px_h2_upstream *up = c->h2->up;
    const struct timeval *tv = &c->px->response_tv;
    if (!up->stream_tv || up->stream_tv_base != c->px->base ||
        up->stream_tv_for.tv_sec != tv->tv_sec ||
        up->stream_tv_for.tv_usec != tv->tv_usec) {
        up->stream_tv_for = *tv;
        up->stream_tv_base = c->px->base;
        up->stream_tv = event_base_init_common_timeout(c->px->base, tv);
        if (!up->stream_tv)
            up->stream_tv = &up->stream_tv_for; /* out of memory: a plain one */
    }
    event_add(&c->h2_timer, up->stream_tv);
}

/* ---- the request ---- */

static void fields_clear(struct fields *f)
{
    px_buf_clear(&f->text);
    f->n = 0;
}

static void fields_dispose(struct fields *f)
{
    px_buf_dispose(&f->text);
    free(f->at);
    free(f->nv);
    *f = (struct fields){0};
}

/* Starts a field named name (n bytes, lowercased when lower): its value
 * is what is added to f->text until the next field starts. */
static void field_name(struct fields *f, const char *name, size_t n, bool lower)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        struct field_at *at = realloc(f->at, cap * sizeof *at);
        nghttp2_nv *nv = at ? realloc(f->nv, cap * sizeof *nv) : NULL;
        if (!nv)
            abort(); /* a demo: out of memory ends it */
        f->at = at;
        f->nv = nv;
        f->cap = cap;
    }
    struct px_buf *b = &f->text;
    size_t off = b->len;
    if (lower) {
        px_buf_reserve(b, n);
        for (size_t i = 0; i < n; i++) {
            char ch = name[i];
            b->p[b->len + i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch + 32) : ch;
        }
        b->len += n;
    } else {
        px_buf_add(b, name, n);
    }
    f->at[f->n++] =
        (struct field_at){.name = off, .namelen = n, .value = b->len};
}

static void field_add(struct fields *f, const char *name, const char *value,
                      bool lower)
{
    field_name(f, name, strlen(name), lower);
    px_buf_adds(&f->text, value);
}

/* nghttp2's view of f (valid until f changes). */
static nghttp2_nv *fields_nv(struct fields *f)
{
    const char *p = f->text.p;
    for (size_t i = 0; i < f->n; i++) {
        size_t end = i + 1 < f->n ? f->at[i + 1].name : f->text.len;
        f->nv[i] = (nghttp2_nv){.name = (uint8_t *)p + f->at[i].name,
                                .value = (uint8_t *)p + f->at[i].value,
                                .namelen = f->at[i].namelen,
                                .valuelen = end - f->at[i].value,
                                .flags = NGHTTP2_NV_FLAG_NONE};
    }
    return f->nv;
}

/* Whether a client field goes upstream: not those the proxy sets (Host,
 * X-Forwarded-For, the framing), not the hop-by-hop ones (RFC 9113 8.2.2
 * forbids connection-specific fields), not Expect (answered here); TE
 * only as "trailers". */
static bool field_goes(const struct client *c, const char *name,
                       const char *value)
{
    if (strcasecmp(name, "te") == 0)
        return strcasecmp(value, "trailers") == 0;
    return !px__hop_by_hop(c->req_connection, name) &&
           strcasecmp(name, "host") != 0 && strcasecmp(name, "expect") != 0 &&
           strcasecmp(name, "x-forwarded-for") != 0;
}

/* The request's trailers as they go: the fields field_goes lets through. */
static bool submit_trailers(struct client *c)
{
    const struct headers *ts = &c->req_trailers;
    struct fields *f = &c->h2->fields;
    fields_clear(f);
    for (size_t i = 0; i < ts->n; i++) {
        const char *name = px__header_name(ts, i);
        const char *value = px__header_value(ts, i);
        if (field_goes(c, name, value) && strcasecmp(name, "te") != 0)
            field_add(f, name, value, true);
    }
    if (f->n == 0)
        return false;
    return nghttp2_submit_trailer(c->h2->s, c->h2_stream, fields_nv(f), f->n) ==
           0;
}

/* nghttp2 asks for the next piece of a stream's request body: what came
 * from the client (h2_body), deferred while none is there, the end once
 * the request is whole (with trailers after, when it had any). */
static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf,
                         size_t length, uint32_t *flags,
                         nghttp2_data_source *source, void *user)
{
    (void)s;
    (void)id;
    struct h2conn *h = user;
    struct h2stream *t = source->ptr;
    struct client *c = t->c;
    if (!c)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* it left: reset */
    size_t have = px_buf_size(&c->h2_body);
    size_t n = have < length ? have : length;
    if (n > 0) {
        memcpy(buf, px_buf_data(&c->h2_body), n);
        px_buf_consume(&c->h2_body, n);
        c->h2_pull = true; /* more of the body may be read */
        h->pull_due = true;
    }
    /* whole: parsed to its end, and nothing of it still on its way here
     * (rq_body's piece goes on by body_flush after the parser returns) */
    if (px_buf_size(&c->h2_body) == 0 && c->req_complete &&
        (px_buf_size(&c->req) == 0 || c->h2_flushing)) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (c->req_chunked && c->req_trailers.n > 0 && submit_trailers(c))
            *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        return (ssize_t)n;
    }
    return n > 0 ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
}

/* The request's head as a HEADERS frame: the pseudo-fields from the
 * request line and Host (an absolute-form target's authority first, else
 * Host, else the upstream's own), the fields field_goes lets through with
 * their names lowercased, X-Forwarded-For with the client's address, and
 * Content-Length when the body has one. */
static int submit_request(struct client *c, struct h2conn *h,
                          struct h2stream *stream)
{
    const struct headers *hs = &c->req_headers;
    const char *url = px__client_url(c);
    struct px_target t;
    bool absolute = url && px__target_split(url, &t) == PX_TARGET_ABSOLUTE;
    struct fields *f = &h->fields;
    fields_clear(f);
    field_add(f, ":method", http_method_str((enum http_method)c->method),
              false);
    field_add(f, ":scheme", h->up->tls ? "https" : "http", false);
    /* at most 511 bytes of it, and of :path URI_MAX + 1, as ever */
    const char *host = px__headers_get(hs, "host");
    const char *authority = absolute ? t.authority
                            : host   ? host
                                     : h->up->authority;
    size_t authority_len = absolute ? t.authority_len : strlen(authority);
    field_name(f, ":authority", 10, false);
    px_buf_add(&f->text, authority, authority_len < 511 ? authority_len : 511);
    const char *path = absolute ? t.path : url ? url : "/";
    size_t path_len = strlen(path);
    field_name(f, ":path", 5, false);
    if (absolute && t.path[0] != '/') {
        px_buf_add(&f->text, "/", 1);
        if (path_len > URI_MAX)
            path_len = URI_MAX;
    } else if (path_len > URI_MAX + 1) {
        path_len = URI_MAX + 1;
    }
    px_buf_add(&f->text, path, path_len);
    bool xff = false;
    for (size_t i = 0; i < hs->n; i++) {
        const char *name = px__header_name(hs, i);
        const char *value = px__header_value(hs, i);
        if (strcasecmp(name, "x-forwarded-for") == 0)
            xff = true;
        else if (field_goes(c, name, value))
            field_add(f, name, value, true);
    }
    /* the ones that came, in order, then the client's address */
    field_name(f, "x-forwarded-for", 15, false);
    for (size_t i = 0; xff && i < hs->n; i++)
        if (strcasecmp(px__header_name(hs, i), "x-forwarded-for") == 0) {
            px_buf_adds(&f->text, px__header_value(hs, i));
            px_buf_add(&f->text, ", ", 2);
        }
    px_buf_adds(&f->text, c->peer);
    if (!c->req_chunked && c->req_length != ULLONG_MAX) {
        field_name(f, "content-length", 14, false);
        px__add_uint(&f->text, c->req_length);
    }
    nghttp2_data_provider body = {.source = {.ptr = stream},
                                  .read_callback = read_body};
    int32_t id =
        nghttp2_submit_request(h->s, NULL, fields_nv(f), f->n,
                               px__request_has_body(c) ? &body : NULL, stream);
    return id;
}

/* The exchange begins on a stream of the lent connection c->ub: the head
 * goes (and on a retry what went of the body before), the body after it as
 * it comes. */
void px__h2_send(struct client *c)
{
    struct h2conn *h = px__h2_conn_of(c->ub);
    c->h2_exchange = true;
    c->any_byte = false;
    c->head_sent = false;
    c->resp_done = false;
    c->chunked_out = false;
    c->h2_owed = 0;
    c->h2_status = 0;
    c->h2_trailers = false;
    px__headers_clear(&c->resp_headers);
    px_buf_clear(&c->h2_body);
    px_buf_add(&c->h2_body, px_buf_data(&c->retry_body),
               px_buf_size(&c->retry_body));
    px_buf_clear(&c->req);
    if (!h || h->broken || h->goaway || h->destroy_due) {
        /* the connection failed or drained between its lending and now
         * (the pool is told at once, so not again): nothing went, so
         * another connection is asked for, as for a first try */
        c->h2 = NULL;
        px__h2_give_back(c, GIVE_RELEASE);
        px__start_exchange(c);
        return;
    }
    conn_enter(h);
    struct h2stream *t = stream_new(h, c);
    int32_t id = submit_request(c, h, t);
    if (id < 0) {
        t->c = NULL;
        stream_free(h, t);
        conn_leave(h);
        c->h2 = NULL;
        char why[160];
        snprintf(why, sizeof why, "the HTTP/2 request was not made: %s",
                 nghttp2_strerror(id));
        stream_failed(c, GIVE_RELEASE, false, why);
        return;
    }
    c->h2_stream = id;
    c->h2_open = true;
    c->h2 = h;
    c->h2s = t;
    event_assign(&c->h2_timer, c->px->base, -1, 0, on_stream_timeout, c);
    stream_timer(c);
    px__go_ahead(c);
    conn_leave(h);
}

/* More of the request's body came from the client (body_flush). */
void px__h2_write(struct client *c, const char *p, size_t n)
{
    px_buf_add(&c->h2_body, p, n);
    c->h2_flushing = true; /* c->req holds these bytes until we return */
    px__h2_more(c);
    c->h2_flushing = false;
}

/* The body grew or ended: the stream's provider is asked again. */
void px__h2_more(struct client *c)
{
    struct h2conn *h = c->h2;
    if (!h || !c->h2_open || h->broken)
        return;
    conn_enter(h);
    nghttp2_session_resume_data(h->s, c->h2_stream);
    conn_pump(h);
    conn_leave(h);
}

/* Whether the client's body may be parsed on: what waits for the stream's
 * window stays under UPSTREAM_HIGH. */
bool px__h2_taking(const struct client *c)
{
    return px_buf_size(&c->h2_body) < UPSTREAM_HIGH;
}

/* Response bytes the client took: the stream's window opens by what was
 * held back for it. */
void px__h2_caught_up(struct client *c)
{
    struct h2conn *h = c->h2;
    if (!h || c->h2_owed == 0)
        return;
    conn_enter(h);
    if (c->h2_open && !h->broken)
        nghttp2_session_consume(h->s, c->h2_stream, c->h2_owed);
    c->h2_owed = 0;
    stream_timer(c);
    conn_pump(h);
    conn_leave(h);
}

bool px__h2_paused(const struct client *c)
{
    return c->h2_owed > 0;
}

/* ---- the response ---- */

static bool no_body_status(unsigned s)
{
    return (s >= 100 && s < 200) || s == 204 || s == 304;
}

/* The response's head is in: written to the client as HTTP/1.1, framed by
 * its length, else chunked (also when trailers are announced, so they can
 * follow: a length leaves no room for them), else until close for an
 * HTTP/1.0 client. */
static void response_head(struct client *c)
{
    const struct headers *hs = &c->resp_headers;
    const struct h2stream *t = c->h2s;
    unsigned status = c->h2_status;
    bool no_body = c->method == HTTP_HEAD || no_body_status(status);
    const char *cl = t->has_length ? px__header_value(hs, t->length_at) : NULL;
    bool trailers = t->trailer;
    struct px_buf *out = px__client_out(c);
    const char *reason = http_status_str((enum http_status)status);
    px_buf_add(out, "HTTP/1.1 ", 9);
    px__add_uint(out, status);
    px_buf_add(out, " ", 1);
    px_buf_adds(out, strcmp(reason, "<unknown>") == 0 ? "" : reason);
    px_buf_add(out, "\r\n", 2);
    /* on_header kept no hop-by-hop field but the length */
    for (size_t i = 0; i < hs->n; i++)
        if (!t->has_length || i != t->length_at)
            px__add_header(out, px__header_name(hs, i),
                           px__header_value(hs, i));
    bool http11 = c->req_minor >= 1 || c->req_parser.http_major > 1;
    if (no_body) {
        if (cl && status != 204)
            px__add_header(out, "Content-Length", cl);
    } else if (cl && !(trailers && http11)) {
        px__add_header(out, "Content-Length", cl);
    } else if (http11) {
        px_buf_add(out, "Transfer-Encoding: chunked\r\n", 28);
        c->chunked_out = true;
    } else {
        c->close_client = true;
    }
    if (!c->req_keep_alive)
        c->close_client = true;
    px_buf_adds(out, px__connection_line(c, c->close_client));
    px_buf_add(out, "\r\n", 2);
    c->head_sent = true;
    c->h2_no_body = no_body;
    px__headers_clear(&c->resp_headers);
}

/* The stream ended with its whole response: the chunked end with the
 * trailers, the loan released, the client's next request. */
static void response_done(struct client *c)
{
    if (c->chunked_out) {
        struct px_buf *out = px__client_out(c);
        const struct headers *ts = &c->resp_headers;
        px_buf_add(out, "0\r\n", 3);
        for (size_t i = 0; c->h2_trailers && i < ts->n; i++) {
            const char *name = px__header_name(ts, i);
            if (!px__hop_by_hop(NULL, name))
                px__add_header(out, name, px__header_value(ts, i));
        }
        px_buf_add(out, "\r\n", 2);
    }
    c->resp_done = true;
    c->h2_open = false;
    px__h2_give_back(c, GIVE_RELEASE);
    c->px->stats.responses++;
    px__client_next(c);
    if (c->state != C_DEAD)
        px__client_flush(c);
}

/* The stream id names: the last one looked up is kept, as a response's
 * callbacks (its head's every field, its DATA, its end) come one after
 * another for the same stream. */
static struct h2stream *stream_of(struct h2conn *h, int32_t id)
{
    if (id <= 0)
        return NULL;
    if (h->seen && h->seen_id == id)
        return h->seen;
    h->seen = nghttp2_session_get_stream_user_data(h->s, id);
    h->seen_id = id;
    return h->seen;
}

static struct client *stream_client(struct h2conn *h, int32_t id)
{
    struct h2stream *t = stream_of(h, id);
    return t ? t->c : NULL;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *frame,
                            void *user)
{
    (void)s;
    struct client *c = stream_client(user, frame->hd.stream_id);
    if (!c || frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    c->any_byte = true;
    /* a second block after the final head: the trailers */
    px__headers_clear(&c->resp_headers);
    c->h2_trailers = c->head_sent;
    c->h2s->has_length = false;
    c->h2s->trailer = false;
    return 0;
}

enum hop { HOP_NOT, HOP, HOP_LENGTH, HOP_TRAILER };

/* Which of px__hop_by_hop's fields (with no Connection header: HTTP/2
 * has none) a name of a response's head is, compared as bytes: nghttp2
 * passes only lowercase names (it resets a stream whose response has an
 * uppercase one). A look at the length first, as most names match
 * none. */
static enum hop hop_of(const uint8_t *n, size_t len)
{
    /* a name of a length below that is none of them may still be a
     * proxy-* one ("proxy-x" is as long as "trailer"): each case falls
     * to that test */
    switch (len) {
    case 2:
        if (memcmp(n, "te", 2) == 0)
            return HOP;
        break;
    case 7:
        if (memcmp(n, "trailer", 7) == 0)
            return HOP_TRAILER;
        if (memcmp(n, "upgrade", 7) == 0)
            return HOP;
        break;
    case 10:
        if (memcmp(n, "connection", 10) == 0 ||
            memcmp(n, "keep-alive", 10) == 0)
            return HOP;
        break;
    case 14:
        if (memcmp(n, "content-length", 14) == 0)
            return HOP_LENGTH;
        break;
    case 17:
        if (memcmp(n, "transfer-encoding", 17) == 0)
            return HOP;
        break;
    default:
        break;
    }
    /* proxy, proxy-connection, proxy-authenticate, ... */
    return len >= 5 && memcmp(n, "proxy", 5) == 0 && (len == 5 || n[5] == '-')
               ? HOP
               : HOP_NOT;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame,
                     const uint8_t *name, size_t namelen, const uint8_t *value,
                     size_t valuelen, uint8_t flags, void *user)
{
    (void)flags;
    (void)s;
    struct client *c = stream_client(user, frame->hd.stream_id);
    if (!c || frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        unsigned v = 0;
        for (size_t i = 0; i < valuelen && i < 3; i++)
            v = v * 10 + (unsigned)(value[i] - '0');
        /* nghttp2 takes any three digits: 000-099 is no status HTTP/1.1
         * can carry (RFC 9110 15), and the client would read "99" as
         * none. The stream is reset (the client gets a 502). */
        if (v < 100)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        c->h2_status = v;
        return 0;
    }
    if (namelen > 0 && name[0] == ':')
        return 0; /* nghttp2 checked the pseudo-fields */
    if (!c->h2_trailers) {
        /* the head's hop-by-hop fields go no further than here, but what
         * response_head needs of them */
        switch (hop_of(name, namelen)) {
        case HOP:
            return 0;
        case HOP_TRAILER:
            c->h2s->trailer = true;
            return 0;
        case HOP_LENGTH:
            c->h2s->has_length = true;
            c->h2s->length_at = c->resp_headers.n;
            break;
        case HOP_NOT:
            break;
        }
    }
    px__headers_field(&c->resp_headers, (const char *)name, namelen);
    px__headers_value(&c->resp_headers, (const char *)value, valuelen);
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id,
                   const uint8_t *data, size_t len, void *user)
{
    (void)flags;
    struct h2conn *h = user;
    struct client *c = stream_client(h, id);
    if (!c || c->h2_no_body) {
        nghttp2_session_consume(s, id, len); /* for nobody */
        return 0;
    }
    c->any_byte = true;
    struct px_buf *out = px__client_out(c);
    if (c->chunked_out) {
        px__add_hex(out, len);
        px_buf_add(out, "\r\n", 2);
        px_buf_add(out, (const char *)data, len);
        px_buf_add(out, "\r\n", 2);
    } else {
        px_buf_add(out, (const char *)data, len);
    }
    /* held against the stream's window until the client took them: the
     * usual case at once, as the flush finds the client caught up
     * (px__h2_caught_up: consumed, the timer set again) */
    c->h2_owed += len;
    px__client_flush(c);
    if (!c->h2 || c->h2_owed == 0)
        return 0; /* the client went, or caught up */
    if (px__client_queued(c) == 0) {
        nghttp2_session_consume(s, id, c->h2_owed);
        c->h2_owed = 0;
    } else {
        c->px->stats.paused++;
    }
    (void)h;
    stream_timer(c);
    return 0;
}

static void conn_tell_pool(struct h2conn *h);

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame,
                         void *user)
{
    (void)s;
    struct h2conn *h = user;
    switch (frame->hd.type) {
    case NGHTTP2_SETTINGS:
        if (!(frame->hd.flags & NGHTTP2_FLAG_ACK))
            h->settings_due = true;
        return 0;
    case NGHTTP2_GOAWAY:
        /* drained now, not once the read is done: a stream that closes
         * in this read lets its client's next request be lent a loan
         * (a destroy this causes waits for the read to unwind) */
        h->goaway = true;
        conn_tell_pool(h);
        return 0;
    case NGHTTP2_PING:
        if (frame->hd.flags & NGHTTP2_FLAG_ACK)
            h->ping_acked = true;
        return 0;
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
        break;
    default:
        return 0;
    }
    struct client *c = stream_client(user, frame->hd.stream_id);
    if (!c)
        return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && !c->head_sent && !c->h2_trailers) {
        if (c->h2_status >= 100 && c->h2_status < 200) {
            px__headers_clear(&c->resp_headers); /* interim: not relayed */
            return 0;
        }
        /* not sent alone: the body's first bytes go with it (a head
         * sent apart waits on the client's delayed ACK under Nagle) */
        response_head(c);
        if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
            px__client_flush(c);
    }
    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
        c->resp_done = true;
    return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code,
                           void *user)
{
    (void)s;
    struct h2conn *h = user;
    struct h2stream *t = stream_of(h, id);
    if (!t)
        return 0;
    struct client *c = t->c;
    stream_free(h, t);
    if (!c)
        return 0;
    c->h2_open = false;
    if (c->resp_done && c->head_sent) {
        /* a whole response then RST_STREAM(NO_ERROR): served */
        response_done(c);
        return 0;
    }
    char why[160];
    snprintf(why, sizeof why, "the upstream reset the HTTP/2 stream (%s)",
             nghttp2_http2_strerror(code));
    stream_failed(c, GIVE_RELEASE, code == NGHTTP2_REFUSED_STREAM, why);
    return 0;
}

/* ---- the connection's frames in ---- */

/* Tells the pool what the server allows now: its stream limit, or 0 once
 * a GOAWAY came (drained). Last in any handler: a drain of an idle
 * connection destroys it. */
static void conn_tell_pool(struct h2conn *h)
{
    if (!h->made || h->destroy_due)
        return;
    if (h->goaway) {
        h->settings_due = false;
        (void)tide_evpool_set_streams(h->up->pool, h->bev, 0);
        return;
    }
    if (h->settings_due) {
        h->settings_due = false;
        uint32_t max = nghttp2_session_get_remote_settings(
            h->s, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
        (void)tide_evpool_set_streams(
            h->up->pool, h->bev, max < H2_STREAMS_MAX ? max : H2_STREAMS_MAX);
    }
}

/* The connection failed: broken once for the pool, every stream failed
 * (sent again when nothing of it came and it is idempotent), an idle one
 * reported lost. */
static void conn_failed(struct h2conn *h, const char *why)
{
    if (h->broken)
        return;
    h->broken = true;
    if (h->setup) {
        /* the factory frees the connection; the session goes with it */
        struct tide_net_setup *setup = h->setup;
        char text[200];
        snprintf(text, sizeof text, "HTTP/2 connection %s", why);
        setup_unlink(h);
        h->setup = NULL;
        h->destroy_due = h->depth > 0;
        tide_net_setup_failed(setup, TIDE_ESETUP, text);
        if (!h->destroy_due)
            conn_free(h);
        return;
    }
    if (h->check) {
        struct tide_check *t = h->check;
        h->check = NULL;
        event_del(&h->ping_timer);
        tide_evpool_checked(t, false);
        return;
    }
    if (!h->made)
        return;
    if (h->streams) {
        (void)tide_evpool_break(h->up->pool, h->bev);
        for (struct h2stream *t = h->streams; t && !h->destroy_due;) {
            struct client *c = t->c;
            if (!c) {
                t = t->next;
                continue;
            }
            c->h2_open = false;
            char body[200];
            snprintf(body, sizeof body, "the upstream's HTTP/2 connection %s",
                     why);
            stream_failed(c, GIVE_DISCARD, true, body);
            t = h->streams; /* again: the list may have changed */
        }
    } else if (h->idle) {
        (void)tide_evpool_lost(h->up->pool, h->bev);
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct h2conn *h = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t len = evbuffer_get_length(in);
    if (len == 0 || h->broken)
        return;
    conn_enter(h);
    /* the input's pieces in turn, not pulled up into one first (a copy of
     * every read that spans two of the evbuffer's chains): nghttp2 keeps a
     * frame cut between them */
    struct evbuffer_iovec v[8];
    int k = evbuffer_peek(in, -1, NULL, v, 8);
    if (k > 8) {
        v[0] = (struct evbuffer_iovec){evbuffer_pullup(in, -1), len};
        k = 1;
    }
    ssize_t n = 0;
    for (int i = 0; i < k && n >= 0 && !h->destroy_due && !h->broken; i++)
        n = nghttp2_session_mem_recv(h->s, v[i].iov_base, v[i].iov_len);
    if (!h->destroy_due)
        evbuffer_drain(in, len);
    if (n < 0 && !h->destroy_due) {
        char why[160];
        snprintf(why, sizeof why, "failed: %s", nghttp2_strerror((int)n));
        conn_failed(h, why);
    }
    if (!h->destroy_due && h->setup && h->settings_due) {
        /* the server's SETTINGS: the pool may have it now */
        struct tide_net_setup *setup = h->setup;
        struct px_h2_upstream *up = h->up;
        struct tide_share share;
        setup_unlink(h);
        h->setup = NULL;
        h->made = true;
        /* nothing is left unread: nghttp2 took it all. The pool lends it
         * to one waiter at most inside this call; the others are served
         * from the loop, after its limit is set below. */
        up->making = h;
        tide_net_setup_done(setup);
        up->making = NULL;
        if (h->destroy_due || tide_evpool_share(up->pool, bev, &share) != 0) {
            /* refused, or destroyed as it was made */
            conn_leave(h);
            return;
        }
        bufferevent_setcb(bev, on_read, on_written, on_event, h);
        conn_pump(h); /* the SETTINGS ACK */
    }
    if (!h->destroy_due && h->check && h->ping_acked) {
        struct tide_check *t = h->check;
        h->check = NULL;
        event_del(&h->ping_timer);
        tide_evpool_checked(t, !h->goaway);
    }
    if (!h->destroy_due)
        conn_pump(h);
    if (!h->destroy_due)
        conn_tell_pool(h);
    conn_leave(h);
}

/* The upstream took what was queued: more frames may go. */
static void on_written(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct h2conn *h = arg;
    conn_enter(h);
    conn_pump(h);
    conn_leave(h);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct h2conn *h = arg;
    conn_enter(h);
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        on_read(bev, h); /* the frames before the close */
        if (!h->destroy_due)
            conn_failed(h, what & BEV_EVENT_EOF ? "was closed by the upstream"
                                                : "broke (reset or error)");
    }
    conn_leave(h);
}

/* ---- the factory the pool sees ---- */

/* The connection a resource of an h2 upstream's pool is: this file's read
 * callback's argument, or NULL for a connection that is not HTTP/2. */
struct h2conn *px__h2_conn_of(struct bufferevent *bev)
{
    bufferevent_data_cb rd = NULL;
    void *arg = NULL;
    bufferevent_getcb(bev, &rd, NULL, NULL, &arg);
    return rd == on_read ? arg : NULL;
}

/* The connection of resource for the factory's hooks: also while it is
 * being handed to the pool (its callbacks cleared meanwhile). */
static struct h2conn *find(struct px_h2_upstream *up, void *resource)
{
    if (up->making && up->making->bev == resource)
        return up->making;
    return px__h2_conn_of(resource);
}

bool px__h2_is(struct bufferevent *bev)
{
    return bev && px__h2_conn_of(bev) != NULL;
}

static void conn_free(struct h2conn *h)
{
    setup_unlink(h);
    event_del(&h->ping_timer);
    event_del(&h->pull);
    event_del(&h->pump_ev);
    px_buf_dispose(&h->wbuf);
    fields_dispose(&h->fields);
    while (h->streams) {
        struct client *c = h->streams->c;
        if (c) {
            c->h2 = NULL;
            event_del(&c->h2_timer);
        }
        stream_free(h, h->streams);
    }
    nghttp2_session_del(h->s);
    px_h2_mem_dispose(&h->mem);
    struct px_h2_upstream *up = h->up;
    struct bufferevent *bev = h->bev;
    bool made = h->made;
    free(h);
    if (made)
        up->inner.destroy(bev, up->inner.arg);
}

static void h2_destroy(void *resource, void *arg)
{
    struct px_h2_upstream *up = arg;
    struct h2conn *h = find(up, resource);
    if (!h) {
        up->inner.destroy(resource, up->inner.arg);
        return;
    }
    bufferevent_setcb(h->bev, NULL, NULL, NULL, NULL);
    if (h->depth > 0) {
        h->destroy_due = true; /* freed as the session unwinds */
        return;
    }
    conn_free(h);
}

static bool h2_alive(void *resource, void *arg)
{
    struct h2conn *h = find(arg, resource);
    return h && !h->broken && !h->goaway &&
           nghttp2_session_check_request_allowed(h->s) &&
           nghttp2_session_want_read(h->s);
}

static void h2_watch(struct tide_evpool *pool, void *resource, bool idle,
                     void *arg)
{
    (void)pool;
    struct h2conn *h = find(arg, resource);
    if (h)
        h->idle = idle;
}

static void on_ping_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct h2conn *h = arg;
    if (!h->check)
        return;
    struct tide_check *t = h->check;
    h->check = NULL;
    tide_evpool_checked(t, false);
}

/* The health check of an idle connection: a PING answered in time. */
static void h2_check(struct tide_evpool *pool, struct tide_check *token,
                     void *resource, void *arg)
{
    (void)pool;
    struct h2conn *h = find(arg, resource);
    if (!h || h->broken || h->goaway) {
        tide_evpool_checked(token, false);
        return;
    }
    h->check = token;
    h->ping_acked = false;
    conn_enter(h);
    nghttp2_submit_ping(h->s, NGHTTP2_FLAG_NONE, NULL);
    conn_pump(h);
    struct timeval tv = {.tv_sec = H2_PING_TIMEOUT_S};
    event_add(&h->ping_timer, &tv);
    conn_leave(h);
}

static void h2_make(struct tide_evpool *pool, struct tide_make *token,
                    void *arg)
{
    struct px_h2_upstream *up = arg;
    up->inner.make(pool, token, up->inner.arg);
}

static void h2_cancel(struct tide_make *token, void *arg)
{
    struct px_h2_upstream *up = arg;
    if (up->inner.cancel)
        up->inner.cancel(token, up->inner.arg);
}

/* ---- the session setup on a new connection ---- */

static nghttp2_session_callbacks *callbacks(void)
{
    nghttp2_session_callbacks *cbs;
    if (nghttp2_session_callbacks_new(&cbs) != 0)
        abort();
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs,
                                                           on_stream_close);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs,
                                                            on_begin_headers);
    return cbs;
}

static void setup_unlink(struct h2conn *h)
{
    struct px_h2_upstream *up = h->up;
    if (h->prev_setup)
        h->prev_setup->next_setup = h->next_setup;
    else if (up->setting_up == h)
        up->setting_up = h->next_setup;
    if (h->next_setup)
        h->next_setup->prev_setup = h->prev_setup;
    h->next_setup = h->prev_setup = NULL;
}

/* The factory gave up on a setup (its timeout, the make cancelled) and
 * freed the connection: its session goes too. */
static void setup_abort(struct tide_net_setup *setup, void *arg)
{
    struct px_h2_upstream *up = arg;
    for (struct h2conn *h = up->setting_up; h; h = h->next_setup)
        if (h->setup == setup) {
            setup_unlink(h);
            h->setup = NULL;
            h->broken = true;
            if (h->depth > 0)
                h->destroy_due = true;
            else
                conn_free(h);
            return;
        }
}

/* A new connection: preface and SETTINGS (no push, the stream window,
 * the connection window), then the server's SETTINGS awaited (on_read
 * answers the setup). The session is the bufferevent's callback argument
 * from here on. */
static void h2_setup(struct tide_net_setup *setup, struct bufferevent *bev,
                     void *arg)
{
    struct px_h2_upstream *up = arg;
    struct h2conn *h = calloc(1, sizeof *h);
    if (!h) {
        tide_net_setup_failed(setup, TIDE_ENOMEM, "out of memory");
        return;
    }
    h->up = up;
    h->bev = bev;
    h->setup = setup;
    nghttp2_session_callbacks *cbs = callbacks();
    nghttp2_option *opt;
    if (nghttp2_option_new(&opt) != 0)
        abort();
    nghttp2_option_set_no_auto_window_update(opt, 1);
    /* nothing above 1 stream before the server says how many */
    nghttp2_option_set_peer_max_concurrent_streams(opt, 1);
    nghttp2_mem mem;
    px_h2_mem_init(&h->mem, &mem);
    int rc = nghttp2_session_client_new3(&h->s, cbs, h, opt, &mem);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);
    if (rc != 0) {
        px_h2_mem_dispose(&h->mem);
        free(h);
        tide_net_setup_failed(setup, TIDE_ENOMEM, nghttp2_strerror(rc));
        return;
    }
    /* no HPACK dynamic table for the responses' fields: an origin that
     * indexes every field it sends (nginx does, and never refers to one
     * again) cost an insert and an eviction in it for each; a table of 0
     * bytes stores none */
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW},
        {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 0},
    };
    nghttp2_submit_settings(h->s, NGHTTP2_FLAG_NONE, iv, 3);
    nghttp2_session_set_local_window_size(h->s, NGHTTP2_FLAG_NONE, 0,
                                          H2_CONN_WINDOW);
    event_assign(&h->ping_timer, bufferevent_get_base(bev), -1, 0,
                 on_ping_timeout, h);
    event_assign(&h->pull, bufferevent_get_base(bev), -1, 0, on_pull, h);
    event_assign(&h->pump_ev, bufferevent_get_base(bev), -1, 0, on_pump, h);
    h->next_setup = up->setting_up;
    if (up->setting_up)
        up->setting_up->prev_setup = h;
    up->setting_up = h;
    bufferevent_setcb(bev, on_read, on_written, on_event, h);
    /* libevent 2.1 reads 4 KiB a callback: a read of the many streams'
     * frames that came together, not one loop round for each few */
    bufferevent_set_max_single_read(bev, H2_OUTPUT_HIGH);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    conn_pump(h);
}

struct px_h2_upstream *px_h2_upstream_new(const char *host, int port, bool tls)
{
    struct px_h2_upstream *up = calloc(1, sizeof *up);
    if (!up)
        return NULL;
    up->tls = tls;
    snprintf(up->authority, sizeof up->authority,
             strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    return up;
}

void px_h2_upstream_setup(const struct px_h2_upstream *up,
                          struct tide_tcp_options *t)
{
    t->setup = h2_setup;
    t->setup_arg = (void *)up;
    t->setup_abort = setup_abort;
}

void px_h2_upstream_wrap(struct px_h2_upstream *up,
                         const struct tide_factory *inner,
                         struct tide_factory *out)
{
    up->inner = *inner;
    *out = (struct tide_factory){.make = h2_make,
                                 .destroy = h2_destroy,
                                 .cancel = h2_cancel,
                                 .alive = h2_alive,
                                 .reusable = h2_alive,
                                 .check = h2_check,
                                 .watch = h2_watch,
                                 .arg = up};
}

void px_h2_upstream_bind(struct px_h2_upstream *up, struct tide_evpool *pool)
{
    up->pool = pool;
}

void px_h2_upstream_free(struct px_h2_upstream *up)
{
    free(up);
}

int64_t px_h2_streams_max(void)
{
    return H2_STREAMS_MAX;
}
