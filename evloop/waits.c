/* The acquire-wait distribution: a log-linear histogram (8 steps per power
 * of two, so a quantile is within 12.5% of the truth) in fixed memory. */
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

void tide__waits_add(struct waits *w, int64_t ns)
{
    unsigned b = bucket_of(ns);
    if (b >= WAITS_BUCKETS)
        b = WAITS_BUCKETS - 1;
    w->buckets[b]++;
    w->count++;
    if (ns > w->max)
        w->max = ns;
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
