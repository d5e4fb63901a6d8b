/* The group's failover: an acquire goes to the upstream the pick chose,
 * and when that one cannot serve (refused, a failed make, removed) on to
 * another it has not tried, within the same timeout; it fails with the
 * last upstream's own cause only when none is left. */
#include <stdlib.h>
#include <string.h>

#include "group_internal.h"

static bool remember_tried(struct tide_group_acquire *a,
                           struct tide_group_upstream *u)
{
    if (a->n_tried == a->tried_capacity) {
        size_t cap = a->tried_capacity ? 2 * a->tried_capacity : 4;
        void *t = realloc(a->tried, cap * sizeof *a->tried);
        if (!t)
            return false;
        a->tried = t;
        a->tried_capacity = cap;
    }
    a->tried[a->n_tried++] = u;
    return true;
}

static void on_pool_answer(struct tide_evpool *pool, int status, void *resource,
                           const struct tide_why *why, void *arg);

/* Whether moving on after `status` from an upstream is a retry the budget
 * pays for: the upstream was tried (a make failed, a resource was found
 * dead). Refusals at once (an open breaker, a shedder, makes held, a full
 * queue, a pool closing) did not touch it, and moving on costs nothing. */
static bool costs_retry(int status)
{
    return status != TIDE_EUNAVAILABLE && status != TIDE_EQUEUEFULL &&
           status != TIDE_ECLOSED;
}

/* Sends a to the next upstream worth trying, or answers it with the last
 * refusal when none is left, or when the move would be a retry the
 * budget has no room for. */
static void dispatch_after(struct tide_group_acquire *a, int64_t now,
                           int last_status, struct tide_group_upstream *last,
                           const struct tide_why *last_why)
{
    struct tide_group *g = a->group;
    for (;;) {
        if (g->closing) {
            tide__group_answer(a, TIDE_ECLOSED, NULL, NULL, NULL, now);
            return;
        }
        int64_t left = a->deadline - now;
        if (left <= 0) {
            tide__group_answer(a, TIDE_ETIMEDOUT, last, NULL, NULL, now);
            return;
        }
        struct tide_group_upstream *u = tide__group_pick(a, now);
        if (!u) {
            tide__group_answer(a, last_status ? last_status : TIDE_ECLOSED,
                               last, NULL, last_why, now);
            return;
        }
        if (last && costs_retry(last_status)) {
            if (!tide__budget_spend(g, tide__group_now(g, now))) {
                tide__group_probe_done(a, u, now);
                tide__group_answer(a, last_status, last, NULL, last_why, now);
                tide__group_answer_note(
                    a, "not tried elsewhere: the group's retry budget is "
                       "spent");
                return;
            }
            last->route.failures++;
        }
        if (!remember_tried(a, u)) {
            tide__group_probe_done(a, u, now);
            tide__group_answer(a, TIDE_ENOMEM, last, NULL, NULL, now);
            return;
        }
        if (last)
            g->failovers++;
        int rc = tide_evpool_acquire(u->pool, left, on_pool_answer, a,
                                     &a->pool_handle);
        if (rc == 0) {
            a->state = ACQ_AT_POOL;
            a->at = u;
            u->refs++;
            return;
        }
        /* refused at once (closing, its queue full): try another */
        tide__group_probe_done(a, u, now);
        last_status = rc;
        last = u;
        last_why = NULL;
    }
}

void tide__group_dispatch(struct tide_group_acquire *a, int64_t now)
{
    dispatch_after(a, now, 0, NULL, NULL);
}

static void on_pool_answer(struct tide_evpool *pool, int status, void *resource,
                           const struct tide_why *why, void *arg)
{
    (void)pool;
    struct tide_group_acquire *a = arg;
    struct tide_group *g = a->group;
    struct tide_group_upstream *u = a->at;
    int64_t now = tide__group_clock();
    a->at = NULL;
    a->pool_handle = NULL;
    tide__group_probe_done(a, u, now);
    tide__group_enter(g);
    if (status == 0) {
        tide__group_answer(a, 0, u, resource, why, now);
    } else if (status == TIDE_ETIMEDOUT || g->closing) {
        tide__group_answer(a, g->closing ? TIDE_ECLOSED : status, u, NULL, why,
                           now);
    } else {
        /* this upstream cannot serve (refused, a failed make, removed):
         * another may */
        dispatch_after(a, now, status, u, why);
    }
    u->refs--;
    if (tide__group_leave(g))
        tide__group_upstream_maybe_free(u);
}
