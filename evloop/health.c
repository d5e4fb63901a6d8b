/* Health checks of idle resources: each round takes every idle resource
 * aside for the factory's check (aside.c); a failed one is destroyed,
 * reported to the breaker, and replaced when below the minimum. */
#include "evloop_internal.h"

void tide__health_round(struct tide_evpool *p)
{
    /* A queued caller comes before a check: an idle resource while callers
     * wait is one the pump is about to hand over (back from a check or a
     * reset in this loop pass), and taking it into a check would have its
     * caller wait a round for nothing. As many idle ones as there are
     * callers are left to the pump; which ones does not matter, as the
     * core lends from whatever is still idle. */
    int64_t owed = p->queued.count;
    /* By index: a check answered at once can destroy a record, never move
     * the array (nothing is added synchronously). */
    for (uint32_t i = 0; i < p->conn_capacity && !p->closing; i++) {
        if (p->conns[i].state != CONN_IDLE)
            continue;
        if (owed > 0)
            owed--;
        else
            tide__aside_start(p, i, ASIDE_CHECK);
    }
}
