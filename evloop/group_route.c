/* What the group's pick weighs for each upstream, on the group's clock:
 * how long its loans last (a peak-EWMA, in the form <tidepool/group.h>
 * gives and says why), its slow-start weight, and its last minute (loans
 * lent, loans timed) for the stats. Loans are timed from their answer to
 * their end: the group sees both, whatever the protocol. */
#include <stdlib.h>
#include <string.h>

#include "group_internal.h"

/* A slow start begins at this share of the pick. */
#define RAMP_FLOOR 0.1
/* A spell held off shorter than this is a blip (one failed make while
 * busy), not an outage: no slow start after it. A spell runs from the
 * first look that found the upstream held off to the last, until it
 * lends again. */
#define OUTAGE_MIN TIDE_SEC(1)
/* The last minute of the stats. */
#define MINUTE TIDE_SEC(60)

/* ---- rings ---- */

void tide__ring_init(struct ring *r, int64_t span)
{
    *r = (struct ring){0};
    r->step = span / RING_SLOTS > 0 ? span / RING_SLOTS : 1;
}

/* Moves the newest slot on to now's step, emptying the slots passed. */
static void advance(struct ring *r, int64_t now)
{
    int64_t idx = now / r->step;
    if (!r->started) {
        r->started = true;
        r->newest = idx;
        return;
    }
    if (idx <= r->newest)
        return;
    int64_t gap = idx - r->newest;
    for (int64_t k = 1; k <= gap && k <= RING_SLOTS; k++) {
        int64_t s = (r->newest + k) % RING_SLOTS;
        if (s < 0)
            s += RING_SLOTS;
        r->a[s] = 0;
        r->b[s] = 0;
    }
    r->newest = idx;
}

static int64_t slot_of(const struct ring *r)
{
    int64_t s = r->newest % RING_SLOTS;
    return s < 0 ? s + RING_SLOTS : s;
}

void tide__ring_add(struct ring *r, int64_t now, uint64_t a, uint64_t b)
{
    advance(r, now);
    int64_t s = slot_of(r);
    r->a[s] += a;
    r->b[s] += b;
}

void tide__ring_sum(struct ring *r, int64_t now, uint64_t *a, uint64_t *b)
{
    advance(r, now);
    uint64_t sa = 0, sb = 0;
    for (int k = 0; k < RING_SLOTS; k++) {
        sa += r->a[k];
        sb += r->b[k];
    }
    if (a)
        *a = sa;
    if (b)
        *b = sb;
}

/* ---- latency ---- */

void tide__route_init(struct tide_group_upstream *u, int64_t now)
{
    u->route = (struct route){.updated = now};
    tide__ring_init(&u->route.lent, MINUTE);
    tide__ring_init(&u->route.ended, MINUTE);
}

void tide__route_dispose(struct tide_group_upstream *u)
{
    free(u->route.loans);
    u->route.loans = NULL;
}

/* exp(-x) for x >= 0, without libm (the library links none): x cut into
 * n steps of at most 1/2, each step's series to its ninth term (error
 * below 1e-10), raised to the n-th power by squaring. */
static double exp_neg(double x)
{
    if (!(x > 0))
        return 1.0;
    if (x > 700)
        return 0.0;
    unsigned n = (unsigned)(x * 2) + 1;
    double y = x / n, term = 1, step = 1;
    for (int k = 1; k <= 9; k++) {
        term *= -y / k;
        step += term;
    }
    double r = 1;
    for (double b = step; n; n >>= 1, b *= b)
        if (n & 1)
            r *= b;
    return r;
}

/* exp(-dt / decay), 1 for a clock that did not move (or went back). */
static double fade(const struct tide_group *g, int64_t dt)
{
    return dt > 0 ? exp_neg((double)dt / (double)g->decay) : 1.0;
}

double tide__route_latency(const struct tide_group_upstream *u, int64_t now)
{
    const struct route *r = &u->route;
    if (!r->timed)
        return 0;
    return r->latency * fade(u->group, now - r->updated);
}

/* One loan of d ns ended at now: the peak is taken at once, a shorter one
 * pulled in by the time since the last. */
static void sample(struct tide_group_upstream *u, int64_t now, int64_t d)
{
    struct route *r = &u->route;
    double x = (double)(d > 0 ? d : 0);
    double est = tide__route_latency(u, now);
    if (!r->timed || x > est) {
        r->latency = x;
    } else {
        double w = fade(u->group, now - r->updated);
        r->latency = est * w + x * (1.0 - w);
    }
    r->timed = true;
    r->updated = now;
    tide__ring_add(&r->ended, now, 1, (uint64_t)(d > 0 ? d : 0));
}

/* ---- slow start ---- */

double tide__route_weight(struct tide_group_upstream *u, int64_t now)
{
    struct route *r = &u->route;
    if (!r->ramping)
        return 1.0;
    int64_t in = now - r->ramp_from;
    if (in >= u->group->slow_start) {
        r->ramping = false;
        return 1.0;
    }
    double f = in > 0 ? (double)in / (double)u->group->slow_start : 0.0;
    return RAMP_FLOOR + (1.0 - RAMP_FLOOR) * f;
}

void tide__route_ramp(struct tide_group_upstream *u, int64_t now, double mean)
{
    struct route *r = &u->route;
    r->ramping = true;
    r->ramp_from = now;
    /* cold: neither its old average (from before the outage, or none)
     * nor the decay of an unused one flatters it */
    if (mean > 0) {
        r->latency = mean;
        r->timed = true;
    } else {
        r->timed = false;
    }
    r->updated = now;
}

/* Whether the spell held off u is in was an outage, not a blip. */
static bool outage(const struct route *r)
{
    return r->was_open || r->held_last - r->held_from >= OUTAGE_MIN;
}

/* The slow start after an outage, with its latency set to the mean of the
 * others: its own average is from before the outage (or from the loans
 * that failed into it), and, decayed while it was out, would flatter it
 * (a pick sends it every caller until its first loan ends) or, from a
 * slow spell, keep it out long after it is back. */
static void ramp_after_outage(struct tide_group_upstream *u, int64_t now)
{
    tide__route_ramp(u, now, tide__group_mean_latency(u->group, now, u));
    u->route.ramped = true;
}

void tide__route_held(struct tide_group_upstream *u, int64_t now, bool held,
                      bool open)
{
    struct route *r = &u->route;
    r->held = held;
    if (!held) {
        /* back: judged cold from this pick on, not from its first loan,
         * which a make (a connect, a handshake) may keep a while */
        if (r->spell && !r->ramped && outage(r))
            ramp_after_outage(u, now);
        return;
    }
    /* a spell lasts until the upstream lends again, across the moments
     * between the holds of a backoff (a dead origin is held, let through
     * to fail a make, held again: one outage, not many blips); a slow
     * start begun in such a moment begins again when it is next let
     * through */
    if (!r->spell) {
        r->spell = true;
        r->held_from = now;
        r->was_open = false;
    }
    r->held_last = now;
    r->was_open |= open;
    r->ramped = false;
}

/* ---- loans ---- */

void tide__route_lent(struct tide_group_upstream *u, void *resource,
                      int64_t now)
{
    struct route *r = &u->route;
    if (r->spell) {
        /* back from a spell held off: a slow start if it was an outage
         * and no look since began one */
        if (!r->ramped && outage(r))
            ramp_after_outage(u, now);
        r->spell = false;
        r->ramped = false;
    }
    tide__ring_add(&r->lent, now, 1, 0);
    tide__ring_add(&u->group->lent, now, 1, 0);
    if (r->n_loans == r->loans_capacity && r->loans_head > 0) {
        /* the room the oldest ones left at the front, used again */
        r->n_loans -= r->loans_head;
        memmove(r->loans, r->loans + r->loans_head,
                r->n_loans * sizeof *r->loans);
        r->loans_head = 0;
    }
    if (r->n_loans == r->loans_capacity) {
        size_t cap = r->loans_capacity ? 2 * r->loans_capacity : 8;
        struct loan_stamp *l = realloc(r->loans, cap * sizeof *l);
        if (!l)
            return; /* that loan goes untimed: no harm beyond that */
        r->loans = l;
        r->loans_capacity = cap;
    }
    r->loans[r->n_loans++] = (struct loan_stamp){resource, now};
}

void tide__route_ended(struct tide_group_upstream *u, void *resource,
                       int64_t now, bool timed)
{
    struct route *r = &u->route;
    /* the oldest loan of it: a resource lent to several at once answers
     * them in order (Redis), or no order the group can know (HTTP/2).
     * Loans are kept in the order they were lent, so that is the first of
     * it: the front one when one connection carries them all (HTTP/2,
     * Redis), found at once instead of after a look at every loan out
     * (a resource's 200 streams cost 200 compares an end) */
    size_t found = r->loans_head;
    while (found < r->n_loans && r->loans[found].resource != resource)
        found++;
    if (found == r->n_loans)
        return;
    int64_t at = r->loans[found].at;
    if (found == r->loans_head) {
        r->loans_head++;
    } else {
        /* the ones lent before it move up by one, or those after it down,
         * whichever are fewer, so the order stays */
        if (found - r->loans_head < r->n_loans - found - 1) {
            memmove(r->loans + r->loans_head + 1, r->loans + r->loans_head,
                    (found - r->loans_head) * sizeof *r->loans);
            r->loans_head++;
        } else {
            memmove(r->loans + found, r->loans + found + 1,
                    (r->n_loans - found - 1) * sizeof *r->loans);
            r->n_loans--;
        }
    }
    if (r->loans_head == r->n_loans)
        r->loans_head = r->n_loans = 0;
    if (timed)
        sample(u, now, now - at);
}
