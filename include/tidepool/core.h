/* tidepool core: the decision engine of a resource pool.
 *
 * The core holds the bookkeeping of a limited number of things and answers
 * what to do next. It does not open, close or wait: whoever owns a runtime
 * (the evloop adapter, or your own code) does all three. It reads no clock,
 * draws no random number and does no I/O: time is int64_t nanoseconds from the
 * caller's monotonic clock (only differences matter) and randomness is a
 * `double roll` in [0, 1) drawn by the caller, so every run is reproducible.
 *
 * Threads: a pool (and every helper here) is single-threaded state. Use one
 * from one thread at a time; a multi-threaded program keeps one pool per
 * thread. Nothing here takes a lock or touches global state.
 *
 * NULL: a function returning int answers TIDE_EINVAL for a NULL object or
 * required pointer; the others do nothing and answer as for an empty or
 * absent thing (0, false, no refusal; take and grow answer SHED with
 * TIDE_GUARD_CLOSED), as free(NULL) does. A NULL backoff is the preset.
 */
#ifndef TIDEPOOL_CORE_H
#define TIDEPOOL_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tidepool/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TIDE_BUILDING) && defined(__GNUC__)
#define TIDE_API __attribute__((visibility("default")))
#else
#define TIDE_API
#endif

#if defined(__GNUC__)
#define TIDE_MUST_USE __attribute__((warn_unused_result))
#else
#define TIDE_MUST_USE
#endif

/* ---- time ------------------------------------------------------------- */

#define TIDE_NS(n)  ((int64_t)(n))
#define TIDE_US(n)  ((int64_t)(n)*1000)
#define TIDE_MS(n)  ((int64_t)(n)*1000000)
#define TIDE_SEC(n) ((int64_t)(n)*1000000000)
#define TIDE_MIN(n) ((int64_t)(n)*60000000000)

/* A span or a count with no limit. Zero in an options struct means "the
 * preset", as everywhere in tidepool, so "no limit" has a name of its own. */
#define TIDE_FOREVER   INT64_MAX
#define TIDE_UNLIMITED INT64_MAX

/* ---- errors ----------------------------------------------------------- */

/* Every fallible call returns 0 (or a non-negative answer) on success and one
 * of these negative codes on failure. One table for every layer, so
 * tide_strerror() and tide_err_name() know them all. */
enum tide_error {
    TIDE_EINVAL = -1,   /* an argument is NULL or out of range */
    TIDE_ENOMEM = -2,   /* an allocation failed */
    TIDE_ELIMITS = -3,  /* limits: a value out of its range */
    TIDE_EBREAKER = -4, /* breaker options out of range */
    TIDE_EBUCKET = -5,  /* bucket options out of range */
    TIDE_EBACKOFF = -6, /* backoff options out of range */
    TIDE_ESHEDDER = -7, /* shedder options out of range */
    TIDE_EDOUBLE = -8,  /* given back twice: the pool already holds it idle */
    TIDE_EUNKNOWN = -9, /* not lent by this pool, and no reservation open */
    TIDE_ENORESERVE = -10, /* made/unmade with no MAKE outstanding */
    TIDE_EDUPLICATE = -11, /* made() with a resource the pool already holds */
    TIDE_ECLOSED = -12,    /* the pool is closed */
    TIDE_EGATE = -13,      /* gate left more often than entered */
    TIDE_ENOTIDLE = -14,   /* hold: the resource is not idle in this pool */
    TIDE_ENOTLENT = -15,   /* no loan of the resource is out */
    TIDE_ESHARED = -16,    /* other loans of the resource are out */
};

/* A sentence for a person; never NULL, static storage. */
TIDE_API const char *tide_strerror(int code);
/* The code's name ("TIDE_EDOUBLE"); "TIDE_E?" for an unknown code. */
TIDE_API const char *tide_err_name(int code);

/* ---- version ---------------------------------------------------------- */

/* The version of the library linked at run time, "MAJOR.MINOR.PATCH";
 * static storage. TIDE_VERSION_STRING (<tidepool/version.h>) is the one a
 * program was compiled against: the two differ when a shared library was
 * upgraded under a program built earlier. */
TIDE_API const char *tide_version(void);

/* ---- limits ----------------------------------------------------------- */

/* Which resource a shared loan goes to, when several have room for one
 * more (streams > 1). Both lend a resource that has loans but room for
 * another before they ask for a MAKE; among those with equal loans the one
 * that came to that count last goes first, as the idle ones go newest
 * first (the warmest). */
enum tide_sharing {
    /* The busiest resource with room: each is filled before the next is
     * used, so the fewest stay open and the rest go idle and retire by
     * keep. An idle one is lent only when none with loans has room. What
     * HTTP/2 clients do (Envoy, Go's transport): streams are cheap, and
     * connections are what the server limits. */
    TIDE_SHARING_PACK = 0,
    /* The least busy: an idle one first, else the one with the fewest
     * loans, so borrowers queue behind as few others on one connection as
     * can be: what a protocol answering in order wants (Redis, where a
     * slow reply holds up every reply behind it). */
    TIDE_SHARING_SPREAD,
};

/* The most loans one resource may carry (limits.streams). */
#define TIDE_STREAMS_MAX 65535

/* The limits a pool holds itself to. A zero field takes the preset, so
 * TIDE_LIMITS(.size = 20) is "the presets, with size 20" in one expression
 * (every field reads back resolved), TIDE_LIMITS(0) is all the presets, and
 * `l.size = 32;` on a copy changes one knob of a set. Zero cannot also mean "no
 * limit", because that would need the presets written first and overridden,
 * which -Wextra flags in every user's build (-Woverride-init). "No limit" is
 * TIDE_UNLIMITED / TIDE_FOREVER. Negative values are refused by tide_pool_new
 * with TIDE_ELIMITS, never clamped. */
struct tide_limits {
    int64_t size;    /* how many may be live at once: idle, lent and being
                        made. Preset 10. */
    int64_t idle;    /* how many may sit idle; a give beyond it answers "not
                        kept". Preset: the size (10 when size is preset too),
                        so a pool that grew under load does not throw away
                        what it just made. An explicit idle is honoured. */
    int64_t keep;    /* ns an idle resource may sit before it is retired.
                        Preset 30 min: a warm pool survives a quiet spell. */
    int64_t life;    /* ns a resource may live at all, however busy. Preset
                        TIDE_FOREVER. */
    double spread;   /* shorten each resource's life by a random share up to
                        this fraction, drawn from its MAKE's roll, so a pool
                        filled in one burst does not expire in one burst.
                        [0, 1]; preset 0. */
    int64_t streams; /* how many loans one resource may carry at once: the
                        streams of an HTTP/2 connection, the requests
                        pipelined on one Redis connection. Each resource's
                        own can be lowered at run time (a server's
                        SETTINGS), never raised past this: see "Shared
                        loans" below. 1 to TIDE_STREAMS_MAX. Preset 1: one
                        borrower at a time, the pool as it always was. */
    enum tide_sharing sharing; /* which resource takes the next shared
                                  loan; preset TIDE_SHARING_PACK. Unused
                                  with streams 1. */
    /* Connections by demand: both off by preset, so a pool keeps what
     * keep and idle allow and opens one only when a caller finds none.
     * See "Connections by demand" below for how a runtime drives them. */
    int64_t demand;    /* ns: the window over which the pool keeps the
                          peak of loans in flight; idle resources beyond
                          what that peak needs are retired gradually, on
                          top of keep and life (tide_pool_shrink). Preset
                          0: off; TIDE_FOREVER: off too (no peak ever
                          ends). */
    double retire;     /* with demand: the most of the excess retired in
                          one period (demand / TIDE_DEMAND_TICKS), rounded
                          up, so a pool steps down over a few periods
                          rather than at once. [0, 1]; preset 0.5, as
                          HAProxy closes half the excess each period. */
    double preconnect; /* open the next resource before a caller waits
                          for it, when loans in flight reach this share of
                          the live resources' capacity (live x streams):
                          tide_pool_preconnect. [0, 1]; preset 0: off. */
};

#define TIDE_LIMITS(...) tide_limits_resolve((struct tide_limits){__VA_ARGS__})

/* The same limits as an initialiser, a constant expression, for storage
 * that TIDE_LIMITS cannot fill because it calls a function:
 *   static const struct tide_limits L = TIDE_LIMITS_INIT(.size = 20);
 * The fields keep what is written (zero stays zero, so idle reads 0 here):
 * the presets are applied where every pool resolves its limits, at
 * tide_pool_new and tide_evpool_new, with zero meaning the preset as ever.
 * TIDE_LIMITS_INIT(0) is all the presets. */
#define TIDE_LIMITS_INIT(...)                                                  \
    {                                                                          \
        __VA_ARGS__                                                            \
    }

/* The limits with every zero field replaced by its preset. */
TIDE_API struct tide_limits tide_limits_resolve(struct tide_limits limits);
/* 0 when the limits are valid, TIDE_ELIMITS otherwise: a negative value,
 * spread, retire or preconnect outside [0, 1], streams above
 * TIDE_STREAMS_MAX or an unknown sharing. */
TIDE_API int tide_limits_check(const struct tide_limits *limits);
/* Whether two sets of limits hold a pool to the same: compared field by
 * field once resolved, so a zero and the preset it stands for are equal
 * (TIDE_LIMITS_INIT(0) equals TIDE_LIMITS(.size = 10)). NULL stands for the
 * presets, as at tide_pool_new. A NaN spread equals nothing. */
TIDE_API bool tide_limits_equal(const struct tide_limits *a,
                                const struct tide_limits *b);
TIDE_API bool tide_limits_not_equal(const struct tide_limits *a,
                                    const struct tide_limits *b);
/* The limits as a person reads them, every field by name and resolved (a
 * zero prints as the preset it stands for, never as a 0 that would read as
 * "none"), for a log line or a simulator's header:
 *   size=10 idle=10 keep=30min life=forever spread=0 streams=1 sharing=pack
 * Demand and preconnect, off by preset, are printed only when on (
 * " demand=10s retire=0.5", " preconnect=0.8"), so the text of a pool
 * without them is what it always was.
 * TIDE_UNLIMITED prints as "unlimited" and TIDE_FOREVER as "forever"; a span
 * in the largest unit it is a whole number of (h, min, s, ms, us, ns), so
 * the text is exact; spread to nine decimals. Writes at most len bytes,
 * the text cut short if need be and always ended by a NUL when len > 0 (buf
 * may be NULL when len is 0), and returns the length of the whole text
 * without the NUL, as snprintf does: at most TIDE_LIMITS_TEXT - 1, so a
 * buffer of TIDE_LIMITS_TEXT always holds it. TIDE_EINVAL for NULL limits.
 * It draws on no printf, so a core built for WebAssembly stays small. */
#define TIDE_LIMITS_TEXT 320
TIDE_API int tide_limits_format(const struct tide_limits *limits, char *buf,
                                size_t len);

/* ---- jitter and backoff ----------------------------------------------- */

/* How much randomness goes into a delay. A retry with no jitter makes every
 * client that failed together try again together, which is how one outage
 * becomes a second one. Formulas, with c the capped delay of this retry:
 *   RIGID         c, unchanged. Reproducible, and it synchronises clients.
 *   FULL          uniform over [0, c]. Spreads clients furthest.
 *   EQUAL         c/2 + uniform over [0, c/2]. Keeps a floor under the wait.
 *   DECORRELATED  uniform over [base, max(previous, base) x 3], capped at
 *                 cap: grows from where it last landed rather than from
 *                 the retry.
 *   SPREAD        uniform over [c(1 - f), c(1 + f)], f held to [0, 1]; so
 *                 the wait can pass the cap by f. gRPC's randomisation. */
enum tide_jitter {
    TIDE_JITTER_SPREAD = 0,
    TIDE_JITTER_RIGID,
    TIDE_JITTER_FULL,
    TIDE_JITTER_EQUAL,
    TIDE_JITTER_DECORRELATED,
};

/* When to try again, and how long to wait first. Zero fields take the
 * preset: three attempts, 100 ms doubling to a 1 s ceiling, spread by a fifth
 * either way (gRPC proposal A6; three attempts as the AWS SDKs' standard
 * mode). For no jitter say TIDE_JITTER_RIGID (a zero spread is the preset). */
struct tide_backoff {
    int64_t base;  /* ns before the first retry. Preset 100 ms. */
    double factor; /* growth per retry, >= 1. Preset 2. */
    int64_t cap;   /* ceiling of the unjittered delay. Preset 1 s. */
    int attempts;  /* attempts in all, the first included. Preset 3. */
    enum tide_jitter jitter; /* preset TIDE_JITTER_SPREAD */
    double spread;           /* f for SPREAD. Preset 0.2. */
};

#define TIDE_BACKOFF(...)                                                      \
    tide_backoff_resolve((struct tide_backoff){__VA_ARGS__})

/* The backoff with zero fields at their presets. Every function below
 * resolves its argument this way too, so a zeroed struct is the preset. */
TIDE_API struct tide_backoff tide_backoff_resolve(struct tide_backoff b);
/* 0 when valid, TIDE_EBACKOFF otherwise (negative spans, factor < 1,
 * attempts < 0, an unknown jitter, spread outside [0, 1]). */
TIDE_API int tide_backoff_check(const struct tide_backoff *b);
/* min(cap, base x factor^retry); retry counts from 0. */
TIDE_API int64_t tide_backoff_ceiling(const struct tide_backoff *b, int retry);
/* The jittered delay before retry `retry`; `previous` is the delay drawn last
 * time (DECORRELATED grows from it; 0 for the first retry). */
TIDE_API int64_t tide_backoff_delay(const struct tide_backoff *b, int retry,
                                    double roll, int64_t previous);
/* Whether another attempt is allowed after `made` attempts. */
TIDE_API bool tide_backoff_more(const struct tide_backoff *b, int made);
/* The delays before each retry, one roll each: writes min(n, attempts - 1)
 * delays to out and returns how many it wrote. */
TIDE_API size_t tide_backoff_schedule(const struct tide_backoff *b,
                                      const double *rolls, int64_t *out,
                                      size_t n);

/* ---- bucket ------------------------------------------------------------ */

/* A token bucket: `rate` tokens accrue per second up to `burst`, and each
 * request takes one. It allows a burst after a quiet period, which is what a
 * limit on a human-facing API wants. It starts full. */
struct tide_bucket;

struct tide_bucket_options {
    double rate;  /* tokens per second, > 0. Preset 10. */
    double burst; /* most tokens held, >= 1. Preset: rate (one second's),
                     at least 1. */
};

/* Caller owns *out and frees it with tide_bucket_free. */
TIDE_API TIDE_MUST_USE int tide_bucket_new(const struct tide_bucket_options *o,
                                           int64_t now,
                                           struct tide_bucket **out);
TIDE_API void tide_bucket_free(struct tide_bucket *b);
/* Takes one token if there is one; true when it did. */
TIDE_API bool tide_bucket_take(struct tide_bucket *b, int64_t now);
/* ns until a token is there; 0 when one is there now. */
TIDE_API int64_t tide_bucket_next(struct tide_bucket *b, int64_t now);
TIDE_API double tide_bucket_tokens(struct tide_bucket *b, int64_t now);

/* ---- sliding window ---------------------------------------------------- */

/* At most `quota` events in any `window`-long stretch. Where a bucket
 * smooths, a window counts: "a thousand a day" is a window, and a bucket would
 * let the day's allowance go in the first minute. The stamps of the events in
 * the window are kept, so the count is exact. An event at t stops counting at
 * t + window. */
struct tide_window;

/* quota >= 1, window > 0. Caller owns *out; free with tide_window_free. */
TIDE_API TIDE_MUST_USE int tide_window_new(int64_t quota, int64_t window,
                                           struct tide_window **out);
TIDE_API void tide_window_free(struct tide_window *w);
/* Counts one event if the quota allows; true when it did. */
TIDE_API bool tide_window_take(struct tide_window *w, int64_t now);
/* How many more events the window allows now. */
TIDE_API int64_t tide_window_left(struct tide_window *w, int64_t now);
/* ns until one more event is allowed; 0 when one is allowed now. */
TIDE_API int64_t tide_window_next(struct tide_window *w, int64_t now);

/* ---- gate ------------------------------------------------------------- */

/* A count with a ceiling: the concurrency limit a server puts on itself. It
 * does not depend on time. A server past its limit answers rather than
 * queues, which keeps a queue from becoming the outage. */
struct tide_gate;

/* ceiling >= 1 (TIDE_UNLIMITED allowed). Caller owns *out. */
TIDE_API TIDE_MUST_USE int tide_gate_new(int64_t ceiling,
                                         struct tide_gate **out);
TIDE_API void tide_gate_free(struct tide_gate *g);
/* Enters if below the ceiling; true when it did. */
TIDE_API bool tide_gate_enter(struct tide_gate *g);
/* Leaves; TIDE_EGATE (and no change) when nobody is inside. */
TIDE_API int tide_gate_leave(struct tide_gate *g);
TIDE_API int64_t tide_gate_held(const struct tide_gate *g);

/* ---- breaker ----------------------------------------------------------- */

/* Refuses new connections at the rate a failing backend deserves.
 *   ACTIVE      normal: a make is refused with the policy's probability
 *               (about 0 while healthy).
 *   INACTIVE    declared down: every take of a pool answers SHED, idle
 *               resources or not, so callers fail fast instead of waiting out
 *               timeouts against a dead service.
 *   RECOVERING  probing: at most `probes` makes at once are let through; the
 *               first success returns to ACTIVE, the first failure to
 *               INACTIVE.
 * INACTIVE moves to RECOVERING when the policy's should_recover says so, asked
 * at each admission. */
struct tide_breaker;

enum tide_breaker_state {
    TIDE_BREAKER_ACTIVE = 0,
    TIDE_BREAKER_INACTIVE,
    TIDE_BREAKER_RECOVERING,
};

enum tide_breaker_policy {
    /* Client-side adaptive throttling (Google SRE book): refuse with
     * probability max(0, (attempts - k x successes) / (attempts + 1)) over
     * the last `window`, refused attempts included. Never deactivates by
     * itself; a manual deactivate holds until activate. */
    TIDE_BREAKER_ADAPTIVE = 0,
    /* Consecutive failures: `strikes` failures in a row deactivate; after
     * `cooldown` it recovers; a success resets the count. */
    TIDE_BREAKER_STRIKES,
    /* The user's strategy table. */
    TIDE_BREAKER_CUSTOM,
};

/* A breaker policy of your own, as in the async pool's strategy: the breaker
 * reports every success and failure, and asks whether to start probing. The
 * callbacks run inside the breaker call that reported (or inside a pool's
 * take/made/unmade); they may call tide_breaker_activate/deactivate on `b`
 * and read it, and must not free it. */
struct tide_breaker_strategy {
    void (*report_success)(struct tide_breaker *b, int64_t now, void *arg);
    void (*report_failure)(struct tide_breaker *b, int64_t now, void *arg);
    /* true: move from INACTIVE to RECOVERING now. */
    bool (*should_recover)(struct tide_breaker *b, int64_t now, void *arg);
    /* optional: the share of makes to refuse while ACTIVE, in [0, 1]. NULL
     * refuses none. */
    double (*refusal)(struct tide_breaker *b, int64_t now, void *arg);
};

/* Zero fields take the preset. */
struct tide_breaker_options {
    enum tide_breaker_policy policy; /* preset ADAPTIVE */
    double k;         /* ADAPTIVE: successes weight, >= 1. Preset 2. */
    int64_t window;   /* ADAPTIVE: ns of history. Preset 2 min. */
    int strikes;      /* STRIKES: failures in a row. Preset 5. */
    int64_t cooldown; /* STRIKES: ns INACTIVE before probing. Preset 5 s. */
    int probes;       /* RECOVERING: makes let through at once. Preset 1. */
    /* CUSTOM: borrowed, must outlive the breaker; arg is passed back. */
    const struct tide_breaker_strategy *strategy;
    void *strategy_arg;
};

/* Caller owns *out; free with tide_breaker_free. */
TIDE_API TIDE_MUST_USE int
tide_breaker_new(const struct tide_breaker_options *o,
                 struct tide_breaker **out);
TIDE_API void tide_breaker_free(struct tide_breaker *b);
TIDE_API enum tide_breaker_state
tide_breaker_state(const struct tide_breaker *b);
/* Manual switches. activate forgets the adaptive history (a fresh start). */
TIDE_API void tide_breaker_activate(struct tide_breaker *b, int64_t now);
TIDE_API void tide_breaker_deactivate(struct tide_breaker *b, int64_t now);
/* Asks to make one: true when let through. Counts the attempt, moves
 * INACTIVE to RECOVERING when the policy says so, and bounds the probes. */
TIDE_API bool tide_breaker_admit(struct tide_breaker *b, int64_t now,
                                 double roll);
TIDE_API void tide_breaker_success(struct tide_breaker *b, int64_t now);
TIDE_API void tide_breaker_failure(struct tide_breaker *b, int64_t now);
/* An attempt admit let through will bring no outcome: it was given up for
 * reasons that say nothing of the backend (the borrower abandoned its
 * first use, the pool evicted or closed it unused). While RECOVERING its
 * probe's place is given back, so another attempt may probe; otherwise
 * nothing changes. Without it a probe given up holds its place for good,
 * and the breaker stays RECOVERING, refusing every make, until activated
 * by hand. Call it at most once an attempt, and only for one let through
 * while RECOVERING and since the breaker last changed state: a change of
 * state forgets the probes out (a later success or failure still counts
 * as ever). */
TIDE_API void tide_breaker_forgo(struct tide_breaker *b, int64_t now);
/* While INACTIVE, ns until the policy will let a probe through: the rest of
 * the STRIKES cooldown. 0 when it is not INACTIVE or the policy cannot say
 * (ADAPTIVE holds a manual deactivate; a custom strategy decides itself). */
TIDE_API int64_t tide_breaker_retry_after(const struct tide_breaker *b,
                                          int64_t now);
/* The share of new makes refused now: the policy's share while ACTIVE, 1
 * while INACTIVE or RECOVERING (all but the probes). */
TIDE_API double tide_breaker_refusal(struct tide_breaker *b, int64_t now);
/* Installs a strategy (borrowed; must outlive the breaker); NULL goes back to
 * the policy the breaker was created with, or ADAPTIVE for CUSTOM. The state
 * is kept. 0, or TIDE_EBREAKER (a required callback missing; nothing
 * changed). */
TIDE_API int tide_breaker_set_strategy(struct tide_breaker *b,
                                       const struct tide_breaker_strategy *s,
                                       void *arg);

/* ---- shedder ----------------------------------------------------------- */

/* Stops lending while the host is overloaded. Policy (deterministic):
 * - It keeps a ceiling on resources in flight (lent + being made), starting
 *   at the pool's size; a take that would lend or make past it answers SHED.
 * - Overload is an event-loop lag sample above `lag_target` fed no longer
 *   than `hold` ago (tide_pool_overload), or a loan that lasted longer than
 *   `loan_target`.
 * - A lag sample above target cuts the ceiling at once to
 *   max(floor, min(ceiling, in flight) x decrease).
 * - Each loan settled (give or drop, and each make settled) while overloaded,
 *   or that overran loan_target, multiplies the ceiling by `decrease` (not
 *   below floor); each other one adds 1 to it (not above the size). So the
 *   pool backs off multiplicatively and recovers additively (AIMD). */
struct tide_shedder_options {
    int64_t lag_target;  /* ns of loop lag that means overload. Preset 50 ms. */
    int64_t loan_target; /* ns a loan may last before it signals overload.
                            Preset TIDE_FOREVER (off). */
    int64_t hold;        /* ns a lag sample counts. Preset 1 s. */
    int64_t floor;       /* the ceiling never drops below, >= 1. Preset 1. */
    double decrease;     /* in (0, 1). Preset 0.5. */
};

/* ---- pool -------------------------------------------------------------- */

struct tide_pool;

/* A ward: up to four guards in front of the backend. Each pointer is
 * optional and borrowed for the call to tide_pool_new only (the pool copies
 * what it needs); all NULL behaves exactly as no ward. */
struct tide_ward {
    const struct tide_breaker_options *breaker;
    const struct tide_bucket_options *bucket; /* spaces makes out */
    const struct tide_backoff *backoff;       /* holds makes after a failure:
                                                 see "Makes held while makes
                                                 fail" below */
    const struct tide_shedder_options *shedder;
};

enum tide_answer {
    TIDE_READY = 0, /* item: an idle resource, the most recently returned */
    TIDE_STALE,     /* item: idle past keep or life, already out of the pool
                       and the count; close it and take again */
    TIDE_MAKE,      /* room reserved: open one, then made() or unmade() */
    TIDE_WAIT,      /* every live slot is in use: queue the caller; or
                       (guard TIDE_GUARD_BACKOFF) makes are failing and the
                       one make let through to probe is being made:
                       queue the caller until it is made or fails */
    TIDE_LATER,     /* making is held back for `span` ns */
    TIDE_SHED,      /* refuse now; `guard` says who */
};

/* Which guard answered a LATER or a SHED (or a WAIT on a probe). */
enum tide_guard {
    TIDE_GUARD_NONE = 0,
    TIDE_GUARD_BREAKER,
    TIDE_GUARD_BUCKET,
    TIDE_GUARD_BACKOFF,
    TIDE_GUARD_SHEDDER,
    TIDE_GUARD_CLOSED, /* the pool is closed */
    TIDE_GUARD_MEMORY, /* an unbounded pool could not grow its books */
};

/* A tagged union, as the answer has one payload at most: read item only
 * after READY or STALE and span only after LATER (item is NULL after MAKE,
 * WAIT and SHED). Sixteen bytes: x86-64 and AArch64 return it in two
 * registers, where a larger struct would go through memory. */
struct tide_taken {
    enum tide_answer answer;
    enum tide_guard guard; /* LATER, SHED; WAIT on a probe */
    union {
        void *item;   /* READY, STALE */
        int64_t span; /* LATER: ns until it may make again */
    };
};

/* Creates a pool. limits NULL means the presets; ward NULL means no guards.
 * Returns 0, TIDE_ELIMITS, TIDE_EBREAKER, TIDE_EBUCKET, TIDE_EBACKOFF,
 * TIDE_ESHEDDER, TIDE_EINVAL (out NULL) or TIDE_ENOMEM. With a finite size up
 * to 2^20 every slot is allocated here, so take and give never allocate.
 * Caller owns *out; free with tide_pool_free. `now` starts the guards' clocks.
 */
TIDE_API TIDE_MUST_USE int tide_pool_new(const struct tide_limits *limits,
                                         const struct tide_ward *ward,
                                         int64_t now, struct tide_pool **out);
/* Frees the books. Resources still held (idle or lent) are not touched: drain
 * them with tide_pool_close first if you own them. */
TIDE_API void tide_pool_free(struct tide_pool *p);

/* Take one, be told to make one or to wait, or be handed one too old to use.
 * The most recently returned resource is handed out first: a warm connection
 * is likelier to still be good than a cold one, and handing out the newest
 * lets the oldest age past keep and be evicted, which is how a pool shrinks
 * after a burst. With streams > 1 the loan may be shared: a resource with
 * loans and room for another is lent before a make, as limits.sharing
 * picks (see "Shared loans"). Never blocks, never allocates (bounded
 * size). */
TIDE_API struct tide_taken tide_pool_take(struct tide_pool *p, int64_t now,
                                          double roll);
/* tide_pool_take where only an idle resource will do (with streams > 1,
 * one live already: idle, or with room beside its loans): with none it
 * answers TIDE_WAIT and does nothing else (no make considered, no guard
 * asked, nothing reserved); with one it answers as take would (READY,
 * STALE or SHED). One call where a lender would ask tide_pool_idle first. */
TIDE_API struct tide_taken tide_pool_take_idle(struct tide_pool *p,
                                               int64_t now);
/* Registers a resource made after MAKE, as lent and born now (with streams
 * > 1: one loan, shared, and room for more from now on). item must not be
 * NULL. 0, or TIDE_ENORESERVE / TIDE_EDUPLICATE / TIDE_EINVAL (nothing
 * changed; the caller still owns item). */
TIDE_API int tide_pool_made(struct tide_pool *p, void *item, int64_t now);
/* Gives back a reservation whose make failed: the breaker counts the failure
 * and backoff holds makes for a delay jittered with roll. 0 or
 * TIDE_ENORESERVE. */
TIDE_API int tide_pool_unmade(struct tide_pool *p, int64_t now, double roll);

/* What feeds the ward. Outcomes, not events:
 *   successes: a make that succeeded (made, or a made_untried proven by its
 *     first use) and an accepted release (the resource came back fit for
 *     reuse);
 *   failures: a failed make (unmade, or a made_untried resource that died
 *     before it served), a broken loan (discarded), a release judged
 *     unfit, a failed health check.
 * A resource that dies while idle after it has served says nothing about
 * the backend (servers close idle connections) and is no outcome. The
 * breaker hears every outcome; backoff hears only makes: a failed make
 * holds makes, a successful one lifts the hold. give and drop are
 * bookkeeping only: report the outcomes beside them. A made_untried
 * resource that leaves before its first use could prove or fail it
 * (abandoned, evicted, closed) has no outcome either; if its make was the
 * breaker's probe, give the probe's place back with tide_breaker_forgo. */

/* Makes held while makes fail (with a backoff in the ward). After a failed
 * make (unmade, or tried not ok) no MAKE is answered, to a take or a grow
 * alike, until the backoff's delay has passed: LATER, guard
 * TIDE_GUARD_BACKOFF, span the time left. A runtime answers a caller who
 * would need a make then with the failure and that span as the time to
 * retry, rather than queue a connect that would likely fail too. Once the
 * delay has passed, and for as long as the last make failed, one make at
 * a time is let through (a probe): a take or grow that would make another
 * while it is being made answers WAIT, guard TIDE_GUARD_BACKOFF, until it
 * is made (made, made_untried) or fails (unmade); while a breaker is
 * RECOVERING it decides who probes instead, and sheds the rest. Only the
 * make is waited for, not its first use: nobody waits on another's loan.
 * A failure (unmade, or tried not ok) holds makes again, for a longer
 * delay; the first success lifts the hold at once, so a healthy backend,
 * or one recovered, pays nothing: a make that follows a success is never
 * held. Makes answered before the failure keep running. */

/* As tide_pool_made, but the make's outcome is left open: a connection has
 * not shown it works until it has served. Settle it with tide_pool_tried
 * once its first use is over: a server that accepts and closes at once, or
 * speaks first, otherwise reads as a string of successful makes, and a
 * minimum (or callers asking again) refills it in a storm. */
TIDE_API int tide_pool_made_untried(struct tide_pool *p, void *item,
                                    int64_t now);
/* Settles a make left open by made_untried: ok when its resource served
 * (the backoff resets, the breaker counts a success), not ok when it died
 * first (the breaker counts a failure and backoff holds makes, as after
 * unmade, with a delay jittered by roll). The resource itself is
 * taken off the books with give or drop as usual. */
TIDE_API void tide_pool_tried(struct tide_pool *p, int64_t now, double roll,
                              bool ok);
/* Reports how a loan went, for the breaker: ok for an accepted release,
 * not ok for a discard, a release judged unfit or a failed health check.
 * Backoff is not touched: it is about making. */
TIDE_API void tide_pool_report(struct tide_pool *p, int64_t now, bool ok);
/* Hands one back, keeping the birth it was lent with, so life retires a
 * connection reused all along. Returns 1 when kept; 0 when not (enough idle
 * already, the pool closed, or it was broken or drained): the caller closes
 * it. With streams > 1 a give ends one loan: 1 while others of it are out.
 * A pointer the pool never lent fills an open reservation (a MAKE whose
 * made() was skipped) and is born now. Misuse returns TIDE_EDOUBLE (no loan
 * of it is out: it is idle here already, do not close it) or TIDE_EUNKNOWN
 * (not ours, no reservation: the caller still owns it); counts stay
 * correct. */
TIDE_API int tide_pool_give(struct tide_pool *p, void *item, int64_t now);
/* The slot the pool files item under, or TIDE_NO_SLOT (not on the books).
 * A runtime keeping its own record of each resource can note it there and
 * give with it, sparing the pool its lookup. It stays the item's from made
 * (or made_untried, or adoption) until the item leaves the books: a give not
 * kept, drop, evict, close, or a take answering STALE. */
#define TIDE_NO_SLOT UINT32_MAX
TIDE_API uint32_t tide_pool_slot(const struct tide_pool *p, const void *item);
/* tide_pool_give with the slot from tide_pool_slot: the same answers. A slot
 * that no longer holds item is no error: the pool then looks item up. */
TIDE_API int tide_pool_give_at(struct tide_pool *p, uint32_t slot, void *item,
                               int64_t now);
/* Takes a broken resource off the books: lent, or idle and found dead (peer
 * closed). The caller closes it. An unknown pointer fills an open
 * reservation, then is dropped. 0, or TIDE_EUNKNOWN. With streams > 1 a
 * drop ends one loan and breaks the resource for every loan of it (see
 * tide_pool_break): 1 while others are out (do not close it yet; the last
 * of them to come back, by give or drop, answers 0). */
TIDE_API int tide_pool_drop(struct tide_pool *p, void *item, int64_t now);
/* Removes up to n idle resources past keep or life, writes them to out for
 * the caller to close, returns how many. n returned means call again. */
TIDE_API size_t tide_pool_evict(struct tide_pool *p, int64_t now, void **out,
                                size_t n);
/* Shuts the pool: from now take answers SHED (TIDE_GUARD_CLOSED) and give
 * answers 0 (close it). Removes up to n idle resources to out and returns how
 * many; n returned means call again. Lent ones come back through give/drop. */
TIDE_API size_t tide_pool_close(struct tide_pool *p, void **out, size_t n);

/* Asks for room to make one more even though idle ones may exist: what a
 * runtime keeping a minimum of resources does. Answers MAKE (reserved, as
 * from take), or WAIT, LATER or SHED as take would; never READY or STALE.
 * The shedder is not asked: nothing is lent. */
TIDE_API struct tide_taken tide_pool_grow(struct tide_pool *p, int64_t now,
                                          double roll);
/* Takes one idle resource aside for a health check: it counts as busy, is
 * neither lent by take nor evicted, and keeps the time it has rested. Give
 * it back with tide_pool_give (it returns to its place among the idle, by
 * rest time, so a check does not make a resource look freshly used) or
 * tide_pool_drop when the check failed. 0, TIDE_ENOTIDLE (lent, held or
 * being made) or TIDE_EUNKNOWN. */
TIDE_API int tide_pool_hold(struct tide_pool *p, void *item);

/* ---- shared loans ----------------------------------------------------

With limits.streams above 1 a resource carries up to that many loans at
once: a take lends a resource that has loans but room for another before
it asks for a MAKE (which one: limits.sharing), and give, drop and the
rest count loans one by one. What changes, and what does not:

- A resource is idle only with no loan out: idle, keep (counted from its
  last loan's return), eviction, hold and the idle limit are about those.
  `life` counts from its birth, as ever: one past it takes no new loan,
  and the give of its last loan answers 0 (close it), as a connection
  draining for its age closes with its last stream. (With streams 1 that
  give keeps it and the next take hands it back STALE, the exclusive
  pool's answers being kept exactly as they were.)
- give ends one loan: 1 while it has others out (do not close it), then
  what it always answered for the last (kept, or 0: close it). drop ends
  one loan too and says the resource broke, for every loan of it: it takes
  no new loan and the last loan back, by give or drop, answers 0 and hands
  it over for closing, once. drop answers 1 while other loans are out.
- A loan is a caller's request: the shedder counts loans in flight, and
  its ceiling starts at size x streams; the breaker and backoff hear what
  the runtime reports, and must hear one failure per broken resource, not
  one per loan: tide_pool_break says which call broke it, and that call's
  failure is the one reported (tide_pool_tried(ok = false) once for a
  resource made untried that broke before it served).
- Counts: live, idle and busy count resources; tide_pool_loans counts
  loans. take and give stay O(1) in the pool's size and allocate nothing;
  finding the busiest or least busy resource with room is one to three
  word scans (O(log64) in the streams). A pool with streams > 1 keeps 12
  bytes a slot more; one with streams 1 keeps none of this: its every
  answer is the exclusive pool's, and its paths are as fast.

How a runtime (an adapter) uses it, per loan:
  take / take_idle        a shared loan: READY may be a resource already
                          lent to others; make: made() registers it with
                          one loan, and more may be taken from it at once.
  take_alone / take_idle_alone
                          an exclusive loan (a transaction, a subscriber):
                          an idle resource or a MAKE, never one with loans.
                          A resource made for an exclusive borrower is made
                          exclusive by tide_pool_alone right after made().
  must_wait, must_wait_alone
                          whether the take of each kind can only WAIT now,
                          with no side effect: a runtime serving one FIFO
                          queue of both kinds asks the one its head needs
                          and stops there, so an exclusive waiter at the
                          head holds back the shared ones behind it (no
                          barging) until a resource drains to no loan or
                          room to make one appears: it is never starved.
  give / give_at          a release; 1 while other loans are out.
  break                   the protocol layer saw the connection fail (a
                          reset, a GOAWAY with error) with loans out: 1 the
                          first time, which is the failure to report; the
                          borrowers' loans then come back by give or drop.
  drop                    a discard: call break first to learn whether this
                          discard is the one failure to report.
  set_streams             the peer's limit (HTTP/2 SETTINGS); 0 drains.
The runtime owns the resource's read side while several borrowers share it
(the protocol layer routes each reply to its borrower); the pool owns the
counts, the capacity, the lifetime and the exactly-once hand-back. */

/* How a resource is shared now (tide_pool_share). */
struct tide_share {
    int64_t loans;   /* loans of it out now */
    int64_t streams; /* loans it may carry: its own capacity, at most
                        limits.streams; 0 once drained */
    bool broken;     /* takes no new loan; leaves when the last returns */
    bool draining;   /* the same, from a capacity of 0 (no failure) */
    bool alone;      /* its loan is exclusive (always so with streams 1) */
};

/* tide_pool_take for an exclusive loan: the resource is lent to this
 * borrower alone and takes no other loan until this one comes back. An
 * idle one (READY or STALE, as take answers), else MAKE, WAIT, LATER or
 * SHED as take would: never a resource that already has loans. With
 * streams 1 it is tide_pool_take. */
TIDE_API struct tide_taken tide_pool_take_alone(struct tide_pool *p,
                                                int64_t now, double roll);
/* tide_pool_take_idle for an exclusive loan: an idle one only. With
 * streams 1 it is tide_pool_take_idle. */
TIDE_API struct tide_taken tide_pool_take_idle_alone(struct tide_pool *p,
                                                     int64_t now);
/* tide_pool_must_wait for tide_pool_take_alone. */
TIDE_API bool tide_pool_must_wait_alone(const struct tide_pool *p);
/* Makes the one loan of item exclusive: nobody else is lent it until that
 * loan comes back. For a resource just made for an exclusive borrower
 * (made() lends it shared), or a borrower that finds itself alone on its
 * connection. 0; TIDE_ESHARED (other loans are out: nothing changed);
 * TIDE_ENOTLENT (idle or held); TIDE_EUNKNOWN. With streams 1 every loan
 * is alone already: 0. */
TIDE_API int tide_pool_alone(struct tide_pool *p, void *item);
/* Marks a lent resource broken: it takes no new loan, and the last of its
 * loans to come back, by give or drop, hands it over for closing (answers
 * 0), once. 1 when this call broke it (report that one failure), 0 when it
 * was broken already (by a break, or a drop of one of its loans);
 * TIDE_ENOTLENT for one with no loan out (idle or held: drop it, which
 * takes it off the books at once); TIDE_EUNKNOWN. */
TIDE_API int tide_pool_break(struct tide_pool *p, void *item);
/* Sets how many loans item may carry from now on (an HTTP/2 server's
 * SETTINGS_MAX_CONCURRENT_STREAMS), held to limits.streams, the pool's own
 * ceiling, as a client caps what a server offers. Loans already out above
 * it stay out; no new one is lent until they are below it. 0 drains it:
 * no new loan (a GOAWAY), and it leaves the books once none is out; an
 * idle one at once (answers 0: close it), a lent or held one when its last
 * loan or its check comes back (give answers 0). A drain is final. 1 while
 * it stays on the books; TIDE_EINVAL (negative), TIDE_EUNKNOWN. A new
 * resource carries limits.streams until told otherwise. */
TIDE_API int tide_pool_set_streams(struct tide_pool *p, void *item,
                                   int64_t streams);
/* Reads how item is shared into *out: 0, TIDE_EUNKNOWN or TIDE_EINVAL. */
TIDE_API int tide_pool_share(const struct tide_pool *p, const void *item,
                             struct tide_share *out);
/* Loans out now (with streams 1, resources lent). */
TIDE_API int64_t tide_pool_loans(const struct tide_pool *p);
/* The most loans one resource carries now; 0 with none out. */
TIDE_API int64_t tide_pool_busiest(const struct tide_pool *p);

TIDE_API int64_t
tide_pool_live(const struct tide_pool *p); /* idle+lent+making */
TIDE_API int64_t tide_pool_idle(const struct tide_pool *p);
/* Whether a take at this moment can only answer TIDE_WAIT: nothing idle,
 * no resource with room for a shared loan, no room to make one, and neither
 * closed nor a breaker that is down (so nothing to refuse, shed or decide).
 * No side effect, and no roll to draw: a caller serving a queue asks it
 * before a take that could only wait. */
TIDE_API bool tide_pool_must_wait(const struct tide_pool *p);
/* Whether a take at this moment could lend without a make: something idle,
 * or a resource with room for a shared loan (a broken or draining one has
 * none). No side effect: a group asks it to pass over a pool whose makes
 * are held. */
TIDE_API bool tide_pool_lendable(const struct tide_pool *p);
TIDE_API int64_t
tide_pool_busy(const struct tide_pool *p); /* lent+held+making (resources) */
/* The share of new makes the breaker refuses at now; 0 without one. */
TIDE_API double tide_pool_refusal(struct tide_pool *p, int64_t now);
/* The pool's breaker, to read its state, switch it or install a strategy;
 * NULL without one. Borrowed: lives as long as the pool. */
TIDE_API struct tide_breaker *tide_pool_breaker(struct tide_pool *p);
/* Feeds the shedder an event-loop lag sample (ns). No-op without one. */
TIDE_API void tide_pool_overload(struct tide_pool *p, int64_t now, int64_t lag);
/* The limits in force, presets resolved. */
TIDE_API struct tide_limits tide_pool_limits(const struct tide_pool *p);

/* What the ward's guards hold at now, for a dashboard or a simulator's
 * boards (the breaker has its own getters). A guard the ward lacks reads
 * as described. */
struct tide_pool_guards {
    double bucket_tokens;   /* tokens there now; -1 without a bucket */
    int64_t backoff_hold;   /* ns until makes may resume; 0: no hold */
    int backoff_failures;   /* failed makes in a row (with a backoff) */
    bool backoff_probing;   /* makes fail and a probe is being made: a
                               make waits until it is made or fails */
    double shedder_ceiling; /* resources in flight allowed now; -1
                               without a shedder */
};
/* Reads the guards into *out (all "absent" for a NULL pool); changes
 * nothing but the bucket's refill to now, which take would do anyway. */
TIDE_API void tide_pool_guards(struct tide_pool *p, int64_t now,
                               struct tide_pool_guards *out);

/* ---- connections by demand -------------------------------------------

Two knobs of the limits, both off by preset, for a load that comes and
goes: keep what recent load needs, and open the next connection before it
is needed. The core decides; a runtime (the evloop adapter does all three)
tells it each loan, asks it for a preconnect, and runs its shrink each
period:

  tide_pool_note        after every loan the runtime starts (a READY
                        handed over, a made resource handed to the caller
                        it was made for, a shared loan): the pool keeps
                        the peak of loans in flight per period from it.
                        Returns true when a preconnect is due.
  tide_pool_preconnect  while a preconnect is due: MAKE (reserved, as from
                        grow: open one, then made or unmade), else the
                        answer grow would give.
  tide_pool_shrink      once a period (TIDE_DEMAND_TICKS to a window) or
                        more often: the idle resources beyond demand to
                        close.

Idle by demand (limits.demand): the peak is the most loans in flight at
once over the last window, kept as the peak of each of TIDE_DEMAND_TICKS
periods (so a peak is remembered for a window and at most one period
more). The pool needs peak / streams resources, rounded up, and with
preconnect the headroom it keeps (below). Beyond that, and beyond the floor
the runtime keeps (its minimum), idle resources are retired oldest first
(the least recently used), at most limits.retire of the excess in a period,
rounded up: a pool after a burst steps down over a few periods, and one
whose load comes back within a window keeps what the load needs. keep, life
and the idle limit still retire what they always did.

Preconnect (limits.preconnect): when loans in flight reach that share of
the capacity of the live resources (live x limits.streams; live counts the
ones being made, so a preconnect under way counts), and at least one loan
is out, the pool asks for one more, as grow does: within size, the bucket,
backoff (a failed preconnect is a failed make, unmade as any other, and
holds makes) and the breaker. Each preconnect raises the capacity it is
measured against, so it stops by itself at ceil(loans / share) resources:
it never storms. With share s, demand keeps floor(peak / (s x streams)) + 1
resources, the count at which a preconnect is no longer due, so the two
never undo each other's work. */

/* The periods a demand window is kept in: a peak is remembered for the
 * window and at most one period more, and tide_pool_shrink retires at most
 * limits.retire of the excess each period. */
#define TIDE_DEMAND_TICKS 8

/* What demand reads now (tide_pool_demand). */
struct tide_demand {
    int64_t peak;   /* the most loans in flight at once over the window
                       (with demand off: loans now) */
    int64_t needed; /* the resources that peak needs, preconnect's
                       headroom included, at most size */
    int64_t excess; /* idle resources beyond needed: what shrink would
                       retire over the coming periods (the
                       runtime's minimum aside) */
    int64_t period; /* ns: demand / TIDE_DEMAND_TICKS, at least 1; 0 with
                       demand off */
};

/* Notes the loans in flight now for demand: call it after every loan the
 * runtime starts (loans only rise at a loan, so the peak is exact). Returns
 * true when a preconnect is due (limits.preconnect on, a loan out, loans
 * at that share of the live capacity, room under size, not closed): then
 * call tide_pool_preconnect. Cheap: a compare or two. Does nothing and
 * answers false for a NULL pool or with both knobs off. */
TIDE_API bool tide_pool_note(struct tide_pool *p, int64_t now);
/* One preconnect: MAKE (reserved: open one, then made or unmade, as after
 * grow; unmade counts as a failed make, for backoff and the breaker) when
 * one is due, else WAIT (guard NONE: none due, or at size) or the answer
 * of a guard, as grow gives it (LATER for the bucket or a backoff hold,
 * WAIT guard BACKOFF while a probe is out, SHED for the breaker or a
 * closed pool). The shedder is not asked: nothing is lent. Call it again
 * while it answers MAKE and the runtime wants more at once. */
TIDE_API struct tide_taken tide_pool_preconnect(struct tide_pool *p,
                                                int64_t now, double roll);
/* Removes up to n idle resources beyond what recent demand needs (and
 * beyond least, the minimum the runtime keeps), oldest first, at most
 * limits.retire of the excess each period; writes them to out for the
 * caller to close and returns how many. 0 with demand off, a closed pool
 * or none in excess. Call it each period (or at any time: the share per
 * period holds however often it is called). */
TIDE_API size_t tide_pool_shrink(struct tide_pool *p, int64_t now,
                                 int64_t least, void **out, size_t n);
/* Reads demand now into *out (zeros for a NULL pool). */
TIDE_API void tide_pool_demand(struct tide_pool *p, int64_t now,
                               struct tide_demand *out);

/* ---- pick -------------------------------------------------------------- */

/* Which of n pools to one service to take from: two drawn by `first` and
 * `second` (each in [0, 1), distinct when n > 1), and of those the one whose
 * breaker refuses less at now, then the one with fewer busy, then the first.
 * Two random choices spread load almost as evenly as scanning every pool, and
 * cost two draws. -1 when n is 0. */
TIDE_API int tide_pick(struct tide_pool *const *pools, size_t n, int64_t now,
                       double first, double second);

#ifdef __cplusplus
}
#endif

#endif /* TIDEPOOL_CORE_H */
