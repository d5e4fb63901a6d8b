/* The group's pick: which upstream an acquire goes to. Upstreams held off
 * (an open breaker whose retry is not due, one RECOVERING, makes held
 * after failed makes) are passed over while another can serve, unless
 * more than the panic share are; an open breaker whose retry is due is
 * sent one acquire at a time, as its probe. Of the rest, those in slow
 * start take part by their weight, two are drawn, and the one of lower
 * cost is taken (<tidepool/group.h>, "Routing around trouble"). */
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

/* Held off: an open breaker while it says a probe is not yet due (once
 * due, its pool is a candidate again, so taking from it can start the
 * probe that lets it recover), a breaker RECOVERING (its probe is out and
 * it refuses every other make), or makes held. *open: its breaker is not
 * closed. */
static bool held_off(struct tide_evpool *pool, int64_t now, bool *open)
{
    struct tide_breaker *b = tide_evpool_breaker(pool);
    enum tide_breaker_state s = b ? tide_breaker_state(b) : TIDE_BREAKER_ACTIVE;
    *open = s != TIDE_BREAKER_ACTIVE;
    if (s == TIDE_BREAKER_INACTIVE && tide_breaker_retry_after(b, now) > 0)
        return true;
    if (s == TIDE_BREAKER_RECOVERING)
        return true;
    return makes_held(pool, now);
}

double tide__group_mean_latency(struct tide_group *g, int64_t rnow,
                                const struct tide_group_upstream *except)
{
    double sum = 0;
    int n = 0;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next) {
        if (u == except || u->removed || !u->route.timed)
            continue;
        sum += tide__route_latency(u, rnow);
        n++;
    }
    return n ? sum / n : 0;
}

/* Looks at every upstream once: which are held off (a spell that its
 * next loan ends, with a slow start after an outage), and whether so many
 * are that the group panics. */
static void look(struct tide_group *g, int64_t now, int64_t rnow)
{
    int64_t held = 0, active = 0;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next) {
        if (u->removed || !u->pool)
            continue;
        active++;
        bool open;
        bool h = held_off(u->pool, now, &open);
        held += h;
        tide__route_held(u, rnow, h, open);
    }
    g->held = held;
    g->panic = active > 0 && (double)held > g->panic_share * (double)active;
}

/* The candidates for a: not removed, not tried, and (when skip_open) not
 * held off, unless the group panics. */
size_t tide__group_candidates(struct tide_group *g,
                              struct tide_group_acquire *a, int64_t now,
                              bool skip_open)
{
    look(g, now, tide__group_now(g, now));
    size_t n = 0;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next) {
        if (u->removed || !u->pool || was_tried(a, u))
            continue;
        if (skip_open && !g->panic && u->route.held)
            continue;
        g->pick_ups[n] = u;
        n++;
    }
    return n;
}

/* Index in [0, n) from a roll. */
static size_t draw(double roll, size_t n)
{
    size_t i = (size_t)(roll * (double)n);
    return i < n ? i : n - 1;
}

/* What sending one more caller to u costs (<tidepool/group.h>): its
 * latency times the square root of the callers it would have, over the
 * share its breaker lets through (ignored in panic). Returned squared,
 * which orders the same and needs no sqrt (the library links no libm).
 * `mean` stands in for a latency not yet measured. */
static double cost(struct tide_group *g, struct tide_group_upstream *u,
                   int64_t now, int64_t rnow, double mean)
{
    double lat = u->route.timed ? tide__route_latency(u, rnow) : mean;
    if (!(lat > 1.0))
        lat = 1.0; /* none measured anywhere: the fewest callers wins */
    double pending = (double)(u->lent + u->refs);
    double through = 1.0;
    if (!g->panic)
        through = 1.0 - tide_pool_refusal(u->pool->core, now);
    if (through < 0.01)
        through = 0.01;
    double per = lat / through;
    return per * per * (pending + 1.0);
}

struct tide_group_upstream *tide__group_choose(struct tide_group *g, size_t n,
                                               int64_t now)
{
    if (n == 0)
        return NULL;
    int64_t rnow = tide__group_now(g, now);
    /* slow start: one ramping takes part with probability its weight */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        struct tide_group_upstream *u = g->pick_ups[i];
        double w = tide__route_weight(u, rnow);
        if (w >= 1.0 || tide__group_roll(g) < w)
            g->pick_ups[k++] = u;
    }
    if (k == 0) /* nothing written over: all n are still there */
        k = n;
    if (k == 1)
        return g->pick_ups[0];
    size_t ia = draw(tide__group_roll(g), k);
    size_t ib = draw(tide__group_roll(g), k - 1);
    if (ib >= ia)
        ib++;
    struct tide_group_upstream *a = g->pick_ups[ia], *b = g->pick_ups[ib];
    double mean = 0;
    if (!a->route.timed || !b->route.timed)
        mean = tide__group_mean_latency(g, rnow, NULL);
    double ca = cost(g, a, now, rnow, mean), cb = cost(g, b, now, rnow, mean);
    return cb < ca ? b : a;
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

bool tide__group_probe_due(struct tide_group *g, int64_t now)
{
    struct tide_group_acquire none = {.group = g};
    return due_probe(&none, now) != NULL;
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
    return tide__group_choose(g, n, now);
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
