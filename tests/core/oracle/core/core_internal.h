/* Cross-file internals of the core: the guards' state, so a pool can embed
 * them without a pointer hop, and the helpers the pool shares with them. */
#ifndef TIDEPOOL_CORE_INTERNAL_H
#define TIDEPOOL_CORE_INTERNAL_H

#include <tidepool/core.h>

#include "breaker_listen.h"
#include "inline.h"

/* to - from clamped to [0, INT64_MAX]: how long ago `from` was, without the
 * overflow a caller's arbitrary clock values could cause. */
static inline int64_t tide__elapsed(int64_t from, int64_t to)
{
    if (to <= from)
        return 0;
    uint64_t d = (uint64_t)to - (uint64_t)from;
    return d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
}

/* t + span, saturating at TIDE_FOREVER; span >= 0. */
static inline int64_t tide__later(int64_t t, int64_t span)
{
    if (span == TIDE_FOREVER || (t > 0 && span > INT64_MAX - t))
        return TIDE_FOREVER;
    return t + span;
}

/* A roll held to [0, 1): NaN and out-of-range draws cannot steer a decision
 * outside its documented range. */
static inline double tide__roll(double roll)
{
    if (!(roll >= 0.0))
        return 0.0;
    if (roll >= 1.0)
        return 0x1.fffffffffffffp-1;
    return roll;
}

struct tide_bucket {
    double rate; /* tokens per ns */
    double burst;
    double tokens; /* at `stamp` */
    int64_t stamp;
    /* From this clock value on the bucket is surely full: its level is
     * burst with no arithmetic. A bucket that refills between requests,
     * as one sized above its load does, then costs integer compares
     * only. Never earlier than the true moment; may be a little later,
     * when the level is worked out in full instead. */
    int64_t full_from;
    int64_t token_ns; /* ns a spent token takes to come back, rounded up */
    double ns_per_token;
};

struct tide_bucket_options tide__bucket_resolve(struct tide_bucket_options o);
int tide__bucket_check(const struct tide_bucket_options *o);
void tide__bucket_init(struct tide_bucket *b,
                       const struct tide_bucket_options *resolved, int64_t now);
/* The clock value from which a bucket `deficit` tokens short at `at` is
 * full. */
int64_t tide__bucket_full_from(const struct tide_bucket *b, int64_t at,
                               double deficit);

/* The tokens there at now: those at the last look and what accrued since,
 * up to burst. A clock that goes back earns nothing rather than taking
 * tokens away. Inline, as the two below: a pool with a bucket runs them on
 * every make. */
static inline double tide__bucket_level(const struct tide_bucket *b,
                                        int64_t now)
{
    if (now >= b->full_from)
        return b->burst;
    if (now <= b->stamp)
        return b->tokens;
    double t = b->tokens + (double)tide__elapsed(b->stamp, now) * b->rate;
    return t < b->burst ? t : b->burst;
}

/* Brings the bucket to now. The way to full does not change, so neither
 * does full_from. */
static inline void tide__bucket_refill(struct tide_bucket *b, int64_t now)
{
    b->tokens = tide__bucket_level(b, now);
    if (now > b->stamp)
        b->stamp = now;
}

/* Takes a token from a bucket full at now: all integer. */
static inline void tide__bucket_spend_full(struct tide_bucket *b, int64_t now)
{
    if (now > b->stamp)
        b->stamp = now;
    b->tokens = b->burst - 1.0;
    b->full_from = tide__later(b->stamp, b->token_ns);
}

/* Takes a token from a bucket whose level at now is `level`, at least 1. */
static inline void tide__bucket_spend(struct tide_bucket *b, int64_t now,
                                      double level)
{
    if (level >= b->burst) {
        tide__bucket_spend_full(b, now);
        return;
    }
    if (now > b->stamp)
        b->stamp = now;
    b->tokens = level - 1.0;
    b->full_from = tide__bucket_full_from(b, b->stamp, b->burst - b->tokens);
}

#define TIDE__RING 16

struct tide_breaker {
    enum tide_breaker_state state;
    enum tide_breaker_policy policy; /* the built-in one in force */
    const struct tide_breaker_strategy *strategy; /* NULL: built-in */
    void *strategy_arg;
    double k;
    int64_t width; /* ns per history bucket: window / TIDE__RING */
    int strikes;
    int64_t cooldown;
    int probes;
    int probing;    /* probes let through in this RECOVERING spell */
    int failures;   /* STRIKES: in a row */
    int64_t opened; /* when INACTIVE began */
    /* ADAPTIVE history: counts per bucket, newest at tick `head` */
    int64_t head;
    bool started;
    /* The clock values inside tick `head` (inclusive; empty until started):
     * for them the window has not moved, and no division is needed. */
    int64_t head_from;
    int64_t head_until;
    /* The clock values for which admit lets a make through with nothing to
     * record or rescale, and a success only counts: ACTIVE, no strategy,
     * and ADAPTIVE's head tick holding now with no refused or failed
     * attempt in the window (then the refusal is 0, k being >= 1). Empty
     * otherwise. Every function of breaker.c that changes the breaker sets
     * it on the way out, so the pool's inline fast path reads one range.
     * STRIKES is quiet while ACTIVE with no failure in a row. */
    int64_t quiet_from;
    int64_t quiet_until;
    /* Successes counted inside the quiet range and not yet in the ring:
     * all fall in the head tick, and slide() adds them there before the
     * window moves or is read. A success in the fast path is then one
     * increment. Unread under STRIKES. */
    uint64_t pending;
    /* Per bucket, the attempts let through and made, and the rest (refused
     * or failed): attempts are their sum. Counted apart, a success touches
     * one count a bucket instead of two. A bucket stops counting at
     * UINT32_MAX attempts. */
    uint32_t accepts[TIDE__RING];
    uint32_t fails[TIDE__RING];
    uint64_t total_accepts;
    uint64_t total_fails;
    /* Told after every change of state, whatever made it (a manual switch,
     * the policy, a strategy): a runtime holding callers parked on the
     * breaker must hear of it, or a breaker opened by hand leaves them to
     * run out their timeouts. NULL: nobody listens. */
    void (*changed)(void *arg);
    void *changed_arg;
    enum tide_breaker_state told; /* the state `changed` last heard of */
};

struct tide_breaker_options
tide__breaker_resolve(struct tide_breaker_options o);
int tide__breaker_check(const struct tide_breaker_options *o);
void tide__breaker_init(struct tide_breaker *b,
                        const struct tide_breaker_options *resolved);
/* true while the breaker refuses every take (INACTIVE); asks the policy
 * whether to start probing first. */
bool tide__breaker_blocks(struct tide_breaker *b, int64_t now);
/* Admit's whole decision, on a roll already held to [0, 1). */
bool tide__breaker_decide(struct tide_breaker *b, int64_t now, double *roll);

/* The common cases of admit and success are inline, for a pool runs them on
 * every make. Whether admit would let a make through at once, with the roll
 * unchanged and nothing to record: */
static inline bool tide__breaker_admits(const struct tide_breaker *b,
                                        int64_t now)
{
    return now >= b->quiet_from && now <= b->quiet_until;
}

/* tide_breaker_admit that also rescales *roll to a fresh uniform draw when
 * it lets the make through, so the same roll can still spread its life. */
static inline bool tide__breaker_admit(struct tide_breaker *b, int64_t now,
                                       double *roll)
{
    return tide__breaker_admits(b, now) || tide__breaker_decide(b, now, roll);
}

/* tide_breaker_success. Inside the quiet range a success changes nothing
 * but a count: no state to leave, no failure in a row to reset. */
static inline void tide__breaker_success(struct tide_breaker *b, int64_t now)
{
    if (tide__breaker_admits(b, now))
        b->pending++;
    else
        tide_breaker_success(b, now);
}

struct tide_shedder {
    int64_t lag_target;
    int64_t loan_target;
    int64_t hold;
    double floor;
    double decrease;
    double max;     /* the pool's size */
    double ceiling; /* resources in flight allowed now */
    int64_t room;   /* floor(ceiling): in_flight + 1 <= ceiling is exactly
                       in_flight < room, an integer compare */
    int64_t lag;
    int64_t lag_at;
    bool has_lag;
    /* A settle after this clock value changes nothing: the ceiling is at
     * the size, no loan target is set, and no lag sample holds then. So
     * the usual settle is one compare. INT64_MAX: every settle looks. */
    int64_t steady_after;
};

struct tide_shedder_options
tide__shedder_resolve(struct tide_shedder_options o);
int tide__shedder_check(const struct tide_shedder_options *o);
void tide__shedder_init(struct tide_shedder *s,
                        const struct tide_shedder_options *resolved,
                        int64_t size);
/* The shedder's per-loan steps are inline: the pool runs them on every
 * take and give. */
/* in_flight: resources lent or being made now (the pool counts them). */
static inline bool tide__shedder_admit(const struct tide_shedder *s,
                                       int64_t in_flight)
{
    return in_flight < s->room;
}

/* A ticket issued at `since` settles at now: the policy in core.h. */
void tide__shedder_settle_from(struct tide_shedder *s, int64_t since,
                               int64_t now);

static inline void tide__shedder_settle(struct tide_shedder *s, int64_t since,
                                        int64_t now)
{
    if (now <= s->steady_after)
        tide__shedder_settle_from(s, since, now);
}

void tide__shedder_feed(struct tide_shedder *s, int64_t now, int64_t lag,
                        int64_t in_flight);

#endif /* TIDEPOOL_CORE_INTERNAL_H */
