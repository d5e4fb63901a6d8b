/* The virtual-time engine: see engine.h. Every decision is the core's; what
 * is here is what the evloop adapter and the network would do around it,
 * cut down to what the simulator shows: a FIFO of waiters with a bound and a
 * timeout, makes that take a connect's time and may be refused, loans that
 * take a service time, a server that cuts connections in an outage or when
 * idle too long, a top-up to `min`, and eviction. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "events.h"
#include "waits.h"

#define NS_PER_TICK TIDE_MS(1)
#define EVICT_EVERY 100 /* ticks */
/* A connection that dies within this long of its make was never really
 * made (evloop.h): the make counts as failed. */
#define SETTLE_AFTER TIDE_SEC(1)
#define MAX_SIZE     4096
#define MAX_QUEUE    65536
#define MAX_SECONDS  3600

enum conn_state { CONN_FREE, CONN_MAKING, CONN_LENT, CONN_IDLE };

struct conn {
    enum conn_state state;
    uint32_t gen;  /* bumped at every change of state: older events lapse */
    uint32_t life; /* bumped at every make: a SETTLE names one life */
    bool untried;  /* made_untried, not settled yet */
    uint32_t next; /* free list */
};

struct waiter {
    int64_t since; /* ns: when the acquire was asked */
    int held;      /* the run of failed makes it waits through (as evloop) */
    uint32_t gen;
    bool live;
    uint32_t prev, next; /* the FIFO, or the free list (next) */
};

#define NIL UINT32_MAX

struct web_engine {
    double params[WEB_PARAMS];
    struct tide_pool *pool;
    struct web_events events;
    struct web_waits waits;
    uint64_t rng;
    int64_t now;
    int64_t seconds;

    struct conn *conns;
    uint32_t n_conns, free_conn;
    struct waiter *waiters;
    uint32_t n_waiters, free_waiter, head, tail;
    int64_t waiting;
    int64_t making; /* makes in flight, for waiters or the top-up */

    bool retry_pending;
    int64_t retry_at;
    int64_t topup_until;

    bool in_outage;
    double owed; /* arrivals: the fraction carried to the next tick */
    uint64_t decisions;
    int64_t lent;
    bool noting; /* demand or preconnect on: loans are noted */

    struct web_row row; /* the second in progress */
    struct web_row *rows;
    int64_t n_rows;
};

/* ---- randomness: splitmix64, the same bits on every platform ---- */

static uint64_t next_bits(struct web_engine *e)
{
    uint64_t z = (e->rng += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1), 53 bits: exact in a double. */
static double roll(struct web_engine *e)
{
    return (double)(next_bits(e) >> 11) * (1.0 / 9007199254740992.0);
}

static int64_t ms(double v)
{
    return (int64_t)(v * 1e6);
}

/* ---- the phases ---- */

static enum web_phase phase_at(const struct web_engine *e, int64_t t)
{
    const double *p = e->params;
    int64_t burst = TIDE_SEC(1) * (int64_t)p[WEB_P_BURST_START_S];
    int64_t burst_end = burst + TIDE_SEC(1) * (int64_t)p[WEB_P_BURST_LEN_S];
    int64_t outage = TIDE_SEC(1) * (int64_t)p[WEB_P_OUTAGE_START_S];
    int64_t outage_end = outage + TIDE_SEC(1) * (int64_t)p[WEB_P_OUTAGE_LEN_S];
    if (t >= outage && t < outage_end)
        return WEB_OUTAGE;
    int64_t wave = TIDE_SEC(1) * (int64_t)p[WEB_P_WAVE_S];
    if (t >= burst && t < burst_end)
        return wave == 0 || (t - burst) / wave % 2 == 0 ? WEB_BURST : WEB_CALM;
    if (outage_end > outage && t >= outage_end)
        return WEB_RECOVERY;
    if (burst_end > burst && t >= burst_end)
        return WEB_DRAIN;
    return WEB_CALM;
}

/* ---- the breaker as the row sees it ---- */

enum tide_breaker_state web_engine_breaker(struct web_engine *e)
{
    struct tide_breaker *b = tide_pool_breaker(e->pool);
    return b ? tide_breaker_state(b) : TIDE_BREAKER_ACTIVE;
}

enum web_phase web_engine_phase(const struct web_engine *e)
{
    return phase_at(e, e->now);
}

int64_t web_engine_retry_after(struct web_engine *e)
{
    return tide_breaker_retry_after(tide_pool_breaker(e->pool), e->now);
}

int web_engine_refusal_pm(struct web_engine *e)
{
    return (int)(tide_pool_refusal(e->pool, e->now) * 1000 + 0.5);
}

static void see(struct web_engine *e)
{
    struct web_row *r = &e->row;
    enum tide_breaker_state b = web_engine_breaker(e);
    if (r->trail[r->n_trail - 1] == b)
        return;
    if (r->n_trail < WEB_TRAIL)
        r->n_trail++;
    r->trail[r->n_trail - 1] = b;
}

/* ---- scheduling ---- */

static void schedule(struct web_engine *e, int64_t at, enum web_event_kind k,
                     uint32_t who, uint32_t gen, bool ok)
{
    /* an event lost to memory would freeze a connection; the engine's
     * heap is small (a few per connection and waiter), and a run that
     * cannot grow it stops making progress visibly rather than lying */
    (void)web_events_push(
        &e->events, (struct web_event){
                        .at = at, .kind = k, .who = who, .gen = gen, .ok = ok});
}

static void *item_of(struct web_engine *e, uint32_t i)
{
    return &e->conns[i];
}

static uint32_t index_of(struct web_engine *e, void *item)
{
    return (uint32_t)((struct conn *)item - e->conns);
}

/* ---- connections ---- */

static void conn_free(struct web_engine *e, uint32_t i)
{
    struct conn *c = &e->conns[i];
    c->state = CONN_FREE;
    c->gen++;
    c->next = e->free_conn;
    e->free_conn = i;
}

/* Settles an open make: ok when the connection served (or lived a second),
 * not ok when it died first, which counts as a failed make. */
static void settle(struct web_engine *e, struct conn *c, bool ok)
{
    if (!c->untried)
        return;
    c->untried = false;
    e->decisions++;
    tide_pool_tried(e->pool, e->now, roll(e), ok);
    if (!ok)
        e->row.make_failures++;
}

/* The pool closes one it no longer keeps (not kept, evicted, stale): the
 * connect had worked, so an open make settles as served. */
static void conn_close(struct web_engine *e, uint32_t i)
{
    settle(e, &e->conns[i], true);
    conn_free(e, i);
}

static void conn_idle(struct web_engine *e, uint32_t i)
{
    struct conn *c = &e->conns[i];
    c->state = CONN_IDLE;
    c->gen++;
    double cut = e->params[WEB_P_SERVER_IDLE_S];
    if (cut > 0)
        schedule(e, e->now + TIDE_SEC(1) * (int64_t)cut, WEB_EV_IDLE_CUT, i,
                 c->gen, false);
}

/* Hands a connection back; closes it when the pool keeps no more. */
static void give(struct web_engine *e, uint32_t i)
{
    e->decisions++;
    if (tide_pool_give(e->pool, item_of(e, i), e->now) == 1)
        conn_idle(e, i);
    else
        conn_close(e, i);
}

/* ---- waiters ---- */

static uint32_t waiter_pop(struct web_engine *e)
{
    uint32_t w = e->head;
    struct waiter *x = &e->waiters[w];
    e->head = x->next;
    if (e->head != NIL)
        e->waiters[e->head].prev = NIL;
    else
        e->tail = NIL;
    x->live = false;
    x->gen++;
    x->next = e->free_waiter;
    e->free_waiter = w;
    e->waiting--;
    return w;
}

static void waiter_remove(struct web_engine *e, uint32_t w)
{
    struct waiter *x = &e->waiters[w];
    if (x->prev != NIL)
        e->waiters[x->prev].next = x->next;
    else
        e->head = x->next;
    if (x->next != NIL)
        e->waiters[x->next].prev = x->prev;
    else
        e->tail = x->prev;
    x->live = false;
    x->gen++;
    x->next = e->free_waiter;
    e->free_waiter = w;
    e->waiting--;
}

/* Every parked caller refused at once: the breaker opened. */
static void fail_waiters(struct web_engine *e)
{
    while (e->head != NIL) {
        waiter_pop(e);
        e->row.shed++;
        e->row.shed_breaker++;
    }
}

/* ---- loans ---- */

static int64_t service_time(struct web_engine *e)
{
    const double *p = e->params;
    double spread = p[WEB_P_SERVICE_SPREAD];
    double t = p[WEB_P_SERVICE_MS] * (1 - spread + 2 * spread * roll(e));
    if (roll(e) < p[WEB_P_SLOW_SHARE])
        t *= 10;
    int64_t ns = ms(t);
    return ns > 0 ? ns : 1;
}

static void start_make(struct web_engine *e);

/* The preconnects the core says are due, each a make for nobody in
 * particular, as the top-up's (the evloop adapter's pump does the same). */
static void ahead(struct web_engine *e)
{
    for (;;) {
        e->decisions++;
        struct tide_taken t = tide_pool_preconnect(e->pool, e->now, roll(e));
        if (t.answer != TIDE_MAKE)
            return;
        e->row.preconnects++;
        start_make(e);
    }
}

static void lend(struct web_engine *e, uint32_t i, uint32_t w)
{
    struct conn *c = &e->conns[i];
    int64_t since = e->waiters[w].since;
    c->state = CONN_LENT;
    c->gen++;
    e->lent++;
    web_waits_add(&e->waits, e->now / TIDE_SEC(1), e->now - since);
    schedule(e, e->now + service_time(e), WEB_EV_SERVED, i, c->gen, false);
    /* demand: every loan noted, as evloop notes them (off: no call) */
    if (e->noting) {
        e->decisions++;
        if (tide_pool_note(e->pool, e->now))
            ahead(e);
    }
}

static void start_make(struct web_engine *e)
{
    uint32_t i = e->free_conn;
    struct conn *c = &e->conns[i];
    e->free_conn = c->next;
    c->state = CONN_MAKING;
    c->gen++;
    e->making++;
    double cost = e->params[WEB_P_CONNECT_MS] * (0.5 + roll(e));
    bool ok = !e->in_outage && roll(e) >= e->params[WEB_P_FAIL_SHARE];
    schedule(e, e->now + ms(cost) + 1, WEB_EV_MADE, i, c->gen, ok);
}

static void note_later(struct web_engine *e, struct tide_taken t)
{
    if (t.guard == TIDE_GUARD_BUCKET) {
        e->row.later_bucket++;
        e->row.bucket_span = t.span;
    } else if (t.guard == TIDE_GUARD_BACKOFF) {
        e->row.later_backoff++;
        e->row.backoff_span = t.span;
    }
    int64_t at = e->now + (t.span > 0 ? t.span : 1);
    if (!e->retry_pending || at < e->retry_at) {
        e->retry_pending = true;
        e->retry_at = at;
        schedule(e, at, WEB_EV_RETRY, 0, 0, false);
    }
}

/* The run of failed makes the core counts now. */
static int failures(struct web_engine *e)
{
    struct tide_pool_guards g;
    tide_pool_guards(e->pool, e->now, &g);
    return g.backoff_failures;
}

/* Makes held after a failed make (LATER), or a probe out (WAIT), as the
 * evloop adapter answers them (evloop/serve.c, hold_waiters): a waiter
 * whose deadline outlasts the hold waits, one whose does not is refused
 * at once, and one that waited through a hold or on a probe is refused
 * when a make fails meanwhile. The first `making` waiters have makes
 * coming. */
static void hold_waiters(struct web_engine *e, struct tide_taken t)
{
    int run = failures(e);
    bool later = t.answer == TIDE_LATER;
    int64_t until = e->now + (later ? t.span : 0);
    int64_t timeout = ms(e->params[WEB_P_ACQUIRE_TIMEOUT_MS]);
    uint32_t w = e->head;
    for (int64_t k = 0; w != NIL && k < e->making; k++)
        w = e->waiters[w].next;
    while (w != NIL) {
        struct waiter *x = &e->waiters[w];
        uint32_t next = x->next;
        if (later &&
            ((x->held && x->held != run) || x->since + timeout < until)) {
            waiter_remove(e, w);
            e->row.held++;
        } else {
            x->held = run;
        }
        w = next;
    }
    if (later)
        note_later(e, t);
}

/* Hands out what the pool allows to the waiters in order: a waiter is never
 * passed over by a later caller, as in the evloop adapter. */
static void serve(struct web_engine *e)
{
    while (e->waiting > e->making) {
        e->decisions++;
        struct tide_taken t = tide_pool_take(e->pool, e->now, roll(e));
        switch (t.answer) {
        case TIDE_READY:
            lend(e, index_of(e, t.item), waiter_pop(e));
            continue;
        case TIDE_STALE:
            conn_close(e, index_of(e, t.item));
            continue;
        case TIDE_MAKE:
            start_make(e);
            continue;
        case TIDE_WAIT:
            if (t.guard == TIDE_GUARD_BACKOFF)
                hold_waiters(e, t);
            return;
        case TIDE_LATER:
            if (t.guard == TIDE_GUARD_BACKOFF)
                hold_waiters(e, t);
            else
                note_later(e, t);
            return;
        case TIDE_SHED:
            if (t.guard == TIDE_GUARD_BREAKER) {
                fail_waiters(e);
                return;
            }
            waiter_pop(e);
            e->row.shed++;
            if (t.guard == TIDE_GUARD_SHEDDER)
                e->row.shed_shedder++;
            else
                e->row.shed_other++;
            continue;
        }
    }
}

/* A caller asks for a connection: it joins the queue (or is refused, the
 * queue full), and the queue is served. */
static void acquire(struct web_engine *e)
{
    if (e->free_waiter == NIL) {
        e->row.queue_full++;
        return;
    }
    uint32_t w = e->free_waiter;
    struct waiter *x = &e->waiters[w];
    e->free_waiter = x->next;
    x->since = e->now;
    x->held = 0;
    x->live = true;
    x->prev = e->tail;
    x->next = NIL;
    if (e->tail != NIL)
        e->waiters[e->tail].next = w;
    else
        e->head = w;
    e->tail = w;
    e->waiting++;
    uint32_t gen = x->gen;
    serve(e);
    /* most callers are served at once: only one left waiting needs its
     * timeout on the queue, which keeps the event heap small */
    if (x->live && x->gen == gen)
        schedule(e, e->now + ms(e->params[WEB_P_ACQUIRE_TIMEOUT_MS]),
                 WEB_EV_TIMEOUT, w, gen, false);
}

/* ---- the server cuts connections ---- */

/* A lent connection cut mid-request is a broken loan; an idle one cut is no
 * outcome (servers close idle connections); either, if it never served,
 * was a failed make. */
static void cut(struct web_engine *e, uint32_t i)
{
    struct conn *c = &e->conns[i];
    e->decisions++;
    (void)tide_pool_drop(e->pool, item_of(e, i), e->now);
    if (c->state == CONN_LENT) {
        e->lent--;
        if (!c->untried) {
            e->decisions++;
            tide_pool_report(e->pool, e->now, false);
        }
    }
    settle(e, c, false);
    conn_free(e, i);
}

static void outage_begins(struct web_engine *e)
{
    e->in_outage = true;
    for (uint32_t i = 0; i < e->n_conns; i++) {
        enum conn_state s = e->conns[i].state;
        if (s == CONN_LENT || s == CONN_IDLE)
            cut(e, i);
    }
}

/* ---- the row ---- */

static void close_row(struct web_engine *e)
{
    struct web_row *r = &e->row;
    r->second = e->n_rows + 1;
    r->phase = phase_at(e, e->now - TIDE_MS(500));
    r->lent = e->lent;
    r->idle = tide_pool_idle(e->pool);
    r->waiting = e->waiting;
    r->p99 = web_waits_quantile(&e->waits, e->now / TIDE_SEC(1) - 1, 99);
    r->refusal_pm = web_engine_refusal_pm(e);
    r->retry_after = web_engine_retry_after(e);
    struct tide_pool_guards g;
    tide_pool_guards(e->pool, e->now, &g);
    r->bucket_milli =
        g.bucket_tokens < 0 ? -1 : (int64_t)(g.bucket_tokens * 1000 + 0.5);
    r->backoff_hold = g.backoff_hold;
    r->ceiling_milli =
        g.shedder_ceiling < 0 ? -1 : (int64_t)(g.shedder_ceiling * 1000 + 0.5);
    struct tide_demand d;
    tide_pool_demand(e->pool, e->now, &d);
    r->needed = d.needed;
    e->rows[e->n_rows++] = *r;
    enum tide_breaker_state b = web_engine_breaker(e);
    *r = (struct web_row){.trail = {b}, .n_trail = 1};
}

/* ---- the millisecond tick ---- */

static void top_up(struct web_engine *e)
{
    int64_t min = (int64_t)e->params[WEB_P_MIN];
    while (tide_pool_live(e->pool) < min && e->now >= e->topup_until &&
           e->waiting <= e->making) {
        e->decisions++;
        struct tide_taken t = tide_pool_grow(e->pool, e->now, roll(e));
        if (t.answer == TIDE_MAKE)
            start_make(e);
        else {
            if (t.answer == TIDE_LATER)
                e->topup_until = e->now + t.span;
            return;
        }
    }
}

/* Eviction, and with demand the idle ones beyond the window's peak,
 * never below min (off: no call, so the rows are what they always were). */
static void evict(struct web_engine *e)
{
    void *out[16];
    size_t n;
    for (int shrink = 0; shrink < 1 + (e->params[WEB_P_DEMAND_S] > 0);
         shrink++) {
        do {
            e->decisions++;
            n = shrink
                    ? tide_pool_shrink(e->pool, e->now,
                                       (int64_t)e->params[WEB_P_MIN], out, 16)
                    : tide_pool_evict(e->pool, e->now, out, 16);
            for (size_t k = 0; k < n; k++)
                conn_close(e, index_of(e, out[k]));
            e->row.demand_retired += shrink ? (int64_t)n : 0;
        } while (n == 16);
    }
}

static void arrivals(struct web_engine *e, enum web_phase ph)
{
    double rate = ph == WEB_BURST ? e->params[WEB_P_RATE_BURST]
                                  : e->params[WEB_P_RATE_CALM];
    /* the expected count this millisecond, its fraction drawn by a roll */
    double due = rate / 1000 + e->owed;
    int64_t n = (int64_t)due;
    e->owed = 0;
    if (roll(e) < due - (double)n)
        n++;
    for (int64_t k = 0; k < n; k++)
        acquire(e);
}

static void tick(struct web_engine *e)
{
    int64_t t = e->now;
    if (t > 0 && t % TIDE_SEC(1) == 0) {
        close_row(e);
        if (e->n_rows >= e->seconds)
            return; /* the run is over: no more ticks */
    }
    enum web_phase ph = phase_at(e, t);
    if (ph == WEB_OUTAGE && !e->in_outage)
        outage_begins(e);
    else if (ph != WEB_OUTAGE)
        e->in_outage = false;
    if (ph == WEB_BURST && e->params[WEB_P_BURST_LAG_MS] > 0) {
        e->decisions++;
        tide_pool_overload(e->pool, t, ms(e->params[WEB_P_BURST_LAG_MS]));
    }
    if (t / NS_PER_TICK % EVICT_EVERY == 0)
        evict(e);
    arrivals(e, ph);
    top_up(e);
    serve(e);
    schedule(e, t + NS_PER_TICK, WEB_EV_TICK, 0, 0, false);
}

/* ---- events ---- */

static void on_made(struct web_engine *e, uint32_t i, bool ok)
{
    struct conn *c = &e->conns[i];
    e->making--;
    e->decisions++;
    if (!ok || e->in_outage) {
        (void)tide_pool_unmade(e->pool, e->now, roll(e));
        e->row.make_failures++;
        conn_free(e, i);
        /* the waiter it was for is answered with the failure, as in
         * evloop (counted in make_failures) */
        if (e->head != NIL && e->waiting > e->making)
            waiter_pop(e);
        return;
    }
    (void)tide_pool_made_untried(e->pool, item_of(e, i), e->now);
    e->row.made++;
    c->untried = true;
    c->life++;
    c->state = CONN_LENT;
    c->gen++;
    schedule(e, e->now + SETTLE_AFTER, WEB_EV_SETTLE, i, c->life, false);
    if (e->head != NIL) {
        e->row.connect_waits++; /* the head waited for this connect */
        lend(e, i, waiter_pop(e));
    } else {
        give(e, i); /* made for the top-up, or its waiter timed out */
    }
}

static void on_served(struct web_engine *e, uint32_t i)
{
    struct conn *c = &e->conns[i];
    e->row.served++;
    e->lent--;
    settle(e, c, true);
    e->decisions++;
    tide_pool_report(e->pool, e->now, true);
    give(e, i);
}

static void handle(struct web_engine *e, const struct web_event *ev)
{
    struct conn *c = ev->kind == WEB_EV_TICK || ev->kind == WEB_EV_RETRY ||
                             ev->kind == WEB_EV_TIMEOUT
                         ? NULL
                         : &e->conns[ev->who];
    switch (ev->kind) {
    case WEB_EV_TICK:
        tick(e);
        break;
    case WEB_EV_RETRY:
        if (e->retry_pending && ev->at == e->retry_at)
            e->retry_pending = false;
        break;
    case WEB_EV_MADE:
        if (c->gen == ev->gen)
            on_made(e, ev->who, ev->ok);
        break;
    case WEB_EV_SERVED:
        if (c->gen == ev->gen)
            on_served(e, ev->who);
        break;
    case WEB_EV_TIMEOUT: {
        struct waiter *x = &e->waiters[ev->who];
        if (x->live && x->gen == ev->gen) {
            waiter_remove(e, ev->who);
            e->row.timeouts++;
        }
        break;
    }
    case WEB_EV_IDLE_CUT:
        if (c->gen == ev->gen && c->state == CONN_IDLE)
            cut(e, ev->who);
        break;
    case WEB_EV_SETTLE:
        if (c->life == ev->gen && c->state != CONN_FREE)
            settle(e, c, true);
        break;
    }
    if (ev->kind != WEB_EV_TICK || e->n_rows < e->seconds) {
        enum tide_breaker_state before = e->row.trail[e->row.n_trail - 1];
        see(e);
        if (before != TIDE_BREAKER_INACTIVE &&
            web_engine_breaker(e) == TIDE_BREAKER_INACTIVE)
            fail_waiters(e);
        serve(e);
    }
}

int64_t web_engine_run(struct web_engine *e, int64_t until)
{
    struct web_event ev;
    while (e->n_rows < e->seconds && web_events_next(&e->events) <= until &&
           web_events_pop(&e->events, &ev)) {
        e->now = ev.at;
        handle(e, &ev);
    }
    if (e->n_rows < e->seconds && until > e->now)
        e->now = until;
    return e->n_rows;
}

/* ---- the pool ---- */

static int open_pool(struct web_engine *e)
{
    const double *p = e->params;
    struct tide_limits limits = {
        .size = (int64_t)p[WEB_P_SIZE],
        .idle = (int64_t)p[WEB_P_IDLE],
        .keep = TIDE_SEC(1) * (int64_t)p[WEB_P_KEEP_S],
        .life = p[WEB_P_LIFE_S] > 0 ? TIDE_SEC(1) * (int64_t)p[WEB_P_LIFE_S]
                                    : TIDE_FOREVER,
        .spread = p[WEB_P_SPREAD],
        .demand = TIDE_SEC(1) * (int64_t)p[WEB_P_DEMAND_S],
        .retire = p[WEB_P_RETIRE],
        .preconnect = p[WEB_P_PRECONNECT],
    };
    struct tide_breaker_options breaker = {
        .policy = p[WEB_P_BREAKER] == 1 ? TIDE_BREAKER_ADAPTIVE
                                        : TIDE_BREAKER_STRIKES,
        .k = p[WEB_P_BREAKER_K],
        .window = TIDE_SEC(1) * (int64_t)p[WEB_P_BREAKER_WINDOW_S],
        .strikes = (int)p[WEB_P_STRIKES],
        .cooldown = ms(p[WEB_P_COOLDOWN_MS]),
        .probes = (int)p[WEB_P_PROBES],
    };
    struct tide_bucket_options bucket = {.rate = p[WEB_P_BUCKET_RATE],
                                         .burst = p[WEB_P_BUCKET_BURST]};
    struct tide_backoff preset = {0};
    struct tide_backoff backoff = {.base = ms(p[WEB_P_BACKOFF_BASE_MS]),
                                   .cap = ms(p[WEB_P_BACKOFF_CAP_MS])};
    struct tide_shedder_options shedder = {
        .loan_target = p[WEB_P_LOAN_TARGET_MS] > 0 ? ms(p[WEB_P_LOAN_TARGET_MS])
                                                   : TIDE_FOREVER,
    };
    struct tide_ward ward = {
        .breaker = p[WEB_P_BREAKER] > 0 ? &breaker : NULL,
        .bucket = p[WEB_P_BUCKET_RATE] > 0 ? &bucket : NULL,
        /* without the switch the preset holds makes, as in evloop */
        .backoff = p[WEB_P_BACKOFF] > 0 ? &backoff : &preset,
        .shedder = p[WEB_P_SHEDDER] > 0 ? &shedder : NULL,
    };
    return tide_pool_new(&limits, &ward, 0, &e->pool);
}

/* Bounds the engine holds a run to: its books are allocated once, and
 * every span turned into ns must fit an int64_t (a double out of an
 * integer's range does not convert: in wasm it would trap). NaN fails
 * every compare. A bound between two parameters is blamed on the one the
 * other bounds (min, at most size and idle). */
/* What the engine reads as whole numbers (spans in seconds too, cut to the
 * second), so that 12.5 is refused rather than run as 12. */
static bool read_whole(int i)
{
    switch (i) {
    case WEB_P_SEED:
    case WEB_P_SECONDS:
    case WEB_P_SIZE:
    case WEB_P_IDLE:
    case WEB_P_MIN:
    case WEB_P_QUEUE_MAX:
    case WEB_P_BREAKER:
    case WEB_P_STRIKES:
    case WEB_P_PROBES:
    case WEB_P_BACKOFF:
    case WEB_P_SHEDDER:
        return true;
    }
    return false;
}

int web_params_check(const double *p)
{
    for (int i = 0; i < WEB_PARAMS; i++) {
        const char *name = web_param_name(i);
        size_t len = strlen(name);
        bool seconds = len > 2 && !strcmp(name + len - 2, "_s");
        if (!(p[i] >= 0 && p[i] <= (seconds ? 1e6 : 1e9)))
            return i;
        /* within 1e9, the conversion is defined and exact for a whole one */
        if ((seconds || read_whole(i)) && p[i] != (double)(int64_t)p[i])
            return i;
    }
    /* the switches: 0 none, 1 adaptive, 2 strikes; 0 off, 1 on */
    if (p[WEB_P_BREAKER] > 2)
        return WEB_P_BREAKER;
    if (p[WEB_P_BACKOFF] > 1)
        return WEB_P_BACKOFF;
    if (p[WEB_P_SHEDDER] > 1)
        return WEB_P_SHEDDER;
    if (!(p[WEB_P_SIZE] >= 1 && p[WEB_P_SIZE] <= MAX_SIZE))
        return WEB_P_SIZE;
    if (!(p[WEB_P_QUEUE_MAX] >= 1 && p[WEB_P_QUEUE_MAX] <= MAX_QUEUE))
        return WEB_P_QUEUE_MAX;
    if (!(p[WEB_P_SECONDS] >= 1 && p[WEB_P_SECONDS] <= MAX_SECONDS))
        return WEB_P_SECONDS;
    if (!(p[WEB_P_MIN] <= p[WEB_P_SIZE] &&
          (p[WEB_P_IDLE] == 0 || p[WEB_P_MIN] <= p[WEB_P_IDLE])))
        return WEB_P_MIN;
    if (!(p[WEB_P_RATE_CALM] <= 1e6))
        return WEB_P_RATE_CALM;
    if (!(p[WEB_P_RATE_BURST] <= 1e6))
        return WEB_P_RATE_BURST;
    if (!(p[WEB_P_ACQUIRE_TIMEOUT_MS] > 0))
        return WEB_P_ACQUIRE_TIMEOUT_MS;
    /* shares: at most the whole */
    if (!(p[WEB_P_RETIRE] <= 1))
        return WEB_P_RETIRE;
    if (!(p[WEB_P_PRECONNECT] <= 1))
        return WEB_P_PRECONNECT;
    return -1;
}

int web_engine_new(const double *params, struct web_engine **out)
{
    if (!params || !out)
        return TIDE_EINVAL;
    *out = NULL;
    if (web_params_check(params) >= 0)
        return TIDE_EINVAL;
    struct web_engine *e = calloc(1, sizeof *e);
    if (!e)
        return TIDE_ENOMEM;
    memcpy(e->params, params, sizeof e->params);
    e->seconds = (int64_t)params[WEB_P_SECONDS];
    e->n_conns = (uint32_t)params[WEB_P_SIZE];
    e->n_waiters = (uint32_t)params[WEB_P_QUEUE_MAX];
    e->conns = calloc(e->n_conns, sizeof *e->conns);
    e->waiters = calloc(e->n_waiters, sizeof *e->waiters);
    e->rows = calloc((size_t)e->seconds, sizeof *e->rows);
    int rc = e->conns && e->waiters && e->rows ? open_pool(e) : TIDE_ENOMEM;
    if (rc) {
        web_engine_free(e);
        return rc;
    }
    for (uint32_t i = 0; i < e->n_conns; i++)
        e->conns[i].next = i + 1 < e->n_conns ? i + 1 : NIL;
    for (uint32_t i = 0; i < e->n_waiters; i++)
        e->waiters[i].next = i + 1 < e->n_waiters ? i + 1 : NIL;
    e->free_conn = 0;
    e->free_waiter = 0;
    e->head = e->tail = NIL;
    e->rng = (uint64_t)params[WEB_P_SEED];
    e->noting = params[WEB_P_DEMAND_S] > 0 || params[WEB_P_PRECONNECT] > 0;
    web_events_init(&e->events);
    web_waits_init(&e->waits);
    e->row = (struct web_row){.trail = {web_engine_breaker(e)}, .n_trail = 1};
    schedule(e, 0, WEB_EV_TICK, 0, 0, false);
    *out = e;
    return 0;
}

void web_engine_free(struct web_engine *e)
{
    if (!e)
        return;
    tide_pool_free(e->pool);
    web_events_dispose(&e->events);
    free(e->conns);
    free(e->waiters);
    free(e->rows);
    free(e);
}

int64_t web_engine_now(const struct web_engine *e)
{
    return e->now;
}

bool web_engine_done(const struct web_engine *e)
{
    return e->n_rows >= e->seconds;
}

const struct web_row *web_engine_row(const struct web_engine *e, int64_t i)
{
    return i >= 0 && i < e->n_rows ? &e->rows[i] : NULL;
}

uint64_t web_engine_decisions(const struct web_engine *e)
{
    return e->decisions;
}

void web_engine_live(const struct web_engine *e, int64_t *lent, int64_t *idle,
                     int64_t *waiting)
{
    *lent = e->lent;
    *idle = tide_pool_idle(e->pool);
    *waiting = e->waiting;
}
