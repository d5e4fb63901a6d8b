/* A new connection's opening exchange, run by the factory's setup step
 * before the pool sees it: AUTH (password, or user and password) and
 * SELECT when configured, else a PING unless no_ping. Written in one go and
 * answered in order; the first error reply fails the setup with Redis's own
 * words (WRONGPASS..., ERR max number of clients reached), which the pool
 * counts as a failed make (backoff, breaker) and hands to the waiter. */
#include <stdio.h>
#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "redis_internal.h"

struct tide__redis_setup {
    struct tide__redis_setup *prev, *next;
    struct tide_redis_client *client;
    struct tide_net_setup *token;
    struct bufferevent *bev;
    redisReader *reader;
    int waiting; /* replies still to come */
};

static int emit(struct evbuffer *out, int argc, const char *const *argv)
{
    size_t len = tide__redis_resp_size(argc, argv, NULL);
    struct evbuffer_iovec v;
    if (evbuffer_reserve_space(out, (ev_ssize_t)len, &v, 1) < 1)
        return -1;
    tide__redis_resp_write(v.iov_base, argc, argv, NULL);
    v.iov_len = len;
    return evbuffer_commit_space(out, &v, 1);
}

/* The commands, in RESP, into out; how many replies they ask, -1 when out
 * of memory. */
static int commands(struct tide_redis_client *c, struct evbuffer *out)
{
    int n = 0;
    if (c->password) {
        const char *auth[] = {"AUTH", c->user ? c->user : c->password,
                              c->password};
        if (emit(out, c->user ? 3 : 2, auth) != 0)
            return -1;
        n++;
    }
    if (c->db > 0) {
        char db[16];
        snprintf(db, sizeof db, "%d", c->db);
        const char *select[] = {"SELECT", db};
        if (emit(out, 2, select) != 0)
            return -1;
        n++;
    }
    if (n == 0 && !c->no_ping) {
        const char *ping[] = {"PING"};
        if (emit(out, 1, ping) != 0)
            return -1;
        n++;
    }
    return n;
}

static void end(struct tide__redis_setup *s, bool clean)
{
    struct tide_redis_client *c = s->client;
    bufferevent_setcb(s->bev, NULL, NULL, NULL, NULL);
    TIDE_DEMO_UNLINK(&c->setups, s);
    tide__redis_reader_give(c, s->reader, clean);
    free(s);
}

static void succeed(struct tide__redis_setup *s)
{
    struct tide_net_setup *token = s->token;
    end(s, true);
    tide_net_setup_done(token);
}

static void refuse(struct tide__redis_setup *s, int code, const char *message)
{
    char text[256];
    snprintf(text, sizeof text, "%s", message);
    struct tide_net_setup *token = s->token;
    end(s, false);
    tide_net_setup_failed(token, code, text);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct tide__redis_setup *s = arg;
    if (tide__redis_feed(s->reader, bufferevent_get_input(bev)) != 0) {
        refuse(s, TIDE_ENOMEM, tide_strerror(TIDE_ENOMEM));
        return;
    }
    while (s->waiting > 0) {
        void *reply = NULL;
        if (redisReaderGetReply(s->reader, &reply) != REDIS_OK) {
            char why[128];
            refuse(s, TIDE_REDIS_EPROTOCOL,
                   tide__redis_reader_error(s->client, s->reader, why,
                                            sizeof why));
            return;
        }
        if (!reply)
            return; /* more to come */
        redisReply *r = reply;
        s->waiting--;
        if (r->type == REDIS_REPLY_ERROR) {
            refuse(s, TIDE_ESETUP, r->str);
            freeReplyObject(reply);
            return;
        }
        freeReplyObject(reply);
    }
    /* a byte past the replies is the server speaking unasked: the
     * factory refuses it for unread input; the reader is checked here */
    if (tide__redis_reader_holds(s->reader))
        refuse(s, TIDE_REDIS_EPROTOCOL, "bytes after the setup's replies");
    else
        succeed(s);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    char text[256];
    int code = tide_net_event_error(bev, what, NULL, text, sizeof text);
    if (code != 0)
        refuse(arg, code, text);
}

void tide__redis_setup(struct tide_net_setup *token, struct bufferevent *bev,
                       void *arg)
{
    struct tide_redis_client *c = arg;
    struct tide__redis_setup *s = calloc(1, sizeof *s);
    redisReader *r = s ? tide__redis_reader_take(c) : NULL;
    int n = r ? commands(c, bufferevent_get_output(bev)) : -1;
    if (n < 0) {
        tide__redis_reader_give(c, r, false);
        free(s);
        tide_net_setup_failed(token, TIDE_ENOMEM, tide_strerror(TIDE_ENOMEM));
        return;
    }
    if (n == 0) { /* nothing to say (no_ping) */
        tide__redis_reader_give(c, r, true);
        free(s);
        tide_net_setup_done(token);
        return;
    }
    s->client = c;
    s->token = token;
    s->bev = bev;
    s->reader = r;
    s->waiting = n;
    TIDE_DEMO_LINK(&c->setups, s);
    bufferevent_setcb(bev, on_read, NULL, on_event, s);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

void tide__redis_setup_abort(struct tide_net_setup *token, void *arg)
{
    struct tide_redis_client *c = arg;
    for (struct tide__redis_setup *s = c->setups; s; s = s->next)
        if (s->token == token) {
            /* the factory frees the bufferevent: not touched here */
            TIDE_DEMO_UNLINK(&c->setups, s);
            tide__redis_reader_give(c, s->reader, false);
            free(s);
            return;
        }
}
