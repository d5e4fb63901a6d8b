/* The group's acquires and loans: acquire, try_acquire and cancel, the
 * cap on loans across the group with its FIFO, the answer and its
 * delivery, and the ends of a loan (release, discard, retire, abandon,
 * stale).
 *
 * Every answer is delivered from the acquire's own event, never from
 * inside a pool's callback or a group call: the user's callback may then
 * free the group (deferred until the delivery unwinds, as the pool does)
 * and the pool's tide_why, valid only during the pool's callback, is
 * copied first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group_internal.h"

/* ---- cap slots ---- */

/* A place under the cap came free: the oldest capped acquire goes on. */
void tide__group_slot_free(struct tide_group *g, int64_t now)
{
    g->slots--;
    while (g->capped.head && (g->cap == 0 || g->slots < g->cap)) {
        struct tide_group_acquire *a = g->capped.head;
        TIDE__LIST_UNLINK(&g->capped, a);
        event_del(&a->ev);
        event_assign(&a->ev, g->base, -1, 0, tide__group_on_deliver, a);
        TIDE__LIST_APPEND(&g->pending, a);
        a->holds_slot = true;
        g->slots++;
        tide__group_dispatch(a, now);
    }
}

/* ---- answers ---- */

/* Records the answer and schedules its delivery. `why` is the pool's
 * (copied) or NULL. Gives up the cap slot unless a resource is lent. */
void tide__group_answer(struct tide_group_acquire *a, int status,
                        struct tide_group_upstream *u, void *resource,
                        const struct tide_why *why, int64_t now)
{
    struct tide_group *g = a->group;
    a->state = ACQ_READY;
    a->status = status;
    a->resource = resource;
    a->answered_by = u;
    if (u)
        u->refs++;
    if (why) {
        a->why = *why;
        free(a->message);
        a->message = why->message ? strdup(why->message) : NULL;
        a->why.message = a->message ? a->message : tide_strerror(status);
    } else {
        a->why = (struct tide_why){.message = tide_strerror(status)};
    }
    if (status == 0 && u) {
        u->lent++;
        tide__route_lent(u, resource, tide__group_now(g, now));
    }
    event_del(&a->ev);
    event_active(&a->ev, EV_TIMEOUT, 0);
    if (a->holds_slot && status != 0) {
        a->holds_slot = false;
        tide__group_slot_free(g, now);
    }
}

void tide__group_answer_note(struct tide_group_acquire *a, const char *note)
{
    const char *was = a->why.message ? a->why.message : "";
    size_t n = strlen(was) + strlen(note) + 3;
    char *m = malloc(n);
    if (!m)
        return; /* the cause alone, then */
    snprintf(m, n, "%s (%s)", was, note);
    free(a->message);
    a->message = m;
    a->why.message = m;
}

void tide__group_acquire_free(struct tide_group_acquire *a)
{
    event_del(&a->ev);
    event_debug_unassign(&a->ev);
    free(a->tried);
    free(a->message);
    free(a);
}

static void on_cap_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide_group_acquire *a = arg;
    struct tide_group *g = a->group;
    TIDE__LIST_UNLINK(&g->capped, a);
    TIDE__LIST_APPEND(&g->pending, a);
    event_assign(&a->ev, g->base, -1, 0, tide__group_on_deliver, a);
    tide__group_answer(a, TIDE_ETIMEDOUT, NULL, NULL, NULL,
                       tide__group_clock());
}

void tide__group_on_deliver(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide_group_acquire *a = arg;
    struct tide_group *g = a->group;
    TIDE__LIST_UNLINK(&g->pending, a);
    struct tide_group_upstream *u = a->answered_by;
    if (a->status == 0)
        g->served++;
    else if (a->status != TIDE_ECANCELLED)
        g->failed++;
    a->state = ACQ_DELIVERING;
    tide__group_enter(g);
    a->cb(g, a->status, u, a->resource, &a->why, a->arg);
    tide__group_acquire_free(a);
    bool alive = tide__group_leave(g);
    if (alive) {
        if (u)
            tide__group_unref(u);
        tide__group_check_closed(g);
    }
}

/* ---- acquire and release ---- */

/* Whether u is among the n upstreams of list (compared, never read). */
static bool among(struct tide_group_upstream *const *list, size_t n,
                  const struct tide_group_upstream *u)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == u)
            return true;
    return false;
}

/* Marks as tried, so the retry a does not go there, the upstreams the
 * request failed on, when another can serve: the group's upstreams
 * among them (a removed one is passed over by the pick anyway). */
static bool avoid(struct tide_group_acquire *a, struct tide_group *g,
                  struct tide_group_upstream *const *failed, size_t n)
{
    size_t named = 0;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next)
        if (!u->removed && among(failed, n, u))
            named++;
    if (named == 0 || named >= (size_t)g->active)
        return true; /* none of them, or all: any may be tried */
    a->tried = malloc(named * sizeof *a->tried);
    if (!a->tried)
        return false;
    a->tried_capacity = named;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next)
        if (!u->removed && among(failed, n, u))
            a->tried[a->n_tried++] = u;
    return true;
}

/* The upstream of list that the retry is for: the last the request met,
 * when it is still one of the group's (the caller's pointer may be to
 * one drained and freed since, so it is found, not read). */
static struct tide_group_upstream *
last_failed(struct tide_group *g, struct tide_group_upstream *const *failed,
            size_t n)
{
    if (n == 0)
        return NULL;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next)
        if (u == failed[n - 1])
            return u;
    return NULL;
}

/* An acquire, or a retry of a request that failed on the n upstreams of
 * `failed`. */
static int start(struct tide_group *g, int64_t timeout,
                 tide_group_acquire_cb cb, void *arg,
                 struct tide_group_acquire **handle, bool retry,
                 struct tide_group_upstream *const *failed, size_t n)
{
    if (handle)
        *handle = NULL;
    if (!g || !cb || timeout < 0 || (n > 0 && !failed))
        return TIDE_EINVAL;
    if (g->closing || g->active == 0)
        return TIDE_ECLOSED;
    bool capped = g->cap > 0 && g->slots >= g->cap;
    if (capped && g->capped.count >= g->queue_max)
        return TIDE_EQUEUEFULL;
    int64_t now = tide__group_clock();
    int64_t rnow = tide__group_now(g, now);
    struct tide_group_acquire *a = calloc(1, sizeof *a);
    if (!a)
        return TIDE_ENOMEM;
    /* those that failed are not tried again, unless they are all there
     * is */
    if (!avoid(a, g, failed, n)) {
        free(a);
        return TIDE_ENOMEM;
    }
    if (retry) {
        if (!tide__budget_spend(g, rnow)) {
            free(a->tried);
            free(a);
            return TIDE_EUNAVAILABLE;
        }
        struct tide_group_upstream *last = last_failed(g, failed, n);
        if (last)
            last->route.failures++;
    } else {
        tide__budget_request(g, rnow);
    }
    a->group = g;
    a->cb = cb;
    a->arg = arg;
    a->deadline = tide__after(now, timeout ? timeout : g->acquire_timeout);
    g->acquires++;
    if (handle)
        *handle = a;
    if (capped) {
        a->state = ACQ_CAPPED;
        event_assign(&a->ev, g->base, -1, 0, on_cap_timeout, a);
        struct timeval tv;
        tide__timeval(a->deadline - now, &tv);
        event_add(&a->ev, &tv);
        TIDE__LIST_APPEND(&g->capped, a);
        return 0;
    }
    event_assign(&a->ev, g->base, -1, 0, tide__group_on_deliver, a);
    TIDE__LIST_APPEND(&g->pending, a);
    a->holds_slot = true;
    g->slots++;
    tide__group_enter(g);
    tide__group_dispatch(a, now);
    tide__group_leave(g);
    return 0;
}

int tide_group_acquire(struct tide_group *g, int64_t timeout,
                       tide_group_acquire_cb cb, void *arg,
                       struct tide_group_acquire **handle)
{
    return start(g, timeout, cb, arg, handle, false, NULL, 0);
}

int tide_group_retry(struct tide_group *g, struct tide_group_upstream *failed,
                     int64_t timeout, tide_group_acquire_cb cb, void *arg,
                     struct tide_group_acquire **handle)
{
    if (failed && g && failed->group != g) {
        if (handle)
            *handle = NULL;
        return TIDE_EINVAL;
    }
    return start(g, timeout, cb, arg, handle, true, &failed, failed ? 1 : 0);
}

int tide_group_retry_avoid(struct tide_group *g,
                           struct tide_group_upstream *const *failed, size_t n,
                           int64_t timeout, tide_group_acquire_cb cb, void *arg,
                           struct tide_group_acquire **handle)
{
    return start(g, timeout, cb, arg, handle, true, failed, n);
}

int tide_group_try_acquire(struct tide_group *g, struct tide_group_upstream **u,
                           void **resource)
{
    if (u)
        *u = NULL;
    if (resource)
        *resource = NULL;
    if (!g || !u || !resource)
        return TIDE_EINVAL;
    if (g->closing || g->active == 0)
        return TIDE_ECLOSED;
    /* no barging past callers waiting for the cap */
    if (g->capped.count > 0 || (g->cap > 0 && g->slots >= g->cap))
        return TIDE_EWOULDBLOCK;
    int64_t now = tide__group_clock();
    /* a probe goes out on an acquire only (the pick sends it there): a
     * caller that always found an idle one here would keep an upstream
     * back from an outage waiting for its probe until the fast path
     * missed by chance (its refusal, 1 while open, keeps the pick away) */
    if (tide__group_probe_due(g, now))
        return TIDE_EWOULDBLOCK;
    size_t n = tide__group_candidates(g, NULL, now, true);
    struct tide_group_upstream *up = tide__group_choose(g, n, now);
    if (!up)
        return TIDE_EWOULDBLOCK;
    void *r;
    int rc = tide_evpool_try_acquire(up->pool, &r);
    if (rc) /* nothing idle, callers queued, refused: acquire finds out */
        return TIDE_EWOULDBLOCK;
    int64_t rnow = tide__group_now(g, now);
    tide__budget_request(g, rnow);
    tide__route_lent(up, r, rnow);
    up->lent++;
    g->slots++;
    g->acquires++;
    g->served++;
    *u = up;
    *resource = r;
    return 0;
}

void tide_group_cancel(struct tide_group_acquire *a, bool notify)
{
    if (!a || a->state == ACQ_DELIVERING)
        return;
    struct tide_group *g = a->group;
    int64_t now = tide__group_clock();
    tide__group_enter(g);
    struct tide_group_upstream *u = NULL;
    switch (a->state) {
    case ACQ_CAPPED:
        TIDE__LIST_UNLINK(&g->capped, a);
        event_del(&a->ev);
        event_assign(&a->ev, g->base, -1, 0, tide__group_on_deliver, a);
        TIDE__LIST_APPEND(&g->pending, a);
        break;
    case ACQ_AT_POOL:
        u = a->at;
        tide__group_probe_done(a, u, now);
        tide_evpool_cancel(a->pool_handle, false);
        a->at = NULL;
        a->pool_handle = NULL;
        break;
    case ACQ_READY:
        /* answered but not delivered: a resource the caller never saw
         * goes back to its pool as the pool's own cancel would give it,
         * as if never lent (no loan counted, nothing for reusable() to
         * judge, no outcome for the breaker) */
        if (a->status == 0 && a->answered_by) {
            a->answered_by->lent--;
            tide__route_ended(a->answered_by, a->resource,
                              tide__group_now(g, now), false);
            (void)tide__loan_unseen(a->answered_by->pool, a->resource);
        }
        if (a->answered_by)
            tide__group_unref(a->answered_by);
        a->answered_by = NULL;
        a->resource = NULL;
        break;
    case ACQ_DELIVERING:
        break;
    }
    if (a->holds_slot) {
        a->holds_slot = false;
        tide__group_slot_free(g, now);
    }
    if (notify) {
        a->state = ACQ_READY;
        a->status = TIDE_ECANCELLED;
        a->resource = NULL;
        a->why = (struct tide_why){.message = tide_strerror(TIDE_ECANCELLED)};
        event_del(&a->ev);
        event_active(&a->ev, EV_TIMEOUT, 0);
    } else {
        TIDE__LIST_UNLINK(&g->pending, a);
        tide__group_acquire_free(a);
    }
    if (u)
        tide__group_unref(u);
    tide__group_check_closed(g);
    tide__group_leave(g);
}

/* A loan of u ends by `end` (the pool's release, discard, retire,
 * abandon or stale), and the group's place for it is freed. Its duration
 * is u's latency when `timed`: a loan abandoned (the borrower's client
 * left) or stale (closed before any byte) says nothing of how long the
 * upstream takes. */
static int give_back(struct tide_group *g, struct tide_group_upstream *u,
                     void *resource,
                     int (*end)(struct tide_evpool *p, void *resource),
                     bool timed)
{
    if (!g || !u || !resource || u->group != g)
        return TIDE_EINVAL;
    if (!u->pool || u->lent <= 0)
        return TIDE_EUNKNOWN;
    int rc = end(u->pool, resource);
    if (rc < 0)
        return rc;
    int64_t now = tide__group_clock();
    tide__route_ended(u, resource, tide__group_now(g, now), timed);
    tide__group_enter(g);
    u->lent--;
    tide__group_slot_free(g, now);
    if (tide__group_leave(g))
        tide__group_upstream_maybe_free(u);
    return rc; /* 0, or tide_evpool_stale's TIDE_STALE */
}

int tide_group_release(struct tide_group *g, struct tide_group_upstream *u,
                       void *resource)
{
    return give_back(g, u, resource, tide_evpool_release, true);
}

int tide_group_discard(struct tide_group *g, struct tide_group_upstream *u,
                       void *resource)
{
    return give_back(g, u, resource, tide_evpool_discard, true);
}

int tide_group_retire(struct tide_group *g, struct tide_group_upstream *u,
                      void *resource)
{
    return give_back(g, u, resource, tide_evpool_retire, true);
}

int tide_group_abandon(struct tide_group *g, struct tide_group_upstream *u,
                       void *resource)
{
    return give_back(g, u, resource, tide_evpool_abandon, false);
}

int tide_group_stale(struct tide_group *g, struct tide_group_upstream *u,
                     void *resource)
{
    return give_back(g, u, resource, tide_evpool_stale, false);
}
