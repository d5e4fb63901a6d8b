/* Health checks of idle resources: each round takes every idle resource
 * aside for the factory's check (aside.c); a failed one is destroyed,
 * reported to the breaker, and replaced when below the minimum. */
#include "evloop_internal.h"

void tide__health_round(struct tide_evpool *p)
{
    /* By index: a check answered at once can destroy a record, never move
     * the array (nothing is added synchronously). */
    for (uint32_t i = 0; i < p->conn_capacity && !p->closing; i++)
        if (p->conns[i].state == CONN_IDLE)
            tide__aside_start(p, i, ASIDE_CHECK);
}
