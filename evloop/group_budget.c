/* The group's retry budget (<tidepool/group.h>, "Retry budget"): retries
 * may add retry_ratio of the requests over the last retry_window, plus
 * retry_floor a second whatever the ratio.
 *
 * The ratio counts requests and retries in a ring of steps (group_route.c)
 * rather than in the core's tide_window: the window keeps one stamp per
 * event, exact but as large as its quota, and a busy group makes a
 * million requests in ten seconds. The floor is the core's window as it
 * is meant: at most retry_floor retries in any second, counted exactly. */
#include "group_internal.h"

int tide__budget_init(struct tide_group *g, int64_t window, int64_t floor)
{
    tide__ring_init(&g->budget, window);
    g->floor = NULL;
    if (floor == 0)
        return 0;
    return tide_window_new(floor, TIDE_SEC(1), &g->floor);
}

void tide__budget_dispose(struct tide_group *g)
{
    tide_window_free(g->floor);
    g->floor = NULL;
}

void tide__budget_request(struct tide_group *g, int64_t now)
{
    tide__ring_add(&g->budget, now, 1, 0);
}

bool tide__budget_spend(struct tide_group *g, int64_t now)
{
    uint64_t requests, retries;
    tide__ring_sum(&g->budget, now, &requests, &retries);
    bool ok = (double)(retries + 1) <= g->retry_ratio * (double)requests;
    if (!ok && g->floor)
        ok = tide_window_take(g->floor, now);
    if (!ok) {
        g->retries_refused++;
        return false;
    }
    tide__ring_add(&g->budget, now, 0, 1);
    g->retries_spent++;
    return true;
}

void tide_group_budget(struct tide_group *g, struct tide_group_budget *out)
{
    if (!g || !out)
        return;
    int64_t now = tide__group_now(g, tide__group_clock());
    *out = (struct tide_group_budget){0};
    tide__ring_sum(&g->budget, now, &out->requests, &out->retries);
    uint64_t spare = 0;
    if (g->floor) {
        int64_t left = tide_window_left(g->floor, now);
        spare = left > 0 ? (uint64_t)left : 0;
    }
    out->allowed = (uint64_t)(g->retry_ratio * (double)out->requests) + spare;
    out->spent = g->retries_spent;
    out->refused = g->retries_refused;
    out->panic = g->panic;
    out->held = g->held;
}
