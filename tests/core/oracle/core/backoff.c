/* Backoff and jitter: when to try again, and how long to wait first. */
#include "core_internal.h"

struct tide_backoff tide_backoff_resolve(struct tide_backoff b)
{
    if (b.base == 0)
        b.base = TIDE_MS(100);
    if (b.factor == 0.0)
        b.factor = 2.0;
    if (b.cap == 0)
        b.cap = TIDE_SEC(1);
    if (b.attempts == 0)
        b.attempts = 3;
    if (b.jitter == TIDE_JITTER_SPREAD && b.spread == 0.0)
        b.spread = 0.2;
    return b;
}

int tide_backoff_check(const struct tide_backoff *b)
{
    if (!b)
        return TIDE_EINVAL;
    struct tide_backoff r = tide_backoff_resolve(*b);
    if (r.base < 0 || r.cap < 0 || r.attempts < 0 || !(r.factor >= 1.0))
        return TIDE_EBACKOFF;
    if (r.jitter < TIDE_JITTER_SPREAD || r.jitter > TIDE_JITTER_DECORRELATED)
        return TIDE_EBACKOFF;
    if (!(r.spread >= 0.0 && r.spread <= 1.0))
        return TIDE_EBACKOFF;
    return 0;
}

/* The backoff `in` asks for; NULL is the preset, as a zeroed struct is. */
static struct tide_backoff resolved(const struct tide_backoff *in)
{
    return tide_backoff_resolve(in ? *in : (struct tide_backoff){0});
}

/* A non-negative double of nanoseconds as int64_t, saturating. */
static int64_t to_span(double ns)
{
    if (!(ns > 0.0))
        return 0;
    if (ns >= 0x1p63) /* past INT64_MAX: the cast would be undefined */
        return TIDE_FOREVER;
    return (int64_t)ns;
}

int64_t tide_backoff_ceiling(const struct tide_backoff *in, int retry)
{
    struct tide_backoff b = resolved(in);
    /* factor^retry by squaring: O(log retry), and a product that overflows
     * to infinity still compares correctly against the cap. */
    double grow = 1.0;
    double f = b.factor;
    for (unsigned e = retry > 0 ? (unsigned)retry : 0; e; e >>= 1) {
        if (e & 1)
            grow *= f;
        f *= f;
    }
    double d = (double)b.base * grow;
    return d < (double)b.cap ? to_span(d) : b.cap;
}

int64_t tide_backoff_delay(const struct tide_backoff *in, int retry,
                           double roll, int64_t previous)
{
    struct tide_backoff b = resolved(in);
    double c = (double)tide_backoff_ceiling(&b, retry);
    double u = tide__roll(roll);
    double f = b.spread < 0.0 ? 0.0 : b.spread > 1.0 ? 1.0 : b.spread;
    switch (b.jitter) {
    case TIDE_JITTER_RIGID:
        return to_span(c);
    case TIDE_JITTER_FULL:
        return to_span(u * c);
    case TIDE_JITTER_EQUAL:
        return to_span(c / 2.0 + u * c / 2.0);
    case TIDE_JITTER_DECORRELATED: {
        double lo = (double)b.base;
        double hi = 3.0 * (double)(previous > b.base ? previous : b.base);
        double d = lo + u * (hi - lo);
        return to_span(d < (double)b.cap ? d : (double)b.cap);
    }
    case TIDE_JITTER_SPREAD:
    default:
        return to_span(c * (1.0 - f + 2.0 * f * u));
    }
}

bool tide_backoff_more(const struct tide_backoff *in, int made)
{
    struct tide_backoff b = resolved(in);
    return made < b.attempts;
}

size_t tide_backoff_schedule(const struct tide_backoff *in, const double *rolls,
                             int64_t *out, size_t n)
{
    struct tide_backoff b = resolved(in);
    if (!rolls || !out)
        return 0;
    size_t retries = b.attempts > 1 ? (size_t)(b.attempts - 1) : 0;
    size_t count = n < retries ? n : retries;
    int64_t previous = 0;
    for (size_t i = 0; i < count; i++) {
        previous = tide_backoff_delay(&b, (int)i, rolls[i], previous);
        out[i] = previous;
    }
    return count;
}
