/* The group's retry budget (<tidepool/group.h>, "Retry budget"): retries
 * may add retry_ratio of the requests over the last retry_window, plus a
 * reserve of retry_floor a second over that window whatever the ratio.
 *
 * Requests and retries are counted in a ring of steps (group_route.c)
 * rather than in the core's tide_window: the window keeps one stamp per
 * event, exact but as large as its quota, and a busy group makes a
 * million requests in ten seconds.
 *
 * The floor is a reserve over the window, as Finagle's minRetriesPerSec
 * (its RetryBudget deposits the ratio per request on top of a reserve of
 * minRetriesPerSec x ttl), rather than a quota of retry_floor in any one
 * second: a group just made, whose window holds a few requests, meets a
 * brown-out with a burst of first failures before the breakers learn
 * (half of eight callers' first requests: four retries in the same
 * millisecond), and a quota of three a second refused the fourth, an
 * error for its caller. Spread over the window the reserve is the same
 * number of retries, and a busy group's ratio dwarfs it. */
#include "group_internal.h"

int tide__budget_init(struct tide_group *g, int64_t window, int64_t floor)
{
    tide__ring_init(&g->budget, window);
    g->retry_reserve = (double)floor * ((double)window / (double)TIDE_SEC(1));
    return 0;
}

void tide__budget_dispose(struct tide_group *g)
{
    (void)g;
}

void tide__budget_request(struct tide_group *g, int64_t now)
{
    tide__ring_add(&g->budget, now, 1, 0);
}

/* Retries the window allows: the ratio of its requests and the reserve. */
static double allowed(const struct tide_group *g, uint64_t requests)
{
    return g->retry_ratio * (double)requests + g->retry_reserve;
}

bool tide__budget_spend(struct tide_group *g, int64_t now)
{
    uint64_t requests, retries;
    tide__ring_sum(&g->budget, now, &requests, &retries);
    if ((double)(retries + 1) > allowed(g, requests)) {
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
    out->allowed = (uint64_t)allowed(g, out->requests);
    out->spent = g->retries_spent;
    out->refused = g->retries_refused;
    out->panic = g->panic;
    out->held = g->held;
}
