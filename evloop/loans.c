/* Loans: a resource going out (try_acquire, and the pump through
 * loan_start), coming back (release, discard), dying while idle (lost), and
 * every destroy. */
#include "evloop_internal.h"

static TIDE__INLINE void loan_start(struct tide_evpool *p, uint32_t i)
{
    struct conn *c = &p->conns[i];
    c->loans++;
    /* demand: the core keeps the peak from each loan; one that makes a
     * preconnect due has the pump open it (demand.c) */
    if (p->noting && tide_pool_note(p->core, p->now))
        tide__serve_schedule(p);
    /* one more loan of a resource lent already (streams > 1): it counts
     * as lent once, from its first */
    if (p->shared && c->out++ > 0)
        return;
    c->state = CONN_LENT;
    c->lent_at = p->now;
    c->leak_reported = false;
    p->lent++;
}

void tide__loan_start(struct tide_evpool *p, uint32_t i)
{
    loan_start(p, i);
}

void tide__loan_undo(struct tide_evpool *p, uint32_t i)
{
    struct conn *c = &p->conns[i];
    c->loans--;
    if (!p->shared || --c->out == 0)
        p->lent--;
    tide__conn_give(p, i);
}

bool tide__loan_unseen(struct tide_evpool *p, void *resource)
{
    uint32_t i = tide__conn_find(p, resource);
    if (i == CONN_NONE || p->conns[i].state != CONN_LENT)
        return false;
    tide__evpool_clock(p);
    tide__loan_undo(p, i);
    return true;
}

void tide__report(struct tide_evpool *p, bool ok)
{
    if (p->breaker) /* without one the core has nothing to tell */
        tide_pool_report(p->core, p->now, ok);
}

void tide__resource_destroy(struct tide_evpool *p, void *resource)
{
    p->counters.destroyed++;
    p->factory.destroy(resource, p->factory.arg);
}

/* A watcher may report a loss at any moment, from inside watch(false) too
 * (it notices the peer's close as it stops reading). If the resource still
 * looked idle then, lost() would drop and destroy it a second time under
 * the caller's feet, or make the core drop an item it already handed out.
 * So the state moves first and only then is the watch stopped. */
void tide__conn_leave_idle(struct tide_evpool *p, uint32_t i,
                           enum conn_state to)
{
    struct conn *c = &p->conns[i];
    bool was_idle = c->state == CONN_IDLE;
    c->state = (uint8_t)to;
    if (was_idle && p->factory.watch)
        p->factory.watch(p, c->resource, false, p->factory.arg);
}

void tide__conn_destroy(struct tide_evpool *p, uint32_t i)
{
    struct conn *c = &p->conns[i];
    void *resource = c->resource;
    if (c->state == CONN_LENT)
        p->lent--;
    else if (c->state == CONN_CHECKING)
        p->checking--;
    else if (c->state == CONN_RESETTING)
        p->resetting--;
    tide__conn_leave_idle(p, i, CONN_LEAVING);
    (void)tide_pool_drop(p->core, tide__conn_key(i), p->now);
    tide__conn_remove(p, i);
    tide__resource_destroy(p, resource);
    /* its place may serve a waiter, or the minimum wants a replacement */
    tide__serve_schedule(p);
    tide__evpool_check_closed(p);
}

/* A kept give changes nothing the upkeep timers follow (what is live, the
 * queue, closing), so no sync is due. */
static TIDE__INLINE void give(struct tide_evpool *p, uint32_t i)
{
    struct conn *c = &p->conns[i];
    if (tide_pool_give_at(p->core, c->slot, tide__conn_key(i), p->now) == 1) {
        if (c->out > 0) /* other loans of it are out (streams > 1) */
            return;
        c->state = CONN_IDLE;
        if (p->factory.watch)
            p->factory.watch(p, c->resource, true, p->factory.arg);
        if (p->queued.count > 0)
            tide__serve_schedule(p);
        return;
    }
    /* not kept (idle full, or closing): close it */
    void *resource = c->resource;
    tide__conn_remove(p, i);
    tide__resource_destroy(p, resource);
    tide__serve_schedule(p);
    tide__evpool_check_closed(p);
}

void tide__conn_give(struct tide_evpool *p, uint32_t i)
{
    give(p, i);
}

/* Finds a resource lent out by this pool: its record, or an error. */
static int find_lent(struct tide_evpool *p, void *resource, uint32_t *at)
{
    uint32_t i = tide__conn_find(p, resource);
    if (i == CONN_NONE)
        return resource ? TIDE_EUNKNOWN : TIDE_EINVAL;
    if (p->conns[i].state != CONN_LENT)
        return TIDE_EBUSY;
    *at = i;
    return 0;
}

static TIDE__INLINE uint32_t take_idle(struct tide_evpool *p,
                                       struct tide_taken t)
{
    uint32_t i = tide__conn_of_key(t.item);
    void *resource = p->conns[i].resource;
    /* a shared loan of a resource lent already (streams > 1): it is not
     * idle, so neither watched nor asked alive() */
    if (p->conns[i].state == CONN_LENT)
        return i;
    if (t.answer == TIDE_STALE) {
        tide__conn_leave_idle(p, i, CONN_LEAVING);
        p->counters.stale++;
        tide__conn_remove(p, i);
        tide__resource_destroy(p, resource);
        return CONN_NONE;
    }
    /* counted as lent before any hook runs: the core has lent it already,
     * and stats read from inside a hook must add up (a destroy below keeps
     * the counts too) */
    p->lent++;
    tide__conn_leave_idle(p, i, CONN_LENT);
    if (p->factory.alive && !p->factory.alive(resource, p->factory.arg)) {
        /* found dead while idle: the server closed it, which says nothing
         * of the backend, unless it never served */
        p->counters.health_failures++;
        (void)tide__conn_settle(p, i, true);
        tide__conn_destroy(p, i);
        return CONN_NONE;
    }
    p->lent--;
    return i;
}

uint32_t tide__conn_take_idle(struct tide_evpool *p, struct tide_taken t)
{
    return take_idle(p, t);
}

/* The common lend: the idle head is fresh, alive and lent at once, with
 * nothing live made or destroyed, so no upkeep timer has anything to
 * change. The roll is for makes, and with an idle one there is none. */
static TIDE__INLINE int try_acquire(struct tide_evpool *p, void **resource,
                                    bool alone)
{
    if (!resource)
        return TIDE_EINVAL;
    *resource = NULL;
    if (!p)
        return TIDE_EINVAL;
    p->counters.acquires++;
    if (p->closing)
        return TIDE_ECLOSED;
    if (p->queued.count > 0) /* never a barge past queued callers */
        return TIDE_EWOULDBLOCK;
    return tide__lend_now_kind(p, tide__evpool_now_fast(p), resource, alone);
}

int tide_evpool_try_acquire(struct tide_evpool *p, void **resource)
{
    return try_acquire(p, resource, false);
}

/* An exclusive loan: an idle resource only (see "Shared loans"). */
int tide_evpool_try_acquire_alone(struct tide_evpool *p, void **resource)
{
    return try_acquire(p, resource, true);
}

/* tide__lend_now_kind from the core's first answer t (not WAIT) on: every
 * case, hooks and all, taking again while what it took was destroyed. */
TIDE__NOINLINE static int lend_now_from(struct tide_evpool *p, int64_t now,
                                        void **resource, bool alone,
                                        struct tide_taken t)
{
    int rc = TIDE_EWOULDBLOCK;
    bool changed = false; /* something destroyed, or the answer is no */
    for (;; t = tide__take_idle_for(p, now, alone)) {
        if (t.answer == TIDE_WAIT) /* none idle */
            break;
        if (t.answer == TIDE_SHED) {
            p->counters.shed++;
            rc = TIDE_EUNAVAILABLE;
            break;
        }
        uint32_t i = take_idle(p, t);
        if (i == CONN_NONE) {
            changed = true;
            continue;
        }
        if (p->closing || p->queued.count > 0) {
            /* alive() or watch() closed the pool, or queued a caller who
             * now comes first: the resource goes back, unlent */
            give(p, i);
            changed = true;
            rc = p->closing ? TIDE_ECLOSED : TIDE_EWOULDBLOCK;
            break;
        }
        loan_start(p, i);
        *resource = p->conns[i].resource;
        rc = 0;
        break;
    }
    /* no pump runs for this loan: the timers follow what changed (with
     * nothing idle and nothing done, nothing did) */
    if (changed || (rc != 0 && rc != TIDE_EWOULDBLOCK))
        tide__upkeep_sync(p);
    return rc;
}

/* The common lend first, with no loop and no hook: an idle resource, READY,
 * in a pool whose factory watches none and asks none alive, is lent as
 * take_idle and lend_now_from would lend it (nothing ran that could close
 * the pool or queue a caller, nothing was destroyed: no timer to follow).
 * None idle is no answer either. The rest, from the same first answer, is
 * lend_now_from's. */
int tide__lend_now_kind(struct tide_evpool *p, int64_t now, void **resource,
                        bool alone)
{
    struct tide_taken t = tide__take_idle_for(p, now, alone);
    if (t.answer == TIDE_WAIT)
        return TIDE_EWOULDBLOCK;
    if (t.answer != TIDE_READY)
        return lend_now_from(p, now, resource, alone, t);
    uint32_t i = tide__conn_of_key(t.item);
    struct conn *c = &p->conns[i];
    if (c->state != CONN_IDLE || p->factory.watch || p->factory.alive ||
        p->closing || p->queued.count > 0)
        return lend_now_from(p, now, resource, alone, t);
    c->state = CONN_LENT;
    loan_start(p, i);
    *resource = c->resource;
    return 0;
}

/* tide_evpool_release of lent conn i (streams 1), every case. */
TIDE__NOINLINE static int release_lent(struct tide_evpool *p, uint32_t i,
                                       void *resource)
{
    struct conn *c = &p->conns[i];
    /* a first loan settles its make, which wants the time to the tick */
    if (c->untried)
        tide__evpool_now(p);
    else
        tide__evpool_now_fast(p);
    bool retire = p->retire_after != TIDE_UNLIMITED &&
                  (int64_t)c->loans >= p->retire_after;
    bool broken = !retire && !p->closing && p->factory.reusable &&
                  !p->factory.reusable(resource, p->factory.arg);
    /* an accepted release is the backend's success; one the factory
     * refuses (unread bytes, a request half written) is a failure; the
     * first loan of a new resource settles its make beside */
    if (broken)
        p->counters.dirty++;
    if (!tide__conn_settle(p, i, broken))
        tide__report(p, !broken);
    if (retire || broken) {
        tide__conn_destroy(p, i);
        return 0;
    }
    p->lent--;
    if (p->factory.reset && !p->closing) {
        /* readied for its next borrower first: lent to nobody meanwhile,
         * and to the oldest waiter (or idle) once the reset answers */
        tide__aside_start(p, i, ASIDE_RESET);
        return 0;
    }
    give(p, i);
    return 0;
}

/* The common release first: a loan of one, not its resource's first (no
 * make to settle), with no retire_after, reusable() or reset to ask and the
 * pool open, is release_lent's accepted release with nothing to decide:
 * the backend's success, and the resource given back. */
int tide_evpool_release(struct tide_evpool *p, void *resource)
{
    if (!p)
        return TIDE_EINVAL;
    uint32_t i;
    int rc = find_lent(p, resource, &i);
    if (rc)
        return rc;
    if (p->shared)
        return tide__shared_end(p, i, LOAN_RELEASED);
    if (p->conns[i].untried || p->retire_after != TIDE_UNLIMITED ||
        p->factory.reusable || p->factory.reset || p->closing)
        return release_lent(p, i, resource);
    tide__evpool_now_fast(p);
    tide__report(p, true);
    p->lent--;
    give(p, i);
    return 0;
}

/* Destroys a lent resource, after telling the ward how its loan ended.
 * Returns 0, TIDE_STALE for a loan taken for stale, or the error. */
static int end_lent(struct tide_evpool *p, void *resource, enum loan_end how)
{
    if (!p)
        return TIDE_EINVAL;
    uint32_t i;
    int rc = find_lent(p, resource, &i);
    if (rc)
        return rc;
    if (p->shared)
        return tide__shared_end(p, i, how);
    tide__evpool_now(p);
    if (how == LOAN_STALE) {
        /* The peer closed a connection that served (or lived past
         * UNTRIED_SPAN) a moment before the exchange: nothing the backend
         * did wrong, and the borrower may go again at once. Only a first
         * loan dying young counts: as a failed make, the make's own
         * outcome. */
        if (!tide__conn_settle(p, i, true)) {
            p->counters.stale_loans++;
            rc = TIDE_STALE;
        }
        if (p->factory.stale)
            p->factory.stale(resource, p->factory.arg);
    } else if (how == LOAN_ABANDONED) {
        /* The borrower's reasons say nothing of the backend. A first loan
         * leaves its make with no outcome, for the breaker or the backoff:
         * the destroy below settles it so (tide__conn_remove), a probe
         * giving its place back. */
        p->counters.abandoned++;
    } else {
        /* a retire is an accepted release, as when retire_after retires
         * one; a first loan settles its make beside */
        bool served = how == LOAN_SERVED;
        if (served)
            p->counters.retired++;
        if (!tide__conn_settle(p, i, !served))
            tide__report(p, served);
    }
    tide__conn_destroy(p, i);
    return rc;
}

int tide_evpool_discard(struct tide_evpool *p, void *resource)
{
    return end_lent(p, resource, LOAN_FAILED);
}

int tide_evpool_retire(struct tide_evpool *p, void *resource)
{
    return end_lent(p, resource, LOAN_SERVED);
}

int tide_evpool_abandon(struct tide_evpool *p, void *resource)
{
    return end_lent(p, resource, LOAN_ABANDONED);
}

int tide_evpool_stale(struct tide_evpool *p, void *resource)
{
    return end_lent(p, resource, LOAN_STALE);
}

int tide_evpool_lost(struct tide_evpool *p, void *resource)
{
    if (!p)
        return TIDE_EINVAL;
    uint32_t i = tide__conn_find(p, resource);
    if (i == CONN_NONE)
        return resource ? TIDE_EUNKNOWN : TIDE_EINVAL;
    if (p->conns[i].state != CONN_IDLE)
        return TIDE_ENOTIDLE;
    tide__evpool_now(p);
    p->counters.lost++;
    /* a server closing an idle connection is no backend failure; one
     * that never served was never really made */
    (void)tide__conn_settle(p, i, true);
    tide__conn_destroy(p, i);
    return 0;
}
