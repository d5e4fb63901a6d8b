/* Health checks of idle resources. Each round takes every idle resource
 * aside (the core's hold: it counts as live, is not lent, and keeps its rest
 * time) and asks the factory's check; a failed one is destroyed, reported
 * to the breaker, and replaced when below the minimum. */
#include <stdlib.h>

#include "evloop_internal.h"

static void start_check(struct tide_evpool *p, uint32_t i)
{
    struct conn *c = &p->conns[i];
    struct tide_check *t = calloc(1, sizeof *t);
    if (!t || tide_pool_hold(p->core, c->resource) != 0) {
        free(t);
        return;
    }
    /* counted as in a check before any hook runs, as the core counts it */
    p->checking++;
    tide__conn_leave_idle(p, i, CONN_CHECKING);
    t->pool = p;
    t->resource = c->resource;
    t->destroy = p->factory.destroy;
    t->destroy_arg = p->factory.arg;
    TIDE__LIST_APPEND(&p->checks, t);
    /* may answer at once: t is not touched after */
    p->factory.check(p, t, c->resource, p->factory.arg);
}

void tide__health_round(struct tide_evpool *p)
{
    /* By index: a check answered at once can destroy a record, never move
     * the array (nothing is added synchronously). */
    for (uint32_t i = 0; i < p->conn_capacity && !p->closing; i++)
        if (p->conns[i].state == CONN_IDLE)
            start_check(p, i);
}

void tide_evpool_checked(struct tide_check *t, bool ok)
{
    if (!t)
        return;
    struct tide_evpool *p = t->pool;
    if (!p) { /* the pool is gone: the resource was left to us */
        t->destroy(t->resource, t->destroy_arg);
        free(t);
        return;
    }
    TIDE__LIST_UNLINK(&p->checks, t);
    uint32_t i = tide__conn_find(p, t->resource);
    free(t);
    tide__evpool_clock(p);
    if (ok && !p->closing) {
        p->checking--;
        tide__conn_give(p, i);
        return;
    }
    if (!ok) {
        /* a failed check is the backend's failure (and, for one that never
         * served, its make's) */
        p->counters.health_failures++;
        if (!tide__conn_settle(p, i, true))
            tide__report(p, false);
    }
    tide__conn_destroy(p, i);
}

void tide__checks_orphan_all(struct tide_evpool *p)
{
    while (p->checks.head) {
        struct tide_check *t = p->checks.head;
        TIDE__LIST_UNLINK(&p->checks, t);
        tide__conn_remove(p, tide__conn_find(p, t->resource));
        t->pool = NULL;
    }
}
