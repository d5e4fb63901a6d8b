/* The group's pick: which upstream an acquire goes to. Upstreams held off
 * (an open breaker whose retry is not due, makes held after failed makes)
 * are passed over while another can serve; an open breaker whose retry is
 * due is sent one acquire at a time, as its probe. */
#include <stdlib.h>
#include <string.h>

#include "group_internal.h"

static bool was_tried(const struct tide_group_acquire *a,
                      const struct tide_group_upstream *u)
{
    if (!a)
        return false;
    for (size_t i = 0; i < a->n_tried; i++)
        if (a->tried[i] == u)
            return true;
    return false;
}

/* An open breaker is skipped while it says a probe is not yet due; once
 * due, its pool is a candidate again, so taking from it can start the
 * probe that lets it recover. */
static bool breaker_holds(struct tide_evpool *pool, int64_t now)
{
    struct tide_breaker *b = tide_evpool_breaker(pool);
    return b && tide_breaker_state(b) == TIDE_BREAKER_INACTIVE &&
           tide_breaker_retry_after(b, now) > 0;
}

/* Makes held after failed makes (core.h, "Makes held while makes fail")
 * while the pool has nothing to lend without one: a caller sent there
 * would wait out the hold, or be refused, where another upstream may serve
 * at once. */
static bool makes_held(struct tide_evpool *pool, int64_t now)
{
    struct tide_pool *core = pool->core;
    if (tide_pool_lendable(core))
        return false;
    struct tide_pool_guards g;
    tide_pool_guards(core, now, &g);
    return g.backoff_hold > 0 || g.backoff_probing;
}

/* The candidates for a: not removed, not tried, and (when skip_open) no
 * breaker or make hold keeping them off. */
size_t tide__group_candidates(struct tide_group *g,
                              struct tide_group_acquire *a, int64_t now,
                              bool skip_open)
{
    size_t n = 0;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next) {
        if (u->removed || !u->pool || was_tried(a, u))
            continue;
        if (skip_open &&
            (breaker_holds(u->pool, now) || makes_held(u->pool, now)))
            continue;
        g->pick_pools[n] = u->pool->core;
        g->pick_ups[n] = u;
        n++;
    }
    return n;
}

/* How long a probe that did not close the breaker holds the next one
 * off: a manual deactivate names no retry time, and each probe costs the
 * acquire it rides on a detour to another upstream. */
#define PROBE_SPACING TIDE_MS(100)

/* An upstream owed a probe: its breaker is open, its retry is due, and no
 * probe of it is out. */
static struct tide_group_upstream *due_probe(struct tide_group_acquire *a,
                                             int64_t now)
{
    struct tide_group *g = a->group;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next) {
        if (u->removed || !u->pool || u->probing || now < u->probe_after ||
            was_tried(a, u))
            continue;
        struct tide_breaker *b = tide_evpool_breaker(u->pool);
        if (b && tide_breaker_state(b) == TIDE_BREAKER_INACTIVE &&
            tide_breaker_retry_after(b, now) == 0)
            return u;
    }
    return NULL;
}

struct tide_group_upstream *tide__group_pick(struct tide_group_acquire *a,
                                             int64_t now)
{
    struct tide_group *g = a->group;
    struct tide_group_upstream *probe = due_probe(a, now);
    if (probe) {
        probe->probing = true;
        a->probe = true;
        return probe;
    }
    size_t n = tide__group_candidates(g, a, now, true);
    if (n == 0) /* every one left is held off: ask them for their cause */
        n = tide__group_candidates(g, a, now, false);
    if (n == 0)
        return NULL;
    double first = tide__group_roll(g), second = tide__group_roll(g);
    int i = tide_pick(g->pick_pools, n, now, first, second);
    return i < 0 ? NULL : g->pick_ups[i];
}

/* A probe's acquire has left its upstream (answered, cancelled, refused
 * at once). */
void tide__group_probe_done(struct tide_group_acquire *a,
                            struct tide_group_upstream *u, int64_t now)
{
    if (!a->probe)
        return;
    a->probe = false;
    u->probing = false;
    u->probe_after = now + PROBE_SPACING;
}
