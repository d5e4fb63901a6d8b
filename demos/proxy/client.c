/* A client connection: its socket read and written by the proxy itself,
 * its timer, its answers of the proxy's own (errors, refusals), what
 * follows an exchange (the next request or the close), and its end (an
 * orphaned exchange read on for nobody, the client freed from the loop). */
#include "proxy_internal.h"

#include <errno.h>
#include <limits.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Where bytes for the client go (dropped by client_flush once it left). */
struct px_buf *px__client_out(struct client *c)
{
    return &c->out;
}

/* Bytes on their way to the client. */
size_t px__client_queued(struct client *c)
{
    return px_buf_size(&c->out);
}

const char *px__client_url(const struct client *c)
{
    return c->url == NO_VALUE ? NULL : c->req_headers.text.p + c->url;
}

/* A send failed: the client closed or reset. What that means depends on
 * the exchange (client_gone), decided from rd's callback. */
static void client_lost(struct client *c)
{
    px_buf_clear(&c->out);
    c->gone = true;
    event_active(&c->rd, EV_READ, 0);
}

/* Writes what the socket takes, at once (one send, and no write event to
 * add and remove when it takes all, the usual case); the rest waits for
 * the write event. Once the client took everything, an upstream whose
 * reading was paused for it resumes. */
static void client_send(struct client *c)
{
    while (px_buf_size(&c->out) > 0) {
        ssize_t n = send(c->fd, px_buf_data(&c->out), px_buf_size(&c->out),
                         MSG_NOSIGNAL);
        if (n > 0) {
            px_buf_consume(&c->out, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!event_pending(&c->wr, EV_WRITE, NULL))
                event_add(&c->wr, NULL);
            return;
        }
        client_lost(c);
        break;
    }
    if (event_pending(&c->wr, EV_WRITE, NULL))
        event_del(&c->wr);
    if (c->state == C_EXCHANGING && c->ub && px__upstream_paused(c))
        px__upstream_resume(c, &c->px->response_tv); /* the client caught up */
}

/* Sends what was gathered, unless the write event already waits to. */
void px__client_flush(struct client *c)
{
    if (c->orphan || c->fd < 0 || c->gone) {
        px_buf_clear(&c->out);
        return;
    }
    if (px_buf_size(&c->out) == 0 || event_pending(&c->wr, EV_WRITE, NULL))
        return;
    client_send(c);
}

/* The Connection header of an answer to the client: close when the
 * connection ends after it; keep-alive to an HTTP/1.0 client that keeps
 * it, as such a connection persists only when each answer says so (RFC
 * 9112 9.3); none otherwise, as HTTP/1.1's default is to keep it. */
const char *px__connection_line(const struct client *c, bool close)
{
    if (close)
        return "Connection: close\r\n";
    if (c->req_parser.http_major == 1 && c->req_minor == 0)
        return "Connection: keep-alive\r\n";
    return "";
}

void px__client_write_error(struct client *c, int status, const char *reason,
                            const char *extra_header, const char *body)
{
    struct px_buf *out = px__client_out(c);
    /* a client holding its body back for a go-ahead it never got will not
     * send it: the answer ends the connection */
    if (c->expects_continue && !c->continue_sent && !c->req_complete)
        c->req_keep_alive = false;
    px_buf_printf(out,
                  "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
                  "Content-Length: %zu\r\n%s%s\r\n",
                  status, reason, strlen(body) + 1,
                  extra_header ? extra_header : "",
                  px__connection_line(c, !c->req_keep_alive));
    /* an answer to HEAD ends at its head (RFC 9110 9.3.2): a client reads
     * no body after it, and would take this one for the next response */
    if (c->method != HTTP_HEAD)
        px_buf_printf(out, "%s\n", body);
}

/* Refuses the request being read with status (400, 408, 413, 414, 431,
 * 505) and why, and closes the client once that is written: what is left
 * of the request cannot be told from what would follow it. An exchange
 * its body was going to is abandoned (half a request in it, through no
 * fault of the upstream); a client that has (part of) its answer already
 * gets no other, the close says it. */
void px__client_refuse(struct client *c, int status, const char *why)
{
    bool cut = c->state == C_EXCHANGING && c->head_sent;
    if (cut)
        c->px->stats.aborted++;
    px__give_back(c, GIVE_ABANDON);
    c->req_keep_alive = false;
    if (!cut && !c->req_answered)
        px__client_write_error(c, status,
                               status == 408   ? "Request Timeout"
                               : status == 413 ? "Content Too Large"
                               : status == 414 ? "URI Too Long"
                               : status == 431
                                   ? "Request Header Fields Too Large"
                               : status == 505 ? "HTTP Version Not Supported"
                                               : "Bad Request",
                               NULL, why);
    c->state = C_FLUSHING;
}

/* The client's timer as its state wants it: while a request is read, a
 * deadline for the head from the moment the proxy is ready for it (bytes
 * do not push it back, so a head sent a byte at a time is bounded), then
 * for the body the allowed pause since the last read, also while the body
 * goes upstream; off otherwise, and while the upstream is not taking the
 * body (the wait is not the client's). Called after every read and every
 * change of state. */
static void client_timer(struct client *c)
{
    bool reading = c->state == C_READING ||
                   (c->state == C_EXCHANGING && px__client_parsing(c));
    if (!reading || c->orphan)
        event_del(&c->timer);
    else if (c->scan.done || !event_pending(&c->timer, EV_TIMEOUT, NULL))
        event_add(&c->timer, &c->px->client_tv);
}

static void client_finish(struct client *c);

/* A request did not come in time: 408 when one was begun, else (a client
 * idle between requests) a close. */
void px__on_client_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct client *c = arg;
    if (c->state != C_READING && c->state != C_EXCHANGING)
        return;
    if (c->state == C_READING && !c->scan.begun && !c->req_begun) {
        px__client_kill(c);
        return;
    }
    px__client_refuse(c, 408, "the request did not come in time");
    client_finish(c);
}

/* Closes the client once its output is written. */
static void client_finish(struct client *c)
{
    if (c->orphan) {
        px__client_kill(c);
        return;
    }
    c->state = C_FLUSHING;
    event_del(&c->rd);
    px__client_flush(c);
    if (px__client_queued(c) == 0 || c->gone)
        px__client_kill(c);
}

/* The response is out (or queued): the next request, or the end. */
void px__client_next(struct client *c)
{
    if (c->orphan || !c->req_keep_alive || c->close_client) {
        client_finish(c);
        return;
    }
    c->state = C_READING;
    /* the next request is answered as a GET until its head is parsed
     * (rq_begin): a 400 or 408 to a head that never parses went without
     * the body its Content-Length promised when the one before was a
     * HEAD, and the client read on into whatever came next */
    c->method = HTTP_GET;
    /* a body the exchange ended before: the rest is read for nobody */
    c->req_answered = !c->req_complete;
    c->req_complete = false;
    if (c->paused && event_add(&c->rd, NULL) == 0)
        c->paused = false;
    px__client_parse(c);
    if (c->state == C_FLUSHING)
        client_finish(c);
    if (c->state != C_DEAD)
        client_timer(c);
}

/* Reading the client again once what it sent ahead is used below
 * PIPELINED_MAX: the upstream took more of its body. */
static void client_resume(struct client *c)
{
    if (c->paused && (c->state == C_READING || c->state == C_EXCHANGING) &&
        px_buf_size(&c->in) < PIPELINED_MAX && event_add(&c->rd, NULL) == 0)
        c->paused = false;
}

/* Parses what the client sent as far as it can go now, then closes the
 * client if that refused it, or sets its timer, sends what is queued for
 * it and reads it again if it had stopped. */
void px__client_pump(struct client *c)
{
    px__client_parse(c);
    if (c->state == C_FLUSHING)
        client_finish(c);
    if (c->state == C_DEAD)
        return;
    client_timer(c);
    px__client_flush(c);
    client_resume(c);
}

/* ---- client connections ---- */

static bool client_orphan(struct client *c);

/* The client closed, reset or failed. */
static void client_gone(struct client *c)
{
    if (c->state == C_EXCHANGING && c->ub) {
        c->px->stats.aborted++;
        if (client_orphan(c))
            return;
    }
    px__client_kill(c);
}

void px__on_client_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct client *c = arg;
    if (c->gone) {
        client_gone(c);
        return;
    }
    /* pipelined requests behind an exchange, or a body its upstream is
     * not taking yet */
    if (c->state != C_READING && px_buf_size(&c->in) >= PIPELINED_MAX) {
        event_del(&c->rd); /* until client_resume or client_next; a send
                              failing still wakes it (client_lost) */
        c->paused = true;
        return;
    }
    /* one read a wake-up, as much as there is room for: level-triggered,
     * the loop comes back for the rest */
    px_buf_reserve(&c->in, 4096);
    ssize_t n = recv(fd, c->in.p + c->in.len, c->in.cap - c->in.len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        client_gone(c);
        return;
    }
    c->in.len += (size_t)n;
    px__client_pump(c);
}

void px__on_client_writable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct client *c = arg;
    client_send(c);
    if (c->state == C_FLUSHING && (px__client_queued(c) == 0 || c->gone))
        px__client_kill(c);
}

/* Closes the client's socket: an orphan reads on for nobody. */
static void client_close(struct client *c)
{
    event_del(&c->rd);
    event_del(&c->wr);
    if (c->fd >= 0)
        evutil_closesocket(c->fd);
    c->fd = -1;
}

/* The client left mid-exchange: when no response byte came yet, or what
 * is left of a body by length is small, the response is read to its end
 * for nobody (within a second) and the connection released whole, rather
 * than reconnecting (a load generator stopping drops every exchange in
 * flight). Returns false when it is not worth it. */
static bool client_orphan(struct client *c)
{
    if (!c->req_complete)
        return false; /* the upstream waits for a body that will not come */
    bool small =
        !c->head_sent || (c->resp_parser.content_length != ULLONG_MAX &&
                          !(c->resp_parser.flags & F_CHUNKED) &&
                          c->resp_parser.content_length <= ORPHAN_MAX);
    if (!small)
        return false;
    c->orphan = true;
    c->px->stats.orphans++;
    client_close(c);
    px_buf_clear(&c->out);
    struct timeval second = {.tv_sec = 1};
    px__upstream_resume(c, &second);
    return true;
}

/* Ends the client now (its upstream connection, if any, is abandoned:
 * half a response may be in it, and the upstream did nothing wrong; a
 * caller that saw the upstream fail discarded it first) and frees it from
 * the loop. */
void px__client_kill(struct client *c)
{
    if (c->state == C_DEAD)
        return;
    c->state = C_DEAD;
    if (c->acquiring)
        tide_group_cancel(c->acquiring, false);
    c->acquiring = NULL;
    px__give_back(c, GIVE_ABANDON);
    event_del(&c->rd);
    event_del(&c->wr);
    event_del(&c->timer);
    event_active(&c->reap, EV_TIMEOUT, 0);
}

void px__on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    px__client_free(arg);
}

void px__client_free(struct client *c)
{
    if (c->acquiring)
        tide_group_cancel(c->acquiring, false);
    /* a response cut short leaves bytes in the upstream connection; the
     * proxy is going away, not the upstream failing */
    px__give_back(c, GIVE_ABANDON);
    if (c->prev)
        c->prev->next = c->next;
    else
        c->px->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->px->stats.clients--;
    if (c->px->draining && !c->px->clients)
        event_active(&c->px->drained, EV_TIMEOUT, 0);
    event_del(&c->reap);
    event_del(&c->timer);
    client_close(c);
    px_buf_dispose(&c->in);
    px_buf_dispose(&c->out);
    px_buf_dispose(&c->req);
    px_buf_dispose(&c->retry_body);
    px_buf_dispose(&c->uin);
    px__headers_dispose(&c->req_headers);
    px__headers_dispose(&c->req_trailers);
    px__headers_dispose(&c->resp_headers);
    free(c);
}
