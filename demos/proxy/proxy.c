/* The proxy: client connections, one exchange at a time on each (pipelined
 * requests wait in the input until the response before them is done), an
 * upstream connection per exchange from the group. See proxy.h. */
#include "proxy.h"
#include "stats.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/listener.h>
#include <http_parser.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- headers ---- */

struct header {
    char *name;
    char *value;
};

struct headers {
    struct header *h;
    size_t n;
    size_t cap;
    bool in_value; /* the parser's last piece was a value */
};

static void headers_clear(struct headers *hs)
{
    for (size_t i = 0; i < hs->n; i++) {
        free(hs->h[i].name);
        free(hs->h[i].value);
    }
    hs->n = 0;
    hs->in_value = false;
}

static void headers_dispose(struct headers *hs)
{
    headers_clear(hs);
    free(hs->h);
    hs->h = NULL;
    hs->cap = 0;
}

static char *append(char *s, const char *at, size_t len)
{
    size_t old = s ? strlen(s) : 0;
    char *n = realloc(s, old + len + 1);
    if (!n)
        abort(); /* a demo: out of memory ends it */
    memcpy(n + old, at, len);
    n[old + len] = '\0';
    return n;
}

/* The parser hands names and values in pieces: a name piece after a value
 * starts the next header. */
static void headers_field(struct headers *hs, const char *at, size_t len)
{
    if (hs->n == 0 || hs->in_value) {
        if (hs->n == hs->cap) {
            hs->cap = hs->cap ? 2 * hs->cap : 16;
            hs->h = realloc(hs->h, hs->cap * sizeof *hs->h);
            if (!hs->h)
                abort();
        }
        hs->h[hs->n++] = (struct header){0};
        hs->in_value = false;
    }
    struct header *h = &hs->h[hs->n - 1];
    h->name = append(h->name, at, len);
}

static void headers_value(struct headers *hs, const char *at, size_t len)
{
    if (hs->n == 0)
        return;
    struct header *h = &hs->h[hs->n - 1];
    h->value = append(h->value, at, len);
    hs->in_value = true;
}

static const char *headers_get(const struct headers *hs, const char *name)
{
    for (size_t i = 0; i < hs->n; i++)
        if (strcasecmp(hs->h[i].name, name) == 0)
            return hs->h[i].value ? hs->h[i].value : "";
    return NULL;
}

/* Whether `token` is in a comma-separated header list (case-insensitive). */
static bool list_has(const char *list, const char *token)
{
    size_t tl = strlen(token);
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        if ((size_t)(t - p) == tl && strncasecmp(p, token, tl) == 0)
            return true;
        p = e;
    }
    return false;
}

/* RFC 9110 7.6.1: these apply to one connection only, and so do the
 * headers a Connection header names. Framing is the proxy's own. */
static bool hop_by_hop(const struct headers *hs, const char *name)
{
    static const char *const hop[] = {"connection",
                                      "keep-alive",
                                      "proxy-connection",
                                      "te",
                                      "trailer",
                                      "transfer-encoding",
                                      "upgrade",
                                      "content-length",
                                      "proxy-authenticate",
                                      "proxy-authorization"};
    for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
        if (strcasecmp(name, hop[i]) == 0)
            return true;
    const char *c = headers_get(hs, "connection");
    return c && list_has(c, name);
}

/* ---- the proxy and its clients ---- */

struct client;

struct px {
    struct event_base *base;
    struct tide_group *group;
    struct evconnlistener *listener;
    int port;
    int64_t acquire_timeout;
    int64_t response_timeout;
    size_t max_body;
    struct client *clients; /* every open client, for px_free */
    struct px_stats stats;
};

enum client_state {
    C_READING = 0, /* parsing a request */
    C_ACQUIRING,   /* the request is whole; waiting for a connection */
    C_EXCHANGING,  /* sent upstream; relaying the response */
    C_FLUSHING,    /* the last response is queued; close once written */
    C_DEAD,        /* closed: freed from the loop by `reap` */
};

struct client {
    struct px *px;
    struct client *prev;
    struct client *next;
    struct bufferevent *bev;
    struct event reap; /* frees the client from the loop, so no caller
                          deep in a parse finds it gone */
    char peer[INET6_ADDRSTRLEN];
    enum client_state state;

    /* the request */
    http_parser req_parser;
    struct headers req_headers;
    char *url;
    struct evbuffer *req; /* the whole request as it goes upstream */
    struct evbuffer *req_body;
    bool req_chunked;
    bool req_complete;
    bool req_keep_alive;
    bool req_too_big;
    unsigned method;
    unsigned short req_minor;

    /* the exchange */
    struct tide_group_acquire *acquiring;
    struct tide_group_upstream *up;
    struct bufferevent *ub; /* the lent upstream connection */
    http_parser resp_parser;
    struct headers resp_headers;
    char *reason;
    bool any_byte;     /* a response byte came on this connection */
    bool head_sent;    /* the response head went to the client */
    bool chunked_out;  /* the body goes to the client chunked */
    bool close_client; /* close the client after this response */
    bool resp_done;
    bool upstream_reusable;
    bool retried;
    /* the client left while a small response was still coming: it is
     * read to its end into `sink`, so the connection goes back whole */
    bool orphan;
    struct evbuffer *sink;
    /* what the client is sent is gathered here and written straight to
     * the socket when nothing is queued before it (see client_flush) */
    struct evbuffer *pending;
};

/* What an orphaned exchange may still read to save its connection; a
 * bigger rest (or one of unknown length) is cheaper to reconnect. */
#define ORPHAN_MAX (64 * 1024)

/* Where bytes for the client go: its output, or the sink once it left. */
static struct evbuffer *client_out(struct client *c)
{
    return c->orphan ? c->sink : c->pending;
}

/* Bytes on their way to the client, gathered and queued. */
static size_t client_queued(struct client *c)
{
    return evbuffer_get_length(c->pending) +
           (c->bev ? evbuffer_get_length(bufferevent_get_output(c->bev)) : 0);
}

/* Sends what was gathered: straight to the socket when the bufferevent
 * has nothing queued (one writev, and no write event to add and remove:
 * a bufferevent only writes from the loop), the rest queued behind. */
static void client_flush(struct client *c)
{
    if (c->orphan) {
        evbuffer_drain(c->sink, evbuffer_get_length(c->sink));
        return;
    }
    if (!c->bev || evbuffer_get_length(c->pending) == 0)
        return;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (evbuffer_get_length(out) == 0)
        (void)evbuffer_write(c->pending, bufferevent_getfd(c->bev));
    if (evbuffer_get_length(c->pending) > 0)
        evbuffer_add_buffer(out, c->pending);
}

static void client_free(struct client *c);
static void client_kill(struct client *c);
static bool client_orphan(struct client *c);
static void client_next(struct client *c);
static void start_exchange(struct client *c);
static void on_client_read(struct bufferevent *bev, void *arg);

static void client_write_error(struct client *c, int status, const char *reason,
                               const char *extra_header, const char *body)
{
    struct evbuffer *out = client_out(c);
    evbuffer_add_printf(out,
                        "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
                        "Content-Length: %zu\r\n%s%s\r\n%s",
                        status, reason, strlen(body) + 1,
                        extra_header ? extra_header : "",
                        c->req_keep_alive ? "" : "Connection: close\r\n", body);
    evbuffer_add(out, "\n", 1);
}

/* ---- the request, from the client ---- */

static int rq_begin(http_parser *p)
{
    struct client *c = p->data;
    headers_clear(&c->req_headers);
    free(c->url);
    c->url = NULL;
    evbuffer_drain(c->req_body, evbuffer_get_length(c->req_body));
    c->req_complete = false;
    c->req_too_big = false;
    return 0;
}

static int rq_url(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    c->url = append(c->url, at, len);
    return 0;
}

static int rq_field(http_parser *p, const char *at, size_t len)
{
    headers_field(&((struct client *)p->data)->req_headers, at, len);
    return 0;
}

static int rq_value(http_parser *p, const char *at, size_t len)
{
    headers_value(&((struct client *)p->data)->req_headers, at, len);
    return 0;
}

static int rq_headers_done(http_parser *p)
{
    struct client *c = p->data;
    c->method = p->method;
    c->req_minor = p->http_minor;
    c->req_keep_alive = http_should_keep_alive(p);
    c->req_chunked = (p->flags & F_CHUNKED) != 0;
    /* the body is read whole before anything goes upstream, so the
     * client's wait for a go-ahead is answered here */
    const char *expect = headers_get(&c->req_headers, "expect");
    if (expect && strcasecmp(expect, "100-continue") == 0 && p->http_minor >= 1)
        evbuffer_add(client_out(c), "HTTP/1.1 100 Continue\r\n\r\n", 25);
    return 0;
}

static int rq_body(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    if (evbuffer_get_length(c->req_body) + len > c->px->max_body) {
        c->req_too_big = true;
        return 0;
    }
    evbuffer_add(c->req_body, at, len);
    return 0;
}

static int rq_complete(http_parser *p)
{
    struct client *c = p->data;
    c->req_complete = true;
    /* one exchange at a time: what follows waits in the input */
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings request_settings = {
    .on_message_begin = rq_begin,
    .on_url = rq_url,
    .on_header_field = rq_field,
    .on_header_value = rq_value,
    .on_headers_complete = rq_headers_done,
    .on_body = rq_body,
    .on_message_complete = rq_complete,
};

/* The request as it goes upstream: the body is sent with a Content-Length
 * (a chunked one is read whole, so its length is known). */
static void build_request(struct client *c)
{
    struct evbuffer *r = c->req;
    evbuffer_drain(r, evbuffer_get_length(r));
    evbuffer_add_printf(r, "%s %s HTTP/1.1\r\n",
                        http_method_str((enum http_method)c->method),
                        c->url ? c->url : "/");
    const char *xff = NULL;
    for (size_t i = 0; i < c->req_headers.n; i++) {
        const struct header *h = &c->req_headers.h[i];
        if (hop_by_hop(&c->req_headers, h->name))
            continue;
        if (strcasecmp(h->name, "expect") == 0)
            continue; /* answered by the proxy */
        if (strcasecmp(h->name, "x-forwarded-for") == 0) {
            xff = h->value;
            continue;
        }
        evbuffer_add_printf(r, "%s: %s\r\n", h->name, h->value ? h->value : "");
    }
    if (xff)
        evbuffer_add_printf(r, "X-Forwarded-For: %s, %s\r\n", xff, c->peer);
    else
        evbuffer_add_printf(r, "X-Forwarded-For: %s\r\n", c->peer);
    size_t body = evbuffer_get_length(c->req_body);
    if (body > 0 || c->req_chunked ||
        headers_get(&c->req_headers, "content-length"))
        evbuffer_add_printf(r, "Content-Length: %zu\r\n", body);
    evbuffer_add(r, "\r\n", 2);
    /* a copy: the body stays for a retry */
    evbuffer_add(r, evbuffer_pullup(c->req_body, -1), body);
}

/* Parses what the client sent; a whole request starts its exchange. */
static void client_parse(struct client *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    while (c->state == C_READING && evbuffer_get_length(in) > 0) {
        size_t len = evbuffer_get_length(in);
        const char *data = (const char *)evbuffer_pullup(in, (ssize_t)len);
        size_t used =
            http_parser_execute(&c->req_parser, &request_settings, data, len);
        enum http_errno err = HTTP_PARSER_ERRNO(&c->req_parser);
        evbuffer_drain(in, used);
        if (err == HPE_PAUSED) {
            http_parser_pause(&c->req_parser, 0);
            err = HPE_OK;
        }
        if (err != HPE_OK) {
            c->req_keep_alive = false;
            client_write_error(c, 400, "Bad Request", NULL,
                               http_errno_description(err));
            c->state = C_FLUSHING;
            return;
        }
        if (!c->req_complete)
            return; /* more to come */
        c->px->stats.requests++;
        if (c->req_too_big) {
            c->req_keep_alive = false;
            client_write_error(c, 413, "Content Too Large", NULL,
                               "request body too large");
            c->state = C_FLUSHING;
            return;
        }
        if (c->url && strncmp(c->url, "/_tidepool/stats", 16) == 0) {
            px__stats_page(c->px->group, client_out(c),
                           strstr(c->url, "format=prometheus") != NULL,
                           c->req_keep_alive);
            c->px->stats.responses++;
            if (!c->req_keep_alive) {
                c->state = C_FLUSHING;
                return;
            }
            c->req_complete = false;
            continue;
        }
        build_request(c);
        c->retried = false;
        start_exchange(c);
        return;
    }
}

/* ---- the response, from the upstream ---- */

static int rs_begin(http_parser *p)
{
    struct client *c = p->data;
    headers_clear(&c->resp_headers);
    free(c->reason);
    c->reason = NULL;
    return 0;
}

static int rs_status(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    c->reason = append(c->reason, at, len);
    return 0;
}

static int rs_field(http_parser *p, const char *at, size_t len)
{
    headers_field(&((struct client *)p->data)->resp_headers, at, len);
    return 0;
}

static int rs_value(http_parser *p, const char *at, size_t len)
{
    headers_value(&((struct client *)p->data)->resp_headers, at, len);
    return 0;
}

static bool no_body_status(unsigned s)
{
    return (s >= 100 && s < 200) || s == 204 || s == 304;
}

static int rs_headers_done(http_parser *p)
{
    struct client *c = p->data;
    unsigned status = p->status_code;
    bool head = c->method == HTTP_HEAD;
    bool no_body = head || no_body_status(status);
    bool has_length =
        p->content_length != ULLONG_MAX && !(p->flags & F_CHUNKED);
    struct evbuffer *out = client_out(c);
    evbuffer_add_printf(out, "HTTP/1.1 %u %s\r\n", status,
                        c->reason ? c->reason : "");
    for (size_t i = 0; i < c->resp_headers.n; i++) {
        const struct header *h = &c->resp_headers.h[i];
        if (hop_by_hop(&c->resp_headers, h->name))
            continue;
        evbuffer_add_printf(out, "%s: %s\r\n", h->name,
                            h->value ? h->value : "");
    }
    /* a body read until close, or from an HTTP/1.0 upstream without
     * keep-alive, ends the upstream connection */
    c->upstream_reusable = http_should_keep_alive(p);
    if (c->orphan && !no_body && !(status >= 100 && status < 200) &&
        (!has_length || p->content_length > ORPHAN_MAX))
        return -1; /* not worth reading for nobody: discard */
    if (status >= 100 && status < 200) {
        evbuffer_add(out, "\r\n", 2);
        return 0;
    }
    c->chunked_out = false;
    if (no_body) {
        /* HEAD and 304 describe the body they would have had */
        const char *cl = headers_get(&c->resp_headers, "content-length");
        if (cl && status != 204)
            evbuffer_add_printf(out, "Content-Length: %s\r\n", cl);
    } else if (has_length) {
        evbuffer_add_printf(out, "Content-Length: %" PRIu64 "\r\n",
                            p->content_length);
    } else if (c->req_minor >= 1 || c->req_parser.http_major > 1) {
        evbuffer_add(out, "Transfer-Encoding: chunked\r\n", 28);
        c->chunked_out = true;
    } else {
        c->close_client = true; /* an HTTP/1.0 client: until close */
    }
    if (!c->req_keep_alive)
        c->close_client = true;
    if (c->close_client)
        evbuffer_add(out, "Connection: close\r\n", 19);
    evbuffer_add(out, "\r\n", 2);
    c->head_sent = true;
    return head ? 1 : 0; /* 1: the parser expects no body */
}

/* Response bytes queued for a slow client at most before the upstream is
 * no longer read: a client that reads slowly holds one connection, not the
 * whole response in memory. Reading resumes once the client took it. */
#define OUTPUT_HIGH (256 * 1024)

static int rs_body(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    struct evbuffer *out = client_out(c);
    if (client_queued(c) + len > OUTPUT_HIGH && c->ub)
        bufferevent_disable(c->ub, EV_READ);
    if (c->chunked_out) {
        evbuffer_add_printf(out, "%zx\r\n", len);
        evbuffer_add(out, at, len);
        evbuffer_add(out, "\r\n", 2);
    } else {
        evbuffer_add(out, at, len);
    }
    return 0;
}

static int rs_complete(http_parser *p)
{
    struct client *c = p->data;
    if (p->status_code >= 100 && p->status_code < 200 && p->status_code != 101)
        return 0; /* an interim response: the real one follows */
    if (c->chunked_out)
        evbuffer_add(client_out(c), "0\r\n\r\n", 5);
    c->resp_done = true;
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings response_settings = {
    .on_message_begin = rs_begin,
    .on_status = rs_status,
    .on_header_field = rs_field,
    .on_header_value = rs_value,
    .on_headers_complete = rs_headers_done,
    .on_body = rs_body,
    .on_message_complete = rs_complete,
};

/* ---- the exchange ---- */

/* The upstream connection leaves the exchange: back to its pool when the
 * response is whole and the upstream keeps it, else destroyed. */
static void give_back(struct client *c, bool keep)
{
    if (!c->ub)
        return;
    bufferevent_setcb(c->ub, NULL, NULL, NULL, NULL);
    bufferevent_set_timeouts(c->ub, NULL, NULL);
    if (keep) {
        (void)tide_group_release(c->px->group, c->up, c->ub);
    } else {
        c->px->stats.discarded++;
        (void)tide_group_discard(c->px->group, c->up, c->ub);
    }
    c->ub = NULL;
    c->up = NULL;
}

static bool idempotent(unsigned method)
{
    return method == HTTP_GET || method == HTTP_HEAD || method == HTTP_PUT ||
           method == HTTP_DELETE || method == HTTP_OPTIONS ||
           method == HTTP_TRACE;
}

static void exchange_failed(struct client *c, const char *why)
{
    if (c->orphan) {
        client_kill(c); /* discards the connection */
        return;
    }
    bool retry = !c->any_byte && !c->retried && idempotent(c->method);
    give_back(c, false);
    if (retry) {
        c->retried = true;
        c->px->stats.retries++;
        build_request(c);
        start_exchange(c);
        return;
    }
    if (c->head_sent) {
        /* half a response is out: only closing tells the client */
        c->px->stats.aborted++;
        client_kill(c);
        return;
    }
    c->px->stats.errors_502++;
    client_write_error(c, 502, "Bad Gateway", NULL, why);
    client_next(c);
}

static void upstream_parse(struct client *c)
{
    struct evbuffer *in = bufferevent_get_input(c->ub);
    size_t len = evbuffer_get_length(in);
    if (len == 0)
        return;
    c->any_byte = true;
    const char *data = (const char *)evbuffer_pullup(in, (ssize_t)len);
    size_t used =
        http_parser_execute(&c->resp_parser, &response_settings, data, len);
    evbuffer_drain(in, used);
    if (c->orphan)
        evbuffer_drain(c->sink, evbuffer_get_length(c->sink));
    enum http_errno err = HTTP_PARSER_ERRNO(&c->resp_parser);
    if (err == HPE_PAUSED)
        err = HPE_OK;
    if (err != HPE_OK) {
        exchange_failed(c, http_errno_description(err));
        return;
    }
    if (!c->resp_done)
        return;
    /* bytes after the response: the connection is not clean */
    bool keep = c->upstream_reusable && evbuffer_get_length(in) == 0;
    give_back(c, keep);
    c->px->stats.responses++;
    client_next(c);
}

static void on_upstream_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct client *c = arg;
    upstream_parse(c);
    if (c->state != C_DEAD)
        client_flush(c);
}

static void upstream_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct client *c = arg;
    if (what & BEV_EVENT_TIMEOUT) {
        if (c->orphan) {
            client_kill(c);
            return;
        }
        give_back(c, false);
        if (c->head_sent) {
            c->px->stats.aborted++;
            client_kill(c);
            return;
        }
        c->px->stats.errors_504++;
        client_write_error(c, 504, "Gateway Timeout", NULL,
                           "the upstream did not answer in time");
        client_next(c);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        upstream_parse(c);
        if (c->state != C_EXCHANGING || !c->ub)
            return; /* finished (or failed) on the bytes before the close */
        /* EOF ends a body read until close */
        http_parser_execute(&c->resp_parser, &response_settings, NULL, 0);
        if (c->resp_done) {
            give_back(c, false);
            c->px->stats.responses++;
            client_next(c);
            return;
        }
        exchange_failed(c, "the upstream closed the connection");
    }
}

static void on_upstream_event(struct bufferevent *bev, short what, void *arg)
{
    struct client *c = arg;
    upstream_event(bev, what, c);
    if (c->state != C_DEAD)
        client_flush(c);
}

static void send_upstream(struct client *c)
{
    http_parser_init(&c->resp_parser, HTTP_RESPONSE);
    c->resp_parser.data = c;
    c->any_byte = false;
    c->head_sent = false;
    c->resp_done = false;
    c->chunked_out = false;
    struct timeval tv = {
        .tv_sec = (time_t)(c->px->response_timeout / 1000000000),
        .tv_usec = (suseconds_t)(c->px->response_timeout % 1000000000 / 1000)};
    bufferevent_setcb(c->ub, on_upstream_read, NULL, on_upstream_event, c);
    bufferevent_set_timeouts(c->ub, &tv, NULL);
    /* Only when not enabled already (a connection is lent enabled):
     * libevent adds the write event on every enable, whatever is queued,
     * so each request would cost two epoll_ctl and a wake-up to find
     * nothing to write. */
    short both = EV_READ | EV_WRITE;
    if ((bufferevent_get_enabled(c->ub) & both) != both)
        bufferevent_enable(c->ub, both);
    /* one write: the request is whole. Over plain TCP with nothing queued
     * it goes straight to the socket, as the client's answers do; a TLS
     * bufferevent's socket carries records, so it writes through it */
    if (!bufferevent_openssl_get_ssl(c->ub) &&
        evbuffer_get_length(bufferevent_get_output(c->ub)) == 0)
        (void)evbuffer_write(c->req, bufferevent_getfd(c->ub));
    if (evbuffer_get_length(c->req) > 0)
        bufferevent_write_buffer(c->ub, c->req);
}

static void acquired(struct tide_group *g, int status,
                     struct tide_group_upstream *u, void *resource,
                     const struct tide_why *why, void *arg)
{
    (void)g;
    struct client *c = arg;
    c->acquiring = NULL;
    if (status == 0) {
        c->up = u;
        c->ub = resource;
        c->state = C_EXCHANGING;
        send_upstream(c);
        return;
    }
    char body[512];
    if (status == TIDE_ETIMEDOUT) {
        c->px->stats.errors_504++;
        client_write_error(c, 504, "Gateway Timeout", NULL,
                           "no upstream connection within the timeout");
    } else if (status == TIDE_EUNAVAILABLE) {
        c->px->stats.errors_503++;
        int64_t secs = (why->retry_after + 999999999) / 1000000000;
        char retry[64];
        snprintf(retry, sizeof retry, "Retry-After: %" PRId64 "\r\n",
                 secs > 0 ? secs : 1);
        snprintf(body, sizeof body, "upstream unavailable: %s", why->message);
        client_write_error(c, 503, "Service Unavailable", retry, body);
    } else {
        c->px->stats.errors_502++;
        snprintf(body, sizeof body, "cannot connect to %s: %s",
                 u ? tide_group_upstream_name(u) : "the upstream",
                 why->message);
        client_write_error(c, 502, "Bad Gateway", NULL, body);
    }
    client_next(c);
}

static void on_acquired(struct tide_group *g, int status,
                        struct tide_group_upstream *u, void *resource,
                        const struct tide_why *why, void *arg)
{
    struct client *c = arg;
    acquired(g, status, u, resource, why, c);
    if (c->state != C_DEAD)
        client_flush(c);
}

static void start_exchange(struct client *c)
{
    /* an idle connection at once saves the trips through the loop */
    struct tide_group_upstream *u;
    void *resource;
    if (tide_group_try_acquire(c->px->group, &u, &resource) == 0) {
        c->up = u;
        c->ub = resource;
        c->state = C_EXCHANGING;
        send_upstream(c);
        return;
    }
    c->state = C_ACQUIRING;
    int rc = tide_group_acquire(c->px->group, c->px->acquire_timeout,
                                on_acquired, c, &c->acquiring);
    if (rc) {
        c->px->stats.errors_503++;
        client_write_error(c, 503, "Service Unavailable", "Retry-After: 1\r\n",
                           tide_strerror(rc));
        client_next(c);
    }
}

/* Closes the client once its output is written. */
static void client_finish(struct client *c)
{
    if (c->orphan) {
        client_kill(c);
        return;
    }
    c->state = C_FLUSHING;
    bufferevent_disable(c->bev, EV_READ);
    client_flush(c);
    if (client_queued(c) == 0)
        client_kill(c);
}

/* The response is out (or queued): the next request, or the end. */
static void client_next(struct client *c)
{
    if (c->orphan || !c->req_keep_alive || c->close_client) {
        client_finish(c);
        return;
    }
    c->state = C_READING;
    c->req_complete = false;
    client_parse(c);
    if (c->state == C_FLUSHING)
        client_finish(c);
}

/* ---- client connections ---- */

static void on_client_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct client *c = arg;
    if (c->state == C_READING)
        client_parse(c);
    if (c->state == C_FLUSHING)
        client_finish(c);
    if (c->state != C_DEAD)
        client_flush(c);
}

static void on_client_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct client *c = arg;
    if (c->state == C_FLUSHING)
        client_kill(c);
    else if (c->state == C_EXCHANGING && c->ub)
        bufferevent_enable(c->ub, EV_READ); /* the client caught up */
}

static void on_client_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what;
    struct client *c = arg;
    if (c->state == C_EXCHANGING && c->ub) {
        c->px->stats.aborted++;
        if (client_orphan(c))
            return;
    }
    client_kill(c);
}

/* The client left mid-exchange: when no response byte came yet, or what
 * is left of a body by length is small, the response is read to its end
 * for nobody (within a second) and the connection released whole, rather
 * than reconnecting (a load generator stopping drops every exchange in
 * flight). Returns false when it is not worth it. */
static bool client_orphan(struct client *c)
{
    bool small =
        !c->head_sent || (c->resp_parser.content_length != ULLONG_MAX &&
                          !(c->resp_parser.flags & F_CHUNKED) &&
                          c->resp_parser.content_length <= ORPHAN_MAX);
    if (!small || !(c->sink = evbuffer_new()))
        return false;
    c->orphan = true;
    c->px->stats.orphans++;
    bufferevent_free(c->bev);
    c->bev = NULL;
    struct timeval second = {.tv_sec = 1};
    bufferevent_set_timeouts(c->ub, &second, NULL);
    bufferevent_enable(c->ub, EV_READ);
    return true;
}

/* Ends the client now (its upstream connection, if any, is discarded:
 * half a response may be in it) and frees it from the loop. */
static void client_kill(struct client *c)
{
    if (c->state == C_DEAD)
        return;
    c->state = C_DEAD;
    if (c->acquiring)
        tide_group_cancel(c->acquiring, false);
    c->acquiring = NULL;
    give_back(c, false);
    if (c->bev) {
        bufferevent_disable(c->bev, EV_READ | EV_WRITE);
        bufferevent_setcb(c->bev, NULL, NULL, NULL, NULL);
    }
    event_active(&c->reap, EV_TIMEOUT, 0);
}

static void on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    client_free(arg);
}

static void client_free(struct client *c)
{
    if (c->acquiring)
        tide_group_cancel(c->acquiring, false);
    /* a response cut short leaves bytes in the upstream connection */
    give_back(c, false);
    if (c->prev)
        c->prev->next = c->next;
    else
        c->px->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->px->stats.clients--;
    event_del(&c->reap);
    if (c->bev)
        bufferevent_free(c->bev);
    if (c->sink)
        evbuffer_free(c->sink);
    evbuffer_free(c->pending);
    headers_dispose(&c->req_headers);
    headers_dispose(&c->resp_headers);
    free(c->url);
    free(c->reason);
    evbuffer_free(c->req);
    evbuffer_free(c->req_body);
    free(c);
}

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
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, c->peer,
                  sizeof c->peer);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, c->peer,
                  sizeof c->peer);
    c->bev = bufferevent_socket_new(px->base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->req = evbuffer_new();
    c->req_body = evbuffer_new();
    c->pending = evbuffer_new();
    if (!c->bev || !c->req || !c->req_body || !c->pending) {
        if (c->bev)
            bufferevent_free(c->bev);
        else
            evutil_closesocket(fd);
        evbuffer_free(c->req);
        evbuffer_free(c->req_body);
        if (c->pending)
            evbuffer_free(c->pending);
        free(c);
        return;
    }
    http_parser_init(&c->req_parser, HTTP_REQUEST);
    c->req_parser.data = c;
    event_assign(&c->reap, px->base, -1, 0, on_reap, c);
    c->next = px->clients;
    if (px->clients)
        px->clients->prev = c;
    px->clients = c;
    px->stats.clients++;
    bufferevent_setcb(c->bev, on_client_read, on_client_write, on_client_event,
                      c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
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
    px->response_timeout =
        opt.response_timeout ? opt.response_timeout : TIDE_SEC(30);
    px->max_body = opt.max_body ? opt.max_body : (size_t)64 << 20;
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)opt.listen_port)};
    if (inet_pton(AF_INET, opt.listen_host ? opt.listen_host : "127.0.0.1",
                  &sin.sin_addr) != 1) {
        free(px);
        return -1;
    }
    px->listener = evconnlistener_new_bind(
        base, on_accept, px, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
        (struct sockaddr *)&sin, sizeof sin);
    if (!px->listener) {
        free(px);
        return -1;
    }
    struct sockaddr_in bound;
    socklen_t bl = sizeof bound;
    getsockname(evconnlistener_get_fd(px->listener), (struct sockaddr *)&bound,
                &bl);
    px->port = ntohs(bound.sin_port);
    *out = px;
    return 0;
}

int px_port(const struct px *p)
{
    return p->port;
}

void px_free(struct px *p)
{
    if (!p)
        return;
    while (p->clients)
        client_free(p->clients);
    evconnlistener_free(p->listener);
    free(p);
}

void px_stats(const struct px *p, struct px_stats *out)
{
    *out = p->stats;
}
