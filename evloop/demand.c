/* Connections by demand, the adapter's part (the decisions are the core's:
 * core.h, "Connections by demand"). Every loan is noted as it starts
 * (loans.c), so the core keeps the peak of loans in flight exactly; a
 * loan that makes a preconnect due schedules the pump, which opens it
 * (tide__preconnect); and a timer once a period hands the idle ones beyond
 * recent demand to destroy, never below min (tide__shrink). With both
 * knobs off (the preset) none of it runs: no note, no step in the pump,
 * no timer. */
#include "evloop_internal.h"

void tide__demand_setup(struct tide_evpool *p)
{
    struct tide_limits l = tide_pool_limits(p->core);
    struct tide_demand d;
    tide_pool_demand(p->core, p->now, &d);
    p->preconnecting = l.preconnect > 0.0;
    p->noting = p->preconnecting || d.period > 0;
    p->shrink.period = d.period > 0 ? d.period : TIDE_FOREVER;
}

/* Opens what the core says is due, each as a make for nobody in
 * particular (as the top-up's): made, it goes to the oldest waiter if one
 * came meanwhile, else idle; failed, it is a failed make like any other
 * (backoff holds makes, the breaker counts it). The core stops answering
 * MAKE at its share of the live capacity, within size and the ward. */
void tide__preconnect(struct tide_evpool *p)
{
    while (!p->closing) {
        struct tide_taken t =
            tide_pool_preconnect(p->core, p->now, tide__evpool_roll(p));
        if (t.answer != TIDE_MAKE)
            return; /* none due, or held: the next loan asks again */
        p->counters.preconnects++;
        tide__make_start(p, false);
        if (p->free_pending)
            return; /* the factory freed the pool from inside make */
    }
}

/* The shrink timer's work: idle ones beyond what the window's peak needs,
 * a share a period, oldest first, never below min. */
void tide__shrink(struct tide_evpool *p)
{
    void *out[64];
    size_t n;
    do {
        n = tide_pool_shrink(p->core, p->now, p->min, out, 64);
        for (size_t k = 0; k < n; k++) {
            uint32_t i = tide__conn_of_key(out[k]);
            void *resource = p->conns[i].resource;
            tide__conn_leave_idle(p, i, CONN_LEAVING);
            tide__conn_remove(p, i);
            p->counters.demand_retired++;
            tide__resource_destroy(p, resource);
        }
    } while (n == 64);
}
