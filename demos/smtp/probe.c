/* RSET after each message (the pool's reset hook: the session goes back
 * to the pool only once the server has cleared whatever the message left,
 * a refused recipient or a transaction cut short) and NOOP of an idle
 * session (its health check). Both are one command and one 250 within
 * reply_timeout, nothing more; anything else destroys the session. */
#include <stdlib.h>

#include "smtp_internal.h"

struct tide__smtp_probe {
    struct tide__smtp_probe *prev;
    struct tide__smtp_probe *next;
    struct tide_smtp_sender *s;
    struct bufferevent *bev;
    struct tide_reset *reset; /* one of the two */
    struct tide_check *check;
    struct event timer;
    struct tide__smtp_reply r;
};

static void finish(struct tide__smtp_probe *k, bool ok)
{
    struct tide_smtp_sender *s = k->s;
    event_del(&k->timer);
    bufferevent_setcb(k->bev, NULL, NULL, NULL, NULL);
    TIDE_DEMO_UNLINK(&s->probes, k);
    struct tide_reset *reset = k->reset;
    struct tide_check *check = k->check;
    event_debug_unassign(&k->timer);
    free(k);
    if (reset)
        tide_evpool_reset_done(reset, ok);
    else
        tide_evpool_checked(check, ok);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct tide__smtp_probe *k = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    int rc = tide__smtp_reply_read(in, &k->r);
    if (rc == 0)
        return;
    finish(k, rc > 0 && k->r.code == 250 && evbuffer_get_length(in) == 0);
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

static void start(struct tide_smtp_sender *s, struct bufferevent *bev,
                  struct tide_reset *reset, struct tide_check *check)
{
    struct tide__smtp_probe *k = calloc(1, sizeof *k);
    if (!k || tide__smtp_write(bev, reset ? "RSET" : "NOOP") != 0) {
        free(k);
        if (reset)
            tide_evpool_reset_done(reset, false);
        else
            tide_evpool_checked(check, false);
        return;
    }
    k->s = s;
    k->bev = bev;
    k->reset = reset;
    k->check = check;
    TIDE_DEMO_LINK(&s->probes, k);
    event_assign(&k->timer, s->base, -1, 0, on_timeout, k);
    struct timeval tv = tide__smtp_tv(s->reply_timeout);
    event_add(&k->timer, &tv);
    bufferevent_setcb(bev, on_read, NULL, on_event, k);
}

void tide__smtp_reset(struct tide_evpool *pool, struct tide_reset *token,
                      void *resource, void *arg)
{
    (void)pool;
    struct tide_smtp_sender *s = arg;
    s->stats.resets++;
    start(s, resource, token, NULL);
}

void tide__smtp_check(struct tide_evpool *pool, struct tide_check *token,
                      void *resource, void *arg)
{
    (void)pool;
    struct tide_smtp_sender *s = arg;
    s->stats.checks++;
    start(s, resource, NULL, token);
}

void tide__smtp_probes_end(struct tide_smtp_sender *s)
{
    while (s->probes)
        finish(s->probes, false);
}
