/* Resources aside for a factory hook that answers later: a health check of
 * an idle resource (the core holds it: live, not lent, keeping its rest
 * time) and a reset of a released one (still busy in the core, lent to
 * nobody). Either way the answer puts it back (idle, or to the oldest
 * waiter) or destroys it, and a failure is the backend's, for the breaker;
 * the waiter queue sees a reset as a release that took a little longer. */
#include <stdlib.h>

#include "evloop_internal.h"

/* A new token of the kind: the public handle, whose first member is the
 * aside (so the aside's address is the handle's, for the hook and free). */
static struct aside *token_new(enum aside_kind kind)
{
    struct aside *a;
    if (kind == ASIDE_CHECK) {
        struct tide_check *t = calloc(1, sizeof *t);
        a = t ? &t->a : NULL;
    } else {
        struct tide_reset *t = calloc(1, sizeof *t);
        a = t ? &t->a : NULL;
    }
    if (a)
        a->kind = kind;
    return a;
}

/* Counts conn i as aside before any hook runs, as the core counts it, so
 * stats read from inside the hook add up. False when the core would not
 * hold an idle one. */
static bool set_aside(struct tide_evpool *p, uint32_t i, enum aside_kind kind)
{
    struct conn *c = &p->conns[i];
    if (kind == ASIDE_RESET) {
        p->resetting++;
        c->state = CONN_RESETTING;
        return true;
    }
    if (tide_pool_hold(p->core, tide__conn_key(i)) != 0)
        return false;
    p->checking++;
    tide__conn_leave_idle(p, i, CONN_CHECKING);
    return true;
}

void tide__aside_start(struct tide_evpool *p, uint32_t i, enum aside_kind kind)
{
    struct aside *a = token_new(kind);
    if (!a) {
        /* no memory for the token: a check is skipped this round, a reset
         * cannot vouch for the resource, so it is closed */
        if (kind == ASIDE_RESET)
            tide__conn_destroy(p, i);
        return;
    }
    if (!set_aside(p, i, kind)) {
        free(a);
        return;
    }
    struct conn *c = &p->conns[i];
    a->pool = p;
    a->resource = c->resource;
    a->destroy = p->factory.destroy;
    a->destroy_arg = p->factory.arg;
    TIDE__LIST_APPEND(&p->asides, a);
    /* may answer at once: a is not touched after */
    if (kind == ASIDE_CHECK)
        p->factory.check(p, (struct tide_check *)a, c->resource,
                         p->factory.arg);
    else
        p->factory.reset(p, (struct tide_reset *)a, c->resource,
                         p->factory.arg);
}

/* The factory answered: back where it goes, or destroyed. */
static void aside_done(struct aside *a, bool ok)
{
    struct tide_evpool *p = a->pool;
    if (!p) { /* the pool is gone: the resource was left to us */
        a->destroy(a->resource, a->destroy_arg);
        free(a);
        return;
    }
    enum aside_kind kind = a->kind;
    TIDE__LIST_UNLINK(&p->asides, a);
    uint32_t i = tide__conn_find(p, a->resource);
    free(a);
    tide__evpool_clock(p);
    if (ok && (kind == ASIDE_RESET || !p->closing)) {
        /* a reset one goes back even while closing: the core, closed,
         * answers "not kept" and it is destroyed on the way */
        if (kind == ASIDE_CHECK)
            p->checking--;
        else
            p->resetting--;
        tide__conn_give(p, i);
        return;
    }
    if (!ok) {
        /* the backend's failure (and, for one that never served, its
         * make's) */
        if (kind == ASIDE_CHECK)
            p->counters.health_failures++;
        else
            p->counters.reset_failures++;
        if (!tide__conn_settle(p, i, true))
            tide__report(p, false);
    }
    tide__conn_destroy(p, i);
}

void tide_evpool_checked(struct tide_check *t, bool ok)
{
    if (t)
        aside_done(&t->a, ok);
}

void tide_evpool_reset_done(struct tide_reset *t, bool ok)
{
    if (t)
        aside_done(&t->a, ok);
}

void tide__asides_orphan_all(struct tide_evpool *p)
{
    while (p->asides.head) {
        struct aside *a = p->asides.head;
        TIDE__LIST_UNLINK(&p->asides, a);
        tide__conn_remove(p, tide__conn_find(p, a->resource));
        a->pool = NULL;
    }
}
