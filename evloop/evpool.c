/* The pool's lifecycle: options, creation, close, free, and stats. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "breaker_listen.h"
#include "evloop_internal.h"

#define PRESET(field, value)                                                   \
    do {                                                                       \
        if ((field) == 0)                                                      \
            (field) = (value);                                                 \
    } while (0)

static struct tide_evpool_options resolve(struct tide_evpool_options o)
{
    o.limits = tide_limits_resolve(o.limits);
    PRESET(o.make_timeout, TIDE_SEC(10));
    PRESET(o.acquire_timeout, TIDE_SEC(30));
    PRESET(o.health_interval, TIDE_SEC(30));
    PRESET(o.evict_interval, TIDE_SEC(1));
    PRESET(o.queue_max, 4096);
    PRESET(o.leak_after, TIDE_FOREVER);
    PRESET(o.retire_after, TIDE_UNLIMITED);
    PRESET(o.lag_interval, TIDE_MS(100));
    return o;
}

static int check_options(const struct tide_evpool_options *o)
{
    int rc = tide_limits_check(&o->limits);
    if (rc)
        return rc;
    /* A minimum above idle could never be kept: each one made past idle is
     * "not kept" and closed, and topping up makes it again, forever. */
    if (o->min < 0 || o->min > o->limits.size || o->min > o->limits.idle)
        return TIDE_EINVAL;
    if (o->make_timeout < 0 || o->acquire_timeout <= 0 ||
        o->acquire_timeout == TIDE_FOREVER || o->health_interval < 0 ||
        o->evict_interval < 0 || o->queue_max < 0 || o->leak_after < 0 ||
        o->retire_after < 0 || o->lag_interval < 0)
        return TIDE_EINVAL;
    return 0;
}

int64_t tide__evpool_clock(struct tide_evpool *p)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    p->now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    return p->now;
}

/* splitmix64: small, fast and seedable, so a test can replay a run. */
double tide__evpool_roll(struct tide_evpool *p)
{
    uint64_t z = (p->rng += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

void tide__timeval(int64_t ns, struct timeval *tv)
{
    if (ns < 0)
        ns = 0;
    tv->tv_sec = (time_t)(ns / 1000000000);
    tv->tv_usec = (suseconds_t)((ns % 1000000000 + 999) / 1000);
    if (tv->tv_usec >= 1000000) {
        tv->tv_sec++;
        tv->tv_usec -= 1000000;
    }
}

static void on_pump(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide_evpool *p = arg;
    p->pump_due = false;
    tide__evpool_enter(p);
    tide__serve(p);
    tide__evpool_leave(p);
}

/* Whatever changed the breaker (a manual switch, the policy, a strategy),
 * the pump runs: an open breaker fails the parked callers at once with
 * the retry time, a closed one serves them again. The probes of the spell
 * that ended no longer hold a place. */
static void on_breaker_changed(void *arg)
{
    tide__probes_forget(arg);
    tide__serve_schedule(arg);
}

static void on_closed(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tide_evpool *p = arg;
    tide__evpool_enter(p);
    if (p->on_closed)
        p->on_closed(p, p->closed_arg);
    tide__evpool_leave(p);
}

int tide_evpool_new(struct event_base *base, const struct tide_factory *factory,
                    const struct tide_evpool_options *options,
                    struct tide_evpool **out)
{
    if (!out)
        return TIDE_EINVAL;
    *out = NULL;
    if (!base || !factory || !factory->make || !factory->destroy)
        return TIDE_EINVAL;
    struct tide_evpool_options o =
        resolve(options ? *options : (struct tide_evpool_options){0});
    int rc = check_options(&o);
    if (rc)
        return rc;
    struct tide_evpool *p = calloc(1, sizeof *p);
    if (!p)
        return TIDE_ENOMEM;
    p->base = base;
    p->factory = *factory;
    p->min = o.min;
    p->make_timeout = o.make_timeout;
    p->acquire_timeout = o.acquire_timeout;
    p->queue_max = o.queue_max;
    p->spares_burst = o.queue_max == TIDE_UNLIMITED || o.queue_max > SPARE_BURST
                          ? SPARE_BURST
                          : o.queue_max;
    p->lent_text = tide_strerror(0);
    p->leak_after = o.leak_after;
    p->retire_after = o.retire_after;
    p->on_leak = o.on_leak;
    p->leak_arg = o.leak_arg;
    p->shedding = o.ward.shedder != NULL;
    p->rng = o.seed ? o.seed
                    : (uint64_t)tide__evpool_clock(p) ^ (uint64_t)(uintptr_t)p;
    /* Makes are held after failed makes with or without a ward's backoff:
     * the preset stands in, so callers retrying against a server that
     * accepts and closes, or speaks first, do not storm it (core.h, "Makes
     * held while makes fail"). */
    struct tide_backoff preset = {0};
    struct tide_ward ward = o.ward;
    if (!ward.backoff)
        ward.backoff = &preset;
    rc = tide_pool_new(&o.limits, &ward, tide__evpool_clock(p), &p->core);
    if (rc == 0) {
        int64_t size = o.limits.size;
        rc = tide__conns_init(p, size < 1024 ? (uint32_t)size : 1024);
    }
    if (rc) {
        tide_pool_free(p->core);
        free(p);
        return rc;
    }
    p->streams = tide_pool_limits(p->core).streams;
    p->shared = p->streams > 1;
    p->breaker = tide_pool_breaker(p->core);
    if (p->breaker)
        tide__breaker_listen(p->breaker, on_breaker_changed, p);
    event_assign(&p->pump, base, -1, 0, on_pump, p);
    tide__wake_init(p, &p->retry);
    tide__deadlines_init(p);
    event_assign(&p->closed_ev, base, -1, 0, on_closed, p);
    tide__demand_setup(p);
    tide__upkeep_init(p, o.evict_interval, o.health_interval, o.lag_interval);
    *out = p;
    if (p->min > 0)
        tide__serve_schedule(p); /* the pump tops up to min from the loop */
    return 0;
}

void tide__evpool_enter(struct tide_evpool *p)
{
    p->depth++;
    tide__evpool_clock(p);
}

static void free_now(struct tide_evpool *p);

static void count_zero_waits(struct tide_evpool *p)
{
    if (p->zero_waits > 0) {
        tide__waits_zero(&p->waits, &p->recent, p->now, p->zero_waits);
        p->zero_waits = 0;
    }
}

bool tide__evpool_leave(struct tide_evpool *p)
{
    if (p->depth == 1)
        count_zero_waits(p);
    if (--p->depth == 0 && p->free_pending) {
        free_now(p);
        return false;
    }
    return true;
}

/* A close is done when nothing the pool made is left and no make or check
 * is pending: then the done callback is queued and every timer stopped. */
void tide__evpool_check_closed(struct tide_evpool *p)
{
    if (!p->closing || p->close_done)
        return;
    if (tide_pool_live(p->core) > 0 || p->makes_pending > 0 || p->asides.head ||
        p->queued.count > 0 || p->ready.count > 0)
        return;
    p->close_done = true;
    tide__upkeep_stop(p);
    tide__wake_stop(&p->retry);
    event_active(&p->closed_ev, EV_TIMEOUT, 0);
}

int tide_evpool_close(struct tide_evpool *p, tide_closed_cb done, void *arg)
{
    if (!p)
        return TIDE_EINVAL;
    if (p->closing)
        return TIDE_ECLOSED;
    p->closing = true;
    p->on_closed = done;
    p->closed_arg = arg;
    tide__evpool_clock(p);
    void *idle[64];
    size_t n;
    do {
        n = tide_pool_close(p->core, idle, 64);
        for (size_t k = 0; k < n; k++) {
            uint32_t i = tide__conn_of_key(idle[k]);
            void *resource = p->conns[i].resource;
            tide__conn_leave_idle(p, i, CONN_LEAVING);
            tide__conn_remove(p, i);
            tide__resource_destroy(p, resource);
        }
    } while (n == 64);
    tide__waiters_fail_all(p, TIDE_ECLOSED);
    tide__makes_cancel_all(p);
    tide__serve_schedule(p); /* delivers the failures from the loop */
    tide__evpool_check_closed(p);
    return 0;
}

static void free_now(struct tide_evpool *p)
{
    /* The destroys below run the factory's hooks, which may call the pool
     * (acquire, give back another loan): from here on it is closing, so an
     * acquire is refused and a loan given back is destroyed with no reset;
     * no pump or close is queued; and the events are stopped after the
     * last hook, whatever the hooks armed. */
    p->closing = true;
    p->close_done = true;
    p->pumping = true;
    tide__waiters_free_all(p);
    tide__deadlines_stop_all(p);
    tide__makes_orphan_all(p);
    tide__asides_orphan_all(p);
    for (uint32_t i = 0; i < p->conn_capacity; i++) {
        struct conn *c = &p->conns[i];
        if (c->state == CONN_FREE)
            continue;
        tide__conn_leave_idle(p, i, CONN_LEAVING);
        void *resource = c->resource;
        tide__conn_remove(p, i);
        tide__resource_destroy(p, resource);
    }
    tide__upkeep_stop(p);
    event_del(&p->pump);
    tide__wake_stop(&p->retry);
    tide__wake_stop(&p->topup_wake);
    event_del(&p->closed_ev);
    /* embedded events: libevent's debug mode tracks them until told */
    event_debug_unassign(&p->pump);
    event_debug_unassign(&p->retry.ev);
    event_debug_unassign(&p->closed_ev);
    event_debug_unassign(&p->evict.ev);
    event_debug_unassign(&p->health.ev);
    event_debug_unassign(&p->leak.ev);
    event_debug_unassign(&p->lag.ev);
    event_debug_unassign(&p->shrink.ev);
    event_debug_unassign(&p->topup_wake.ev);
    tide__conns_dispose(p);
    tide_pool_free(p->core);
    free(p->last_message);
    free(p);
}

void tide_evpool_free(struct tide_evpool *p)
{
    if (!p)
        return;
    if (p->depth > 0) {
        p->free_pending = true;
        return;
    }
    free_now(p);
}

struct tide_breaker *tide_evpool_breaker(struct tide_evpool *p)
{
    return p ? p->breaker : NULL;
}

void tide_evpool_stats(struct tide_evpool *p, struct tide_evpool_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!p)
        return;
    int64_t now = tide__evpool_now(p);
    count_zero_waits(p);
    out->live = tide_pool_live(p->core);
    out->idle = tide_pool_idle(p->core);
    out->lent = p->lent;
    out->checking = p->checking;
    out->resetting = p->resetting;
    out->making =
        out->live - out->idle - out->lent - out->checking - out->resetting;
    out->waiting = p->queued.count;
    out->breaker =
        p->breaker ? tide_breaker_state(p->breaker) : TIDE_BREAKER_ACTIVE;
    out->refusal = tide_pool_refusal(p->core, now);
    const struct counters *c = &p->counters;
    out->made = c->made;
    out->destroyed = c->destroyed;
    out->make_failures = c->make_failures;
    out->timeouts = c->timeouts;
    out->shed = c->shed;
    out->stale = c->stale;
    out->evicted = c->evicted;
    out->health_failures = c->health_failures;
    out->leaks = c->leaks;
    out->lost = c->lost;
    out->held = c->held;
    out->wait_p50 = tide__waits_quantile(&p->waits, 0.50);
    out->wait_p90 = tide__waits_quantile(&p->waits, 0.90);
    out->wait_p99 = tide__waits_quantile(&p->waits, 0.99);
    out->wait_max = p->waits.max;
    out->acquires = c->acquires;
    out->queue_full = c->queue_full;
    out->cancels = c->cancels;
    out->dirty = c->dirty;
    out->reset_failures = c->reset_failures;
    out->retired = c->retired;
    out->abandoned = c->abandoned;
    out->loans = tide_pool_loans(p->core);
    out->busiest = tide_pool_busiest(p->core);
    out->broken = c->broken;
    out->stale_loans = c->stale_loans;
    struct waits recent;
    tide__recent_merge(&p->recent, now, &recent);
    out->recent_p50 = tide__waits_quantile(&recent, 0.50);
    out->recent_p90 = tide__waits_quantile(&recent, 0.90);
    out->recent_p99 = tide__waits_quantile(&recent, 0.99);
    out->recent_max = recent.max;
    out->preconnects = c->preconnects;
    out->demand_retired = c->demand_retired;
    out->connect_waits = c->connect_waits;
    struct tide_demand d;
    tide_pool_demand(p->core, now, &d);
    out->needed = d.needed;
}

int tide_evpool_last_error(const struct tide_evpool *p, char *buf, size_t len)
{
    if (!p) {
        if (buf && len > 0)
            buf[0] = '\0';
        return TIDE_EINVAL;
    }
    if (buf && len > 0) {
        const char *m = p->last_message ? p->last_message : "";
        size_t n = strlen(m);
        if (n >= len)
            n = len - 1;
        memcpy(buf, m, n);
        buf[n] = '\0';
    }
    return p->last_error;
}
