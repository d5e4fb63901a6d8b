/* Shared loans: a resource lent to several borrowers at once (limits.streams
 * above 1), and the calls only such a pool needs: an exclusive acquire, a
 * break, a capacity per resource.
 *
 * The core counts loans per resource and decides which resource takes the
 * next one; this file ends loans one by one. A loan is named by its
 * resource and counted (struct conn's `out`): each release, discard,
 * retire or abandon ends one of that resource's loans, and one more than
 * are out is refused (TIDE_EBUSY). Which borrower's loan it was the pool
 * cannot tell (they share the pointer): the protocol layer knows its
 * borrowers (a stream id, a tag) and ends each one's loan once.
 *
 * Only the end of the last loan does what a release does to an exclusive
 * one: reusable() is asked, the reset runs, the resource goes idle and is
 * watched. Before that the connection carries other borrowers' exchanges,
 * and unread bytes are theirs, not a dirty release. */
#include "evloop_internal.h"

/* The share as the core keeps it; zeroes when it is not on its books. */
static struct tide_share share_of(const struct tide_evpool *p, uint32_t i)
{
    struct tide_share s = {0};
    (void)tide_pool_share(p->core, tide__conn_key(i), &s);
    return s;
}

/* Conn i is broken, by this call or before: the ward hears one failure
 * for it, from the call that broke it. */
static void break_once(struct tide_evpool *p, uint32_t i)
{
    if (tide_pool_break(p->core, tide__conn_key(i)) != 1)
        return;
    p->counters.broken++;
    /* a first loan that fails settles its make as failed, if it is young */
    if (!tide__conn_settle(p, i, true))
        tide__report(p, false);
}

/* No new loan of conn i; it leaves with its last. No outcome. */
static void drain(struct tide_evpool *p, uint32_t i)
{
    (void)tide_pool_set_streams(p->core, tide__conn_key(i), 0);
}

/* A release's outcome. The last loan of one neither broken nor drained
 * is judged by reusable(), as an exclusive release is; a dirty one breaks
 * it. A loan of a broken resource reports nothing: its failure was heard
 * once, when it broke. */
static void released(struct tide_evpool *p, uint32_t i, bool last)
{
    struct conn *c = &p->conns[i];
    struct tide_share s = share_of(p, i);
    if (s.broken)
        return;
    if (p->retire_after != TIDE_UNLIMITED &&
        (int64_t)c->loans >= p->retire_after)
        drain(p, i), s.draining = true;
    bool dirty = last && !s.draining && !p->closing && p->factory.reusable &&
                 !p->factory.reusable(c->resource, p->factory.arg);
    if (dirty) {
        p->counters.dirty++;
        break_once(p, i);
        return;
    }
    if (!tide__conn_settle(p, i, false))
        tide__report(p, true);
}

int tide__shared_end(struct tide_evpool *p, uint32_t i, enum loan_end how)
{
    struct conn *c = &p->conns[i];
    if (how == LOAN_RELEASED && !c->untried)
        tide__evpool_now_fast(p);
    else
        tide__evpool_now(p);
    bool last = c->out == 1;
    int rc = 0;
    switch (how) {
    case LOAN_RELEASED:
        released(p, i, last);
        break;
    case LOAN_FAILED: /* the connection broke, for every loan of it */
        break_once(p, i);
        break;
    case LOAN_SERVED:
        p->counters.retired++;
        if (!share_of(p, i).broken && !tide__conn_settle(p, i, false))
            tide__report(p, true);
        drain(p, i);
        break;
    case LOAN_ABANDONED:
        /* an exchange left half done: no new loan, and no outcome (its
         * make, if this was the first loan, stays unproven: the record's
         * end settles it so) */
        p->counters.abandoned++;
        drain(p, i);
        break;
    case LOAN_STALE:
        /* the peer closed it a moment before the exchange: gone for every
         * loan, and no failure (as for an exclusive one); only a first
         * loan dying young counts, as a failed make */
        if (!share_of(p, i).broken && !tide__conn_settle(p, i, true)) {
            p->counters.stale_loans++;
            rc = TIDE_STALE;
        }
        if (p->factory.stale)
            p->factory.stale(c->resource, p->factory.arg);
        drain(p, i);
        break;
    }
    c->out--;
    if (c->out > 0) {
        /* others are out: the core ends this one and keeps the resource */
        (void)tide_pool_give_at(p->core, c->slot, tide__conn_key(i), p->now);
        tide__serve_schedule(p); /* its room may serve a waiter */
        return rc;
    }
    p->lent--;
    struct tide_share s = share_of(p, i);
    if (p->factory.reset && !p->closing && !s.broken && !s.draining) {
        /* readied for its next borrower, lent to nobody meanwhile: alone
         * in the core, so no shared loan is taken from it */
        (void)tide_pool_alone(p->core, tide__conn_key(i));
        tide__aside_start(p, i, ASIDE_RESET);
        return rc;
    }
    tide__conn_give(p, i); /* idle, or destroyed: broken, drained, closing */
    return rc;
}

/* The record of a resource this pool made, or an error. */
static int find(struct tide_evpool *p, void *resource, uint32_t *at)
{
    if (!p || !resource)
        return TIDE_EINVAL;
    uint32_t i = tide__conn_find(p, resource);
    if (i == CONN_NONE)
        return TIDE_EUNKNOWN;
    *at = i;
    return 0;
}

int tide_evpool_break(struct tide_evpool *p, void *resource)
{
    uint32_t i;
    int rc = find(p, resource, &i);
    if (rc)
        return rc;
    if (!p->shared) /* one loan: its discard says it all */
        return TIDE_EINVAL;
    if (p->conns[i].state != CONN_LENT)
        return TIDE_EBUSY;
    tide__evpool_now(p);
    bool was = share_of(p, i).broken;
    break_once(p, i);
    return was ? 0 : 1;
}

int tide_evpool_set_streams(struct tide_evpool *p, void *resource,
                            int64_t streams)
{
    uint32_t i;
    int rc = find(p, resource, &i);
    if (rc)
        return rc;
    if (streams < 0)
        return TIDE_EINVAL;
    if (p->conns[i].state == CONN_LEAVING)
        return TIDE_EBUSY;
    rc = tide_pool_set_streams(p->core, tide__conn_key(i), streams);
    if (rc < 0)
        return rc;
    if (rc == 0) {
        /* idle and drained: off the core's books at once */
        tide__evpool_now(p);
        tide__conn_leave_idle(p, i, CONN_LEAVING);
        tide__conn_remove(p, i);
        tide__resource_destroy(p, resource);
        tide__evpool_check_closed(p);
    }
    /* more room may serve waiters; a drained one's place may be made
     * again for them */
    tide__serve_schedule(p);
    return 0;
}

int tide_evpool_share(const struct tide_evpool *p, const void *resource,
                      struct tide_share *out)
{
    if (!p || !resource || !out)
        return TIDE_EINVAL;
    uint32_t i = tide__conn_find(p, resource);
    if (i == CONN_NONE)
        return TIDE_EUNKNOWN;
    return tide_pool_share(p->core, tide__conn_key(i), out);
}
