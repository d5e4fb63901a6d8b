/* Makes: the factory is asked for one resource per token; the pool enforces
 * the make timeout itself. A token is answered exactly once by the factory
 * (made or unmade), even after the pool gave up on it (timeout, close) or
 * is gone (free): then a late success is destroyed, never leaked or counted
 * twice. */
#include <stdlib.h>
#include <string.h>

#include "evloop_internal.h"

static void remember_error(struct tide_evpool *p, int code, const char *message)
{
    p->make_error = code;
    p->last_error = code;
    free(p->last_message);
    p->last_message = NULL;
    const char *m = message ? message : tide_strerror(code);
    size_t n = strlen(m) + 1;
    p->last_message = malloc(n);
    if (p->last_message)
        memcpy(p->last_message, m, n);
}

/* How long the core holds makes now after a failed make: the time a
 * caller refused meanwhile is told to retry after. */
static int64_t hold_left(struct tide_evpool *p)
{
    struct tide_pool_guards g;
    tide_pool_guards(p->core, p->now, &g);
    return g.backoff_hold;
}

/* The core forgets the reservation as a failure, and holds makes; a
 * waiter that needed it gets the error, exactly once, with the time the
 * hold has left. The other waiters that would need a make are answered by
 * the pump, which the core now tells to hold them. */
static void make_failed(struct tide_evpool *p, bool for_waiter, int code,
                        const char *message)
{
    p->makes_pending--;
    (void)tide_pool_unmade(p->core, p->now, tide__evpool_roll(p));
    p->counters.make_failures++;
    remember_error(p, code, message);
    if (for_waiter) {
        p->makes_for_waiters--;
        if (p->queued.count > 0)
            tide__waiter_answer(p, p->queued.head, code, NULL, TIDE_GUARD_NONE,
                                hold_left(p), p->last_message);
    }
    tide__serve_schedule(p);
    tide__evpool_check_closed(p);
}

/* Tells the factory the pool has given up on t, once: a make that timed
 * out is not cancelled again at close or free. The factory may answer (and
 * so free) t inside its cancel. */
static void cancel_once(struct tide_evpool *p, struct tide_make *t)
{
    if (t->cancelled || !p->factory.cancel)
        return;
    t->cancelled = true;
    p->factory.cancel(t, p->factory.arg);
}

static void on_make_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide_make *t = arg;
    struct tide_evpool *p = t->pool;
    tide__evpool_enter(p);
    t->abandoned = true;
    make_failed(p, t->for_waiter, TIDE_EMAKETIMEDOUT, NULL);
    cancel_once(p, t);
    tide__evpool_leave(p);
}

void tide__make_start(struct tide_evpool *p, bool for_waiter)
{
    struct tide_make *t = calloc(1, sizeof *t);
    if (!t) {
        (void)tide_pool_unmade(p->core, p->now, tide__evpool_roll(p));
        if (for_waiter && p->queued.count > 0)
            tide__waiter_answer(p, p->queued.head, TIDE_ENOMEM, NULL,
                                TIDE_GUARD_NONE, 0, NULL);
        return;
    }
    t->pool = p;
    t->for_waiter = for_waiter;
    /* a make the take let through while RECOVERING is a probe of it */
    t->probe =
        p->breaker && tide_breaker_state(p->breaker) == TIDE_BREAKER_RECOVERING;
    t->spell = p->breaker_spell;
    t->destroy = p->factory.destroy;
    t->destroy_arg = p->factory.arg;
    TIDE__LIST_APPEND(&p->makes, t);
    p->makes_pending++;
    if (for_waiter)
        p->makes_for_waiters++;
    event_assign(&t->timer, p->base, -1, 0, on_make_timeout, t);
    if (p->make_timeout != TIDE_FOREVER) {
        struct timeval tv;
        tide__timeval(p->make_timeout, &tv);
        event_add(&t->timer, &tv);
    }
    /* The factory may answer inside this call; t must not be touched after
     * it returns. */
    p->factory.make(p, t, p->factory.arg);
}

/* Frees an answered token. Its timer is embedded: tell libevent's debug
 * mode it is gone, or every make leaves an entry in its table. */
static void token_free(struct tide_make *t)
{
    event_debug_unassign(&t->timer);
    free(t);
}

/* Ends a token's life once the factory answered. Returns the pool it still
 * counts for, or NULL when the pool had given up on it (or is gone). */
static struct tide_evpool *token_done(struct tide_make *t)
{
    struct tide_evpool *p = t->pool;
    if (p) {
        event_del(&t->timer);
        TIDE__LIST_UNLINK(&p->makes, t);
    }
    return p && !t->abandoned ? p : NULL;
}

void tide_evpool_made(struct tide_make *t, void *resource)
{
    if (!t)
        return;
    struct tide_evpool *owner = t->pool;
    struct tide_evpool *p = token_done(t);
    bool for_waiter = t->for_waiter;
    /* still a probe if the breaker has not changed state since */
    bool probe = p && t->probe && t->spell == p->breaker_spell;
    void (*destroy)(void *, void *) = t->destroy;
    void *destroy_arg = t->destroy_arg;
    token_free(t);
    if (!p) {
        /* late (timed out, cancelled) or orphaned: close it, count it */
        if (resource && owner) {
            owner->counters.made++;
            tide__resource_destroy(owner, resource);
        } else if (resource) {
            destroy(resource, destroy_arg);
        }
        return;
    }
    tide__evpool_clock(p);
    if (!resource) {
        make_failed(p, for_waiter, TIDE_EMAKE,
                    "the factory answered a make with a NULL resource");
        return;
    }
    if (tide__conn_find(p, resource) != CONN_NONE) {
        /* already in the pool: refuse it, and do not close a pooled one */
        make_failed(p, for_waiter, TIDE_EMAKE,
                    "the factory answered a make with a resource the pool "
                    "already holds");
        return;
    }
    /* Fresh, it is checked as an idle one is before a loan: a server that
     * spoke first or closed at once has its bytes or its FIN there
     * already, and one lent so would fail its borrower's first request.
     * Dead at birth, the make failed. */
    if (p->factory.alive && !p->factory.alive(resource, p->factory.arg)) {
        make_failed(p, for_waiter, TIDE_EUNPROVEN,
                    "the resource was dead as it was made (alive() said no: "
                    "the peer closed it, or sent bytes nobody asked for)");
        p->counters.made++;
        tide__resource_destroy(p, resource);
        return;
    }
    uint32_t i = tide__conn_add(p, resource);
    if (i == CONN_NONE) {
        make_failed(p, for_waiter, TIDE_ENOMEM, NULL);
        p->counters.made++;
        tide__resource_destroy(p, resource);
        return;
    }
    p->makes_pending--;
    if (for_waiter)
        p->makes_for_waiters--;
    /* a reservation is open; the make's outcome waits for the first loan */
    (void)tide_pool_made_untried(p->core, tide__conn_key(i), p->now);
    p->conns[i].slot = tide_pool_slot(p->core, tide__conn_key(i));
    p->conns[i].untried = true;
    p->conns[i].probe = probe;
    p->probes += probe;
    p->conns[i].made_at = p->now;
    p->counters.made++;
    /* a waiter answered from now on did not wait on a failing factory */
    p->make_error = 0;
    tide__serve_made(p, i);
    tide__evpool_check_closed(p);
}

void tide_evpool_unmade(struct tide_make *t, int code, const char *message)
{
    if (!t)
        return;
    struct tide_evpool *p = token_done(t);
    if (p) {
        tide__evpool_clock(p);
        make_failed(p, t->for_waiter, code < 0 ? code : TIDE_EMAKE, message);
    }
    token_free(t);
}

struct tide_evpool *tide_make_pool(const struct tide_make *t)
{
    return t ? t->pool : NULL;
}

/* Clears conn i's probe flag; true when it was set. */
static bool unprobe(struct tide_evpool *p, struct conn *c)
{
    if (!c->probe)
        return false;
    c->probe = false;
    p->probes--;
    return true;
}

/* A make is proven by what its resource does first, not by the factory's
 * answer: a connection the server accepts and closes at once, or greets
 * with bytes nobody asked for, is answered "made" and is dead before
 * anyone can use it, or breaks on the first request it carries. Counted
 * as made, such makes would reset the backoff and the breaker every time,
 * and a minimum (or callers asking again) would refill in a storm of
 * thousands of connects a second. So the make settles when its resource
 * first comes back or dies: a failure when that was a death or a failed
 * loan within UNTRIED_SPAN of the make, a success otherwise. */
bool tide__conn_settle_make(struct tide_evpool *p, uint32_t i, bool died)
{
    struct conn *c = &p->conns[i];
    c->untried = false;
    (void)unprobe(p, c); /* its outcome is the probe's */
    if (died && p->now - c->made_at < UNTRIED_SPAN) {
        tide_pool_tried(p->core, p->now, tide__evpool_roll(p), false);
        p->counters.make_failures++;
        remember_error(p, TIDE_EUNPROVEN, NULL);
        return true;
    }
    tide_pool_tried(p->core, p->now, 0.0, true);
    p->make_error = 0;
    return false;
}

void tide__conn_forgo(struct tide_evpool *p, uint32_t i)
{
    struct conn *c = &p->conns[i];
    c->untried = false;
    if (unprobe(p, c))
        tide_breaker_forgo(p->breaker, p->now);
}

void tide__probes_forget(struct tide_evpool *p)
{
    p->breaker_spell++;
    /* a walk once a spell of RECOVERING at most: only then are any out */
    for (uint32_t i = 0; p->probes > 0 && i < p->conn_capacity; i++)
        (void)unprobe(p, &p->conns[i]);
}

void tide__makes_cancel_all(struct tide_evpool *p)
{
    /* cancel may answer (and free) the token: walk from a saved next */
    for (struct tide_make *t = p->makes.head, *next; t; t = next) {
        next = t->next;
        cancel_once(p, t);
    }
}

void tide__makes_orphan_all(struct tide_evpool *p)
{
    while (p->makes.head) {
        struct tide_make *t = p->makes.head;
        event_del(&t->timer);
        TIDE__LIST_UNLINK(&p->makes, t);
        t->pool = NULL;
        cancel_once(p, t); /* may free t */
    }
}
