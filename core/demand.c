/* Connections by demand: the peak of loans in flight over a recent window,
 * the idle resources beyond what it needs retired a share a period, and
 * the next resource opened before a caller waits for it (core.h,
 * "Connections by demand").
 *
 * The pool's take and give paths know nothing of this: a runtime tells
 * the pool each loan (tide_pool_note) and the peak is kept from that,
 * since loans rise only at a loan. Between two notes loans can only have
 * fallen, so a period nobody noted in is given the loans out when the
 * ring next moves: no more than the level it had, and at most a period
 * of the window is read low that way. */
#include "pool_internal.h"

/* The period holding clock value t: t / width, rounded down, so periods
 * line up however the caller's clock is offset. */
static int64_t period_of(int64_t t, int64_t width)
{
    int64_t q = t / width;
    return t % width < 0 ? q - 1 : q;
}

static int64_t *peak_at(struct tide__demand *d, int64_t tick)
{
    int64_t k = tick % TIDE_DEMAND_TICKS;
    return &d->peaks[k < 0 ? k + TIDE_DEMAND_TICKS : k];
}

void tide__demand_init(struct tide__demand *d, const struct tide_limits *l)
{
    *d = (struct tide__demand){0};
    if (l->demand > 0 && l->demand != TIDE_FOREVER) {
        d->width = l->demand / TIDE_DEMAND_TICKS;
        if (d->width < 1)
            d->width = 1;
    }
    d->preconnect = l->preconnect > 0.0;
    d->on = d->width > 0 || d->preconnect;
}

/* Loans out now: tide_pool_loans, without the call. */
static int64_t loans_now(const struct tide_pool *p)
{
    return p->busy_count - p->held_count - p->reserved_count + p->extra_loans;
}

/* Moves the ring to the period holding now, the periods passed over given
 * the loans out now, and notes them in the current one. */
TIDE__NOINLINE static void note_loans(struct tide__demand *d, int64_t now,
                                      int64_t loans)
{
    int64_t t = period_of(now, d->width);
    if (!d->started || (uint64_t)t - (uint64_t)d->tick >= TIDE_DEMAND_TICKS) {
        /* the first note, or a whole window passed unnoted (a clock that
         * went back is read as the period noted last, below) */
        if (!d->started || t > d->tick) {
            for (int k = 0; k < TIDE_DEMAND_TICKS; k++)
                d->peaks[k] = loans;
            d->tick = t;
            d->started = true;
            return;
        }
    } else {
        while (d->tick < t) {
            d->tick++;
            *peak_at(d, d->tick) = loans;
        }
    }
    int64_t *peak = peak_at(d, d->tick);
    if (loans > *peak)
        *peak = loans;
}

static int64_t window_peak(const struct tide__demand *d)
{
    int64_t most = 0;
    for (int k = 0; k < TIDE_DEMAND_TICKS; k++)
        if (d->peaks[k] > most)
            most = d->peaks[k];
    return most;
}

/* Whether `loans` reach the preconnect share of `live` resources'
 * capacity. needed() asks the same expression, so the two agree to the
 * last bit of rounding on where a preconnect stops being due. */
static bool at_share(const struct tide_pool *p, int64_t loans, int64_t live)
{
    double capacity = (double)live * (double)p->limits.streams;
    return (double)loans >= p->limits.preconnect * capacity;
}

TIDE__NOINLINE static bool due(const struct tide_pool *p, int64_t loans)
{
    if (!p->demand.preconnect || p->closed || loans < 1)
        return false;
    int64_t l = live(p);
    return l < p->limits.size && at_share(p, loans, l);
}

/* The resources a peak of loans needs: one per streams loans, rounded up;
 * with preconnect, the fewest at which a preconnect is not due at that
 * peak, so shrink keeps what preconnect would open again. At most size. */
TIDE__NOINLINE static int64_t needed(const struct tide_pool *p, int64_t peak)
{
    if (peak <= 0)
        return 0;
    int64_t k = p->limits.streams;
    int64_t n;
    if (p->demand.preconnect) {
        double x =
            (double)peak / (p->limits.preconnect * (double)p->limits.streams);
        n = x < (double)p->limits.size ? (int64_t)x : p->limits.size;
        while (n < p->limits.size && at_share(p, peak, n))
            n++;
    } else {
        n = peak / k + (peak % k != 0);
    }
    return n < p->limits.size ? n : p->limits.size;
}

bool tide_pool_note(struct tide_pool *p, int64_t now)
{
    if (!p || !p->demand.on)
        return false;
    int64_t loans = loans_now(p);
    if (p->demand.width)
        note_loans(&p->demand, now, loans);
    return due(p, loans);
}

struct tide_taken tide_pool_preconnect(struct tide_pool *p, int64_t now,
                                       double roll)
{
    if (!p || p->closed)
        return answer(TIDE_SHED, NULL, 0, TIDE_GUARD_CLOSED);
    if (!due(p, loans_now(p)))
        return answer(TIDE_WAIT, NULL, 0, TIDE_GUARD_NONE);
    return tide_pool_grow(p, now, roll);
}

/* The idle ones beyond what demand needs and beyond least, with the
 * window brought to now (with demand off, what the loans out now need). */
TIDE__NOINLINE static int64_t excess_now(struct tide_pool *p, int64_t now,
                                         int64_t least, int64_t *peak,
                                         int64_t *need)
{
    *peak = loans_now(p);
    if (p->demand.width) {
        note_loans(&p->demand, now, *peak);
        *peak = window_peak(&p->demand);
    }
    *need = needed(p, *peak);
    int64_t keep = *need > least ? *need : least;
    int64_t excess = live(p) - keep;
    if (excess > p->idle_count)
        excess = p->idle_count;
    return excess > 0 ? excess : 0;
}

/* limits.retire of the excess, rounded up, without libm. */
static int64_t share_of(double share, int64_t excess)
{
    double want = share * (double)excess;
    int64_t q = (int64_t)want;
    return (double)q < want ? q + 1 : q;
}

size_t tide_pool_shrink(struct tide_pool *p, int64_t now, int64_t least,
                        void **out, size_t n)
{
    if (!p || !out || n == 0 || !p->demand.width || p->closed)
        return 0;
    struct tide__demand *d = &p->demand;
    int64_t peak;
    int64_t need;
    int64_t excess = excess_now(p, now, least, &peak, &need);
    if (!d->quota_set || d->quota_tick != d->tick) {
        /* the period's share is set by the excess its first look sees */
        d->quota = share_of(p->limits.retire, excess);
        d->quota_tick = d->tick;
        d->quota_set = true;
    }
    int64_t most = excess < d->quota ? excess : d->quota;
    if ((uint64_t)most > n)
        most = (int64_t)n;
    size_t k = 0;
    /* oldest first: the least recently used, as keep would retire them */
    for (uint32_t place = p->idle_bottom;
         place < p->idle_top && (int64_t)k < most; place++) {
        if (*stack_at(p, place) != NIL)
            out[k++] = idle_hand_out(p, place);
    }
    if (k > 0)
        tide__pool_idle_trim(p);
    d->quota -= (int64_t)k;
    return k;
}

void tide_pool_demand(struct tide_pool *p, int64_t now, struct tide_demand *out)
{
    if (!out)
        return;
    *out = (struct tide_demand){0};
    if (p) {
        out->excess = excess_now(p, now, 0, &out->peak, &out->needed);
        out->period = p->demand.width;
    }
}
