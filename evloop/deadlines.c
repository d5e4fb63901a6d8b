/* Acquire timeouts without a timer per waiter.
 *
 * Waiters with the same timeout are queued in the order they came, so they
 * time out in that order too: each distinct timeout (up to DEADLINE_QUEUES
 * at once) is a FIFO with one timer, armed for its head's deadline. An
 * acquire then costs a link, and an answer an unlink, with no event added
 * or deleted: a timer armed once serves every caller of a busy pool for as
 * long as any waits, and fires only to time out the head (or to move on to
 * the next head, when the one it was armed for was served before). A
 * timeout none of the queues can take (the ninth distinct one at a time)
 * gets a timer of its own. */
#include <stdlib.h>

#include "evloop_internal.h"

/* Every waiter in q times out span after it started. */
static int64_t deadline_of(const struct deadline_queue *q,
                           const struct tide_acquire *w)
{
    return tide__after(w->start, q->span);
}

static void arm_for_head(struct deadline_queue *q, int64_t now)
{
    struct timeval tv;
    tide__timeval(deadline_of(q, q->head) - now, &tv);
    event_add(&q->timer, &tv);
    q->armed = true;
}

static void time_out(struct tide_evpool *p, struct tide_acquire *w)
{
    p->counters.timeouts++;
    /* when the last make failed, say why the wait was in vain; a waiter
     * held while makes fail waited on that failure (its probe may have
     * been made meanwhile, not proven yet), and when makes are held still
     * it is told when they may start again */
    int cause = w->held ? p->last_error : p->make_error;
    int64_t retry = 0;
    if (w->held) {
        struct tide_pool_guards g;
        tide_pool_guards(p->core, p->now, &g);
        retry = g.backoff_hold;
    }
    tide__waiter_answer(p, w, TIDE_ETIMEDOUT, NULL, TIDE_GUARD_NONE, retry,
                        cause ? p->last_message : NULL);
    w->make_error = cause;
}

/* The end of a timeout's callback: the answers delivered, and the pump run
 * again, since the places the timed out held in the make count pass on. */
static void deliver_and_leave(struct tide_evpool *p)
{
    tide__waiters_deliver(p);
    if (tide__evpool_leave(p))
        tide__serve_schedule(p);
}

/* Times out every head that is due. libevent's coarse clock may fire the
 * timer a little before the head's deadline by ours: then it is armed again
 * for the rest, so nobody times out early. */
static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct deadline_queue *q = arg;
    struct tide_evpool *p = q->pool;
    q->armed = false;
    tide__evpool_enter(p);
    while (q->head && deadline_of(q, q->head) <= p->now)
        time_out(p, q->head);
    if (q->head)
        arm_for_head(q, p->now);
    deliver_and_leave(p);
}

static void on_own_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide_acquire *w = arg;
    struct tide_evpool *p = w->pool;
    tide__evpool_enter(p);
    time_out(p, w);
    deliver_and_leave(p);
}

void tide__deadlines_init(struct tide_evpool *p)
{
    for (int k = 0; k < DEADLINE_QUEUES; k++) {
        struct deadline_queue *q = &p->deadlines[k];
        q->pool = p;
        event_assign(&q->timer, p->base, -1, 0, on_deadline, q);
    }
}

/* The queue for span: the one that has it, else one left empty (which
 * takes it on), else -1. */
static int queue_for(struct tide_evpool *p, int64_t span)
{
    if (p->deadlines[p->deadline_hint].span == span)
        return p->deadline_hint;
    int empty = -1;
    for (int k = 0; k < DEADLINE_QUEUES; k++) {
        struct deadline_queue *q = &p->deadlines[k];
        if (q->span == span)
            return p->deadline_hint = k;
        if (q->count == 0 && empty < 0)
            empty = k;
    }
    if (empty >= 0) {
        struct deadline_queue *q = &p->deadlines[empty];
        if (q->armed) /* armed for a head of the span it had */
            event_del(&q->timer);
        q->armed = false;
        q->span = span;
        p->deadline_hint = empty;
    }
    return empty;
}

int tide__deadline_start(struct tide_evpool *p, struct tide_acquire *w,
                         int64_t span)
{
    w->queue = -1;
    if (span == TIDE_FOREVER)
        return 0;
    int k = queue_for(p, span);
    if (k < 0) {
        w->timer = event_new(p->base, -1, 0, on_own_timeout, w);
        if (!w->timer)
            return TIDE_ENOMEM;
        struct timeval tv;
        tide__timeval(span, &tv);
        event_add(w->timer, &tv);
        return 0;
    }
    struct deadline_queue *q = &p->deadlines[k];
    tide__deadline_join(q, k, w);
    if (!q->armed)
        arm_for_head(q, w->start);
    return 0;
}

void tide__deadline_stop_timer(struct tide_acquire *w)
{
    event_free(w->timer);
    w->timer = NULL;
}

void tide__deadline_drop(struct tide_acquire *w)
{
    tide__deadline_stop(w);
}

void tide__deadlines_sync(struct tide_evpool *p)
{
    for (int k = 0; k < DEADLINE_QUEUES; k++) {
        struct deadline_queue *q = &p->deadlines[k];
        if (q->armed && q->count == 0) {
            event_del(&q->timer);
            q->armed = false;
        }
    }
}

void tide__deadlines_stop_all(struct tide_evpool *p)
{
    for (int k = 0; k < DEADLINE_QUEUES; k++) {
        struct deadline_queue *q = &p->deadlines[k];
        event_del(&q->timer);
        q->armed = false;
        /* an embedded event: libevent's debug mode tracks it until told */
        event_debug_unassign(&q->timer);
    }
}
