/* Sliding window: at most `quota` events in any `window`-long stretch,
 * counted exactly from the stamps of the events themselves. */
#include <stdlib.h>

#include "core_internal.h"

struct tide_window {
    int64_t quota;
    int64_t span;
    int64_t count;    /* stamps held */
    int64_t oldest;   /* index of the oldest stamp in the ring */
    int64_t stamps[]; /* quota of them, a ring in time order */
};

int tide_window_new(int64_t quota, int64_t window, struct tide_window **out)
{
    if (!out)
        return TIDE_EINVAL;
    *out = NULL;
    if (quota < 1 || window <= 0 || quota > (INT64_C(1) << 32))
        return TIDE_EINVAL;
    struct tide_window *w =
        malloc(sizeof *w + (size_t)quota * sizeof w->stamps[0]);
    if (!w)
        return TIDE_ENOMEM;
    w->quota = quota;
    w->span = window;
    w->count = 0;
    w->oldest = 0;
    *out = w;
    return 0;
}

void tide_window_free(struct tide_window *w)
{
    free(w);
}

/* Forgets the stamps that have left the window. */
static void expire(struct tide_window *w, int64_t now)
{
    while (w->count > 0 &&
           tide__elapsed(w->stamps[w->oldest], now) >= w->span) {
        w->oldest = (w->oldest + 1) % w->quota;
        w->count--;
    }
}

bool tide_window_take(struct tide_window *w, int64_t now)
{
    if (!w)
        return false;
    expire(w, now);
    if (w->count >= w->quota)
        return false;
    w->stamps[(w->oldest + w->count) % w->quota] = now;
    w->count++;
    return true;
}

int64_t tide_window_left(struct tide_window *w, int64_t now)
{
    if (!w)
        return 0;
    expire(w, now);
    return w->quota - w->count;
}

int64_t tide_window_next(struct tide_window *w, int64_t now)
{
    if (!w)
        return 0;
    expire(w, now);
    if (w->count < w->quota)
        return 0;
    return w->span - tide__elapsed(w->stamps[w->oldest], now);
}
