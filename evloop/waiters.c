/* Waiters: acquire, cancel, acquire timeouts and the delivery of answers.
 *
 * A waiter is QUEUED in the FIFO until it is answered; the answer moves it
 * to the ready list, which the pump delivers in order from the loop. Its
 * acquire timeout is a place in a deadline queue (deadlines.c). */
#include <stdlib.h>
#include <string.h>

#include "evloop_internal.h"

/* A record for a new acquire: a spare one, else from the heap. A record is
 * clean between uses (its pool set, no deadline, timer or message), so a
 * spare one needs no clearing. */
static struct tide_acquire *waiter_new(struct tide_evpool *p)
{
    struct tide_acquire *w = p->spare;
    if (w) {
        p->spare = w->next;
        p->spares--;
        return w;
    }
    w = calloc(1, sizeof *w);
    if (w) {
        w->pool = p;
        w->queue = -1;
    }
    return w;
}

/* An answer replaced by another says the new one's own sentence. */
static void forget_message(struct tide_acquire *w)
{
    free(w->message);
    w->message = NULL;
}

/* Back to clean, then kept as a spare or freed. */
static void waiter_free(struct tide_acquire *w)
{
    if (w->queue >= 0 || w->timer)
        tide__deadline_drop(w);
    if (w->message)
        forget_message(w);
    struct tide_evpool *p = w->pool;
    if (p->spares < SPARES_KEPT ||
        (SPARES_KEPT > 0 && p->evict.armed && p->spares < p->spares_burst)) {
        w->next = p->spare;
        p->spare = w;
        p->spares++;
        return;
    }
    free(w);
}

/* w, on no list, gets its answer and goes to the ready list, which the
 * pump delivers from the loop. */
static void ready(struct tide_evpool *p, struct tide_acquire *w, int status,
                  void *resource, enum tide_guard guard, int64_t retry_after,
                  const char *message)
{
    w->state = WAITER_READY;
    w->status = status;
    w->resource = resource;
    w->guard = (uint8_t)guard;
    w->retry_after = retry_after;
    w->make_error = p->make_error;
    if (message && !w->message) {
        size_t n = strlen(message) + 1;
        w->message = malloc(n);
        if (w->message)
            memcpy(w->message, message, n);
    }
    TIDE__LIST_APPEND(&p->ready, w);
    tide__serve_schedule(p);
}

void tide__waiter_answer(struct tide_evpool *p, struct tide_acquire *w,
                         int status, void *resource, enum tide_guard guard,
                         int64_t retry_after, const char *message)
{
    TIDE__LIST_UNLINK(&p->queued, w);
    tide__deadline_stop(w);
    ready(p, w, status, resource, guard, retry_after, message);
}

void tide__waiter_lend(struct tide_evpool *p, struct tide_acquire *w,
                       void *resource)
{
    TIDE__LIST_UNLINK(&p->queued, w);
    tide__deadline_stop(w);
    ready(p, w, 0, resource, TIDE_GUARD_NONE, 0, NULL);
}

/* Delivers the ready answers, oldest first. A callback may free the pool:
 * then the rest are dropped with it (free runs when the pump unwinds). */
void tide__waiters_deliver(struct tide_evpool *p)
{
    /* those ready now: one answered from a callback meanwhile waits for
     * the next round, so a chain of them cannot hold the loop */
    for (int64_t n = p->ready.count; n > 0 && p->ready.head && !p->free_pending;
         n--) {
        struct tide_acquire *w = p->ready.head;
        TIDE__LIST_UNLINK(&p->ready, w);
        w->state = WAITER_DELIVERING;
        if (w->status == 0 && p->now == w->start)
            p->zero_waits++; /* counted all at once: see zero_waits */
        else if (w->status == 0)
            tide__wait_ended(&p->waits, &p->recent, p->now, p->now - w->start);
        p->delivering++;
        if (w->cb) {
            struct tide_why why = {
                .guard = (enum tide_guard)w->guard,
                .retry_after = w->retry_after,
                .make_error = w->make_error,
                /* every loan says the same: no look-up for it */
                .message = w->message       ? w->message
                           : w->status == 0 ? p->lent_text
                                            : tide_strerror(w->status),
            };
            w->cb(p, w->status, w->resource, &why, w->arg);
        }
        p->delivering--;
        waiter_free(w);
    }
}

/* Called from an acquire's callback (a caller acquiring again), with an
 * idle resource and nobody queued, the pump would lend it to this caller
 * in its next round: lend it now, and let that round only deliver it. The
 * answer still comes from the loop, with no queue place or timeout to
 * keep meanwhile, and the factory's hooks run inside a pool callback as in
 * the pump. Only where taking has no side effect to repeat should it
 * refuse (a breaker not closed, a shedder): elsewhere the pump decides.
 * Forced inline: with two callers (acquire's copies for acquire and
 * acquire_alone) GCC 12 keeps it out of line, and the call, its frame and
 * the reloads cost about 17 instructions of an acquire answered at once. */
static TIDE__INLINE bool answer_at_once(struct tide_evpool *p,
                                        struct tide_acquire *w)
{
    if (p->delivering == 0 || p->queued.count > 0 || p->shedding ||
        (p->breaker && tide_breaker_state(p->breaker) != TIDE_BREAKER_ACTIVE))
        return false;
    void *resource;
    if (tide__lend_now_kind(p, w->start, &resource, w->alone) != 0)
        return false;
    /* no timeout: a clean record has none */
    ready(p, w, 0, resource, TIDE_GUARD_NONE, 0, NULL);
    return true;
}

static TIDE__INLINE int acquire(struct tide_evpool *p, int64_t timeout,
                                tide_acquire_cb cb, void *arg,
                                struct tide_acquire **handle, bool alone)
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
    struct tide_acquire *w = waiter_new(p);
    if (!w)
        return TIDE_ENOMEM;
    w->state = WAITER_QUEUED;
    w->alone = alone;
    w->cb = cb;
    w->arg = arg;
    w->start = tide__evpool_now(p);
    w->held = 0;
    if (answer_at_once(p, w)) {
        if (handle)
            *handle = w;
        return 0;
    }
    if (p->closing) { /* a hook closed it while lending */
        waiter_free(w);
        return TIDE_ECLOSED;
    }
    int64_t span = timeout ? timeout : p->acquire_timeout;
    w->deadline = tide__after(w->start, span);
    if (tide__deadline_begin(p, w, span)) {
        waiter_free(w);
        return TIDE_ENOMEM;
    }
    TIDE__LIST_APPEND(&p->queued, w);
    tide__serve_schedule(p);
    if (handle)
        *handle = w;
    return 0;
}

int tide_evpool_acquire(struct tide_evpool *p, int64_t timeout,
                        tide_acquire_cb cb, void *arg,
                        struct tide_acquire **handle)
{
    return acquire(p, timeout, cb, arg, handle, false);
}

int tide_evpool_acquire_alone(struct tide_evpool *p, int64_t timeout,
                              tide_acquire_cb cb, void *arg,
                              struct tide_acquire **handle)
{
    return acquire(p, timeout, cb, arg, handle, true);
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
    if (w->status == 0 && w->resource)
        (void)tide__loan_unseen(p, w->resource);
    if (notify) {
        /* a cancel's own answer: nothing of the one it replaces */
        w->status = TIDE_ECANCELLED;
        w->resource = NULL;
        w->guard = TIDE_GUARD_NONE;
        w->retry_after = 0;
        forget_message(w);
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
        w->guard = (uint8_t)guard;
        forget_message(w);
    }
    while (p->queued.head)
        tide__waiter_answer(p, p->queued.head, status, NULL, guard, 0, NULL);
}

void tide__waiters_trim(struct tide_evpool *p)
{
    while (p->spares > SPARES_KEPT) {
        struct tide_acquire *w = p->spare;
        p->spare = w->next;
        p->spares--;
        free(w);
    }
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
    while (p->spare) {
        struct tide_acquire *w = p->spare;
        p->spare = w->next;
        free(w);
    }
    p->spares = 0;
}
