/* The group's members: adding an upstream (its pool made here), removing
 * one (it drains: lends nothing more, its loans destroyed as they come
 * back), and the record that outlives its pool until nothing names it. */
#include <stdlib.h>
#include <string.h>

#include "group_internal.h"

void tide__group_upstream_free(struct tide_group_upstream *u)
{
    tide__route_dispose(u);
    free(u->name);
    free(u);
}

/* A removed upstream's record goes once its pool closed and nothing
 * names it any more. */
void tide__group_upstream_maybe_free(struct tide_group_upstream *u)
{
    if (!u->removed || u->pool || u->refs > 0 || u->lent > 0)
        return;
    struct tide_group *g = u->group;
    TIDE__LIST_UNLINK(&g->upstreams, u);
    tide__group_upstream_free(u);
    tide__group_check_closed(g);
}

void tide__group_unref(struct tide_group_upstream *u)
{
    u->refs--;
    tide__group_upstream_maybe_free(u);
}

static void on_pool_closed(struct tide_evpool *pool, void *arg)
{
    struct tide_group_upstream *u = arg;
    /* freeing the pool from its own close callback is allowed */
    tide_evpool_free(pool);
    u->pool = NULL;
    tide__group_upstream_maybe_free(u);
}

/* Starts the drain of u: its pool closes, failing its waiters (which move
 * on, or end when the group is closing) and destroying loans as they come
 * back. */
void tide__group_drain(struct tide_group_upstream *u)
{
    u->removed = true;
    u->group->active--;
    /* the first close of this pool: it cannot answer TIDE_ECLOSED */
    (void)tide_evpool_close(u->pool, on_pool_closed, u);
}

int tide_group_add(struct tide_group *g, const char *name,
                   const struct tide_factory *factory,
                   const struct tide_evpool_options *o,
                   struct tide_group_upstream **out)
{
    if (!out)
        return TIDE_EINVAL;
    *out = NULL;
    if (!g || !name)
        return TIDE_EINVAL;
    if (g->closing)
        return TIDE_ECLOSED;
    size_t want = (size_t)g->upstreams.count + 1;
    if (want > g->pick_capacity) {
        size_t cap = g->pick_capacity ? 2 * g->pick_capacity : 4;
        struct tide_group_upstream **up =
            realloc(g->pick_ups, cap * sizeof *up);
        if (!up)
            return TIDE_ENOMEM;
        g->pick_ups = up;
        g->pick_capacity = cap;
    }
    struct tide_group_upstream *u = calloc(1, sizeof *u);
    if (!u)
        return TIDE_ENOMEM;
    u->name = strdup(name);
    if (!u->name) {
        free(u);
        return TIDE_ENOMEM;
    }
    int rc = tide_evpool_new(g->base, factory, o, &u->pool);
    if (rc) {
        tide__group_upstream_free(u);
        return rc;
    }
    u->group = g;
    int64_t now = tide__group_now(g, tide__group_clock());
    tide__route_init(u, now);
    /* one added once the group has lent is cold beside the others */
    if (g->acquires > 0)
        tide__route_ramp(u, now, tide__group_mean_latency(g, now, NULL));
    TIDE__LIST_APPEND(&g->upstreams, u);
    g->active++;
    *out = u;
    return 0;
}

int tide_group_remove(struct tide_group *g, struct tide_group_upstream *u)
{
    if (!g || !u || u->group != g)
        return TIDE_EINVAL;
    if (u->removed)
        return TIDE_ECLOSED;
    tide__group_enter(g);
    tide__group_drain(u);
    tide__group_leave(g);
    return 0;
}

size_t tide_group_upstreams(struct tide_group *g,
                            struct tide_group_upstream **out, size_t n)
{
    if (!g)
        return 0;
    size_t k = 0;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next) {
        if (u->removed)
            continue;
        if (out && k < n)
            out[k] = u;
        k++;
    }
    return k;
}

const char *tide_group_upstream_name(const struct tide_group_upstream *u)
{
    return u ? u->name : NULL;
}

struct tide_evpool *
tide_group_upstream_pool(const struct tide_group_upstream *u)
{
    return u ? u->pool : NULL;
}
