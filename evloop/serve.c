/* The pump: hands resources to waiters strictly in order.
 *
 * It runs from the loop (an event made active by whoever freed a place), so
 * a caller's callback never runs inside acquire() or release(). Each pass
 * asks the core, for the oldest waiter, what to do: lend an idle resource,
 * start a make, wait, retry later, or refuse. Only as many makes run for
 * waiters as there are waiters without one, so a waiter that leaves passes
 * its make on to the next instead of holding a place back. */
#include <stdio.h>

#include "evloop_internal.h"

void tide__serve_activate(struct tide_evpool *p)
{
    if (!p->pump_due) { /* a thousand callers queued: one event_active */
        p->pump_due = true;
        event_active(&p->pump, EV_TIMEOUT, 0);
    }
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct wake *w = arg;
    struct tide_evpool *p = w->pool;
    w->armed = false;
    tide__evpool_enter(p);
    tide__serve(p);
    tide__evpool_leave(p);
}

void tide__wake_init(struct tide_evpool *p, struct wake *w)
{
    event_assign(&w->ev, p->base, -1, 0, on_wake, w);
    w->pool = p;
    w->armed = false;
}

void tide__wake_in(struct wake *w, int64_t span)
{
    if (w->armed || span == TIDE_FOREVER)
        return;
    struct timeval tv;
    tide__timeval(span, &tv);
    event_add(&w->ev, &tv);
    w->armed = true;
}

void tide__wake_stop(struct wake *w)
{
    if (w->armed)
        event_del(&w->ev);
    w->armed = false;
}

/* The retry is for the waiters: once they have all left (timed out,
 * cancelled), it would only hold the loop for the rest of a backoff. */
static void drop_retry_if_unwanted(struct tide_evpool *p)
{
    if (p->queued.count == 0)
        tide__wake_stop(&p->retry);
}

/* The oldest waiter gets conn i, lent in the core. */
static void hand_over(struct tide_evpool *p, uint32_t i)
{
    /* made for, or handed to, a caller who wants it alone: a new one has
     * this loan only, so nobody else is lent it while it is held */
    if (p->shared && p->queued.head->alone)
        (void)tide_pool_alone(p->core, tide__conn_key(i));
    tide__loan_start(p, i);
    tide__waiter_lend(p, p->queued.head, p->conns[i].resource);
}

void tide__serve_made(struct tide_evpool *p, uint32_t i)
{
    if (p->queued.count > 0 && !p->closing) {
        p->counters.connect_waits++; /* the head waited for this connect */
        hand_over(p, i);
        tide__serve_schedule(p);
        return;
    }
    tide__conn_give(p, i);
}

/* Whether the pump may go on after user code ran (a factory hook, which
 * may close or free the pool, or cancel and add waiters). */
static bool may_go_on(const struct tide_evpool *p)
{
    return !p->free_pending && !p->closing;
}

/* Lends an idle resource taken from the core to the oldest waiter, unless
 * it is stale or the validator says it is dead. The hooks that ran on the
 * way (watch, alive) may have closed the pool or cancelled every waiter:
 * then the resource goes back, unlent, instead of to a head that is no
 * longer there. */
static void lend_idle(struct tide_evpool *p, struct tide_taken t)
{
    uint32_t i = tide__conn_take_idle(p, t);
    if (i == CONN_NONE)
        return;
    if (!may_go_on(p) || p->queued.count == 0) {
        tide__conn_give(p, i);
        return;
    }
    hand_over(p, i);
}

/* The oldest waiter that no make in flight is coming for, or NULL. Makes
 * serve the queue from its head, so the first makes_for_waiters waiters are
 * the ones covered. */
static struct tide_acquire *first_uncovered(struct tide_evpool *p)
{
    struct tide_acquire *w = p->queued.head;
    for (int64_t k = 0, n = tide__covered(p); w && k < n; k++)
        w = w->next;
    return w;
}

/* What a refused caller reads: who refused, and for an open breaker the
 * failure that opened it and when it probes again, so the error says why
 * rather than only that. NULL: the code's own sentence says it all. The
 * text goes to buf, which the answer copies at once. */
static const char *refusal_message(const struct tide_evpool *p,
                                   enum tide_guard g, int64_t retry, char *buf,
                                   size_t len)
{
    static const char *const why[] = {
        [TIDE_GUARD_BREAKER] = "refused at once: the breaker is open",
        [TIDE_GUARD_BACKOFF] = "no make for it: makes are held after a "
                               "failed make",
        [TIDE_GUARD_SHEDDER] = "refused at once: the host is shedding load "
                               "(the event loop lags)",
        [TIDE_GUARD_MEMORY] = "refused at once: the pool could not grow its "
                              "books (out of memory)",
    };
    if ((size_t)g >= sizeof why / sizeof why[0] || !why[g])
        return NULL;
    long long ms = (long long)((retry + TIDE_MS(1) - 1) / TIDE_MS(1));
    /* a hold is there because the last make failed: it says which way */
    if (g == TIDE_GUARD_BACKOFF) {
        snprintf(buf, len, "%s (%s); the next may start in %lld ms", why[g],
                 p->last_message ? p->last_message : "", ms);
        return buf;
    }
    /* the failure named is the last make's, while makes still fail */
    if (g != TIDE_GUARD_BREAKER || !p->make_error || !p->last_message)
        return why[g];
    char when[64] = "";
    if (retry > 0)
        snprintf(when, sizeof when, "; it probes again in %lld ms", ms);
    snprintf(buf, len, "%s after failures (the last: %s)%s", why[g],
             p->last_message, when);
    return buf;
}

/* Answers waiter w with a refusal: t's guard, and when to come back (an
 * open breaker that knows its cooldown, or a hold on makes: when it
 * ends). */
static void refuse_waiter(struct tide_evpool *p, struct tide_acquire *w,
                          struct tide_taken t)
{
    int status =
        t.guard == TIDE_GUARD_CLOSED ? TIDE_ECLOSED : TIDE_EUNAVAILABLE;
    bool held = t.guard == TIDE_GUARD_BACKOFF;
    int64_t retry = held ? t.span
                    : t.guard == TIDE_GUARD_BREAKER && p->breaker
                        ? tide_breaker_retry_after(p->breaker, p->now)
                        : 0;
    if (held)
        p->counters.held++;
    else
        p->counters.shed++;
    char text[512];
    tide__waiter_answer(p, w, status, NULL, t.guard, retry,
                        refusal_message(p, t.guard, retry, text, sizeof text));
    if (held) /* the failed make it is held for */
        w->make_error = p->last_error;
}

/* A refusal goes to the oldest waiter with no make coming for it, not to the
 * head: a head waiting on a make (a breaker's probe, say) keeps its place and
 * gets that make's answer, rather than a later caller taking it past it.
 * Returns false when every waiter has a make coming (nobody to refuse). */
static bool refuse(struct tide_evpool *p, struct tide_taken t)
{
    struct tide_acquire *w = first_uncovered(p);
    if (!w)
        return false;
    refuse_waiter(p, w, t);
    return true;
}

/* The run of failed makes the core counts now (0: the last make did not
 * fail). */
static int failures(struct tide_evpool *p)
{
    struct tide_pool_guards g;
    tide_pool_guards(p->core, p->now, &g);
    return g.backoff_failures;
}

/* Makes are held after a failed make (t: LATER, guard BACKOFF, the hold
 * left), or one make probes while they fail (t: WAIT, guard BACKOFF). A
 * waiter that would need a make is then not given one: it waits for the
 * hold to end and the probe to answer when its deadline outlasts the
 * hold, and is told at once why and when to come back when it does not
 * (rather than time out on a hold it cannot see the end of). And a waiter
 * that waited through a hold or on a probe is answered when a make fails
 * meanwhile: that was the make it waited for (the probe, or the one it
 * was held behind), and the next hold is longer. So every caller is
 * answered with the cause and the time to retry, or served, and the
 * server sees one connect a hold, not one a caller. */
static void hold_waiters(struct tide_evpool *p, struct tide_taken t)
{
    struct tide_acquire *first = first_uncovered(p);
    if (!first)
        return;
    int run = failures(p);
    int64_t until = tide__after(p->now, t.answer == TIDE_LATER ? t.span : 0);
    /* Within a run of failures the hold ends when it ends: a waiter seen
     * in this run already (held == run) was judged against this same end,
     * and so was every one before it. A pass then looks only at those
     * queued since, at the tail, and the pump runs that a busy queue
     * brings while makes fail cost no walk of the whole queue. */
    struct tide_acquire *from = NULL;
    for (struct tide_acquire *w = p->queued.tail; w && w->held != run;
         w = w->prev) {
        from = w;
        if (w == first)
            break;
    }
    bool waiting = false;
    for (struct tide_acquire *w = from, *next; w; w = next) {
        next = w->next;
        if ((w->held && w->held != run) ||
            (t.answer == TIDE_LATER && w->deadline < until)) {
            if (t.answer == TIDE_LATER) {
                refuse_waiter(p, w, t);
                continue;
            }
            /* a failure, then a probe went out at once (a hold of no
             * length): the hold it was behind is over, so it waits on this
             * probe from here */
        }
        w->held = run;
        waiting = true;
    }
    /* the hold's end runs the pump: the probe starts; a probe's outcome
     * runs it anyway (an armed wake stays as it is) */
    if (t.answer == TIDE_LATER && (waiting || from != first))
        tide__wake_in(&p->retry, t.span);
}

/* One pass over the queue: stops when the head must wait, or when user
 * code run on the way closed or freed the pool. */
static void serve_waiters(struct tide_evpool *p)
{
    while (p->queued.count > 0 && may_go_on(p)) {
        /* the head's kind decides; shared ones behind an exclusive head
         * wait behind it (FIFO across both kinds: see core.h) */
        bool alone = p->queued.head->alone;
        struct tide_taken t = tide__take_idle_for(p, p->now, alone);
        if (t.answer == TIDE_WAIT) { /* none idle */
            if (tide__covered(p) >= p->queued.count)
                return; /* every waiter without a resource has a make coming */
            if (tide__must_wait_for(p, alone))
                return; /* all lent: the take would say WAIT */
            t = tide__take_for(p, p->now, tide__evpool_roll(p), alone);
        }
        switch (t.answer) {
        case TIDE_READY:
        case TIDE_STALE:
            lend_idle(p, t);
            /* a busy pool's usual round: its one idle resource went to the
             * head, and the next take could only wait */
            if (p->queued.count > 0 &&
                tide__must_wait_for(p, p->queued.head->alone))
                return;
            break;
        case TIDE_MAKE:
            tide__make_start(p, true);
            break;
        case TIDE_WAIT:
            if (t.guard == TIDE_GUARD_BACKOFF) /* a probe is out */
                hold_waiters(p, t);
            return;
        case TIDE_LATER:
            /* makes held after a failed make (core.h, "Makes held while
             * makes fail"); a bucket spaces makes out, and its callers
             * wait for their turn */
            if (t.guard == TIDE_GUARD_BACKOFF)
                hold_waiters(p, t);
            else
                tide__wake_in(&p->retry, t.span);
            return;
        case TIDE_SHED:
            if (!refuse(p, t))
                return;
            break;
        }
    }
}

/* Rounds of a pump run before it yields to the loop with work left: the
 * callers' callbacks run in them, and other events must not starve while
 * callers keep acquiring from their callbacks. */
#define SERVE_ROUNDS 32

void tide__serve(struct tide_evpool *p)
{
    if (p->pumping) { /* a loop run from inside a callback */
        p->pump_again = true;
        return;
    }
    p->pumping = true;
    int rounds = 0;
    do {
        p->pump_again = false;
        serve_waiters(p);
        if (p->free_pending)
            break; /* freed from a hook: nothing is left to serve */
        drop_retry_if_unwanted(p);
        if (p->min > 0) /* most pools keep no minimum: no call */
            tide__topup(p);
        if (p->preconnecting && !p->free_pending)
            tide__preconnect(p);
        tide__waiters_deliver(p);
    } while (!p->free_pending && p->pump_again && ++rounds < SERVE_ROUNDS);
    p->pumping = false;
    if (p->free_pending)
        return;
    if (p->pump_again) /* work left: after the loop's other events */
        tide__serve_schedule(p);
    tide__deadlines_sync(p);
    tide__upkeep_sync(p);
    tide__evpool_check_closed(p);
}
