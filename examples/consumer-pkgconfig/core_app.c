/* A program built on the core alone, through dependency('tidepool-core'):
 * no libevent, no OpenSSL. Limits in static storage, one make and one
 * reuse. */
#include <stdio.h>

#include <tidepool/core.h>

static const struct tide_limits limits = TIDE_LIMITS_INIT(.size = 4);

int main(void)
{
    struct tide_pool *pool;
    if (tide_pool_new(&limits, NULL, 0, &pool) != 0)
        return 1;
    static int conn; /* a pretend connection */
    int ok = tide_pool_take(pool, 0, 0.5).answer == TIDE_MAKE &&
             tide_pool_made(pool, &conn, 0) == 0 &&
             tide_pool_give(pool, &conn, 1) == 1 &&
             tide_pool_take(pool, 2, 0.5).item == &conn &&
             tide_pool_limits(pool).idle == 4;
    tide_pool_free(pool);
    printf("tidepool-core %s: %s\n", tide_version(),
           ok ? "made once, reused" : "NOT as expected");
    return ok ? 0 : 1;
}
