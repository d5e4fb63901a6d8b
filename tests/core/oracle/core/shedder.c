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

/* See steady_after in core_internal.h. A lag sample at lag_at holds for
 * the clock values lag_at .. lag_at + hold - 1 (and any before lag_at, a
 * clock gone back). */
static void find_steady(struct tide_shedder *s)
{
    if (s->ceiling < s->max || s->loan_target != TIDE_FOREVER)
        s->steady_after = INT64_MAX;
    else if (s->has_lag && s->lag > s->lag_target && s->hold > 0)
        s->steady_after = tide__later(s->lag_at, s->hold - 1);
    else
        s->steady_after = INT64_MIN;
}

/* Sets the ceiling; it is at least the floor (>= 1) and at most the size. */
static void set_ceiling(struct tide_shedder *s, double ceiling)
{
    s->ceiling = ceiling;
    s->room = (int64_t)ceiling;
    find_steady(s);
}

/* Cuts the ceiling from `from` by the decrease, not below the floor. */
static void cut(struct tide_shedder *s, double from)
{
    double c = from * s->decrease;
    set_ceiling(s, c > s->floor ? c : s->floor);
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
    s->lag = 0;
    s->lag_at = 0;
    s->has_lag = false;
    set_ceiling(s, s->max);
}

void tide__shedder_settle_from(struct tide_shedder *s, int64_t since,
                               int64_t now)
{
    bool lagging = s->has_lag && s->lag > s->lag_target &&
                   tide__elapsed(s->lag_at, now) < s->hold;
    bool overran = s->loan_target != TIDE_FOREVER &&
                   tide__elapsed(since, now) > s->loan_target;
    if (lagging || overran)
        cut(s, s->ceiling);
    else if (s->ceiling < s->max) /* at the size it stays there */
        set_ceiling(s, s->ceiling + 1.0 < s->max ? s->ceiling + 1.0 : s->max);
}

void tide__shedder_feed(struct tide_shedder *s, int64_t now, int64_t lag,
                        int64_t in_flight)
{
    s->lag = lag;
    s->lag_at = now;
    s->has_lag = true;
    if (lag > s->lag_target) {
        double busy = (double)in_flight;
        cut(s, busy < s->ceiling ? busy : s->ceiling);
    } else {
        find_steady(s);
    }
}
