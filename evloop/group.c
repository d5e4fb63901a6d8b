/* The group: one pool per upstream of a service, an acquire that picks
 * among them and moves on when one cannot serve, a cap on loans across
 * the group, and upstreams that drain when removed.
 *
 * This file is the group itself: creation, close, free, its clock and
 * random source, and the enter/leave guard that defers a free from inside
 * a callback. The parts live beside it (group_internal.h says who does
 * what). */
#include <stdlib.h>
#include <time.h>

#include "group_internal.h"

int64_t tide__group_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* splitmix64, as the pool's: seedable, so a test can replay a pick. */
double tide__group_roll(struct tide_group *g)
{
    uint64_t z = (g->rng += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static void free_now(struct tide_group *g);

void tide__group_enter(struct tide_group *g)
{
    g->depth++;
}

/* Returns false when the group was freed on the way out. */
bool tide__group_leave(struct tide_group *g)
{
    if (--g->depth == 0 && g->free_pending) {
        free_now(g);
        return false;
    }
    return true;
}

static void on_group_closed(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide_group *g = arg;
    tide__group_enter(g);
    if (g->on_closed)
        g->on_closed(g, g->closed_arg);
    tide__group_leave(g);
}

int tide_group_new(struct event_base *base, const struct tide_group_options *o,
                   struct tide_group **out)
{
    if (!out)
        return TIDE_EINVAL;
    *out = NULL;
    struct tide_group_options opt = o ? *o : (struct tide_group_options){0};
    if (!base || opt.cap < 0 || opt.queue_max < 0 || opt.acquire_timeout < 0 ||
        opt.acquire_timeout == TIDE_FOREVER)
        return TIDE_EINVAL;
    if (opt.decay < 0 || opt.decay == TIDE_FOREVER || opt.slow_start < 0 ||
        opt.slow_start == TIDE_FOREVER || opt.retry_window < 0 ||
        opt.retry_window == TIDE_FOREVER || opt.retry_floor < 0 ||
        opt.retry_floor > (INT64_C(1) << 32) || !(opt.retry_ratio >= 0) ||
        opt.retry_ratio > 1 || !(opt.panic >= 0) || opt.panic > 1)
        return TIDE_EINVAL;
    struct tide_group *g = calloc(1, sizeof *g);
    if (!g)
        return TIDE_ENOMEM;
    g->clock = opt.clock;
    g->clock_arg = opt.clock_arg;
    g->decay = opt.decay ? opt.decay : TIDE_SEC(1);
    g->slow_start = opt.slow_start ? opt.slow_start : TIDE_SEC(30);
    g->retry_ratio = opt.retry_ratio ? opt.retry_ratio : 0.2;
    g->panic_share = opt.panic ? opt.panic : 0.5;
    if (tide__budget_init(g, opt.retry_window ? opt.retry_window : TIDE_SEC(10),
                          opt.retry_floor ? opt.retry_floor : 3)) {
        free(g);
        return TIDE_ENOMEM;
    }
    tide__ring_init(&g->lent, TIDE_SEC(60));
    g->base = base;
    g->cap = opt.cap;
    g->acquire_timeout =
        opt.acquire_timeout ? opt.acquire_timeout : TIDE_SEC(30);
    g->queue_max = opt.queue_max ? opt.queue_max : 4096;
    g->rng = opt.seed ? opt.seed
                      : (uint64_t)tide__group_clock() ^ (uint64_t)(uintptr_t)g;
    event_assign(&g->closed_ev, base, -1, 0, on_group_closed, g);
    *out = g;
    return 0;
}

void tide__group_check_closed(struct tide_group *g)
{
    if (!g->closing || g->close_done)
        return;
    if (g->upstreams.count > 0 || g->capped.count > 0 || g->pending.count > 0)
        return;
    g->close_done = true;
    event_active(&g->closed_ev, EV_TIMEOUT, 0);
}

int tide_group_close(struct tide_group *g, tide_group_closed_cb done, void *arg)
{
    if (!g)
        return TIDE_EINVAL;
    if (g->closing)
        return TIDE_ECLOSED;
    g->closing = true;
    g->on_closed = done;
    g->closed_arg = arg;
    int64_t now = tide__group_clock();
    tide__group_enter(g);
    while (g->capped.head) {
        struct tide_group_acquire *a = g->capped.head;
        TIDE__LIST_UNLINK(&g->capped, a);
        TIDE__LIST_APPEND(&g->pending, a);
        event_del(&a->ev);
        event_assign(&a->ev, g->base, -1, 0, tide__group_on_deliver, a);
        tide__group_answer(a, TIDE_ECLOSED, NULL, NULL, NULL, now);
    }
    struct tide_group_upstream *next;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = next) {
        next = u->next;
        if (!u->removed)
            tide__group_drain(u);
    }
    tide__group_check_closed(g);
    tide__group_leave(g);
    return 0;
}

static void free_now(struct tide_group *g)
{
    struct tide_group_upstream *u, *un;
    for (u = g->upstreams.head; u; u = un) {
        un = u->next;
        /* drops its waiters (ours) without callbacks */
        tide_evpool_free(u->pool);
        tide__group_upstream_free(u);
    }
    struct tide_group_acquire *a, *an;
    for (a = g->capped.head; a; a = an) {
        an = a->next;
        tide__group_acquire_free(a);
    }
    for (a = g->pending.head; a; a = an) {
        an = a->next;
        tide__group_acquire_free(a);
    }
    event_del(&g->closed_ev);
    event_debug_unassign(&g->closed_ev);
    tide__budget_dispose(g);
    free(g->pick_ups);
    free(g);
}

void tide_group_free(struct tide_group *g)
{
    if (!g)
        return;
    if (g->depth > 0) {
        g->free_pending = true;
        return;
    }
    free_now(g);
}