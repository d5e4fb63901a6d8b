/* Breaker: ACTIVE / INACTIVE / RECOVERING, with a pluggable policy. The
 * built-in policies live here too; a user strategy replaces them whole. */
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

static void quiet(struct tide_breaker *b);

struct tide_breaker_options tide__breaker_resolve(struct tide_breaker_options o)
{
    if (o.k == 0.0)
        o.k = 2.0;
    if (o.window == 0)
        o.window = TIDE_MIN(2);
    if (o.strikes == 0)
        o.strikes = 5;
    if (o.cooldown == 0)
        o.cooldown = TIDE_SEC(5);
    if (o.probes == 0)
        o.probes = 1;
    return o;
}

int tide__breaker_check(const struct tide_breaker_options *o)
{
    if (o->policy < TIDE_BREAKER_ADAPTIVE || o->policy > TIDE_BREAKER_CUSTOM)
        return TIDE_EBREAKER;
    if (!(o->k >= 1.0) || o->window < 0 || o->strikes < 0 || o->cooldown < 0 ||
        o->probes < 0)
        return TIDE_EBREAKER;
    if (o->policy == TIDE_BREAKER_CUSTOM) {
        const struct tide_breaker_strategy *s = o->strategy;
        if (!s || !s->report_success || !s->report_failure ||
            !s->should_recover)
            return TIDE_EBREAKER;
    }
    return 0;
}

void tide__breaker_init(struct tide_breaker *b,
                        const struct tide_breaker_options *o)
{
    memset(b, 0, sizeof *b);
    b->head_from = INT64_MAX; /* no history yet: no tick is current */
    b->head_until = INT64_MIN;
    b->state = TIDE_BREAKER_ACTIVE;
    b->policy =
        o->policy == TIDE_BREAKER_CUSTOM ? TIDE_BREAKER_ADAPTIVE : o->policy;
    if (o->policy == TIDE_BREAKER_CUSTOM) {
        b->strategy = o->strategy;
        b->strategy_arg = o->strategy_arg;
    }
    b->k = o->k;
    b->width = o->window / TIDE__RING > 0 ? o->window / TIDE__RING : 1;
    b->strikes = o->strikes;
    b->cooldown = o->cooldown;
    b->probes = o->probes;
    quiet(b);
}

int tide_breaker_new(const struct tide_breaker_options *o,
                     struct tide_breaker **out)
{
    if (!out)
        return TIDE_EINVAL;
    *out = NULL;
    struct tide_breaker_options r =
        tide__breaker_resolve(o ? *o : (struct tide_breaker_options){0});
    int rc = tide__breaker_check(&r);
    if (rc)
        return rc;
    struct tide_breaker *b = malloc(sizeof *b);
    if (!b)
        return TIDE_ENOMEM;
    tide__breaker_init(b, &r);
    *out = b;
    return 0;
}

void tide_breaker_free(struct tide_breaker *b)
{
    free(b);
}

enum tide_breaker_state tide_breaker_state(const struct tide_breaker *b)
{
    return b ? b->state : TIDE_BREAKER_ACTIVE;
}

void tide__breaker_listen(struct tide_breaker *b, void (*changed)(void *arg),
                          void *arg)
{
    b->changed = changed;
    b->changed_arg = arg;
    b->told = b->state;
}

/* ---- adaptive history: TIDE__RING buckets sliding with time ---- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static void clear_history(struct tide_breaker *b)
{
    memset(b->accepts, 0, sizeof b->accepts);
    memset(b->fails, 0, sizeof b->fails);
    b->total_accepts = 0;
    b->total_fails = 0;
    b->pending = 0;
    b->started = false;
    b->head_from = INT64_MAX;
    b->head_until = INT64_MIN;
}

/* Notes the clock values of the tick `now` falls in, which is the head:
 * clamped to the clock's range, where the tick's edges may not fit. */
static void note_head(struct tide_breaker *b, int64_t now)
{
    int64_t into = now % b->width; /* how far into its tick now is */
    if (into < 0)
        into += b->width;
    int64_t left = b->width - 1 - into;
    b->head_from = now < INT64_MIN + into ? INT64_MIN : now - into;
    b->head_until = now > INT64_MAX - left ? INT64_MAX : now + left;
}

/* Sets the quiet range (see core_internal.h) from the state as it is now,
 * and tells the listener of a change of state: every function here that
 * changes the breaker ends in quiet, so no change goes unheard. */
static void quiet(struct tide_breaker *b)
{
    if (b->state != b->told) {
        b->told = b->state;
        if (b->changed)
            b->changed(b->changed_arg);
    }
    bool open = !b->strategy && b->state == TIDE_BREAKER_ACTIVE;
    bool calm = b->policy == TIDE_BREAKER_ADAPTIVE ? b->total_fails == 0
                                                   : b->failures == 0;
    if (!open || !calm) {
        b->quiet_from = INT64_MAX;
        b->quiet_until = INT64_MIN;
    } else if (b->policy == TIDE_BREAKER_ADAPTIVE) {
        b->quiet_from = b->head_from; /* empty until started */
        b->quiet_until = b->head_until;
    } else {
        b->quiet_from = INT64_MIN;
        b->quiet_until = INT64_MAX;
    }
}

/* Adds the pending successes to the head bucket, up to its saturation. */
static void settle_pending(struct tide_breaker *b)
{
    size_t at = (size_t)((uint64_t)b->head % TIDE__RING);
    uint64_t room = UINT32_MAX - ((uint64_t)b->accepts[at] + b->fails[at]);
    uint64_t add = b->pending < room ? b->pending : room;
    b->accepts[at] += (uint32_t)add;
    b->total_accepts += add;
    b->pending = 0;
}

/* Moves the window to now: buckets older than the window fall out. A clock
 * that goes back counts into the newest bucket. Returns the newest slot. */
static size_t slide(struct tide_breaker *b, int64_t now)
{
    if (b->pending)
        settle_pending(b);
    if (now >= b->head_from && now <= b->head_until)
        return (size_t)((uint64_t)b->head % TIDE__RING);
    int64_t tick = floor_div(now, b->width);
    if (!b->started) {
        b->started = true;
        b->head = tick;
        note_head(b, now);
    } else if (tick > b->head) {
        uint64_t gap = (uint64_t)tick - (uint64_t)b->head;
        if (gap >= TIDE__RING) {
            clear_history(b);
            b->started = true;
        } else {
            for (uint64_t i = 1; i <= gap; i++) {
                size_t at = (size_t)(((uint64_t)b->head + i) % TIDE__RING);
                b->total_accepts -= b->accepts[at];
                b->total_fails -= b->fails[at];
                b->accepts[at] = 0;
                b->fails[at] = 0;
            }
        }
        b->head = tick;
        note_head(b, now);
    }
    return (size_t)((uint64_t)b->head % TIDE__RING);
}

static void record(struct tide_breaker *b, int64_t now, bool accepted)
{
    size_t at = slide(b, now);
    if ((uint64_t)b->accepts[at] + b->fails[at] == UINT32_MAX)
        return; /* saturated: the share is settled by then */
    if (accepted) {
        b->accepts[at]++;
        b->total_accepts++;
    } else {
        b->fails[at]++;
        b->total_fails++;
    }
}

static double adaptive_refusal(struct tide_breaker *b, int64_t now)
{
    slide(b, now);
    double attempts = (double)(b->total_accepts + b->total_fails);
    double excess = attempts - b->k * (double)b->total_accepts;
    if (!(excess > 0.0))
        return 0.0; /* no division in the usual, healthy case */
    return excess / (attempts + 1.0);
}

/* ---- policy dispatch ---- */

static double active_refusal(struct tide_breaker *b, int64_t now)
{
    if (b->strategy) {
        if (!b->strategy->refusal)
            return 0.0;
        double p = b->strategy->refusal(b, now, b->strategy_arg);
        return p > 0.0 ? (p < 1.0 ? p : 1.0) : 0.0;
    }
    return b->policy == TIDE_BREAKER_ADAPTIVE ? adaptive_refusal(b, now) : 0.0;
}

static bool should_recover(struct tide_breaker *b, int64_t now)
{
    if (b->strategy)
        return b->strategy->should_recover(b, now, b->strategy_arg);
    if (b->policy == TIDE_BREAKER_STRIKES)
        return tide__elapsed(b->opened, now) >= b->cooldown;
    return false; /* ADAPTIVE: only a manual deactivate gets here; it holds */
}

void tide_breaker_activate(struct tide_breaker *b, int64_t now)
{
    (void)now;
    if (!b)
        return;
    b->state = TIDE_BREAKER_ACTIVE;
    b->failures = 0;
    b->probing = 0;
    clear_history(b);
    quiet(b);
}

void tide_breaker_deactivate(struct tide_breaker *b, int64_t now)
{
    if (!b)
        return;
    b->state = TIDE_BREAKER_INACTIVE;
    b->opened = now;
    b->probing = 0;
    quiet(b);
}

bool tide__breaker_blocks(struct tide_breaker *b, int64_t now)
{
    if (b->state == TIDE_BREAKER_INACTIVE && should_recover(b, now)) {
        b->state = TIDE_BREAKER_RECOVERING;
        b->probing = 0;
    }
    quiet(b);
    return b->state == TIDE_BREAKER_INACTIVE;
}

static bool decide(struct tide_breaker *b, int64_t now, double *roll)
{
    if (tide__breaker_blocks(b, now))
        return false;
    if (b->state == TIDE_BREAKER_RECOVERING) {
        if (b->probing >= b->probes)
            return false;
        b->probing++;
        return true;
    }
    double p = active_refusal(b, now);
    if (p <= 0.0)
        return true;
    if (*roll < p) {
        if (!b->strategy && b->policy == TIDE_BREAKER_ADAPTIVE)
            record(b, now, false);
        return false;
    }
    *roll = tide__roll((*roll - p) / (1.0 - p));
    return true;
}

bool tide__breaker_decide(struct tide_breaker *b, int64_t now, double *roll)
{
    bool admitted = decide(b, now, roll);
    quiet(b);
    return admitted;
}

bool tide_breaker_admit(struct tide_breaker *b, int64_t now, double roll)
{
    if (!b)
        return true; /* no breaker refuses nothing */
    roll = tide__roll(roll);
    return tide__breaker_decide(b, now, &roll);
}

void tide_breaker_success(struct tide_breaker *b, int64_t now)
{
    if (!b)
        return;
    if (b->strategy) {
        b->strategy->report_success(b, now, b->strategy_arg);
    } else if (b->policy == TIDE_BREAKER_ADAPTIVE) {
        record(b, now, true);
    } else {
        b->failures = 0;
        if (b->state == TIDE_BREAKER_INACTIVE)
            b->state = TIDE_BREAKER_ACTIVE;
    }
    if (b->state == TIDE_BREAKER_RECOVERING) {
        b->state = TIDE_BREAKER_ACTIVE;
        b->probing = 0;
    }
    quiet(b);
}

void tide_breaker_failure(struct tide_breaker *b, int64_t now)
{
    if (!b)
        return;
    if (b->strategy) {
        b->strategy->report_failure(b, now, b->strategy_arg);
    } else if (b->policy == TIDE_BREAKER_ADAPTIVE) {
        record(b, now, false);
    } else if (++b->failures >= b->strikes &&
               b->state != TIDE_BREAKER_INACTIVE) {
        tide_breaker_deactivate(b, now);
    }
    if (b->state == TIDE_BREAKER_RECOVERING)
        tide_breaker_deactivate(b, now);
    quiet(b);
}

void tide_breaker_forgo(struct tide_breaker *b, int64_t now)
{
    (void)now;
    if (!b)
        return;
    if (b->state == TIDE_BREAKER_RECOVERING && b->probing > 0)
        b->probing--;
    quiet(b);
}

int64_t tide_breaker_retry_after(const struct tide_breaker *b, int64_t now)
{
    if (!b || b->state != TIDE_BREAKER_INACTIVE || b->strategy ||
        b->policy != TIDE_BREAKER_STRIKES)
        return 0;
    int64_t open_for = tide__elapsed(b->opened, now);
    return open_for < b->cooldown ? b->cooldown - open_for : 0;
}

double tide_breaker_refusal(struct tide_breaker *b, int64_t now)
{
    if (!b)
        return 0.0;
    if (b->state != TIDE_BREAKER_ACTIVE)
        return 1.0;
    double p = active_refusal(b, now); /* may slide the window */
    quiet(b);
    return p;
}

int tide_breaker_set_strategy(struct tide_breaker *b,
                              const struct tide_breaker_strategy *s, void *arg)
{
    if (!b)
        return TIDE_EINVAL;
    if (s && (!s->report_success || !s->report_failure || !s->should_recover))
        return TIDE_EBREAKER; /* an incomplete table would crash on first use */
    b->strategy = s;
    b->strategy_arg = s ? arg : NULL;
    b->failures = 0;
    quiet(b);
    return 0;
}
