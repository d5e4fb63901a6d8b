/* pick: power of two choices over pools to one service. */
#include "core_internal.h"

/* Index in [0, n) from a roll. */
static size_t draw(double roll, size_t n)
{
    size_t i = (size_t)(tide__roll(roll) * (double)n);
    return i < n ? i : n - 1;
}

int tide_pick(struct tide_pool *const *pools, size_t n, int64_t now,
              double first, double second)
{
    if (!pools || n == 0 || n > (size_t)INT32_MAX)
        return -1;
    size_t a = draw(first, n);
    if (n == 1)
        return 0;
    /* The second is drawn from the other n - 1, so the two are distinct. */
    size_t b = draw(second, n - 1);
    if (b >= a)
        b++;
    double ra = tide_pool_refusal(pools[a], now);
    double rb = tide_pool_refusal(pools[b], now);
    if (ra != rb)
        return (int)(ra < rb ? a : b);
    return (int)(tide_pool_busy(pools[b]) < tide_pool_busy(pools[a]) ? b : a);
}
