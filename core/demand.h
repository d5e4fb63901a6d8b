/* Demand's books, embedded in the pool (pool_internal.h): the peak of
 * loans in flight per period over a window, and the retirements left in
 * the current period. demand.c reads and writes them; pool.c only sets
 * them up at tide_pool_new, so the take and give paths carry none of it. */
#ifndef TIDEPOOL_CORE_DEMAND_H
#define TIDEPOOL_CORE_DEMAND_H

#include <stdbool.h>
#include <stdint.h>

#include <tidepool/core.h>

struct tide__demand {
    int64_t width;   /* ns a period; 0: demand off */
    int64_t tick;    /* the newest period noted (clock / width, floored) */
    bool started;    /* a period has been noted */
    bool preconnect; /* limits.preconnect > 0 */
    bool on;         /* either knob: tide_pool_note has work */
    /* the most loans noted in each of the last periods, by period number
     * modulo TIDE_DEMAND_TICKS */
    int64_t peaks[TIDE_DEMAND_TICKS];
    int64_t quota; /* retirements left in period quota_tick */
    int64_t quota_tick;
    bool quota_set;
};

/* Sets d up for limits l (resolved). */
void tide__demand_init(struct tide__demand *d, const struct tide_limits *l);

#endif
