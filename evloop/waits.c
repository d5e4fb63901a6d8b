/* The acquire-wait distribution: a log-linear histogram (8 steps per power
 * of two, so a quantile is within 12.5% of the truth) in fixed memory. */
#include <string.h>

#include "evloop_internal.h"

static unsigned bucket_of(int64_t ns)
{
    uint64_t v = ns > 0 ? (uint64_t)ns : 0;
    if (v < 8)
        return (unsigned)v;
    unsigned msb = 63 - (unsigned)__builtin_clzll(v);
    unsigned sub = (unsigned)(v >> (msb - 3)) & 7;
    return (msb - 2) * 8 + sub;
}

/* The largest value that falls into bucket b. */
static int64_t bucket_top(unsigned b)
{
    if (b < 8)
        return (int64_t)b;
    unsigned msb = b / 8 + 2;
    uint64_t base = (UINT64_C(8) | (b & 7)) << (msb - 3);
    uint64_t top = base + (UINT64_C(1) << (msb - 3)) - 1;
    return top > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)top;
}

static void count_in(struct waits *w, unsigned b, int64_t ns)
{
    w->buckets[b]++;
    w->count++;
    if (ns > w->max)
        w->max = ns;
}

static unsigned clamped_bucket(int64_t ns)
{
    unsigned b = bucket_of(ns);
    return b < WAITS_BUCKETS ? b : WAITS_BUCKETS - 1;
}

void tide__waits_add(struct waits *w, int64_t ns)
{
    count_in(w, clamped_bucket(ns), ns);
}

int64_t tide__waits_quantile(const struct waits *w, double q)
{
    if (w->count == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)w->count);
    if (rank >= w->count)
        rank = w->count - 1;
    uint64_t seen = 0;
    for (unsigned b = 0; b < WAITS_BUCKETS; b++) {
        seen += w->buckets[b];
        if (seen > rank) {
            int64_t top = bucket_top(b);
            return top < w->max ? top : w->max;
        }
    }
    return w->max;
}

/* The slice a wait ending at now counts in, the ring moved on to now's
 * slice first if now is past the newest. */
TIDE__NOINLINE static struct waits *slice_at(struct recent_waits *r,
                                             int64_t now)
{
    int64_t slice = now / RECENT_SLICE;
    if (!r->started) {
        r->started = true;
        r->newest = slice;
    }
    /* moved on: clear the slices that fell out of the ring since */
    for (int64_t k = r->newest + 1;
         k <= slice && k <= r->newest + RECENT_SLICES; k++) {
        struct waits *w = &r->slices[k % RECENT_SLICES];
        memset(w, 0, sizeof *w);
    }
    if (slice > r->newest)
        r->newest = slice;
    r->newest_starts = r->newest * RECENT_SLICE;
    /* a clock that went back counts into the newest slice */
    return &r->slices[r->newest % RECENT_SLICES];
}

/* Most waits end in the slice the last one did: no division for them. */
static struct waits *slice_of(struct recent_waits *r, int64_t now)
{
    if (r->started &&
        (uint64_t)now - (uint64_t)r->newest_starts < (uint64_t)RECENT_SLICE)
        return &r->slices[(uint64_t)r->newest % RECENT_SLICES];
    return slice_at(r, now);
}

void tide__waits_zero(struct waits *all, struct recent_waits *r, int64_t now,
                      uint64_t n)
{
    struct waits *slice = slice_of(r, now);
    all->buckets[0] += n;
    all->count += n;
    slice->buckets[0] += n;
    slice->count += n;
}

void tide__wait_ended(struct waits *all, struct recent_waits *r, int64_t now,
                      int64_t ns)
{
    unsigned b = clamped_bucket(ns);
    count_in(all, b, ns);
    count_in(slice_of(r, now), b, ns);
}

void tide__recent_merge(struct recent_waits *r, int64_t now, struct waits *out)
{
    memset(out, 0, sizeof *out);
    if (!r->started)
        return;
    int64_t slice = now / RECENT_SLICE;
    for (int64_t k = r->newest; k > r->newest - RECENT_SLICES && k >= 0; k--) {
        if (k <= slice - RECENT_SLICES)
            break; /* older than the window: nothing here counts */
        const struct waits *w = &r->slices[k % RECENT_SLICES];
        for (unsigned b = 0; b < WAITS_BUCKETS; b++)
            out->buckets[b] += w->buckets[b];
        out->count += w->count;
        if (w->max > out->max)
            out->max = w->max;
    }
}
