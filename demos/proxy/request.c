/* The request from the client: parsed as far as its state lets it (its
 * head checked whole first, a chunked body as far as its framing is
 * checked), refused, answered here (the stats page), or started upstream
 * (exchange.c) with its body passed on a bounded piece at a time and kept
 * for a retry while one may come. */
#include "proxy_internal.h"
#include "stats.h"
#include "target.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char too_many_fields[] =
    "more than " DIGITS(FIELDS_MAX) " header fields in the request";

/* ---- the request, from the client ---- */

static int rq_begin(http_parser *p)
{
    struct client *c = p->data;
    px__headers_clear(&c->req_headers);
    px__headers_clear(&c->req_trailers);
    c->url = NO_VALUE;
    c->req_complete = false;
    c->req_too_big = false;
    c->refused = NULL;
    c->req_begun = true;
    c->req_head_parsed = false;
    c->continue_sent = false;
    /* answered before its head is in: as a GET, with a body */
    c->method = HTTP_GET;
    return 0;
}

static int rq_url(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    if (c->url == NO_VALUE)
        c->url = px__text_start(&c->req_headers, at, len);
    else
        px__text_continue(&c->req_headers, at, len); /* the last string */
    return 0;
}

/* A chunked body's trailer fields (RFC 9112 7.1.2) are kept apart,
 * never merged into the head: the parser hands them over as it does the
 * head's, and a trailer named Host went upstream as a second Host. They
 * go upstream as trailers (trailers_out). */
static struct headers *rq_fields(struct client *c)
{
    return c->req_head_parsed ? &c->req_trailers : &c->req_headers;
}

static int rq_field(http_parser *p, const char *at, size_t len)
{
    px__headers_field(rq_fields(p->data), at, len);
    return 0;
}

static int rq_value(http_parser *p, const char *at, size_t len)
{
    px__headers_value(rq_fields(p->data), at, len);
    return 0;
}

static int rq_headers_done(http_parser *p)
{
    struct client *c = p->data;
    c->method = p->method; /* its 400 too is framed for it */
    c->refused_status = 400;
    /* RFC 9112 2.3: this connection speaks HTTP/1.x. libhttp-parser
     * takes "HTTP/2.0" or "HTTP/0.9" (and, built without
     * HTTP_PARSER_STRICT, "HVTQ/2.0"), and the request went upstream as
     * an HTTP/1.1 one, where an HTTP/1.0 one with Transfer-Encoding is
     * refused: 505 for the version (RFC 9110 15.6.6; nginx's answer too) */
    if (p->http_major != 1) {
        c->refused = "the request's HTTP version is not 1.x";
        c->refused_status = 505;
        return -1;
    }
    c->refused = px__head_refusal(c, p);
    if (c->refused)
        return -1; /* the parser stops: client_parse answers 400 */
    c->req_connection = px__connection_names(&c->req_headers);
    c->req_minor = p->http_minor;
    /* a draining proxy closes each client after the exchange it is in */
    c->req_keep_alive = http_should_keep_alive(p) && !c->px->draining;
    c->req_chunked = (p->flags & F_CHUNKED) != 0;
    c->req_length = c->req_chunked ? ULLONG_MAX : p->content_length;
    c->req_head_parsed = true;
    /* its framing is checked before the parser reads on, and its size as
     * it grows: 413 once the chunks announce more than max_body */
    if (c->req_chunked)
        px__chunk_scan_init(&c->chunks, c->px->max_body);
    /* a length past max_body is refused as soon as the head is in
     * (request_head), with no go-ahead: the client need not send it */
    c->req_too_big =
        c->req_length != ULLONG_MAX && c->req_length > c->px->max_body;
    /* the go-ahead is the proxy's to give (go_ahead), once it is ready
     * for the body; Expect itself does not go upstream */
    const char *expect = px__headers_get(&c->req_headers, "expect");
    c->expects_continue =
        expect && strcasecmp(expect, "100-continue") == 0 && p->http_minor >= 1;
    /* the head is in: what becomes of the body is decided before the
     * parser reads on (request_head) */
    http_parser_pause(p, 1);
    return 0;
}

/* A piece of the body: on its way upstream (body_flush) when it goes
 * there, chunked again when it came chunked (its extensions dropped);
 * else read for nobody (the proxy answers the request, or did). */
static int rq_body(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    if (c->state != C_EXCHANGING || !c->ub)
        return 0;
    struct px_buf *r = &c->req;
    bool chunked = c->req_chunked && !c->h2_exchange; /* HTTP/2 frames it */
    if (chunked) {
        px__add_hex(r, len);
        px_buf_add(r, "\r\n", 2);
    }
    px_buf_add(r, at, len);
    if (chunked)
        px_buf_add(r, "\r\n", 2);
    return 0;
}

static int rq_complete(http_parser *p)
{
    struct client *c = p->data;
    c->req_complete = true;
    c->req_begun = false;
    if (c->state == C_EXCHANGING && c->ub) {
        if (c->req_chunked)
            px__trailers_out(c);
        px__upstream_await(c); /* the whole request is with it */
    }
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

enum { STATS_NONE, STATS_JSON, STATS_PROMETHEUS };

/* Whether url is the stats page, /_tidepool/stats with a query or none,
 * and in which format (format=prometheus among the query's parameters);
 * any other path, /_tidepool/statsx included, goes upstream. */
static int stats_page(const char *url)
{
    static const char path[] = "/_tidepool/stats";
    size_t n = sizeof path - 1;
    struct px_target t;
    if (url && px__target_split(url, &t) == PX_TARGET_ABSOLUTE)
        url = t.path;
    if (!url || strncmp(url, path, n) != 0 || (url[n] && url[n] != '?'))
        return STATS_NONE;
    for (const char *q = url[n] ? url + n + 1 : NULL; q;) {
        const char *e = strchr(q, '&');
        size_t len = e ? (size_t)(e - q) : strlen(q);
        if (len == 17 && strncmp(q, "format=prometheus", 17) == 0)
            return STATS_PROMETHEUS;
        q = e ? e + 1 : NULL;
    }
    return STATS_JSON;
}

/* A request the proxy answered itself (the stats page, or its refusal):
 * the client's next request may follow, or the answer is flushed and the
 * connection closed. Returns false for the close. */
static bool answered_here(struct client *c)
{
    c->px->stats.responses++;
    if (!c->req_keep_alive) {
        c->state = C_FLUSHING;
        return false;
    }
    c->req_complete = false;
    return true;
}

/* The body that went into c->req, on to the upstream, and kept for a
 * retry while there may be one: an idempotent request not retried yet, no
 * response byte yet, and no more than RETRY_MAX of it (past that the
 * request will not be sent again, and what was kept is let go). */
static void body_flush(struct client *c)
{
    size_t n = px_buf_size(&c->req);
    if (n == 0)
        return;
    px__upstream_write(c, px_buf_data(&c->req), n);
    if (!c->retry_outgrown && !(c->retried && c->stale_retried) &&
        !c->any_byte && px__idempotent(c->method)) {
        if (px_buf_size(&c->retry_body) + n <= RETRY_MAX) {
            px_buf_add(&c->retry_body, px_buf_data(&c->req), n);
        } else {
            c->retry_outgrown = true;
            px_buf_dispose(&c->retry_body);
        }
    }
    px_buf_clear(&c->req);
}

/* Whether what the client sent can be parsed now: while a request is read
 * here (its head, or a body for nobody), and while its body goes to an
 * upstream that takes it (less than UPSTREAM_HIGH queued); not while a
 * connection is being got, nor once the request is whole and its exchange
 * goes on (what follows waits its turn). */
bool px__client_parsing(const struct client *c)
{
    if (c->state == C_READING)
        return true;
    if (c->state != C_EXCHANGING || c->req_complete || !c->ub)
        return false;
    if (c->h2_exchange)
        return px__h2_taking(c);
    return evbuffer_get_length(bufferevent_get_output(c->ub)) < UPSTREAM_HIGH;
}

bool px__request_has_body(const struct client *c)
{
    return c->req_chunked || (c->req_length != ULLONG_MAX && c->req_length);
}

/* The proxy is ready for the body: a client that waits for a go-ahead gets
 * it, once. Not before: a request refused or answered first never has its
 * body sent (RFC 9110 10.1.1). */
void px__go_ahead(struct client *c)
{
    if (c->expects_continue && !c->continue_sent && !c->req_complete &&
        px__request_has_body(c)) {
        px_buf_add(px__client_out(c), "HTTP/1.1 100 Continue\r\n\r\n", 25);
        c->continue_sent = true;
    }
}

/* The request's head is in (the parser stopped there). A length past the
 * limit gets 413 at once, a chunked body malformed in what came with the
 * head 400 before anything goes upstream; a request for the stats page is
 * answered here once its body was read for nobody; any other goes
 * upstream now, and its body after it as it comes. */
static void request_head(struct client *c)
{
    c->px->stats.requests++;
    if (c->req_too_big) {
        char why[96];
        snprintf(why, sizeof why,
                 "the request's body is larger than the proxy takes "
                 "(%zu bytes)",
                 c->px->max_body);
        px__client_refuse(c, 413, why);
        return;
    }
    if (c->req_chunked) {
        int v = px__chunk_scan(&c->chunks, px_buf_data(&c->in),
                               px_buf_size(&c->in));
        if (v > 1) {
            px__client_refuse(c, v, c->chunks.why);
            return;
        }
    }
    if (stats_page(px__client_url(c))) {
        px__go_ahead(c);
        return;
    }
    c->retried = false;
    c->stale_retried = false;
    c->retry_outgrown = false;
    c->fail_overs = 0;
    px_buf_clear(&c->retry_body);
    px__start_exchange(c);
}

/* Parses what the client sent, as far as the request's state lets it
 * (client_parsing): its head, checked whole first (head_scan); then its
 * body, a chunked one only as far as its framing is checked (chunk_scan),
 * going upstream a bounded piece at a time; then, once the request is
 * whole and answered, the next one. */
void px__client_parse(struct client *c)
{
    struct px_buf *in = &c->in;
    while (px_buf_size(in) > 0 && px__client_parsing(c)) {
        /* the parser sees a head only once it is checked whole */
        size_t feed = px_buf_size(in);
        bool head_checked = c->scan.done;
        if (!head_checked) {
            int v = px__head_scan(&c->scan, px_buf_data(in), feed);
            if (v > 1) {
                px__client_refuse(c, v,
                                  v == 400
                                      ? "a bare CR or LF, a folded line or "
                                        "space before a colon in the head"
                                  : v == 414 ? "the request line is too long"
                                  : c->scan.fields_n > FIELDS_MAX
                                      ? too_many_fields
                                      : "the request's head is too long");
                return;
            }
            if (v == 0)
                return; /* more to come */
            feed = c->scan.at;
        } else if (c->req_chunked) {
            /* and a chunked body only as far as its framing is checked */
            int v = px__chunk_scan(&c->chunks, px_buf_data(in), feed);
            if (v > 1) {
                px__client_refuse(c, v, c->chunks.why);
                return;
            }
            feed = c->chunks.ok;
        }
        if (c->state == C_EXCHANGING && feed > UPSTREAM_HIGH)
            feed = UPSTREAM_HIGH;
        if (feed == 0)
            return; /* more to come */
        size_t used = http_parser_execute(&c->req_parser, &request_settings,
                                          px_buf_data(in), feed);
        if (!head_checked && used < feed &&
            HTTP_PARSER_ERRNO(&c->req_parser) == HPE_PAUSED) {
            /* stopped in rq_headers_done, at the head's last LF, which it
             * reads again to finish the head: its own checks after the
             * callback (a Transfer-Encoding not ending in chunked), and
             * no byte of the body */
            http_parser_pause(&c->req_parser, 0);
            used += http_parser_execute(&c->req_parser, &request_settings,
                                        px_buf_data(in) + used, feed - used);
        }
        enum http_errno err = HTTP_PARSER_ERRNO(&c->req_parser);
        px_buf_consume(in, used);
        if (c->req_complete) {
            c->scan = (struct head_scan){0}; /* the next request's */
            event_del(&c->timer);            /* and its own deadline */
        } else if (!head_checked)
            c->scan.at -= used;
        else if (c->req_chunked)
            px__chunk_scan_consumed(&c->chunks, used);
        if (err == HPE_PAUSED) {
            http_parser_pause(&c->req_parser, 0);
            err = HPE_OK;
        }
        if (err != HPE_OK) {
            px__client_refuse(c, c->refused ? c->refused_status : 400,
                              c->refused ? c->refused
                                         : http_errno_description(err));
            return;
        }
        /* the whole head went in, yet libhttp-parser did not end it: it
         * reads "GET /x H" as an HTTP/0.9 line and waits. The request
         * went upstream built from nothing (no method, no length). */
        if (!head_checked && !c->req_head_parsed) {
            px__client_refuse(c, 400,
                              "the request line is not an HTTP/1.x one "
                              "(method, target and version)");
            return;
        }
        body_flush(c);
        if (!head_checked)
            request_head(c);
        if (!c->req_complete)
            continue;
        if (c->state != C_READING)
            return; /* whole upstream (or refused); what follows waits */
        if (c->req_answered) {
            /* its answer went before its end: on to the next */
            c->req_answered = false;
            c->req_complete = false;
            continue;
        }
        int page_kind = stats_page(px__client_url(c));
        if (page_kind && c->method != HTTP_GET && c->method != HTTP_HEAD) {
            px__client_write_error(c, 405, "Method Not Allowed",
                                   "Allow: GET, HEAD\r\n",
                                   "the stats page answers GET and HEAD");
            if (!answered_here(c))
                return;
            continue;
        }
        if (page_kind) {
            struct evbuffer *page = evbuffer_new();
            if (!page)
                abort();
            px__stats_page(c->px->group, &c->px->stats, page,
                           page_kind == STATS_PROMETHEUS,
                           px__connection_line(c, !c->req_keep_alive),
                           c->method == HTTP_HEAD);
            size_t n = evbuffer_get_length(page);
            px_buf_add(px__client_out(c), evbuffer_pullup(page, -1), n);
            evbuffer_free(page);
            if (!answered_here(c))
                return;
            continue;
        }
    }
}

bool px__idempotent(unsigned method)
{
    return method == HTTP_GET || method == HTTP_HEAD || method == HTTP_PUT ||
           method == HTTP_DELETE || method == HTTP_OPTIONS ||
           method == HTTP_TRACE;
}
