/* Upkeep timers, each armed only while it has work, so an idle pool leaves
 * the loop free to exit: eviction (and topping up to the minimum), health
 * checks (health.c), leak reports, and the loop-lag probe that feeds the
 * shedder. */
#include "evloop_internal.h"

static void arm(struct tide_evpool *p, struct upkeep_timer *t)
{
    if (t->armed || t->period == TIDE_FOREVER)
        return;
    struct timeval tv;
    tide__timeval(t->period, &tv);
    event_add(&t->ev, &tv);
    t->armed = true;
    t->due = tide__after(p->now, t->period);
}

static void stop(struct upkeep_timer *t)
{
    if (t->armed)
        event_del(&t->ev);
    t->armed = false;
}

static void destroy_evicted(struct tide_evpool *p)
{
    void *out[64];
    size_t n;
    do {
        n = tide_pool_evict(p->core, p->now, out, 64);
        for (size_t k = 0; k < n; k++) {
            uint32_t i = tide__conn_of_key(out[k]);
            void *resource = p->conns[i].resource;
            tide__conn_leave_idle(p, i, CONN_LEAVING);
            tide__conn_remove(p, i);
            p->counters.evicted++;
            tide__resource_destroy(p, resource);
        }
    } while (n == 64);
}

/* Tops up to min. While makes are held after a failure, the core answers
 * LATER and the top-up wakes when the hold ends (a minimum made again on
 * time, not at the next eviction round); while a probe is out it answers
 * WAIT, and the probe's outcome runs the pump again. */
void tide__topup(struct tide_evpool *p)
{
    if (p->closing || p->min == 0)
        return;
    while (tide_pool_live(p->core) < p->min) {
        struct tide_taken t =
            tide_pool_grow(p->core, p->now, tide__evpool_roll(p));
        if (t.answer != TIDE_MAKE) {
            if (t.answer == TIDE_LATER)
                tide__wake_in(&p->topup_wake, t.span);
            return;
        }
        tide__make_start(p, false);
        if (p->free_pending)
            return; /* the factory freed the pool from inside make */
    }
}

/* Leaks are scanned a few times per threshold, at most once a second. */
static void scan_leaks(struct tide_evpool *p)
{
    for (uint32_t i = 0; i < p->conn_capacity; i++) {
        struct conn *c = &p->conns[i];
        if (c->state != CONN_LENT || c->leak_reported ||
            p->now - c->lent_at < p->leak_after)
            continue;
        c->leak_reported = true;
        p->counters.leaks++;
        if (p->on_leak)
            p->on_leak(p, c->resource, p->now - c->lent_at, p->leak_arg);
        if (p->free_pending)
            return;
    }
}

static void evict_work(struct tide_evpool *p)
{
    tide__waiters_trim(p);
    if (p->evicting)
        destroy_evicted(p);
    tide__topup(p);
}

static void lag_work(struct tide_evpool *p)
{
    /* how late the loop ran this timer: the host's overload signal */
    int64_t lag = p->now > p->lag.due ? p->now - p->lag.due : 0;
    tide_pool_overload(p->core, p->now, lag);
}

/* Every upkeep timer fires here: its work, then each timer armed or
 * stopped by whether work is left (unless the work freed the pool). */
static void on_upkeep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct upkeep_timer *t = arg;
    struct tide_evpool *p = t->pool;
    t->armed = false;
    p->upkeep_key = UPKEEP_STALE; /* t must be armed again if still wanted */
    tide__evpool_enter(p);
    t->work(p);
    if (!p->free_pending)
        tide__upkeep_sync(p);
    tide__evpool_leave(p);
}

static void timer_init(struct tide_evpool *p, struct upkeep_timer *t,
                       void (*work)(struct tide_evpool *p))
{
    t->pool = p;
    t->work = work;
    event_assign(&t->ev, p->base, -1, 0, on_upkeep, t);
}

/* The pool's reading: how old p->now may be for try_acquire and release
 * to decide with it (tide__evpool_now_fast). What they stamp with it is
 * when a resource went idle (keep), whether an idle one outlived its keep
 * or life, and the breaker's windows. While the eviction timer is armed
 * (it is while anything is live) each round reads the clock, so the
 * reading is at most a round old, plus however long the loop was kept from
 * running: libevent's own timers are late by as much. Rounds at most
 * READING_AGE_MAX apart, and at most half a keep or a life, keep those
 * within the precision eviction has anyway: an idle resource leaves within
 * a round of its keep either way. Leak reports and the shedder time single
 * loans, so with either the clock is read; with no keep, life, breaker,
 * leak report or shedder nothing on the path looks at the time at all. */
#define READING_AGE_MAX TIDE_SEC(1)

static void reading_init(struct tide_evpool *p, struct tide_limits l)
{
    bool per_loan = p->shedding || p->leak_after != TIDE_FOREVER;
    int64_t age = p->evict.period;
    p->reading_untimed = !per_loan && !p->evicting && !p->breaker;
    p->reading_by_eviction = !per_loan && p->evicting &&
                             age <= READING_AGE_MAX &&
                             (l.keep == TIDE_FOREVER || age <= l.keep / 2) &&
                             (l.life == TIDE_FOREVER || age <= l.life / 2);
}

void tide__upkeep_init(struct tide_evpool *p, int64_t evict_interval,
                       int64_t health_interval, int64_t lag_interval)
{
    /* The eviction timer also paces the top-ups to min after a failure. With
     * eviction off it still runs then (and only then), once a second, the
     * preset interval: a failed minimum must be made again some time. */
    struct tide_limits l = tide_pool_limits(p->core);
    /* with keep and life both forever nothing can ever be evicted */
    p->evicting = evict_interval != TIDE_FOREVER &&
                  (l.keep != TIDE_FOREVER || l.life != TIDE_FOREVER);
    p->evict.period = p->evicting ? evict_interval : TIDE_SEC(1);
    p->health.period = p->factory.check ? health_interval : TIDE_FOREVER;
    p->lag.period = p->shedding ? lag_interval : TIDE_FOREVER;
    if (p->leak_after == TIDE_FOREVER) {
        p->leak.period = TIDE_FOREVER;
    } else {
        int64_t period = p->leak_after / 4;
        p->leak.period = period < TIDE_MS(1)    ? TIDE_MS(1)
                         : period > TIDE_SEC(1) ? TIDE_SEC(1)
                                                : period;
    }
    reading_init(p, l);
    p->upkeep_key = UPKEEP_STALE;
    tide__wake_init(p, &p->topup_wake);
    timer_init(p, &p->evict, evict_work);
    timer_init(p, &p->health, tide__health_round);
    timer_init(p, &p->leak, scan_leaks);
    timer_init(p, &p->lag, lag_work);
    timer_init(p, &p->shrink, tide__shrink);
}

/* Arms t when it has work and is not armed yet (an armed one keeps its
 * phase); stops it when it has none. */
static void want(struct tide_evpool *p, struct upkeep_timer *t, bool work)
{
    if (work)
        arm(p, t);
    else
        stop(t);
}

/* Stopping matters as much as arming: a pending event keeps
 * event_base_dispatch running, so a health timer left armed after the last
 * idle resource was evicted held the application's loop for up to a
 * health_interval (30 s by default) with nothing to check.
 *
 * The timers follow whether anything is live at all, not what is idle or
 * lent: a pool cycling one resource through try_acquire and release would
 * otherwise delete and add the eviction timer on every loan, a third of
 * the cycle's cost. A round with nothing idle (or lent) to look at is
 * cheap, and comes at most once a period. What the timers depend on is
 * folded into one key, so the usual sync, with nothing changed, is one
 * compare. */
void tide__upkeep_sync(struct tide_evpool *p)
{
    int64_t live = tide_pool_live(p->core);
    bool topping_up = !p->closing && live < p->min;
    unsigned key = (unsigned)(live > 0) | (unsigned)p->closing << 1 |
                   (unsigned)topping_up << 2 |
                   (unsigned)(p->queued.count > 0) << 3;
    if (key == p->upkeep_key)
        return;
    p->upkeep_key = key;
    if (!topping_up)
        tide__wake_stop(&p->topup_wake);
    want(p, &p->evict, (live > 0 && p->evicting) || topping_up);
    want(p, &p->health, live > 0 && !p->closing);
    want(p, &p->leak, live > 0);
    want(p, &p->lag, live > 0 || p->queued.count > 0);
    want(p, &p->shrink, live > 0 && !p->closing);
    if (!p->evict.armed)
        tide__waiters_trim(p); /* no round is coming to do it */
}

void tide__upkeep_stop(struct tide_evpool *p)
{
    p->upkeep_key = UPKEEP_STALE;
    tide__wake_stop(&p->topup_wake);
    stop(&p->evict);
    stop(&p->health);
    stop(&p->leak);
    stop(&p->lag);
    stop(&p->shrink);
    tide__waiters_trim(p);
}
