/* The health check: the pool takes an idle connection aside and the client
 * PINGs it. Healthy means "+PONG" within check_timeout and nothing more: a
 * connection that answers anything else, late or not at all is failed, and
 * the pool destroys it (and tells its breaker). */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "redis_internal.h"

static const char ping[] = "*1\r\n$4\r\nPING\r\n";

struct tide__redis_check {
    struct tide__redis_check *prev, *next;
    struct tide_redis_client *client;
    struct tide_check *token;
    struct bufferevent *bev;
    redisReader *reader;
    struct event timer;
};

static void finish(struct tide__redis_check *k, bool ok)
{
    struct tide_redis_client *c = k->client;
    event_del(&k->timer);
    bufferevent_setcb(k->bev, NULL, NULL, NULL, NULL);
    TIDE_DEMO_UNLINK(&c->checks, k);
    tide__redis_reader_give(c, k->reader, ok);
    if (!ok)
        c->stats.check_failures++;
    struct tide_check *token = k->token;
    free(k);
    tide_evpool_checked(token, ok);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct tide__redis_check *k = arg;
    void *reply = NULL;
    if (tide__redis_feed(k->reader, bufferevent_get_input(bev)) != 0 ||
        redisReaderGetReply(k->reader, &reply) != REDIS_OK) {
        finish(k, false);
        return;
    }
    if (!reply)
        return; /* more to come */
    redisReply *r = reply;
    bool ok = r->type == REDIS_REPLY_STATUS && r->len == 4 &&
              memcmp(r->str, "PONG", 4) == 0 &&
              !tide__redis_reader_holds(k->reader);
    freeReplyObject(reply);
    finish(k, ok);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    if (tide_net_event_error(bev, what, NULL, NULL, 0) != 0)
        finish(arg, false);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    finish(arg, false);
}

void tide__redis_check(struct tide_evpool *pool, struct tide_check *token,
                       void *resource, void *arg)
{
    (void)pool;
    struct tide_redis_client *c = arg;
    struct bufferevent *bev = resource;
    c->stats.checks++;
    struct tide__redis_check *k = calloc(1, sizeof *k);
    redisReader *r = k ? tide__redis_reader_take(c) : NULL;
    if (!r || bufferevent_write(bev, ping, sizeof ping - 1) != 0) {
        tide__redis_reader_give(c, r, false);
        free(k);
        c->stats.check_failures++;
        tide_evpool_checked(token, false);
        return;
    }
    k->client = c;
    k->token = token;
    k->bev = bev;
    k->reader = r;
    TIDE_DEMO_LINK(&c->checks, k);
    event_assign(&k->timer, c->base, -1, 0, on_timeout, k);
    struct timeval tv = tide__redis_tv(c->check_timeout);
    event_add(&k->timer, &tv);
    bufferevent_setcb(bev, on_read, NULL, on_event, k);
}

void tide__redis_checks_end(struct tide_redis_client *c)
{
    while (c->checks)
        finish(c->checks, false);
}
