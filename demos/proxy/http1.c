/* The HTTP/1.1 upstream exchange on a lent connection: the request's head
 * built for the upstream and written (straight to a plain socket when
 * nothing waits before it), its body and trailers after it, the response
 * read (a plain socket by the proxy itself, TLS through the bufferevent),
 * checked, and relayed to the client framed for it, the upstream's
 * reading paused while a slow client catches up. */
#include "proxy_internal.h"
#include "target.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* The upstream's reading, stopped while a slow client catches up. */
bool px__upstream_paused(struct client *c)
{
    if (c->h2_exchange)
        return px__h2_paused(c);
    return c->raw ? !event_pending(&c->urd, EV_READ, NULL)
                  : !(bufferevent_get_enabled(c->ub) & EV_READ);
}

void px__upstream_pause(struct client *c)
{
    if (px__upstream_paused(c))
        return;
    c->px->stats.paused++;
    if (c->raw)
        event_del(&c->urd);
    else
        bufferevent_disable(c->ub, EV_READ);
}

/* Reading again, with tv as the upstream's allowed silence. */
void px__upstream_resume(struct client *c, const struct timeval *tv)
{
    if (c->h2_exchange) {
        px__h2_caught_up(c);
        return;
    }
    if (c->raw) {
        event_add(&c->urd, tv);
        return;
    }
    bufferevent_set_timeouts(c->ub, tv, NULL);
    bufferevent_enable(c->ub, EV_READ);
}

/* Appends the Host an absolute-form target names. */
static void add_authority(struct px_buf *b, const struct px_target *t)
{
    px_buf_add(b, "Host: ", 6);
    px_buf_add(b, t->authority, t->authority_len);
    px_buf_add(b, "\r\n", 2);
}

/* The request's head as it goes upstream to c->up, framed as the client
 * framed its body (a length, or chunked: it streams). Built once the
 * upstream is known, as an HTTP/1.0 request may have no Host and HTTP/1.1
 * requires one: the upstream's own is given then. A target in absolute-form
 * goes in origin-form, its authority as the Host in place of the one that
 * came (RFC 9112 3.2.2). On a retry, what went of the body before follows
 * it. */
static void build_request(struct client *c)
{
    struct px_buf *r = &c->req;
    const struct headers *hs = &c->req_headers;
    const char *url = px__client_url(c);
    struct px_target t;
    bool absolute = url && px__target_split(url, &t) == PX_TARGET_ABSOLUTE;
    px_buf_clear(r);
    px_buf_adds(r, http_method_str((enum http_method)c->method));
    px_buf_add(r, " ", 1);
    if (absolute && t.path[0] != '/')
        px_buf_add(r, "/", 1);
    px_buf_adds(r, absolute ? t.path : url ? url : "/");
    px_buf_add(r, " HTTP/1.1\r\n", 11);
    const struct headers *connection = c->req_connection;
    size_t xff_at = 0, xff_n = 0; /* the client's X-Forwarded-For lines */
    bool host = false;
    for (size_t i = 0; i < hs->n; i++) {
        const char *name = px__header_name(hs, i);
        /* Host and X-Forwarded-For are the proxy's to set, whatever the
         * client's Connection lists: Host is the authority of the target
         * (RFC 9112 3.2), a field for every recipient, which RFC 9110
         * 7.6.1 forbids as a connection option; "Connection: host" had
         * the upstream's name sent instead, another target than the
         * client's. The client's X-Forwarded-For chain goes on before
         * its address, as when no Connection names it. */
        if (!host && strcasecmp(name, "host") == 0) {
            host = true;
            if (absolute)
                add_authority(r, &t);
            else
                px__add_header(r, name, px__header_value(hs, i));
            continue;
        }
        if (strcasecmp(name, "x-forwarded-for") == 0) {
            if (xff_n++ == 0)
                xff_at = i;
            continue;
        }
        if (px__hop_by_hop(connection, name))
            continue;
        if (strcasecmp(name, "expect") == 0)
            continue; /* answered by the proxy */
        px__add_header(r, name, px__header_value(hs, i));
    }
    if (!host && absolute) {
        add_authority(r, &t);
    } else if (!host && c->up) {
        const char *name = tide_group_upstream_name(c->up);
        px__add_header(r, "Host",
                       strncmp(name, "tls://", 6) == 0 ? name + 6 : name);
    }
    /* every line of the client's chain, in order, as one list (RFC 9110
     * 5.3): the last line alone went on, the addresses before it lost */
    px_buf_add(r, "X-Forwarded-For: ", 17);
    for (size_t i = xff_at; xff_n > 0; i++)
        if (i == xff_at ||
            strcasecmp(px__header_name(hs, i), "x-forwarded-for") == 0) {
            px_buf_adds(r, px__header_value(hs, i));
            px_buf_add(r, ", ", 2);
            xff_n--;
        }
    px_buf_adds(r, c->peer);
    px_buf_add(r, "\r\n", 2);
    if (c->req_chunked) {
        px_buf_add(r, "Transfer-Encoding: chunked\r\n", 28);
    } else if (c->req_length != ULLONG_MAX) {
        px_buf_add(r, "Content-Length: ", 16);
        px__add_uint(r, c->req_length);
        px_buf_add(r, "\r\n", 2);
    }
    px_buf_add(r, "\r\n", 2);
    px_buf_add(r, px_buf_data(&c->retry_body), px_buf_size(&c->retry_body));
}

/* The last chunk, and the trailer fields the client sent, as trailers
 * (RFC 9112 7.1.2), but for those a proxy controls, which never come from
 * a trailer: Host, the framing (Content-Length, Transfer-Encoding), the
 * hop-by-hop ones and those the head's Connection names, Expect and
 * X-Forwarded-For. Nothing else in them is new to the upstream: a client
 * may send any other field in its head. */
void px__trailers_out(struct client *c)
{
    if (c->h2_exchange)
        return; /* a HEADERS frame after the body (h2.c read_body) */
    const struct headers *ts = &c->req_trailers;
    const struct headers *connection = c->req_connection;
    px_buf_add(&c->req, "0\r\n", 3);
    for (size_t i = 0; i < ts->n; i++) {
        const char *name = px__header_name(ts, i);
        if (!px__hop_by_hop(connection, name) &&
            strcasecmp(name, "host") != 0 && strcasecmp(name, "expect") != 0 &&
            strcasecmp(name, "x-forwarded-for") != 0)
            px__add_header(&c->req, name, px__header_value(ts, i));
    }
    px_buf_add(&c->req, "\r\n", 2);
}

/* ---- the response, from the upstream ---- */

static int rs_begin(http_parser *p)
{
    struct client *c = p->data;
    px__headers_clear(&c->resp_headers);
    c->reason = NO_VALUE;
    c->resp_refused = NULL;
    c->resp_name_space = false;
    return 0;
}

static int rs_status(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    if (c->reason == NO_VALUE)
        c->reason = px__text_start(&c->resp_headers, at, len);
    else
        px__text_continue(&c->resp_headers, at, len); /* the last string */
    return 0;
}

static int rs_field(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    px__headers_field(&c->resp_headers, at, len);
    if (memchr(at, ' ', len))
        c->resp_name_space = true; /* rs_headers_done sees to it */
    return 0;
}

static int rs_value(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    /* libhttp-parser checks a value's bytes but its first (RFC 9110 5.5
     * allows no control character but HTAB in any): relayed, it is one
     * more parser's to read another way */
    for (size_t i = 0; i < len; i++) {
        if (at[i] != '\t' && px__is_control(at[i])) {
            c->resp_refused = "a response header field's value with a "
                              "control character";
            return -1;
        }
    }
    px__headers_value(&c->resp_headers, at, len);
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
    /* libhttp-parser takes "20" for a status; RFC 9110 15 has three
     * digits, and a client reading a relayed "20" loses count of the
     * final answers (a status below 200 is not one) */
    if (status < 100) {
        c->resp_refused = "a status code of fewer than three digits";
        return -1;
    }
    if (status == 503 && px__fail_over_ok(c)) { /* failover.c */
        c->fail_over = true;
        c->resp_refused = "the upstream answered 503";
        return -1;
    }
    if (c->resp_name_space && !px__headers_trim_names(&c->resp_headers)) {
        c->resp_refused = "a response header field's name with a space "
                          "inside it, or of spaces only";
        return -1;
    }
    bool head = c->method == HTTP_HEAD;
    bool no_body = head || no_body_status(status);
    bool has_length =
        p->content_length != ULLONG_MAX && !(p->flags & F_CHUNKED);
    const struct headers *hs = &c->resp_headers;
    /* an HTTP/1.0 client cannot read an interim response (RFC 9110 15.2):
     * it gets the final one alone */
    if (status >= 100 && status < 200 && c->req_minor == 0 &&
        c->req_parser.http_major == 1)
        return 1;
    struct px_buf *out = px__client_out(c);
    px_buf_add(out, "HTTP/1.1 ", 9);
    px__add_uint(out, status);
    px_buf_add(out, " ", 1);
    px_buf_adds(out, px__text_at(hs, c->reason));
    px_buf_add(out, "\r\n", 2);
    const struct headers *connection = px__connection_names(&c->resp_headers);
    for (size_t i = 0; i < hs->n; i++) {
        const char *name = px__header_name(hs, i);
        if (!px__hop_by_hop(connection, name))
            px__add_header(out, name, px__header_value(hs, i));
    }
    /* a body read until close, or from an HTTP/1.0 upstream without
     * keep-alive, ends the upstream connection */
    c->upstream_reusable = http_should_keep_alive(p);
    if (c->orphan && !no_body && !(status >= 100 && status < 200) &&
        (!has_length || p->content_length > ORPHAN_MAX))
        return -1; /* not worth reading for nobody: discard */
    if (status >= 100 && status < 200) {
        px_buf_add(out, "\r\n", 2);
        return 1;
    }
    c->chunked_out = false;
    if (no_body) {
        /* HEAD and 304 describe the body they would have had */
        const char *cl = px__headers_get(hs, "content-length");
        if (cl && status != 204)
            px__add_header(out, "Content-Length", cl);
    } else if (has_length) {
        px_buf_add(out, "Content-Length: ", 16);
        px__add_uint(out, p->content_length);
        px_buf_add(out, "\r\n", 2);
    } else if (c->req_minor >= 1 || c->req_parser.http_major > 1) {
        px_buf_add(out, "Transfer-Encoding: chunked\r\n", 28);
        c->chunked_out = true;
    } else {
        c->close_client = true; /* an HTTP/1.0 client: until close */
    }
    if (!c->req_keep_alive)
        c->close_client = true;
    px_buf_adds(out, px__connection_line(c, c->close_client));
    px_buf_add(out, "\r\n", 2);
    c->head_sent = true;
    /* 1: the parser expects no body. libhttp-parser reads one by a
     * Content-Length whatever the status, but 1xx, 204 and 304 (as any
     * answer to HEAD) end at their head (RFC 9112 6.3): a 304's length is
     * the body it describes, and reading it would wait for bytes that are
     * the next response's, or never come */
    return no_body ? 1 : 0;
}

/* Response bytes queued for a slow client at most before the upstream is
 * no longer read: a client that reads slowly holds one connection, not the
 * whole response in memory. Reading resumes once the client took it. */
#define OUTPUT_HIGH (256 * 1024)

static int rs_body(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    struct px_buf *out = px__client_out(c);
    if (px__client_queued(c) + len > OUTPUT_HIGH && c->ub && !c->orphan)
        px__upstream_pause(c);
    if (c->chunked_out) {
        px__add_hex(out, len);
        px_buf_add(out, "\r\n", 2);
        px_buf_add(out, at, len);
        px_buf_add(out, "\r\n", 2);
    } else {
        px_buf_add(out, at, len);
    }
    return 0;
}

static int rs_complete(http_parser *p)
{
    struct client *c = p->data;
    c->resp_chunks_on = false; /* a message's, not the next one's */
    if (p->status_code >= 100 && p->status_code < 200 && p->status_code != 101)
        return 0; /* an interim response: the real one follows */
    if (c->chunked_out)
        px_buf_add(px__client_out(c), "0\r\n\r\n", 5);
    c->resp_done = true;
    http_parser_pause(p, 1);
    return 0;
}

/* The head is in and answered (rs_headers_done): a chunked body that
 * follows is checked before the parser reads it (chunk_scan), so the
 * parser stops here. */
static int rs_head(http_parser *p)
{
    struct client *c = p->data;
    int rc = rs_headers_done(p);
    if (rc == 0 && (p->flags & F_CHUNKED)) {
        px__chunk_scan_init(&c->resp_chunks, UINT64_MAX);
        c->resp_chunks_on = true;
        http_parser_pause(p, 1);
    }
    return rc;
}

static const http_parser_settings response_settings = {
    .on_message_begin = rs_begin,
    .on_status = rs_status,
    .on_header_field = rs_field,
    .on_header_value = rs_value,
    .on_headers_complete = rs_head,
    .on_body = rs_body,
    .on_message_complete = rs_complete,
};

/* Parses what the upstream sent, a chunked body only as far as its
 * framing is checked. A bad response fails the exchange (exchange_failed:
 * the connection discarded); what this call queued of it for the client
 * is taken back when none of the response had been sent yet, so the
 * client gets a 502 rather than half an answer. */
static void upstream_parse(struct client *c)
{
    struct evbuffer *in = c->raw ? NULL : bufferevent_get_input(c->ub);
    size_t len = c->raw ? px_buf_size(&c->uin) : evbuffer_get_length(in);
    if (len == 0)
        return;
    c->any_byte = true;
    const char *data = c->raw ? px_buf_data(&c->uin)
                              : (const char *)evbuffer_pullup(in, (ssize_t)len);
    bool head_was_sent = c->head_sent;
    size_t queued = px_buf_size(&c->out);
    size_t used = 0;
    enum http_errno err = HPE_OK;
    const char *bad = NULL; /* the chunked framing's fault */
    while (used < len && !c->resp_done) {
        size_t feed = len - used;
        bool scanned = c->resp_chunks_on;
        if (scanned) {
            int v = px__chunk_scan(&c->resp_chunks, data + used, feed);
            if (v > 1) {
                bad = c->resp_chunks.why;
                break;
            }
            feed = c->resp_chunks.ok;
        }
        size_t n =
            feed ? http_parser_execute(&c->resp_parser, &response_settings,
                                       data + used, feed)
                 : 0;
        used += n;
        if (scanned)
            px__chunk_scan_consumed(&c->resp_chunks, n);
        err = HTTP_PARSER_ERRNO(&c->resp_parser);
        if (err == HPE_PAUSED) {
            err = HPE_OK;
            if (!c->resp_done) {
                /* stopped in rs_head, at the head's last LF, which it
                 * reads again: that byte, then the body's check */
                http_parser_pause(&c->resp_parser, 0);
                used += http_parser_execute(&c->resp_parser, &response_settings,
                                            data + used, 1);
            }
            continue;
        }
        if (err != HPE_OK || n == 0)
            break; /* a fault, or more to come */
    }
    if (c->raw)
        px_buf_consume(&c->uin, used);
    else
        evbuffer_drain(in, used);
    if (c->orphan)
        px_buf_clear(&c->out); /* for nobody */
    if (err != HPE_OK || bad) {
        if (c->orphan && err == HPE_CB_headers_complete) {
            px__client_kill(c); /* rs_headers_done: not worth reading */
            return;
        }
        if (!head_was_sent && !c->orphan) {
            px_buf_truncate(&c->out, queued);
            c->head_sent = false;
        }
        if (c->fail_over && !bad) {
            px__exchange_elsewhere(c, c->resp_refused);
            return;
        }
        char why[160];
        if (bad)
            snprintf(why, sizeof why, "a malformed chunked response: %s", bad);
        px__exchange_failed(c, bad               ? why
                               : c->resp_refused ? c->resp_refused
                                                 : http_errno_description(err));
        return;
    }
    if (!c->resp_done)
        return;
    /* bytes after the response to our one request: the upstream's fault.
     * A response that came before the whole request went (a 403 to an
     * upload) served, but the rest of the request would go ahead of the
     * next one: retired, not released (which would be refused, a failure
     * to the breaker); the rest of its body is read for nobody */
    bool unsent = !c->req_complete ||
                  evbuffer_get_length(bufferevent_get_output(c->ub)) > 0;
    px__give_back(c, len != used                       ? GIVE_DISCARD
                     : c->upstream_reusable && !unsent ? GIVE_RELEASE
                                                       : GIVE_RETIRE);
    c->px->stats.responses++;
    px__client_next(c);
}

static void on_upstream_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct client *c = arg;
    upstream_parse(c);
    if (c->state != C_DEAD)
        px__client_flush(c);
}

static void upstream_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct client *c = arg;
    if (what & BEV_EVENT_TIMEOUT) {
        if (c->orphan) {
            px__client_kill(c); /* the second the proxy gave it ran out */
            return;
        }
        px__give_back(c, GIVE_DISCARD);
        if (c->head_sent) {
            c->px->stats.aborted++;
            px__client_kill(c);
            return;
        }
        c->px->stats.errors_504++;
        px__client_write_error(c, 504, "Gateway Timeout", NULL,
                               "the upstream did not answer in time");
        px__client_next(c);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        upstream_parse(c);
        if (c->state != C_EXCHANGING || !c->ub)
            return; /* finished (or failed) on the bytes before the close */
        /* EOF ends a body read until close; a reset or a read error cuts
         * it, and the client must see it cut, not ended */
        if (!(what & BEV_EVENT_ERROR))
            http_parser_execute(&c->resp_parser, &response_settings, NULL, 0);
        if (c->resp_done) {
            px__give_back(c, GIVE_RETIRE); /* a body until close: served */
            c->px->stats.responses++;
            px__client_next(c);
            return;
        }
        px__exchange_failed(c, "the upstream closed the connection");
    }
}

static void on_upstream_event(struct bufferevent *bev, short what, void *arg)
{
    struct client *c = arg;
    upstream_event(bev, what, c);
    if (c->state != C_DEAD)
        px__client_flush(c);
}

/* A raw upstream's socket is readable, or was silent for response_tv. */
static void on_upstream_readable(evutil_socket_t fd, short what, void *arg)
{
    struct client *c = arg;
    if (what & EV_TIMEOUT) {
        upstream_event(c->ub, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, c);
    } else {
        /* as much as there is room for: level-triggered, the loop comes
         * back for the rest */
        px_buf_reserve(&c->uin, 16384);
        size_t room = c->uin.cap - c->uin.len;
        ssize_t n = recv(fd, c->uin.p + c->uin.len, room, 0);
        c->drained = n >= 0 && (size_t)n < room;
        if (n < 0 &&
            (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (n > 0) {
            c->uin.len += (size_t)n;
            upstream_parse(c);
        } else {
            upstream_event(c->ub,
                           BEV_EVENT_READING |
                               (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR),
                           c);
        }
    }
    if (c->state != C_DEAD)
        px__client_flush(c);
}

/* Writes to the upstream: straight to its socket when nothing is queued
 * before it on plain TCP, as the client's answers are; a TLS bufferevent's
 * socket carries records, so it writes through it, and the bufferevent
 * writes what the socket did not take (and finds a failure doing so). */
void px__upstream_write(struct client *c, const char *p, size_t n)
{
    if (c->h2_exchange) {
        px__h2_write(c, p, n);
        return;
    }
    size_t sent = 0;
    if (!bufferevent_openssl_get_ssl(c->ub) &&
        evbuffer_get_length(bufferevent_get_output(c->ub)) == 0) {
        ssize_t k = send(bufferevent_getfd(c->ub), p, n, MSG_NOSIGNAL);
        sent = k > 0 ? (size_t)k : 0;
    }
    if (sent < n)
        bufferevent_write(c->ub, p + sent, n - sent);
}

/* The whole request is with the upstream: its silence counts from now
 * (response_tv). While the body was still coming from the client the
 * upstream had nothing to answer; a write timeout bounded one that stopped
 * taking it. */
void px__upstream_await(struct client *c)
{
    if (c->h2_exchange) {
        px__h2_more(c); /* the body's end may go */
        return;
    }
    if (c->awaiting)
        return;
    c->awaiting = true;
    if (px__upstream_paused(c))
        return; /* upstream_resume sets it */
    if (c->raw)
        event_add(&c->urd, &c->px->response_tv);
    else
        bufferevent_set_timeouts(c->ub, &c->px->response_tv,
                                 &c->px->response_tv);
}

/* The upstream took what was queued for it: more of the body may go. */
static void on_upstream_written(struct bufferevent *bev, void *arg)
{
    (void)bev;
    px__client_pump(arg);
}

void px__send_upstream(struct client *c)
{
    build_request(c);
    http_parser_init(&c->resp_parser, HTTP_RESPONSE);
    c->resp_parser.data = c;
    c->any_byte = false;
    c->head_sent = false;
    c->resp_done = false;
    c->chunked_out = false;
    c->resp_chunks_on = false;
    /* Only when not enabled already (a connection is lent enabled):
     * libevent adds the write event on every enable, whatever is queued,
     * so each request would cost two epoll_ctl and a wake-up to find
     * nothing to write. */
    short both = EV_READ | EV_WRITE;
    if ((bufferevent_get_enabled(c->ub) & both) != both)
        bufferevent_enable(c->ub, both);
    c->drained = false;
    c->raw = !bufferevent_openssl_get_ssl(c->ub) &&
             evbuffer_get_length(bufferevent_get_input(c->ub)) == 0;
    /* a body to come: the upstream's silence counts once it is all there
     * (upstream_await), its taking it meanwhile, and each time it took
     * what was queued more goes (on_upstream_written) */
    bool whole = c->req_complete || !px__request_has_body(c);
    c->awaiting = whole;
    const struct timeval *silence = whole ? &c->px->response_tv : NULL;
    bufferevent_data_cb written = whole ? NULL : on_upstream_written;
    if (c->raw) {
        /* ours added before the bufferevent's read event is removed: the
         * descriptor's read interest stays in epoll, no epoll_ctl */
        event_assign(&c->urd, c->px->base, bufferevent_getfd(c->ub),
                     EV_READ | EV_PERSIST, on_upstream_readable, c);
        event_add(&c->urd, silence);
        bufferevent_disable(c->ub, EV_READ);
        bufferevent_setcb(c->ub, NULL, written, on_upstream_event, c);
        if (!whole)
            bufferevent_set_timeouts(c->ub, NULL, &c->px->response_tv);
    } else {
        bufferevent_setcb(c->ub, on_upstream_read, written, on_upstream_event,
                          c);
        bufferevent_set_timeouts(c->ub, silence,
                                 whole ? NULL : &c->px->response_tv);
    }
    px__go_ahead(c);
    /* one write for the head (and on a retry what went of the body) */
    px__upstream_write(c, px_buf_data(&c->req), px_buf_size(&c->req));
    px_buf_clear(&c->req);
}
