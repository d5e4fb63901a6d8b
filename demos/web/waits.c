#include "waits.h"

#include <string.h>

void web_waits_init(struct web_waits *w)
{
    memset(w, 0, sizeof *w);
}

/* Moves the ring on to `second`, clearing the slots it passes. */
static void advance(struct web_waits *w, int64_t second)
{
    if (second <= w->second)
        return;
    int64_t steps = second - w->second;
    if (steps > WEB_WAITS_SECONDS)
        steps = WEB_WAITS_SECONDS;
    for (int64_t s = second - steps + 1; s <= second; s++) {
        int slot = (int)(s % WEB_WAITS_SECONDS);
        memset(w->bins[slot], 0, sizeof w->bins[slot]);
        w->count[slot] = 0;
    }
    w->second = second;
}

/* Waits are binned in microseconds: exact below 16, then eight bins per
 * power of two. */
static int bin_of(int64_t ns)
{
    uint64_t us = ns > 0 ? (uint64_t)ns / 1000 : 0;
    if (us < 16)
        return (int)us;
    int e = 63 - __builtin_clzll(us);
    int bin = 16 + (e - 4) * 8 + (int)((us >> (e - 3)) & 7);
    return bin < WEB_WAITS_BINS ? bin : WEB_WAITS_BINS - 1;
}

/* The largest wait (ns) a bin holds. */
static int64_t bin_top(int bin)
{
    if (bin < 16)
        return (int64_t)bin * 1000 + 999;
    int e = (bin - 16) / 8 + 4;
    uint64_t low = ((uint64_t)(8 + (bin - 16) % 8)) << (e - 3);
    return (int64_t)((low + ((uint64_t)1 << (e - 3))) * 1000 - 1);
}

void web_waits_add(struct web_waits *w, int64_t second, int64_t ns)
{
    advance(w, second);
    int slot = (int)(second % WEB_WAITS_SECONDS);
    w->bins[slot][bin_of(ns)]++;
    w->count[slot]++;
}

int64_t web_waits_quantile(struct web_waits *w, int64_t second, int q)
{
    advance(w, second);
    uint64_t n = 0;
    for (int s = 0; s < WEB_WAITS_SECONDS; s++)
        n += w->count[s];
    if (n == 0)
        return 0;
    uint64_t rank = (n * (uint64_t)q + 99) / 100; /* ceil(n q / 100) */
    uint64_t seen = 0;
    for (int b = 0; b < WEB_WAITS_BINS; b++) {
        for (int s = 0; s < WEB_WAITS_SECONDS; s++)
            seen += w->bins[s][b];
        if (seen >= rank)
            return bin_top(b);
    }
    return bin_top(WEB_WAITS_BINS - 1);
}
