/* Shared connections: many callers' commands pipelined on one connection
 * (limits.streams above 1), following the pattern <tidepool/evloop.h>
 * sets out for shared loans.
 *
 * Each command or pipeline (a batch) holds one loan of its connection
 * from the moment it is lent until its last reply has been read. The
 * first loan of a connection opens a link beside it: the connection's
 * read side, its reader, the batches in the order their bytes went out,
 * and an output buffer. A batch lent joins the link's queue and appends
 * its RESP to the buffer; the buffer is written once per pass of the loop
 * (an event made active with the first batch of the pass), so what every
 * caller issued in one pass goes out in one write. What a read's callbacks
 * send again on plain TCP goes out at the end of that read instead, so the
 * server starts on it while the other connections' replies are read.
 * Redis answers a connection's commands in order: each reply goes to the
 * queue's head, and a batch whose last reply came ends its loan and is
 * answered (in that order while other loans hold the link; the link's
 * last loan ends after its callback, so a caller sending again keeps the
 * link). The last loan closes the link first (the pool's idle watch takes
 * the read side back), so a connection is read by exactly one owner at a
 * time.
 *
 * A command past its timeout is answered at once and stays in the queue
 * late: its replies, when they come, are read and dropped, and its loan
 * ends then. A connection owing more late replies than late_max is given
 * up (a server that stopped answering would otherwise keep every loan of
 * it forever), failing what it carries.
 *
 * A connection that breaks (EOF or a reset with replies owed, a write
 * error, a reply for nobody) is broken once for the pool
 * (tide_evpool_break) and every batch on it ends its loan: a batch any
 * byte of which was written may have run, and fails with the cause; one
 * still wholly in the output buffer never reached the server, and is
 * sent again on another connection. Over TLS the bytes go to the
 * bufferevent, which cannot say what reached the socket: all of them
 * count as written. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>

#include "redis_internal.h"

/* The most one raw read takes: replies larger come in several. */
#define LINK_READ 16384

struct tide__redis_link {
    struct tide__redis_link *prev, *next; /* the client's links */
    struct tide_redis_client *client;
    struct bufferevent *bev; /* lent: one loan per batch in the queue */
    evutil_socket_t fd;
    /* plain TCP: read and written by the link itself, one recv and one
     * writev a time (see command.c's raw); TLS through the bufferevent */
    bool raw;
    bool drained; /* raw: the last read came short of its room */
    bool broken;
    bool flushing;        /* wr is active, or waits for room (raw) */
    redisReader *reader;  /* owned */
    struct event rd;      /* raw: EV_READ, persistent */
    struct event wr;      /* the pass's write; raw: also waits for room */
    struct evbuffer *out; /* bytes not yet written; owned */
    uint64_t queued;      /* bytes ever put in out */
    uint64_t sent;        /* ... of them written */
    struct tide__redis_batch *head, *tail; /* in the order of their bytes */
    size_t n;    /* batches in the queue: the loans out */
    size_t late; /* ... of them late */
};

static void link_read(evutil_socket_t fd, short what, void *arg);
static void link_bev_read(struct bufferevent *bev, void *arg);
static void link_event(struct bufferevent *bev, short what, void *arg);
static void link_flush(evutil_socket_t fd, short what, void *arg);

/* The link of a connection lent shared, known by its event callback. */
static struct tide__redis_link *link_of(struct bufferevent *bev)
{
    bufferevent_event_cb event = NULL;
    void *arg = NULL;
    bufferevent_getcb(bev, NULL, NULL, &event, &arg);
    return event == link_event ? arg : NULL;
}

static struct tide__redis_link *link_open(struct tide_redis_client *c,
                                          struct bufferevent *bev)
{
    struct tide__redis_link *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->client = c;
    l->bev = bev;
    l->out = evbuffer_new();
    l->reader = tide__redis_reader_take(c);
    if (!l->out || !l->reader) {
        if (l->out)
            evbuffer_free(l->out);
        tide__redis_reader_give(c, l->reader, false);
        free(l);
        return NULL;
    }
    l->fd = bufferevent_getfd(bev);
    l->raw = l->fd >= 0 && !bufferevent_openssl_get_ssl(bev) &&
             evbuffer_get_length(bufferevent_get_input(bev)) == 0 &&
             evbuffer_get_length(bufferevent_get_output(bev)) == 0;
    if (l->raw) {
        /* ours added before the bufferevent's read event is removed: the
         * socket's read interest stays in epoll */
        event_assign(&l->rd, c->base, l->fd, EV_READ | EV_PERSIST, link_read,
                     l);
        event_add(&l->rd, NULL);
        bufferevent_disable(bev, EV_READ);
        bufferevent_setcb(bev, NULL, NULL, link_event, l);
        event_assign(&l->wr, c->base, l->fd, EV_WRITE, link_flush, l);
    } else {
        bufferevent_setcb(bev, link_bev_read, NULL, link_event, l);
        event_assign(&l->wr, c->base, -1, 0, link_flush, l);
    }
    TIDE_DEMO_LINK(&c->links, l);
    return l;
}

/* The link ends, its queue empty or taken: the read side goes back to
 * the bufferevent as it was lent (reading turned on only when the last
 * read left nothing in the socket: <tidepool/tls.h>), before the last
 * loan ends. */
static void link_close(struct tide__redis_link *l, bool clean)
{
    struct tide_redis_client *c = l->client;
    bufferevent_setcb(l->bev, NULL, NULL, NULL, NULL);
    if (l->raw) {
        if (clean && l->drained && !(bufferevent_get_enabled(l->bev) & EV_READ))
            bufferevent_enable(l->bev, EV_READ);
        event_del(&l->rd);
        event_debug_unassign(&l->rd);
    }
    event_del(&l->wr);
    event_debug_unassign(&l->wr);
    evbuffer_free(l->out);
    tide__redis_reader_give(c, l->reader, clean);
    TIDE_DEMO_UNLINK(&c->links, l);
    free(l);
}

static void push(struct tide__redis_link *l, struct tide__redis_batch *b)
{
    b->queued = NULL;
    if (l->tail)
        l->tail->queued = b;
    else
        l->head = b;
    l->tail = b;
    l->n++;
}

static struct tide__redis_batch *pop(struct tide__redis_link *l)
{
    struct tide__redis_batch *b = l->head;
    l->head = b->queued;
    if (!l->head)
        l->tail = NULL;
    b->queued = NULL;
    l->n--;
    if (b->late)
        l->late--;
    return b;
}

int tide__redis_link_attach(struct tide__redis_batch *b,
                            struct bufferevent *bev)
{
    struct tide_redis_client *c = b->client;
    struct tide__redis_link *l = link_of(bev);
    bool opened = !l;
    if (opened && !(l = link_open(c, bev)))
        return TIDE_ENOMEM;
    if (evbuffer_add(l->out, b->resp, b->len) != 0) {
        if (opened)
            link_close(l, false);
        return TIDE_ENOMEM;
    }
    b->link = l;
    b->from = l->queued;
    b->got = 0;
    l->queued += b->len;
    push(l, b);
    if (!l->flushing) {
        /* once a pass: every batch lent in this pass joins this write */
        l->flushing = true;
        event_active(&l->wr, EV_WRITE, 1);
    }
    return 0;
}

/* ---- failing ------------------------------------------------------------ */

/* The connection broke under its batches (code, message): broken once,
 * every loan ended, and each batch failed or sent again. */
static void link_fail(struct tide__redis_link *l, int code, const char *message)
{
    struct tide_redis_client *c = l->client;
    struct bufferevent *bev = l->bev;
    char text[320];
    /* the message may live in what is freed now (the reader's errstr) */
    snprintf(text, sizeof text, "%s",
             message ? message : tide_redis_strerror(code));
    if (tide_evpool_break(c->pool, bev) == 1)
        c->stats.discarded++;
    struct tide__redis_batch *q = l->head;
    uint64_t sent = l->sent;
    l->head = l->tail = NULL;
    l->n = l->late = 0;
    link_close(l, false);
    /* every loan ends first, with no callback between: the connection is
     * destroyed after the last */
    for (struct tide__redis_batch *b = q; b; b = b->queued) {
        b->link = NULL;
        (void)tide_evpool_discard(c->pool, bev);
    }
    while (q && !c->dying) {
        struct tide__redis_batch *b = q;
        q = b->queued;
        b->queued = NULL;
        if (b->late) {
            tide__redis_batch_drop(b);
        } else if (b->from >= sent && b->got == 0) {
            /* not a byte of it reached the server: another connection */
            b->moved = true;
            c->stats.moved++;
            int rc = tide__redis_batch_send(b);
            if (rc != 0)
                tide__redis_batch_fail(b, rc, NULL);
        } else {
            tide__redis_batch_fail(b, code, text);
        }
    }
    /* the client was freed from a callback: the rest are its to drop */
}

static void link_fail_event(struct tide__redis_link *l, short what)
{
    char text[256];
    int code = tide_net_event_error(l->bev, what, NULL, text, sizeof text);
    if (code == 0)
        code = TIDE_ECONN_BROKEN;
    link_fail(l, code, text);
}

void tide__redis_link_timeout(struct tide__redis_batch *b)
{
    struct tide__redis_link *l = b->link;
    struct tide_redis_client *c = b->client;
    b->timed = false;
    b->late = true;
    l->late++;
    c->stats.late++;
    while (b->done < b->n && !c->dying)
        tide__redis_answer(b, TIDE_REDIS_ETIMEDOUT, NULL, NULL);
    if (c->dying || l->late <= c->late_max)
        return;
    char text[128];
    snprintf(text, sizeof text,
             "the connection owed %zu late replies, past the %zu taken: "
             "given up",
             l->late, c->late_max);
    link_fail(l, TIDE_REDIS_ETIMEDOUT, text);
}

/* ---- replies ------------------------------------------------------------- */

/* b's last reply has been read (and answered): its loan ends. false when
 * the link is gone with it. */
static bool finish(struct tide__redis_link *l, struct tide__redis_batch *b)
{
    struct tide_redis_client *c = l->client;
    struct bufferevent *bev = l->bev;
    if (l->n == 1 && tide__redis_reader_holds(l->reader)) {
        /* the last loan, and bytes beyond its reply: asked for by nobody */
        link_fail(l, TIDE_REDIS_EPROTOCOL,
                  "bytes came beyond the replies asked for");
        return false;
    }
    (void)pop(l);
    tide__redis_batch_drop(b);
    if (l->n > 0) {
        (void)tide_evpool_release(c->pool, bev);
        return true;
    }
    link_close(l, true);
    (void)tide_evpool_release(c->pool, bev);
    return false;
}

/* A reply to b's next command: an error reply is TIDE_REDIS_EREPLY. */
static void answer_reply(struct tide__redis_batch *b, const redisReply *r)
{
    int status = r->type == REDIS_REPLY_ERROR ? TIDE_REDIS_EREPLY : 0;
    tide__redis_answer(b, status, r, status ? r->str : NULL);
}

/* b's last reply, on a link other loans hold: b's loan ends before its
 * callback runs, so a caller sending again from it finds the connection
 * carrying what it now carries. With spread, the connection whose replies
 * are being read is then the least busy, and what its callers send goes
 * back on it in one write; while b still counted, the first of them went
 * to another connection, one write more for most reads (at 50 callers on
 * 4 connections, 46,000 writes for 37,000 reads a 400,000 commands). The
 * last loan is kept through its callback instead (finish): a caller
 * sending again keeps the link open. The reply is freed here; b is
 * dropped unless the callback freed the client, whose batches are then
 * its own to drop. */
static void answer_released(struct tide__redis_link *l,
                            struct tide__redis_batch *b, redisReply *reply)
{
    struct tide_redis_client *c = l->client;
    (void)pop(l);
    b->link = NULL;
    (void)tide_evpool_release(c->pool, l->bev);
    answer_reply(b, reply);
    freeReplyObject(reply);
    if (!c->dying)
        tide__redis_batch_drop(b);
}

/* Hands every whole reply the reader holds to its batch. false when the
 * link is gone (failed, or its last loan ended) or the client is being
 * freed. */
static bool replies(struct tide__redis_link *l)
{
    struct tide_redis_client *c = l->client;
    for (;;) {
        void *reply = NULL;
        if (redisReaderGetReply(l->reader, &reply) != REDIS_OK) {
            char why[128];
            link_fail(l, TIDE_REDIS_EPROTOCOL,
                      tide__redis_reader_error(c, l->reader, why, sizeof why));
            return false;
        }
        if (!reply)
            return true;
        struct tide__redis_batch *b = l->head;
        if (!b || b->from >= l->sent) {
            /* a reply for no command written: the stream is not ours */
            freeReplyObject(reply);
            link_fail(l, TIDE_REDIS_EPROTOCOL,
                      "a reply came for no command sent");
            return false;
        }
        b->got++;
        if (!b->late && b->got == b->n && l->n > 1) {
            answer_released(l, b, reply);
            if (c->dying)
                return false;
            continue;
        }
        if (!b->late) {
            /* the batch's callbacks may send more: they join this link
             * while b still holds its loan (a reply before a pipeline's
             * last, or the link's last loan), so a caller sending again
             * from its callback keeps the connection it had */
            answer_reply(b, reply);
        } else {
            c->stats.late_replies++;
        }
        freeReplyObject(reply);
        if (c->dying)
            return false;
        if (b->got == b->n && !finish(l, b))
            return false;
    }
}

static void link_read(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct tide__redis_link *l = arg;
    struct tide_redis_client *c = l->client;
    char buf[LINK_READ];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    tide__redis_enter(c);
    if (n <= 0) {
        /* errno is still recv's: the event's reading of it sees it */
        link_fail_event(l, BEV_EVENT_READING |
                               (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR));
    } else {
        l->drained = (size_t)n < sizeof buf;
        if (redisReaderFeed(l->reader, buf, (size_t)n) != REDIS_OK)
            link_fail(l, TIDE_ENOMEM, NULL);
        else if (replies(l) && l->flushing)
            /* what this read's callers sent again goes now, not at the
             * end of the pass: the server starts on it while the other
             * connections' replies are read, rather than getting every
             * connection's batch at once and answering them all at once
             * (the client and the server in lock step, each idle while
             * the other works); the pass's event finds nothing left (a
             * socket that had no room is simply tried once more) */
            link_flush(fd, EV_WRITE, l);
    }
    tide__redis_leave(c);
}

static void link_bev_read(struct bufferevent *bev, void *arg)
{
    struct tide__redis_link *l = arg;
    struct tide_redis_client *c = l->client;
    tide__redis_enter(c);
    if (tide__redis_feed(l->reader, bufferevent_get_input(bev)) != 0)
        link_fail(l, TIDE_ENOMEM, NULL);
    else
        (void)replies(l);
    tide__redis_leave(c);
}

static void link_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct tide__redis_link *l = arg;
    struct tide_redis_client *c = l->client;
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
        return;
    tide__redis_enter(c);
    link_fail_event(l, what);
    tide__redis_leave(c);
}

/* ---- writing ------------------------------------------------------------- */

/* What the pass's batches put in out goes in one write (raw: as much as
 * the socket takes now; the rest when it has room). */
static void link_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct tide__redis_link *l = arg;
    struct tide_redis_client *c = l->client;
    l->flushing = false;
    size_t len = evbuffer_get_length(l->out);
    if (len == 0)
        return;
    if (!l->raw) {
        c->stats.writes++;
        if (bufferevent_write_buffer(l->bev, l->out) == 0) {
            l->sent = l->queued;
            return;
        }
        tide__redis_enter(c);
        link_fail(l, TIDE_ENOMEM, NULL);
        tide__redis_leave(c);
        return;
    }
    int n = evbuffer_write(l->out, l->fd);
    if (n > 0) {
        c->stats.writes++;
        l->sent += (uint64_t)n;
    }
    if (n >= 0 && evbuffer_get_length(l->out) == 0)
        return;
    if (n >= 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        l->flushing = true;
        event_add(&l->wr, NULL); /* the rest when the socket has room */
        return;
    }
    tide__redis_enter(c);
    link_fail_event(l, BEV_EVENT_WRITING | BEV_EVENT_ERROR);
    tide__redis_leave(c);
}

void tide__redis_links_end(struct tide_redis_client *c)
{
    while (c->links) {
        struct tide__redis_link *l = c->links;
        /* the batches are the client's to drop, the loans the pool's */
        for (struct tide__redis_batch *b = l->head; b; b = b->queued)
            b->link = NULL;
        link_close(l, false);
    }
}
