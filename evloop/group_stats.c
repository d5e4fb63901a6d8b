/* The group's stats: its own counters, the upstreams' pool stats summed,
 * and one upstream's. */
#include <stdlib.h>
#include <string.h>

#include "group_internal.h"

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* How bad a breaker state is, for the group's worst. */
static int severity(enum tide_breaker_state s)
{
    return s == TIDE_BREAKER_INACTIVE ? 2 : s == TIDE_BREAKER_RECOVERING;
}

static void add_stats(struct tide_evpool_stats *t,
                      const struct tide_evpool_stats *s)
{
    t->live += s->live;
    t->idle += s->idle;
    t->lent += s->lent;
    t->making += s->making;
    t->checking += s->checking;
    t->resetting += s->resetting;
    t->waiting += s->waiting;
    if (severity(s->breaker) > severity(t->breaker))
        t->breaker = s->breaker;
    if (s->refusal > t->refusal)
        t->refusal = s->refusal;
    t->made += s->made;
    t->destroyed += s->destroyed;
    t->make_failures += s->make_failures;
    t->timeouts += s->timeouts;
    t->shed += s->shed;
    t->stale += s->stale;
    t->evicted += s->evicted;
    t->health_failures += s->health_failures;
    t->leaks += s->leaks;
    t->lost += s->lost;
    t->acquires += s->acquires;
    t->queue_full += s->queue_full;
    t->cancels += s->cancels;
    t->dirty += s->dirty;
    t->reset_failures += s->reset_failures;
    t->retired += s->retired;
    t->abandoned += s->abandoned;
    t->stale_loans += s->stale_loans;
    t->loans += s->loans;
    t->busiest = max64(t->busiest, s->busiest);
    t->broken += s->broken;
    t->wait_p50 = max64(t->wait_p50, s->wait_p50);
    t->wait_p90 = max64(t->wait_p90, s->wait_p90);
    t->wait_p99 = max64(t->wait_p99, s->wait_p99);
    t->wait_max = max64(t->wait_max, s->wait_max);
    t->recent_p50 = max64(t->recent_p50, s->recent_p50);
    t->recent_p90 = max64(t->recent_p90, s->recent_p90);
    t->recent_p99 = max64(t->recent_p99, s->recent_p99);
    t->recent_max = max64(t->recent_max, s->recent_max);
}

void tide_group_upstream_stats(struct tide_group_upstream *u,
                               struct tide_evpool_stats *out, int64_t *lent)
{
    if (!u)
        return;
    if (out) {
        if (u->pool)
            tide_evpool_stats(u->pool, out);
        else
            *out = (struct tide_evpool_stats){0};
    }
    if (lent)
        *lent = u->lent;
}

void tide_group_stats(struct tide_group *g, struct tide_group_stats *out)
{
    if (!g || !out)
        return;
    *out = (struct tide_group_stats){0};
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next) {
        if (u->removed)
            out->draining++;
        else
            out->upstreams++;
        out->lent += u->lent;
        if (!u->pool)
            continue;
        struct tide_evpool_stats s;
        tide_evpool_stats(u->pool, &s);
        if (!u->removed && s.breaker == TIDE_BREAKER_INACTIVE)
            out->open++;
        add_stats(&out->pools, &s);
    }
    out->capped = g->capped.count;
    out->acquires = g->acquires;
    out->served = g->served;
    out->failed = g->failed;
    out->failovers = g->failovers;
}

void tide_group_route(struct tide_group_upstream *u,
                      struct tide_group_route *out)
{
    if (!u || !out)
        return;
    struct tide_group *g = u->group;
    int64_t rnow = tide__group_now(g, tide__group_clock());
    *out = (struct tide_group_route){0};
    uint64_t all = 0, timed = 0, sum = 0;
    tide__ring_sum(&g->lent, rnow, &all, NULL);
    tide__ring_sum(&u->route.lent, rnow, &out->loans, NULL);
    tide__ring_sum(&u->route.ended, rnow, &timed, &sum);
    out->share = all ? (double)out->loans / (double)all : 0.0;
    out->latency = (int64_t)tide__route_latency(u, rnow);
    out->mean = timed ? (int64_t)(sum / timed) : 0;
    out->pending = u->lent + u->refs;
    struct tide_breaker *b = u->pool ? tide_evpool_breaker(u->pool) : NULL;
    out->breaker = b ? tide_breaker_state(b) : TIDE_BREAKER_ACTIVE;
    out->held = u->route.held;
    out->weight = tide__route_weight(u, rnow);
    out->failures = u->route.failures;
}
