/* Limits: the seed's presets and their validation. */
#include "core_internal.h"

struct tide_limits tide_limits_resolve(struct tide_limits l)
{
    if (l.size == 0)
        l.size = 10;
    /* Idle follows size, so a pool that grew under load keeps what it made
     * rather than closing it on release and opening it again on the next
     * burst: with a fixed 10, a pool of 16 under 50 callers churned through
     * a thousand connections where 16 would do. */
    if (l.idle == 0)
        l.idle = l.size;
    if (l.keep == 0)
        l.keep = TIDE_MIN(30);
    if (l.life == 0)
        l.life = TIDE_FOREVER;
    return l;
}

int tide_limits_check(const struct tide_limits *l)
{
    if (!l)
        return TIDE_EINVAL;
    if (l->size < 0 || l->idle < 0 || l->keep < 0 || l->life < 0)
        return TIDE_ELIMITS;
    if (!(l->spread >= 0.0 && l->spread <= 1.0))
        return TIDE_ELIMITS;
    return 0;
}
