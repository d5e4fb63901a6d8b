/* Shedder: an AIMD ceiling on resources in flight, cut by event-loop lag and
 * by loans that overrun their target. The policy is in core.h. */
#include "core_internal.h"

/* The ceiling when nothing limits it: larger than any pool can count. */
#define NO_CEILING 1e18

struct tide_shedder_options tide__shedder_resolve(struct tide_shedder_options o)
{
    if (o.lag_target == 0)
        o.lag_target = TIDE_MS(50);
    if (o.loan_target == 0)
        o.loan_target = TIDE_FOREVER;
    if (o.hold == 0)
        o.hold = TIDE_SEC(1);
    if (o.floor == 0)
        o.floor = 1;
    if (o.decrease == 0.0)
        o.decrease = 0.5;
    return o;
}

int tide__shedder_check(const struct tide_shedder_options *o)
{
    if (o->lag_target < 0 || o->loan_target < 0 || o->hold < 0 || o->floor < 0)
        return TIDE_ESHEDDER;
    if (!(o->decrease > 0.0 && o->decrease < 1.0))
        return TIDE_ESHEDDER;
    return 0;
}

void tide__shedder_init(struct tide_shedder *s,
                        const struct tide_shedder_options *o, int64_t size)
{
    s->lag_target = o->lag_target;
    s->loan_target = o->loan_target;
    s->hold = o->hold;
    s->decrease = o->decrease;
    s->max = size == TIDE_UNLIMITED ? NO_CEILING : (double)size;
    s->floor = (double)o->floor < s->max ? (double)o->floor : s->max;
    tide__shedder_set(s, s->max);
    s->lag = 0;
    s->lag_at = 0;
    s->has_lag = false;
}

void tide__shedder_feed(struct tide_shedder *s, int64_t now, int64_t lag,
                        int64_t in_flight)
{
    s->lag = lag;
    s->lag_at = now;
    s->has_lag = true;
    if (lag > s->lag_target) {
        double busy = (double)in_flight;
        tide__shedder_cut(s, busy < s->ceiling ? busy : s->ceiling);
    }
}
