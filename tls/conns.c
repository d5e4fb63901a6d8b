/* The live connections of a factory, found by bufferevent pointer in O(1).
 *
 * The pool hands the factory back a bare `void *` (the bufferevent), and a
 * lent bufferevent carries the borrower's callbacks and argument, so the
 * factory's own state for it (which pool watches it, is it TLS) lives here:
 * an open-addressing table with linear probing and backward-shift deletion,
 * grown at half full. */
#include <stdint.h>
#include <stdlib.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_struct.h>

#include "net_internal.h"

static size_t slot_of(const struct tide__net_conns *t, const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h >> 32) & (t->cap - 1);
}

static void put(struct tide__net_conns *t, struct tide__net_conn *c)
{
    size_t i = slot_of(t, c->bev);
    while (t->slots[i])
        i = (i + 1) & (t->cap - 1);
    t->slots[i] = c;
}

static int grow(struct tide__net_conns *t)
{
    size_t cap = t->cap ? t->cap * 2 : 16;
    struct tide__net_conn **old = t->slots;
    size_t old_cap = t->cap;
    t->slots = calloc(cap, sizeof *t->slots);
    if (!t->slots) {
        t->slots = old;
        return TIDE_ENOMEM;
    }
    t->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i])
            put(t, old[i]);
    free(old);
    return 0;
}

struct tide__net_conn *tide__net_conn_add(struct tide_tcp_factory *f,
                                          struct bufferevent *bev, bool tls)
{
    struct tide__net_conns *t = &f->conns;
    if ((t->n + 1) * 2 > t->cap && grow(t) != 0)
        return NULL;
    struct tide__net_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->bev = bev;
    c->f = f;
    c->tls = tls;
    put(t, c);
    t->n++;
    return c;
}

static size_t find_slot(const struct tide__net_conns *t, const void *bev)
{
    if (t->cap == 0)
        return SIZE_MAX;
    for (size_t i = slot_of(t, bev);; i = (i + 1) & (t->cap - 1)) {
        if (!t->slots[i])
            return SIZE_MAX;
        if (t->slots[i]->bev == bev)
            return i;
    }
}

struct tide__net_conn *tide__net_conn_find(const struct tide_tcp_factory *f,
                                           const struct bufferevent *bev)
{
    size_t i = find_slot(&f->conns, bev);
    return i == SIZE_MAX ? NULL : f->conns.slots[i];
}

void tide__net_conn_remove(struct tide_tcp_factory *f, struct tide__net_conn *c)
{
    struct tide__net_conns *t = &f->conns;
    size_t i = find_slot(t, c->bev);
    if (i == SIZE_MAX)
        return;
    t->slots[i] = NULL;
    t->n--;
    /* backward shift: pull later entries of the run into the hole when
     * their home slot does not lie between the hole and them */
    size_t hole = i;
    for (size_t j = (i + 1) & (t->cap - 1); t->slots[j];
         j = (j + 1) & (t->cap - 1)) {
        size_t home = slot_of(t, t->slots[j]->bev);
        bool stays =
            hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!stays) {
            t->slots[hole] = t->slots[j];
            t->slots[j] = NULL;
            hole = j;
        }
    }
    free(c);
}

void tide__net_conns_dispose(struct tide_tcp_factory *f)
{
    struct tide__net_conns *t = &f->conns;
    for (size_t i = 0; i < t->cap; i++) {
        struct tide__net_conn *c = t->slots[i];
        if (!c)
            continue;
        /* still alive past its factory: close it, as the header says */
        bufferevent_setcb(c->bev, NULL, NULL, NULL, NULL);
        if (c->tls)
            tide__tls_close(c->bev);
        bufferevent_free(c->bev);
        free(c);
    }
    free(t->slots);
    t->slots = NULL;
    t->cap = t->n = 0;
}

void tide__net_untime(struct bufferevent *bev)
{
    if (evutil_timerisset(&bev->timeout_read) ||
        evutil_timerisset(&bev->timeout_write))
        bufferevent_set_timeouts(bev, NULL, NULL);
}

void tide__net_unmark(struct bufferevent *bev, short events)
{
    const struct event_watermark *r = &bev->wm_read, *w = &bev->wm_write;
    if (((events & EV_READ) && (r->low || r->high)) ||
        ((events & EV_WRITE) && (w->low || w->high)))
        bufferevent_setwatermark(bev, events, 0, 0);
}

void tide__net_hand_over(struct bufferevent *bev)
{
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    tide__net_untime(bev);
    tide__net_unmark(bev, EV_READ | EV_WRITE);
    /* Only when not enabled already: libevent adds the write event on
     * every enable, whatever is queued, so a connection lent again would
     * cost two epoll_ctl and a wake-up to find nothing to write. Enabled,
     * the write event is added when the borrower writes. */
    short both = EV_READ | EV_WRITE;
    if ((bufferevent_get_enabled(bev) & both) != both)
        bufferevent_enable(bev, both);
}
