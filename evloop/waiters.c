/* Waiters: acquire, cancel, acquire timeouts and the delivery of answers.
 *
 * A waiter is QUEUED in the FIFO until it is answered; the answer moves it
 * to the ready list, which the pump delivers in order from the loop. Its
 * timer is the acquire timeout: common timeouts make many waiters with the
 * same timeout cost O(1) each. */
#include <stdlib.h>
#include <string.h>

#include "evloop_internal.h"

static void waiter_free(struct tide_acquire *w)
{
    if (w->timer_armed)
        event_del(&w->timer);
    /* an embedded event: libevent's debug mode tracks it until told */
    if (w->timer_assigned)
        event_debug_unassign(&w->timer);
    free(w->message);
    free(w);
}

/* The timeval to arm a waiter's timer with: a common timeout for spans seen
 * before (up to COMMON_TIMEOUTS of them), a plain one otherwise. */
static const struct timeval *timeout_tv(struct tide_evpool *p, int64_t span,
                                        struct timeval *plain)
{
    for (int k = 0; k < p->n_common; k++)
        if (p->common[k].span == span)
            return p->common[k].tv;
    tide__timeval(span, plain);
    if (p->n_common < COMMON_TIMEOUTS) {
        const struct timeval *tv =
            event_base_init_common_timeout(p->base, plain);
        if (tv) {
            p->common[p->n_common].span = span;
            p->common[p->n_common].tv = tv;
            p->n_common++;
            return tv;
        }
    }
    return plain;
}

void tide__waiter_answer(struct tide_evpool *p, struct tide_acquire *w,
                         int status, void *resource, enum tide_guard guard,
                         int64_t retry_after, const char *message)
{
    TIDE__LIST_UNLINK(&p->queued, w);
    if (w->timer_armed) {
        event_del(&w->timer);
        w->timer_armed = false;
    }
    w->state = WAITER_READY;
    w->status = status;
    w->resource = resource;
    w->why.guard = guard;
    w->why.retry_after = retry_after;
    w->why.make_error = p->make_error;
    if (message && !w->message) {
        size_t n = strlen(message) + 1;
        w->message = malloc(n);
        if (w->message)
            memcpy(w->message, message, n);
    }
    w->why.message = w->message ? w->message : tide_strerror(status);
    TIDE__LIST_APPEND(&p->ready, w);
    tide__serve_schedule(p); /* the pump delivers it, from the loop */
}

/* Delivers every ready answer, oldest first. A callback may free the pool:
 * then the rest are dropped with it (free runs when the pump unwinds). */
void tide__waiters_deliver(struct tide_evpool *p)
{
    while (p->ready.head && !p->free_pending) {
        struct tide_acquire *w = p->ready.head;
        TIDE__LIST_UNLINK(&p->ready, w);
        w->state = WAITER_DELIVERING;
        if (w->status == 0) {
            tide__waits_add(&p->waits, p->now - w->start);
            tide__recent_add(&p->recent, p->now, p->now - w->start);
        }
        if (w->cb)
            w->cb(p, w->status, w->resource, &w->why, w->arg);
        waiter_free(w);
    }
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide_acquire *w = arg;
    struct tide_evpool *p = w->pool;
    w->timer_armed = false;
    tide__evpool_enter(p);
    p->counters.timeouts++;
    /* when the last make failed, say why the wait was in vain */
    tide__waiter_answer(p, w, TIDE_ETIMEDOUT, NULL, TIDE_GUARD_NONE, 0,
                        p->make_error ? p->last_message : NULL);
    tide__waiters_deliver(p);
    /* its place in the make count passes on: re-run the pump */
    if (tide__evpool_leave(p))
        tide__serve_schedule(p);
}

int tide_evpool_acquire(struct tide_evpool *p, int64_t timeout,
                        tide_acquire_cb cb, void *arg,
                        struct tide_acquire **handle)
{
    if (handle)
        *handle = NULL;
    if (!p || !cb || timeout < 0)
        return TIDE_EINVAL;
    p->counters.acquires++;
    if (p->closing)
        return TIDE_ECLOSED;
    if (p->queue_max != TIDE_UNLIMITED && p->queued.count >= p->queue_max) {
        p->counters.queue_full++;
        return TIDE_EQUEUEFULL;
    }
    struct tide_acquire *w = calloc(1, sizeof *w);
    if (!w)
        return TIDE_ENOMEM;
    w->pool = p;
    w->cb = cb;
    w->arg = arg;
    w->start = tide__evpool_now(p);
    int64_t span = timeout ? timeout : p->acquire_timeout;
    if (span != TIDE_FOREVER) {
        struct timeval plain;
        event_assign(&w->timer, p->base, -1, 0, on_timeout, w);
        w->timer_assigned = true;
        event_add(&w->timer, timeout_tv(p, span, &plain));
        w->timer_armed = true;
    }
    TIDE__LIST_APPEND(&p->queued, w);
    tide__serve_schedule(p);
    if (handle)
        *handle = w;
    return 0;
}

void tide_evpool_cancel(struct tide_acquire *w, bool notify)
{
    /* from inside its own callback the answer is already given: nothing
     * is left to cancel */
    if (!w || w->state == WAITER_DELIVERING)
        return;
    struct tide_evpool *p = w->pool;
    p->counters.cancels++;
    if (w->state == WAITER_QUEUED) {
        if (notify) {
            tide__waiter_answer(p, w, TIDE_ECANCELLED, NULL, TIDE_GUARD_NONE, 0,
                                NULL);
            tide__serve_schedule(p);
            return;
        }
        TIDE__LIST_UNLINK(&p->queued, w);
        waiter_free(w);
        tide__serve_schedule(p); /* a make it counted on passes on */
        return;
    }
    /* answered but not yet delivered: a resource set aside for it goes back
     * (to the next waiter, through the pool) as if it had never been lent:
     * the caller never saw it, so it is no loan for retire_after and no
     * release for reusable() to judge */
    TIDE__LIST_UNLINK(&p->ready, w);
    if (w->status == 0 && w->resource) {
        tide__evpool_clock(p);
        tide__loan_undo(p, tide__conn_find(p, w->resource));
    }
    if (notify) {
        w->status = TIDE_ECANCELLED;
        w->resource = NULL;
        w->why.message = tide_strerror(TIDE_ECANCELLED);
        TIDE__LIST_APPEND(&p->ready, w);
        tide__serve_schedule(p);
        return;
    }
    waiter_free(w);
}

void tide__waiters_fail_all(struct tide_evpool *p, int status)
{
    enum tide_guard guard =
        status == TIDE_ECLOSED ? TIDE_GUARD_CLOSED : TIDE_GUARD_NONE;
    /* Answered with a resource but not yet delivered: to the caller this is
     * still a waiter, and close fails every waiter. The resource goes back
     * unlent (and is destroyed, the pool being closed). */
    for (struct tide_acquire *w = p->ready.head; w; w = w->next) {
        if (w->status != 0)
            continue;
        if (w->resource)
            tide__loan_undo(p, tide__conn_find(p, w->resource));
        w->status = status;
        w->resource = NULL;
        w->why.guard = guard;
        w->why.message = tide_strerror(status);
    }
    while (p->queued.head)
        tide__waiter_answer(p, p->queued.head, status, NULL, guard, 0, NULL);
}

void tide__waiters_free_all(struct tide_evpool *p)
{
    while (p->queued.head) {
        struct tide_acquire *w = p->queued.head;
        TIDE__LIST_UNLINK(&p->queued, w);
        waiter_free(w);
    }
    while (p->ready.head) {
        struct tide_acquire *w = p->ready.head;
        TIDE__LIST_UNLINK(&p->ready, w);
        if (w->status == 0 && w->resource) {
            uint32_t i = tide__conn_find(p, w->resource);
            if (i != CONN_NONE)
                p->conns[i].state = CONN_LENT; /* destroyed with the rest */
        }
        waiter_free(w);
    }
}
