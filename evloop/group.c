/* The group: one pool per upstream of a service, an acquire that picks
 * among them with tide_pick and moves on when one cannot serve, a cap on
 * loans across the group, and upstreams that drain when removed.
 *
 * Every answer is delivered from the acquire's own event, never from
 * inside a pool's callback or a group call: the user's callback may then
 * free the group (deferred until the delivery unwinds, as the pool does)
 * and the pool's tide_why, valid only during the pool's callback, is
 * copied first. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tidepool/group.h>

#include "evloop_internal.h"

struct tide_group_upstream {
    struct tide_group *group;
    struct tide_group_upstream *prev;
    struct tide_group_upstream *next;
    char *name;
    struct tide_evpool *pool; /* NULL once its close finished */
    int64_t lent;             /* loans out through the group */
    /* acquires at its pool, and answers naming it not yet delivered: the
     * record outlives them */
    int64_t refs;
    bool removed;
    /* an open breaker whose retry is due gets one acquire at a time, as
     * its probe, since the pick alone would always prefer a healthy one */
    bool probing;
    int64_t probe_after;
};

enum acquire_state {
    ACQ_CAPPED = 0, /* in the cap's FIFO */
    ACQ_AT_POOL,    /* acquiring at an upstream's pool */
    ACQ_READY,      /* answered, its event active to deliver */
    ACQ_DELIVERING, /* its callback is running */
};

struct tide_group_acquire {
    struct tide_group *group;
    struct tide_group_acquire *prev;
    struct tide_group_acquire *next;
    struct event ev; /* the cap wait's timeout, then the delivery */
    tide_group_acquire_cb cb;
    void *arg;
    int64_t deadline;
    enum acquire_state state;
    bool holds_slot; /* counted under the cap */
    bool probe;      /* sent to its upstream as an open breaker's probe */
    /* at the pool */
    struct tide_group_upstream *at;
    struct tide_acquire *pool_handle;
    /* upstreams tried, so a failover never goes back to one */
    struct tide_group_upstream **tried;
    size_t n_tried;
    size_t tried_capacity;
    /* the answer */
    int status;
    struct tide_group_upstream *answered_by; /* holds a ref when set */
    void *resource;
    struct tide_why why;
    char *message;
};

struct acquire_list TIDE__LIST_OF(struct tide_group_acquire);
struct upstream_list TIDE__LIST_OF(struct tide_group_upstream);

struct tide_group {
    struct event_base *base;
    int64_t cap;
    int64_t acquire_timeout;
    int64_t queue_max;
    uint64_t rng;

    struct upstream_list upstreams; /* active and draining, added order */
    int64_t active;                 /* not removed */
    int64_t slots;                  /* loans plus acquires at pools */
    struct acquire_list capped;     /* waiting for the cap, in order */
    struct acquire_list pending;    /* at a pool, or ready to deliver */

    /* scratch for the pick, sized to the upstreams */
    struct tide_pool **pick_pools;
    struct tide_group_upstream **pick_ups;
    size_t pick_capacity;

    uint64_t acquires;
    uint64_t served;
    uint64_t failed;
    uint64_t failovers;

    bool closing;
    bool close_done;
    tide_group_closed_cb on_closed;
    void *closed_arg;
    struct event closed_ev;
    int depth;
    bool free_pending;
};

static int64_t clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* splitmix64, as the pool's: seedable, so a test can replay a pick. */
static double roll(struct tide_group *g)
{
    uint64_t z = (g->rng += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static void free_now(struct tide_group *g);
static void dispatch(struct tide_group_acquire *a, int64_t now);
static void check_closed(struct tide_group *g);
static void on_deliver(evutil_socket_t fd, short what, void *arg);

static void enter(struct tide_group *g)
{
    g->depth++;
}

/* Returns false when the group was freed on the way out. */
static bool leave(struct tide_group *g)
{
    if (--g->depth == 0 && g->free_pending) {
        free_now(g);
        return false;
    }
    return true;
}

/* ---- upstream records ---- */

static void upstream_free(struct tide_group_upstream *u)
{
    free(u->name);
    free(u);
}

/* A removed upstream's record goes once its pool closed and nothing
 * names it any more. */
static void upstream_maybe_free(struct tide_group_upstream *u)
{
    if (!u->removed || u->pool || u->refs > 0 || u->lent > 0)
        return;
    struct tide_group *g = u->group;
    TIDE__LIST_UNLINK(&g->upstreams, u);
    upstream_free(u);
    check_closed(g);
}

static void unref(struct tide_group_upstream *u)
{
    u->refs--;
    upstream_maybe_free(u);
}

static void on_pool_closed(struct tide_evpool *pool, void *arg)
{
    struct tide_group_upstream *u = arg;
    /* freeing the pool from its own close callback is allowed */
    tide_evpool_free(pool);
    u->pool = NULL;
    upstream_maybe_free(u);
}

/* ---- cap slots ---- */

/* A place under the cap came free: the oldest capped acquire goes on. */
static void slot_free(struct tide_group *g, int64_t now)
{
    g->slots--;
    while (g->capped.head && (g->cap == 0 || g->slots < g->cap)) {
        struct tide_group_acquire *a = g->capped.head;
        TIDE__LIST_UNLINK(&g->capped, a);
        event_del(&a->ev);
        event_assign(&a->ev, g->base, -1, 0, on_deliver, a);
        TIDE__LIST_APPEND(&g->pending, a);
        a->holds_slot = true;
        g->slots++;
        dispatch(a, now);
    }
}

/* ---- answers ---- */

/* Records the answer and schedules its delivery. `why` is the pool's
 * (copied) or NULL. Gives up the cap slot unless a resource is lent. */
static void answer(struct tide_group_acquire *a, int status,
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
    if (status == 0 && u)
        u->lent++;
    event_del(&a->ev);
    event_active(&a->ev, EV_TIMEOUT, 0);
    if (a->holds_slot && status != 0) {
        a->holds_slot = false;
        slot_free(g, now);
    }
}

static void acquire_free(struct tide_group_acquire *a)
{
    event_del(&a->ev);
    event_debug_unassign(&a->ev);
    free(a->tried);
    free(a->message);
    free(a);
}

/* ---- the pick ---- */

static bool was_tried(const struct tide_group_acquire *a,
                      const struct tide_group_upstream *u)
{
    if (!a)
        return false;
    for (size_t i = 0; i < a->n_tried; i++)
        if (a->tried[i] == u)
            return true;
    return false;
}

/* An open breaker is skipped while it says a probe is not yet due; once
 * due, its pool is a candidate again, so taking from it can start the
 * probe that lets it recover. */
static bool breaker_holds(struct tide_evpool *pool, int64_t now)
{
    struct tide_breaker *b = tide_evpool_breaker(pool);
    return b && tide_breaker_state(b) == TIDE_BREAKER_INACTIVE &&
           tide_breaker_retry_after(b, now) > 0;
}

/* Makes held after failed makes (core.h, "Makes held while makes fail")
 * while the pool has nothing to lend without one: a caller sent there
 * would wait out the hold, or be refused, where another upstream may serve
 * at once. */
static bool makes_held(struct tide_evpool *pool, int64_t now)
{
    struct tide_pool *core = pool->core;
    if (tide_pool_lendable(core))
        return false;
    struct tide_pool_guards g;
    tide_pool_guards(core, now, &g);
    return g.backoff_hold > 0 || g.backoff_probing;
}

/* The candidates for a: not removed, not tried, and (when skip_open) no
 * breaker or make hold keeping them off. */
static size_t candidates(struct tide_group *g, struct tide_group_acquire *a,
                         int64_t now, bool skip_open)
{
    size_t n = 0;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next) {
        if (u->removed || !u->pool || was_tried(a, u))
            continue;
        if (skip_open &&
            (breaker_holds(u->pool, now) || makes_held(u->pool, now)))
            continue;
        g->pick_pools[n] = u->pool->core;
        g->pick_ups[n] = u;
        n++;
    }
    return n;
}

/* How long a probe that did not close the breaker holds the next one
 * off: a manual deactivate names no retry time, and each probe costs the
 * acquire it rides on a detour to another upstream. */
#define PROBE_SPACING TIDE_MS(100)

/* An upstream owed a probe: its breaker is open, its retry is due, and no
 * probe of it is out. */
static struct tide_group_upstream *due_probe(struct tide_group_acquire *a,
                                             int64_t now)
{
    struct tide_group *g = a->group;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next) {
        if (u->removed || !u->pool || u->probing || now < u->probe_after ||
            was_tried(a, u))
            continue;
        struct tide_breaker *b = tide_evpool_breaker(u->pool);
        if (b && tide_breaker_state(b) == TIDE_BREAKER_INACTIVE &&
            tide_breaker_retry_after(b, now) == 0)
            return u;
    }
    return NULL;
}

static struct tide_group_upstream *pick(struct tide_group_acquire *a,
                                        int64_t now)
{
    struct tide_group *g = a->group;
    struct tide_group_upstream *probe = due_probe(a, now);
    if (probe) {
        probe->probing = true;
        a->probe = true;
        return probe;
    }
    size_t n = candidates(g, a, now, true);
    if (n == 0) /* every one left is held off: ask them for their cause */
        n = candidates(g, a, now, false);
    if (n == 0)
        return NULL;
    double first = roll(g), second = roll(g);
    int i = tide_pick(g->pick_pools, n, now, first, second);
    return i < 0 ? NULL : g->pick_ups[i];
}

/* A probe's acquire has left its upstream (answered, cancelled, refused
 * at once). */
static void probe_done(struct tide_group_acquire *a,
                       struct tide_group_upstream *u, int64_t now)
{
    if (!a->probe)
        return;
    a->probe = false;
    u->probing = false;
    u->probe_after = now + PROBE_SPACING;
}

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

/* Sends a to the next upstream worth trying, or answers it with the last
 * refusal when none is left. */
static void dispatch_after(struct tide_group_acquire *a, int64_t now,
                           int last_status, struct tide_group_upstream *last,
                           const struct tide_why *last_why)
{
    struct tide_group *g = a->group;
    for (;;) {
        if (g->closing) {
            answer(a, TIDE_ECLOSED, NULL, NULL, NULL, now);
            return;
        }
        int64_t left = a->deadline - now;
        if (left <= 0) {
            answer(a, TIDE_ETIMEDOUT, last, NULL, NULL, now);
            return;
        }
        struct tide_group_upstream *u = pick(a, now);
        if (!u) {
            answer(a, last_status ? last_status : TIDE_ECLOSED, last, NULL,
                   last_why, now);
            return;
        }
        if (!remember_tried(a, u)) {
            answer(a, TIDE_ENOMEM, last, NULL, NULL, now);
            return;
        }
        if (a->n_tried > 1)
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
        probe_done(a, u, now);
        last_status = rc;
        last = u;
        last_why = NULL;
    }
}

static void dispatch(struct tide_group_acquire *a, int64_t now)
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
    int64_t now = clock_ns();
    a->at = NULL;
    a->pool_handle = NULL;
    probe_done(a, u, now);
    enter(g);
    if (status == 0) {
        answer(a, 0, u, resource, why, now);
    } else if (status == TIDE_ETIMEDOUT || g->closing) {
        answer(a, g->closing ? TIDE_ECLOSED : status, u, NULL, why, now);
    } else {
        /* this upstream cannot serve (refused, a failed make, removed):
         * another may */
        dispatch_after(a, now, status, u, why);
    }
    u->refs--;
    if (leave(g))
        upstream_maybe_free(u);
}

static void on_cap_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide_group_acquire *a = arg;
    struct tide_group *g = a->group;
    TIDE__LIST_UNLINK(&g->capped, a);
    TIDE__LIST_APPEND(&g->pending, a);
    event_assign(&a->ev, g->base, -1, 0, on_deliver, a);
    answer(a, TIDE_ETIMEDOUT, NULL, NULL, NULL, clock_ns());
}

static void on_deliver(evutil_socket_t fd, short what, void *arg)
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
    enter(g);
    a->cb(g, a->status, u, a->resource, &a->why, a->arg);
    acquire_free(a);
    bool alive = leave(g);
    if (alive) {
        if (u)
            unref(u);
        check_closed(g);
    }
}

/* ---- lifecycle ---- */

static void on_group_closed(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide_group *g = arg;
    enter(g);
    if (g->on_closed)
        g->on_closed(g, g->closed_arg);
    leave(g);
}

int tide_group_new(struct event_base *base, const struct tide_group_options *o,
                   struct tide_group **out)
{
    if (!out)
        return TIDE_EINVAL;
    *out = NULL;
    struct tide_group_options opt = o ? *o : (struct tide_group_options){0};
    if (!base || opt.cap < 0 || opt.queue_max < 0 || opt.acquire_timeout < 0 ||
        opt.acquire_timeout == TIDE_FOREVER)
        return TIDE_EINVAL;
    struct tide_group *g = calloc(1, sizeof *g);
    if (!g)
        return TIDE_ENOMEM;
    g->base = base;
    g->cap = opt.cap;
    g->acquire_timeout =
        opt.acquire_timeout ? opt.acquire_timeout : TIDE_SEC(30);
    g->queue_max = opt.queue_max ? opt.queue_max : 4096;
    g->rng =
        opt.seed ? opt.seed : (uint64_t)clock_ns() ^ (uint64_t)(uintptr_t)g;
    event_assign(&g->closed_ev, base, -1, 0, on_group_closed, g);
    *out = g;
    return 0;
}

static void check_closed(struct tide_group *g)
{
    if (!g->closing || g->close_done)
        return;
    if (g->upstreams.count > 0 || g->capped.count > 0 || g->pending.count > 0)
        return;
    g->close_done = true;
    event_active(&g->closed_ev, EV_TIMEOUT, 0);
}

/* Starts the drain of u: its pool closes, failing its waiters (which move
 * on, or end when the group is closing) and destroying loans as they come
 * back. */
static void drain(struct tide_group_upstream *u)
{
    u->removed = true;
    u->group->active--;
    /* the first close of this pool: it cannot answer TIDE_ECLOSED */
    (void)tide_evpool_close(u->pool, on_pool_closed, u);
}

int tide_group_close(struct tide_group *g, tide_group_closed_cb done, void *arg)
{
    if (!g)
        return TIDE_EINVAL;
    if (g->closing)
        return TIDE_ECLOSED;
    g->closing = true;
    g->on_closed = done;
    g->closed_arg = arg;
    int64_t now = clock_ns();
    enter(g);
    while (g->capped.head) {
        struct tide_group_acquire *a = g->capped.head;
        TIDE__LIST_UNLINK(&g->capped, a);
        TIDE__LIST_APPEND(&g->pending, a);
        event_del(&a->ev);
        event_assign(&a->ev, g->base, -1, 0, on_deliver, a);
        answer(a, TIDE_ECLOSED, NULL, NULL, NULL, now);
    }
    struct tide_group_upstream *next;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = next) {
        next = u->next;
        if (!u->removed)
            drain(u);
    }
    check_closed(g);
    leave(g);
    return 0;
}

static void free_now(struct tide_group *g)
{
    struct tide_group_upstream *u, *un;
    for (u = g->upstreams.head; u; u = un) {
        un = u->next;
        /* drops its waiters (ours) without callbacks */
        tide_evpool_free(u->pool);
        upstream_free(u);
    }
    struct tide_group_acquire *a, *an;
    for (a = g->capped.head; a; a = an) {
        an = a->next;
        acquire_free(a);
    }
    for (a = g->pending.head; a; a = an) {
        an = a->next;
        acquire_free(a);
    }
    event_del(&g->closed_ev);
    event_debug_unassign(&g->closed_ev);
    free(g->pick_pools);
    free(g->pick_ups);
    free(g);
}

void tide_group_free(struct tide_group *g)
{
    if (!g)
        return;
    if (g->depth > 0) {
        g->free_pending = true;
        return;
    }
    free_now(g);
}

/* ---- upstreams ---- */

int tide_group_add(struct tide_group *g, const char *name,
                   const struct tide_factory *factory,
                   const struct tide_evpool_options *o,
                   struct tide_group_upstream **out)
{
    if (!out)
        return TIDE_EINVAL;
    *out = NULL;
    if (!g || !name)
        return TIDE_EINVAL;
    if (g->closing)
        return TIDE_ECLOSED;
    size_t want = (size_t)g->upstreams.count + 1;
    if (want > g->pick_capacity) {
        size_t cap = g->pick_capacity ? 2 * g->pick_capacity : 4;
        struct tide_pool **pp = realloc(g->pick_pools, cap * sizeof *pp);
        if (!pp)
            return TIDE_ENOMEM;
        g->pick_pools = pp;
        struct tide_group_upstream **up =
            realloc(g->pick_ups, cap * sizeof *up);
        if (!up)
            return TIDE_ENOMEM;
        g->pick_ups = up;
        g->pick_capacity = cap;
    }
    struct tide_group_upstream *u = calloc(1, sizeof *u);
    if (!u)
        return TIDE_ENOMEM;
    u->name = strdup(name);
    if (!u->name) {
        free(u);
        return TIDE_ENOMEM;
    }
    int rc = tide_evpool_new(g->base, factory, o, &u->pool);
    if (rc) {
        upstream_free(u);
        return rc;
    }
    u->group = g;
    TIDE__LIST_APPEND(&g->upstreams, u);
    g->active++;
    *out = u;
    return 0;
}

int tide_group_remove(struct tide_group *g, struct tide_group_upstream *u)
{
    if (!g || !u || u->group != g)
        return TIDE_EINVAL;
    if (u->removed)
        return TIDE_ECLOSED;
    enter(g);
    drain(u);
    leave(g);
    return 0;
}

size_t tide_group_upstreams(struct tide_group *g,
                            struct tide_group_upstream **out, size_t n)
{
    if (!g)
        return 0;
    size_t k = 0;
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next) {
        if (u->removed)
            continue;
        if (out && k < n)
            out[k] = u;
        k++;
    }
    return k;
}

const char *tide_group_upstream_name(const struct tide_group_upstream *u)
{
    return u ? u->name : NULL;
}

struct tide_evpool *
tide_group_upstream_pool(const struct tide_group_upstream *u)
{
    return u ? u->pool : NULL;
}

/* ---- acquire and release ---- */

int tide_group_acquire(struct tide_group *g, int64_t timeout,
                       tide_group_acquire_cb cb, void *arg,
                       struct tide_group_acquire **handle)
{
    if (handle)
        *handle = NULL;
    if (!g || !cb || timeout < 0)
        return TIDE_EINVAL;
    if (g->closing || g->active == 0)
        return TIDE_ECLOSED;
    bool capped = g->cap > 0 && g->slots >= g->cap;
    if (capped && g->capped.count >= g->queue_max)
        return TIDE_EQUEUEFULL;
    struct tide_group_acquire *a = calloc(1, sizeof *a);
    if (!a)
        return TIDE_ENOMEM;
    int64_t now = clock_ns();
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
    event_assign(&a->ev, g->base, -1, 0, on_deliver, a);
    TIDE__LIST_APPEND(&g->pending, a);
    a->holds_slot = true;
    g->slots++;
    enter(g);
    dispatch(a, now);
    leave(g);
    return 0;
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
    int64_t now = clock_ns();
    size_t n = candidates(g, NULL, now, true);
    if (n == 0)
        return TIDE_EWOULDBLOCK;
    double first = roll(g), second = roll(g);
    int i = tide_pick(g->pick_pools, n, now, first, second);
    if (i < 0)
        return TIDE_EWOULDBLOCK;
    struct tide_group_upstream *up = g->pick_ups[i];
    void *r;
    int rc = tide_evpool_try_acquire(up->pool, &r);
    if (rc) /* nothing idle, callers queued, refused: acquire finds out */
        return TIDE_EWOULDBLOCK;
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
    int64_t now = clock_ns();
    enter(g);
    struct tide_group_upstream *u = NULL;
    switch (a->state) {
    case ACQ_CAPPED:
        TIDE__LIST_UNLINK(&g->capped, a);
        event_del(&a->ev);
        event_assign(&a->ev, g->base, -1, 0, on_deliver, a);
        TIDE__LIST_APPEND(&g->pending, a);
        break;
    case ACQ_AT_POOL:
        u = a->at;
        probe_done(a, u, now);
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
            (void)tide__loan_unseen(a->answered_by->pool, a->resource);
        }
        if (a->answered_by)
            unref(a->answered_by);
        a->answered_by = NULL;
        a->resource = NULL;
        break;
    case ACQ_DELIVERING:
        break;
    }
    if (a->holds_slot) {
        a->holds_slot = false;
        slot_free(g, now);
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
        acquire_free(a);
    }
    if (u)
        unref(u);
    check_closed(g);
    leave(g);
}

/* A loan of u ends by `end` (the pool's release, discard, retire or
 * abandon), and the group's place for it is freed. */
static int give_back(struct tide_group *g, struct tide_group_upstream *u,
                     void *resource,
                     int (*end)(struct tide_evpool *p, void *resource))
{
    if (!g || !u || !resource || u->group != g)
        return TIDE_EINVAL;
    if (!u->pool || u->lent <= 0)
        return TIDE_EUNKNOWN;
    int rc = end(u->pool, resource);
    if (rc < 0)
        return rc;
    enter(g);
    u->lent--;
    slot_free(g, clock_ns());
    if (leave(g))
        upstream_maybe_free(u);
    return rc; /* 0, or tide_evpool_stale's TIDE_STALE */
}

int tide_group_release(struct tide_group *g, struct tide_group_upstream *u,
                       void *resource)
{
    return give_back(g, u, resource, tide_evpool_release);
}

int tide_group_discard(struct tide_group *g, struct tide_group_upstream *u,
                       void *resource)
{
    return give_back(g, u, resource, tide_evpool_discard);
}

int tide_group_retire(struct tide_group *g, struct tide_group_upstream *u,
                      void *resource)
{
    return give_back(g, u, resource, tide_evpool_retire);
}

int tide_group_abandon(struct tide_group *g, struct tide_group_upstream *u,
                       void *resource)
{
    return give_back(g, u, resource, tide_evpool_abandon);
}

int tide_group_stale(struct tide_group *g, struct tide_group_upstream *u,
                     void *resource)
{
    return give_back(g, u, resource, tide_evpool_stale);
}

/* ---- stats ---- */

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* How bad a breaker state is, for the group's worst. */
static int severity(enum tide_breaker_state s)
{
    return s == TIDE_BREAKER_INACTIVE ? 2 : s == TIDE_BREAKER_RECOVERING;
}

static void add_stats(struct tide_evpool_stats *t,
                      const struct tide_evpool_stats *s)
{
    t->live += s->live;
    t->idle += s->idle;
    t->lent += s->lent;
    t->making += s->making;
    t->checking += s->checking;
    t->resetting += s->resetting;
    t->waiting += s->waiting;
    if (severity(s->breaker) > severity(t->breaker))
        t->breaker = s->breaker;
    if (s->refusal > t->refusal)
        t->refusal = s->refusal;
    t->made += s->made;
    t->destroyed += s->destroyed;
    t->make_failures += s->make_failures;
    t->timeouts += s->timeouts;
    t->shed += s->shed;
    t->stale += s->stale;
    t->evicted += s->evicted;
    t->health_failures += s->health_failures;
    t->leaks += s->leaks;
    t->lost += s->lost;
    t->acquires += s->acquires;
    t->queue_full += s->queue_full;
    t->cancels += s->cancels;
    t->dirty += s->dirty;
    t->reset_failures += s->reset_failures;
    t->retired += s->retired;
    t->abandoned += s->abandoned;
    t->stale_loans += s->stale_loans;
    t->loans += s->loans;
    t->busiest = max64(t->busiest, s->busiest);
    t->broken += s->broken;
    t->wait_p50 = max64(t->wait_p50, s->wait_p50);
    t->wait_p90 = max64(t->wait_p90, s->wait_p90);
    t->wait_p99 = max64(t->wait_p99, s->wait_p99);
    t->wait_max = max64(t->wait_max, s->wait_max);
    t->recent_p50 = max64(t->recent_p50, s->recent_p50);
    t->recent_p90 = max64(t->recent_p90, s->recent_p90);
    t->recent_p99 = max64(t->recent_p99, s->recent_p99);
    t->recent_max = max64(t->recent_max, s->recent_max);
}

void tide_group_upstream_stats(struct tide_group_upstream *u,
                               struct tide_evpool_stats *out, int64_t *lent)
{
    if (!u)
        return;
    if (out) {
        if (u->pool)
            tide_evpool_stats(u->pool, out);
        else
            *out = (struct tide_evpool_stats){0};
    }
    if (lent)
        *lent = u->lent;
}

void tide_group_stats(struct tide_group *g, struct tide_group_stats *out)
{
    if (!g || !out)
        return;
    *out = (struct tide_group_stats){0};
    for (struct tide_group_upstream *u = g->upstreams.head; u; u = u->next) {
        if (u->removed)
            out->draining++;
        else
            out->upstreams++;
        out->lent += u->lent;
        if (!u->pool)
            continue;
        struct tide_evpool_stats s;
        tide_evpool_stats(u->pool, &s);
        if (!u->removed && s.breaker == TIDE_BREAKER_INACTIVE)
            out->open++;
        add_stats(&out->pools, &s);
    }
    out->capped = g->capped.count;
    out->acquires = g->acquires;
    out->served = g->served;
    out->failed = g->failed;
    out->failovers = g->failovers;
}
