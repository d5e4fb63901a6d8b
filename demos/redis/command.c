/* Commands: each call is a batch (one command, or a pipeline) that borrows
 * one connection, writes its RESP in one go, and reads the replies in
 * order with a redisReader, each to its command's callback.
 *
 * The connection goes back to the pool only when the last reply has been
 * read and nothing more came: a byte beyond it would be read by the next
 * borrower as the answer to its own command. Anything else (a protocol
 * error, a timeout, the server closing or resetting the connection) ends
 * the loan with a discard, so a reply still on its way is destroyed with
 * its connection and never reaches another command. A batch that leaves
 * the session changed (session.c: SELECT, an open MULTI, SUBSCRIBE ...)
 * closes its connection after its last reply instead of giving it back, so
 * no other command runs in that session.
 *
 * On a client with shared connections (limits.streams above 1) a batch
 * that keeps the session goes to link.c instead, on a shared loan; the
 * rest (session.c's `alone`) take an exclusive loan and run here as
 * above. A subscription is a batch here whose every reply goes to its
 * one callback, until tide_redis_unsubscribe retires its connection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <errno.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>

#include "redis_internal.h"

/* ---- ending a batch ----------------------------------------------------- */

static void stop_timer(struct tide__redis_batch *b)
{
    if (b->timed) {
        event_del(&b->timer);
        b->timed = false;
    }
}

/* How a loan ends. */
enum loan_end {
    LOAN_RELEASE, /* the exchange is whole: back to the pool */
    LOAN_RETIRE,  /* whole, but the session was changed: closed, and the
                     server did nothing wrong (a success for the breaker) */
    LOAN_DISCARD, /* a fault: closed, and a failure for the breaker */
    LOAN_STALE,   /* closed by the server before any byte of a reply:
                     stale when it had served (no failure), else a
                     discard (tide_evpool_stale decides) */
};

/* Reading goes back to the bufferevent, as the connection was lent: its
 * event added before ours is removed, so the socket's read interest never
 * leaves epoll. Turned on only when the batch's last read left nothing in
 * the socket (<tidepool/tls.h>: reading on tells the factory so); a
 * connection going back after a full read is looked at by the factory. */
static void raw_end(struct tide__redis_batch *b, bool keep)
{
    if (!b->raw)
        return;
    if (keep && b->drained && !(bufferevent_get_enabled(b->bev) & EV_READ))
        bufferevent_enable(b->bev, EV_READ);
    event_del(&b->rd);
    event_debug_unassign(&b->rd);
    b->raw = false;
}

/* Ends the loan, if any, as told. */
static void end_loan(struct tide__redis_batch *b, enum loan_end how)
{
    struct tide_redis_client *c = b->client;
    if (!b->bev)
        return;
    bufferevent_setcb(b->bev, NULL, NULL, NULL, NULL);
    raw_end(b, how == LOAN_RELEASE);
    if (how == LOAN_RELEASE) {
        (void)tide_evpool_release(c->pool, b->bev);
    } else if (how == LOAN_RETIRE) {
        c->stats.retired++;
        (void)tide_evpool_retire(c->pool, b->bev);
    } else if (how == LOAN_STALE &&
               tide_evpool_stale(c->pool, b->bev) == TIDE_STALE) {
        c->stats.stale++;
    } else if (how == LOAN_STALE) {
        c->stats.discarded++; /* a new connection's: counted as discard */
    } else {
        c->stats.discarded++;
        (void)tide_evpool_discard(c->pool, b->bev);
    }
    b->bev = NULL;
    /* a reader that holds bytes is freed there, whatever it is told */
    tide__redis_reader_give(c, b->reader, how != LOAN_DISCARD);
    b->reader = NULL;
}

/* Takes b off the client's books: it is answered, or being answered. */
static void retire(struct tide__redis_batch *b)
{
    stop_timer(b);
    if (b->acquire) {
        tide_evpool_cancel(b->acquire, false);
        b->acquire = NULL;
    }
    TIDE_DEMO_UNLINK(&b->client->batches, b);
}

static void batch_free(struct tide__redis_batch *b)
{
    free(b);
}

static void answer(struct tide__redis_batch *b, int status,
                   const redisReply *reply, const char *message)
{
    tide__redis_answer(b, status, reply, message);
}

void tide__redis_answer(struct tide__redis_batch *b, int status,
                        const redisReply *reply, const char *message)
{
    struct tide_redis_client *c = b->client;
    struct tide__redis_slot *s = &b->slots[b->done++];
    if (reply) {
        c->stats.replies++;
        if (reply->type == REDIS_REPLY_ERROR)
            c->stats.error_replies++;
    } else {
        c->stats.failed++;
        if (status == TIDE_REDIS_ETIMEDOUT)
            c->stats.timeouts++;
    }
    s->cb(c, status, reply, message ? message : tide_redis_strerror(status),
          s->arg);
}

/* The loan failed: the connection (if any) is discarded (or given back
 * stale: a close before any byte of a reply), the commands not yet
 * answered get code and message, and b is freed. Called from the loop,
 * inside enter/leave. */
static void fail_as(struct tide__redis_batch *b, int code, const char *message,
                    enum loan_end how)
{
    struct tide_redis_client *c = b->client;
    char text[320];
    /* the message may live in what is freed now (the reader's errstr) */
    snprintf(text, sizeof text, "%s",
             message ? message : tide_redis_strerror(code));
    retire(b);
    end_loan(b, how);
    b->delivering = true; /* an unsubscribe from the callback: no more */
    while (b->done < b->n && !c->dying)
        answer(b, code, NULL, text);
    batch_free(b);
}

static void fail(struct tide__redis_batch *b, int code, const char *message)
{
    fail_as(b, code, message, LOAN_DISCARD);
}

/* The connection closed or broke under the batch (what: a bufferevent
 * event): stale when no byte of a reply had come, else a failure. */
static void fail_closed(struct tide__redis_batch *b, short what)
{
    char text[256];
    int code = tide_net_event_error(b->bev, what, NULL, text, sizeof text);
    bool closed = !(what & BEV_EVENT_TIMEOUT);
    fail_as(b, code, text, closed && !b->any_byte ? LOAN_STALE : LOAN_DISCARD);
}

/* ---- the exchange ------------------------------------------------------- */

/* One whole reply: its command's answer. Returns false when b is gone
 * (the last reply, or the client freed inside the callback). */
static bool deliver(struct tide__redis_batch *b, redisReply *reply)
{
    struct tide_redis_client *c = b->client;
    int status = reply->type == REDIS_REPLY_ERROR ? TIDE_REDIS_EREPLY : 0;
    const char *message = status ? reply->str : NULL;
    if (b->stream) {
        /* a subscription: every reply is its callback's, the first ends
         * the command's timeout; the loan lasts until the unsubscribe */
        stop_timer(b);
        c->stats.replies++;
        b->delivering = true;
        b->slots[0].cb(c, status, reply, message, b->slots[0].arg);
        b->delivering = false;
        freeReplyObject(reply);
        if (b->unsubscribed) {
            tide_redis_unsubscribe(c, (struct tide_redis_subscription *)b);
            return false;
        }
        return !c->dying;
    }
    if (b->done + 1 < b->n) {
        answer(b, status, reply, message);
        freeReplyObject(reply);
        return !c->dying;
    }
    /* the last one: nothing may follow it, neither in the reader nor in
     * the input buffer; a changed session goes whatever follows (the other
     * confirmations of a SUBSCRIBE to several channels, a MONITOR's
     * stream): those bytes are its own, no fault of the server. Bytes
     * still in the socket after a full raw read are the factory's to
     * find (raw_end) */
    bool extra = tide__redis_reader_holds(b->reader) ||
                 evbuffer_get_length(bufferevent_get_input(b->bev)) > 0;
    retire(b);
    end_loan(b, !b->keep ? LOAN_RETIRE : extra ? LOAN_DISCARD : LOAN_RELEASE);
    answer(b, status, reply, message);
    freeReplyObject(reply);
    batch_free(b);
    return false;
}

/* Hands every whole reply the reader holds to its command. */
static void replies(struct tide__redis_batch *b)
{
    struct tide_redis_client *c = b->client;
    for (;;) {
        void *reply = NULL;
        if (redisReaderGetReply(b->reader, &reply) != REDIS_OK) {
            char why[128];
            fail(b, TIDE_REDIS_EPROTOCOL,
                 tide__redis_reader_error(c, b->reader, why, sizeof why));
            break;
        }
        if (!reply || !deliver(b, reply))
            break;
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct tide__redis_batch *b = arg;
    struct tide_redis_client *c = b->client;
    tide__redis_enter(c);
    b->any_byte = true;
    if (tide__redis_feed(b->reader, bufferevent_get_input(bev)) != 0)
        fail(b, TIDE_ENOMEM, NULL);
    else
        replies(b);
    tide__redis_leave(c);
}

/* The most one raw read takes: replies larger come in several. */
#define RAW_READ 16384

static void on_raw_read(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct tide__redis_batch *b = arg;
    struct tide_redis_client *c = b->client;
    char buf[RAW_READ];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    tide__redis_enter(c);
    if (n <= 0) {
        /* errno is still recv's: the event's reading of it sees it */
        fail_closed(b, BEV_EVENT_READING |
                           (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR));
    } else {
        b->drained = (size_t)n < sizeof buf;
        b->any_byte = true;
        if (redisReaderFeed(b->reader, buf, (size_t)n) != REDIS_OK)
            fail(b, TIDE_ENOMEM, NULL);
        else
            replies(b);
    }
    tide__redis_leave(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct tide__redis_batch *b = arg;
    struct tide_redis_client *c = b->client;
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
        return; /* not a failure (CONNECTED): nothing to do */
    tide__redis_enter(c);
    fail_closed(b, what);
    tide__redis_leave(c);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide__redis_batch *b = arg;
    struct tide_redis_client *c = b->client;
    b->timed = false;
    /* still waiting for a connection: the pool's own timeout, given the
     * same span when the command was queued, answers now, and says why
     * the wait was in vain (the last connect's failure); a command sent
     * again after its connection broke waits on a later timer, so its
     * own answers now */
    if (b->acquire && !b->moved)
        return;
    tide__redis_enter(c);
    if (b->link)
        tide__redis_link_timeout(b); /* the connection stays */
    else
        fail(b, TIDE_REDIS_ETIMEDOUT, NULL);
    tide__redis_leave(c);
}

/* The connection is lent: read with a fresh reader, write the commands.
 * 0, or TIDE_ENOMEM with the loan still on b (the caller ends it). */
static int start(struct tide__redis_batch *b, struct bufferevent *bev)
{
    struct tide_redis_client *c = b->client;
    b->bev = bev;
    b->reader = tide__redis_reader_take(c);
    if (!b->reader)
        return TIDE_ENOMEM;
    evutil_socket_t fd = bufferevent_getfd(bev);
    b->raw = fd >= 0 && !bufferevent_openssl_get_ssl(bev) &&
             evbuffer_get_length(bufferevent_get_input(bev)) == 0;
    if (b->raw) {
        /* ours added before the bufferevent's read event is removed: the
         * socket's read interest stays in epoll, no epoll_ctl */
        event_assign(&b->rd, c->base, fd, EV_READ | EV_PERSIST, on_raw_read, b);
        event_add(&b->rd, NULL);
        bufferevent_disable(bev, EV_READ);
        bufferevent_setcb(bev, NULL, NULL, on_event, b);
    } else {
        bufferevent_setcb(bev, on_read, NULL, on_event, b);
    }
    /* straight to the socket when nothing is queued before it on plain
     * TCP (the proxy's way): the bufferevent writes what it did not take */
    size_t sent = 0;
    if (b->raw && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        ssize_t k = send(fd, b->resp, b->len, MSG_NOSIGNAL);
        sent = k > 0 ? (size_t)k : 0;
    }
    if (sent < b->len &&
        bufferevent_write(bev, b->resp + sent, b->len - sent) != 0)
        return TIDE_ENOMEM;
    return 0;
}

static void on_acquired(struct tide_evpool *pool, int status, void *resource,
                        const struct tide_why *why, void *arg)
{
    (void)pool;
    struct tide__redis_batch *b = arg;
    struct tide_redis_client *c = b->client;
    b->acquire = NULL;
    tide__redis_enter(c);
    if (status == TIDE_ETIMEDOUT) {
        /* a person can act on the reason (refused, WRONGPASS, maxclients)
         * more than on the timeout it ended in */
        char text[320];
        snprintf(text, sizeof text, "%s%s%s",
                 b->timeout == TIDE_FOREVER
                     ? "no connection within the pool's acquire_timeout"
                     : "no connection within the command's timeout",
                 why->make_error ? "; the last connect failed: " : "",
                 why->make_error ? why->message : "");
        fail(b, TIDE_REDIS_ETIMEDOUT, text);
    } else if (status != 0) {
        fail(b, status, why->message);
    } else if (b->timeout != TIDE_FOREVER && !b->timed) {
        /* lent in the pass of the loop in which the command's timer ran
         * out (and left the wait to the pool): nothing was sent on it */
        (void)tide_evpool_release(c->pool, resource);
        fail(b, TIDE_REDIS_ETIMEDOUT, NULL);
    } else if (!b->alone && c->shared) {
        if (tide__redis_link_attach(b, resource) != 0) {
            (void)tide_evpool_discard(c->pool, resource);
            fail(b, TIDE_ENOMEM, NULL);
        }
    } else if (start(b, resource) != 0)
        fail(b, TIDE_ENOMEM, NULL);
    tide__redis_leave(c);
}

/* ---- sending ------------------------------------------------------------ */

static bool cmd_valid(const struct tide_redis_cmd *cmd)
{
    if (cmd->argc < 1 || !cmd->argv || !cmd->cb)
        return false;
    for (int i = 0; i < cmd->argc; i++)
        if (!cmd->argv[i])
            return false;
    return tide__redis_answerable(cmd->argc, cmd->argv, cmd->argvlen);
}

/* Asks the pool for a connection: at once when one is free (try_acquire
 * never barges past queued callers, and saves a pass of the loop per
 * command), else queued. Nothing calls back from here: a failure is
 * returned, with b holding no loan. */
int tide__redis_batch_send(struct tide__redis_batch *b)
{
    struct tide_redis_client *c = b->client;
    void *bev = NULL;
    int rc = b->alone ? tide_evpool_try_acquire_alone(c->pool, &bev)
                      : tide_evpool_try_acquire(c->pool, &bev);
    if (rc == 0 && !b->alone && c->shared) {
        if ((rc = tide__redis_link_attach(b, bev)) != 0)
            (void)tide_evpool_discard(c->pool, bev);
        return rc;
    }
    if (rc == 0) {
        if ((rc = start(b, bev)) != 0) {
            bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
            raw_end(b, false);
            (void)tide_evpool_discard(c->pool, bev);
            tide__redis_reader_give(c, b->reader, false);
            b->bev = NULL;
            b->reader = NULL;
        }
        return rc;
    }
    if (rc == TIDE_ECLOSED)
        return rc;
    /* the pool's timeout is the command's (the pool's own preset when
     * the command has none): it ends the wait, and the command's timer
     * the reply */
    int64_t wait = b->timeout == TIDE_FOREVER ? 0 : b->timeout;
    return b->alone ? tide_evpool_acquire_alone(c->pool, wait, on_acquired, b,
                                                &b->acquire)
                    : tide_evpool_acquire(c->pool, wait, on_acquired, b,
                                          &b->acquire);
}

/* A batch of n commands in RESP, not yet on the books; NULL with *rc. */
static struct tide__redis_batch *batch_new(struct tide_redis_client *c,
                                           int64_t timeout, size_t n,
                                           const struct tide_redis_cmd *cmds,
                                           int *rc)
{
    *rc = TIDE_EINVAL;
    if (!c || n < 1 || !cmds || c->dying || timeout < 0) {
        if (c && c->dying)
            *rc = TIDE_REDIS_ECLOSED;
        return NULL;
    }
    size_t len = 0;
    if (n > (SIZE_MAX / 2 - sizeof(struct tide__redis_batch)) /
                sizeof(struct tide__redis_slot))
        return NULL;
    size_t head =
        sizeof(struct tide__redis_batch) + n * sizeof(struct tide__redis_slot);
    for (size_t i = 0; i < n; i++) {
        if (!cmd_valid(&cmds[i]))
            return NULL;
        size_t one =
            tide__redis_resp_size(cmds[i].argc, cmds[i].argv, cmds[i].argvlen);
        /* 0: lengths past any memory; then the sum must not wrap either */
        if (one == 0 || one > SIZE_MAX / 2 - head - len)
            return NULL;
        len += one;
    }
    struct tide__redis_batch *b = malloc(head + len);
    if (!b) {
        *rc = TIDE_ENOMEM;
        return NULL;
    }
    memset(b, 0, head);
    b->client = c;
    b->n = n;
    b->len = len;
    b->resp = (char *)b + head;
    b->timeout = timeout ? timeout : c->timeout;
    char *at = b->resp;
    struct tide__redis_session session = {0};
    for (size_t i = 0; i < n; i++) {
        at = tide__redis_resp_write(at, cmds[i].argc, cmds[i].argv,
                                    cmds[i].argvlen);
        b->slots[i] =
            (struct tide__redis_slot){.cb = cmds[i].cb, .arg = cmds[i].arg};
        tide__redis_session_note(&session, cmds[i].argc, cmds[i].argv,
                                 cmds[i].argvlen);
    }
    b->keep = tide__redis_session_clean(&session);
    b->alone = session.alone;
    *rc = 0;
    return b;
}

/* b on the books: asked for a connection, its timer running. */
static int batch_go(struct tide__redis_batch *b)
{
    struct tide_redis_client *c = b->client;
    int rc = tide__redis_batch_send(b);
    if (rc != 0) {
        batch_free(b);
        return rc;
    }
    TIDE_DEMO_LINK(&c->batches, b);
    if (b->timeout != TIDE_FOREVER) {
        /* the client's span is libevent's common timeout (a queue, not
         * the heap); another is a timer of its own */
        if (b->timeout == c->timeout) {
            b->tv = c->timeout_tv;
        } else {
            b->span = tide__redis_tv(b->timeout);
            b->tv = &b->span;
        }
        event_assign(&b->timer, c->base, -1, 0, on_timeout, b);
        event_add(&b->timer, b->tv);
        b->timed = true;
    }
    c->stats.commands += b->n;
    return 0;
}

int tide_redis_pipeline_timed(struct tide_redis_client *c, int64_t timeout,
                              size_t n, const struct tide_redis_cmd *cmds)
{
    int rc;
    struct tide__redis_batch *b = batch_new(c, timeout, n, cmds, &rc);
    return b ? batch_go(b) : rc;
}

int tide_redis_pipeline(struct tide_redis_client *c, size_t n,
                        const struct tide_redis_cmd *cmds)
{
    return tide_redis_pipeline_timed(c, 0, n, cmds);
}

int tide_redis_command(struct tide_redis_client *c, int argc,
                       const char *const *argv, const size_t *argvlen,
                       tide_redis_cb cb, void *arg)
{
    struct tide_redis_cmd cmd = {
        .argc = argc, .argv = argv, .argvlen = argvlen, .cb = cb, .arg = arg};
    return tide_redis_pipeline_timed(c, 0, 1, &cmd);
}

static bool subscribes(const struct tide_redis_cmd *cmd)
{
    static const char *const words[] = {"SUBSCRIBE", "PSUBSCRIBE",
                                        "SSUBSCRIBE"};
    if (cmd->argc < 2 || !cmd->argv || !cmd->argv[0])
        return false;
    size_t len = tide__redis_arg_len(cmd->argv, cmd->argvlen, 0);
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (len == strlen(words[i]) &&
            strncasecmp(cmd->argv[0], words[i], len) == 0)
            return true;
    return false;
}

int tide_redis_subscribe(struct tide_redis_client *c, int argc,
                         const char *const *argv, const size_t *argvlen,
                         tide_redis_cb cb, void *arg,
                         struct tide_redis_subscription **out)
{
    struct tide_redis_cmd cmd = {
        .argc = argc, .argv = argv, .argvlen = argvlen, .cb = cb, .arg = arg};
    if (out)
        *out = NULL;
    if (!out || !subscribes(&cmd))
        return TIDE_EINVAL;
    int rc;
    struct tide__redis_batch *b = batch_new(c, 0, 1, &cmd, &rc);
    if (!b)
        return rc;
    b->stream = true;
    b->alone = true;
    b->keep = false;
    if ((rc = batch_go(b)) != 0)
        return rc;
    *out = (struct tide_redis_subscription *)(void *)b;
    return 0;
}

void tide_redis_unsubscribe(struct tide_redis_client *c,
                            struct tide_redis_subscription *sub)
{
    struct tide__redis_batch *b = (struct tide__redis_batch *)(void *)sub;
    if (!c || !b)
        return;
    if (b->delivering) { /* inside its own callback: when it returns */
        b->unsubscribed = true;
        return;
    }
    retire(b);
    /* the connection is in pub/sub mode: closed, the server did nothing
     * wrong */
    end_loan(b, LOAN_RETIRE);
    batch_free(b);
}

void tide__redis_batch_fail(struct tide__redis_batch *b, int code,
                            const char *message)
{
    fail_as(b, code, message, LOAN_DISCARD);
}

void tide__redis_batch_drop(struct tide__redis_batch *b)
{
    retire(b);
    batch_free(b);
}

void tide__redis_batches_end(struct tide_redis_client *c)
{
    while (c->batches) {
        struct tide__redis_batch *b = c->batches;
        retire(b);
        /* not given back: the pool, freed next, destroys it */
        if (b->bev) {
            bufferevent_setcb(b->bev, NULL, NULL, NULL, NULL);
            raw_end(b, false);
        }
        tide__redis_reader_give(c, b->reader, false);
        batch_free(b);
    }
}
