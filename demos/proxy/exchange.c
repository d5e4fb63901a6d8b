/* An exchange with an upstream: its connection got from the group (at
 * once when one is idle), given back as the exchange ended (released,
 * retired, abandoned, discarded or stale, as the pool judges the upstream
 * by it), and a failed one sent again on another connection or answered
 * 502, 503 or 504. */
#include "proxy_internal.h"

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>

/* The upstream connection leaves the exchange: back to its pool when the
 * response is whole and the upstream keeps it, else destroyed, telling the
 * pool whose doing the end was, since its breaker and backoff judge the
 * upstream by it. */
bool px__give_back(struct client *c, enum give how)
{
    bool keep = how == GIVE_RELEASE;
    bool stale = false;
    if (!c->ub)
        return false;
    if (c->h2_exchange)
        return px__h2_give_back(c, how);
    bufferevent_setcb(c->ub, NULL, NULL, NULL, NULL);
    bufferevent_set_timeouts(c->ub, NULL, NULL);
    if (c->raw) {
        /* back as lent: the bufferevent reading, its event added before
         * ours is removed, so the descriptor's read interest never leaves
         * epoll (no epoll_ctl either way). Reading on tells the factory
         * nothing was left in the socket (<tidepool/tls.h>): so only when
         * the last read came short of its room; after a full one there
         * may be more, and reading stays off for the factory to look. */
        if (keep && c->drained && !(bufferevent_get_enabled(c->ub) & EV_READ))
            bufferevent_enable(c->ub, EV_READ);
        event_del(&c->urd);
        px_buf_clear(&c->uin);
        c->raw = false;
    }
    switch (how) {
    case GIVE_RELEASE:
        (void)tide_group_release(c->px->group, c->up, c->ub);
        break;
    case GIVE_RETIRE:
        c->px->stats.retired++;
        (void)tide_group_retire(c->px->group, c->up, c->ub);
        break;
    case GIVE_ABANDON:
        c->px->stats.abandoned++;
        (void)tide_group_abandon(c->px->group, c->up, c->ub);
        break;
    case GIVE_DISCARD:
        c->px->stats.discarded++;
        (void)tide_group_discard(c->px->group, c->up, c->ub);
        break;
    case GIVE_STALE:
        stale = tide_group_stale(c->px->group, c->up, c->ub) == TIDE_STALE;
        if (stale)
            c->px->stats.stale++;
        else
            c->px->stats.discarded++;
        break;
    }
    c->ub = NULL;
    c->up = NULL;
    return stale;
}

void px__exchange_failed(struct client *c, const char *why)
{
    if (c->orphan) {
        /* read for nobody, but it failed */
        (void)px__give_back(c, c->any_byte ? GIVE_DISCARD : GIVE_STALE);
        px__client_kill(c);
        return;
    }
    /* No byte of the response came: on a connection that served before,
     * the upstream had closed it a moment before (stale, no failure of
     * its own), and an idempotent request goes again at once, once, as
     * it does once after a failure */
    struct tide_group_upstream *up = c->up;
    bool stale = px__give_back(c, c->any_byte ? GIVE_DISCARD : GIVE_STALE);
    if (stale && c->stale_retried && !c->retried && px__idempotent(c->method) &&
        !c->retry_outgrown) {
        /* stale on its stale retry too: the upstream closed all it kept
         * at once; on as after a failure, elsewhere (failover.c) */
        c->retried = true;
        px__exchange_stale_twice(c, up, why);
        return;
    }
    bool again = !c->any_byte && px__idempotent(c->method) &&
                 !(stale ? c->stale_retried : c->retried);
    if (again && !c->retry_outgrown) {
        if (stale)
            c->stale_retried = true;
        else
            c->retried = true;
        px__exchange_again(c);
        return;
    }
    char body[512];
    if (again)
        snprintf(body, sizeof body,
                 "%s (not sent again: its body was past the %d KiB kept for "
                 "a retry)",
                 why, RETRY_MAX / 1024);
    else
        snprintf(body, sizeof body, "%s", why);
    px__exchange_refuse(c, body);
}

void px__exchange_again(struct client *c)
{
    c->px->stats.retries++;
    px__start_exchange(c);
    px__client_pump(c); /* the rest of its body, as it comes */
}

void px__exchange_refuse(struct client *c, const char *why)
{
    if (c->head_sent) {
        /* half a response is out: only closing tells the client */
        c->px->stats.aborted++;
        px__client_kill(c);
        return;
    }
    c->px->stats.errors_502++;
    px__client_write_error(c, 502, "Bad Gateway", NULL, why);
    px__client_next(c);
}

/* The exchange begins on the lent connection, as its protocol has it. */
static void send_upstream(struct client *c)
{
    if (px__h2_is(c->ub))
        px__h2_send(c);
    else
        px__send_upstream(c);
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
        px__client_write_error(c, 504, "Gateway Timeout", NULL,
                               "no upstream connection within the timeout");
    } else if (status == TIDE_EUNAVAILABLE) {
        c->px->stats.errors_503++;
        int64_t secs = (why->retry_after + 999999999) / 1000000000;
        char retry[64];
        snprintf(retry, sizeof retry, "Retry-After: %" PRId64 "\r\n",
                 secs > 0 ? secs : 1);
        snprintf(body, sizeof body, "upstream unavailable: %s", why->message);
        px__client_write_error(c, 503, "Service Unavailable", retry, body);
    } else {
        c->px->stats.errors_502++;
        snprintf(body, sizeof body, "cannot connect to %s: %s",
                 u ? tide_group_upstream_name(u) : "the upstream",
                 why->message);
        px__client_write_error(c, 502, "Bad Gateway", NULL, body);
    }
    px__client_next(c);
}

void px__on_acquired(struct tide_group *g, int status,
                     struct tide_group_upstream *u, void *resource,
                     const struct tide_why *why, void *arg)
{
    struct client *c = arg;
    acquired(g, status, u, resource, why, c);
    if (c->state != C_DEAD)
        px__client_pump(c); /* its body, as it comes */
}

void px__start_exchange(struct client *c)
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
                                px__on_acquired, c, &c->acquiring);
    if (rc) {
        c->px->stats.errors_503++;
        px__client_write_error(c, 503, "Service Unavailable",
                               "Retry-After: 1\r\n", tide_strerror(rc));
        px__client_next(c);
    }
}
