/* Internals of the group (<tidepool/group.h>) shared between its files.
 *
 * Who does what:
 *   group.c           creation, close, free, the clock and random source,
 *                     the enter/leave guard
 *   group_members.c   add, remove and drain upstreams; their records
 *   group_pick.c      which upstream an acquire goes to: the held off
 *                     passed over (unless in panic), two drawn, the
 *                     cheaper taken
 *   group_route.c     what the pick weighs for each upstream: its loans
 *                     timed (peak-EWMA), its slow start, its last minute
 *   group_budget.c    the retry budget
 *   group_failover.c  sending an acquire to an upstream, and on to another
 *                     when that one cannot serve
 *   group_acquire.c   acquire, try_acquire, cancel, the cap, answers and
 *                     their delivery, the ends of a loan
 *   group_stats.c     the group's stats and one upstream's
 *
 * Re-entrancy: user callbacks run only from the group's own events
 * (an acquire's delivery, the close's done), inside enter()/leave(), so
 * tide_group_free from inside one is deferred until the outermost
 * returns. */
#ifndef TIDEPOOL_GROUP_INTERNAL_H
#define TIDEPOOL_GROUP_INTERNAL_H

#include <tidepool/group.h>

#include "evloop_internal.h"

/* Counts over a sliding span in RING_SLOTS steps: the slot of the newest
 * step holds now, so the span moves on a step at a time. Two counts a
 * slot (what they are is the user's). Bounded memory whatever the rate,
 * where the core's tide_window keeps a stamp per event. */
#define RING_SLOTS 6

struct ring {
    int64_t step;   /* span / RING_SLOTS */
    int64_t newest; /* step index (clock / step) of the newest slot */
    bool started;
    uint64_t a[RING_SLOTS];
    uint64_t b[RING_SLOTS];
};

/* A loan out, timed from its answer (group_route.c). */
struct loan_stamp {
    void *resource;
    int64_t at;
};

/* What the pick weighs for one upstream (group_route.c). */
struct route {
    double latency;    /* the peak-EWMA, ns, as of `updated` */
    int64_t updated;   /* when latency was last set */
    bool timed;        /* a loan of it has ended: latency means something */
    int64_t ramp_from; /* its slow start began here ... */
    bool ramping;      /* ... and is not over */
    bool held;         /* held off at the last look */
    bool spell;        /* held off since it last lent ... */
    int64_t held_from; /* ... first seen so here ... */
    int64_t held_last; /* ... and last here */
    bool was_open;     /* its breaker was open in this spell */
    bool ramped;       /* its slow start began since it was last held */
    /* loans out, in the order they were lent: [loans_head, n_loans) */
    struct loan_stamp *loans;
    size_t loans_head;
    size_t n_loans;
    size_t loans_capacity;
    struct ring lent;  /* a: loans lent */
    struct ring ended; /* a: loans timed, b: their durations summed (ns) */
    uint64_t failures;
};

struct tide_group_upstream {
    struct tide_group *group;
    struct tide_group_upstream *prev;
    struct tide_group_upstream *next;
    char *name;
    struct tide_evpool *pool; /* NULL once its close finished */
    int64_t lent;             /* loans out through the group */
    /* acquires at its pool, and answers naming it not yet delivered: the
     * record outlives them */
    int64_t refs;
    bool removed;
    /* an open breaker whose retry is due gets one acquire at a time, as
     * its probe, since the pick alone would always prefer a healthy one */
    bool probing;
    int64_t probe_after;
    struct route route;
};

enum acquire_state {
    ACQ_CAPPED = 0, /* in the cap's FIFO */
    ACQ_AT_POOL,    /* acquiring at an upstream's pool */
    ACQ_READY,      /* answered, its event active to deliver */
    ACQ_DELIVERING, /* its callback is running */
};

struct tide_group_acquire {
    struct tide_group *group;
    struct tide_group_acquire *prev;
    struct tide_group_acquire *next;
    struct event ev; /* the cap wait's timeout, then the delivery */
    tide_group_acquire_cb cb;
    void *arg;
    int64_t deadline;
    enum acquire_state state;
    bool holds_slot; /* counted under the cap */
    bool probe;      /* sent to its upstream as an open breaker's probe */
    bool retry;      /* a tide_group_retry: its first try is a retry */
    /* at the pool */
    struct tide_group_upstream *at;
    struct tide_acquire *pool_handle;
    /* upstreams tried, so a failover never goes back to one */
    struct tide_group_upstream **tried;
    size_t n_tried;
    size_t tried_capacity;
    /* the answer */
    int status;
    struct tide_group_upstream *answered_by; /* holds a ref when set */
    void *resource;
    struct tide_why why;
    char *message;
};

struct acquire_list TIDE__LIST_OF(struct tide_group_acquire);
struct upstream_list TIDE__LIST_OF(struct tide_group_upstream);

struct tide_group {
    struct event_base *base;
    int64_t cap;
    int64_t acquire_timeout;
    int64_t queue_max;
    uint64_t rng;
    int64_t (*clock)(void *arg);
    void *clock_arg;
    int64_t decay;
    int64_t slow_start;
    double panic_share;

    /* the retry budget (group_budget.c) */
    double retry_ratio;
    double retry_reserve; /* retry_floor x retry_window, in retries */
    struct ring budget;   /* a: requests, b: retries */
    uint64_t retries_spent;
    uint64_t retries_refused;
    /* the group's loans lent in the last minute (a), for the shares */
    struct ring lent;
    /* the pick's last look: held off, and panic */
    int64_t held;
    bool panic;

    struct upstream_list upstreams; /* active and draining, added order */
    int64_t active;                 /* not removed */
    int64_t slots;                  /* loans plus acquires at pools */
    struct acquire_list capped;     /* waiting for the cap, in order */
    struct acquire_list pending;    /* at a pool, or ready to deliver */

    /* scratch for the pick, sized to the upstreams */
    struct tide_group_upstream **pick_ups;
    size_t pick_capacity;

    uint64_t acquires;
    uint64_t served;
    uint64_t failed;
    uint64_t failovers;

    bool closing;
    bool close_done;
    tide_group_closed_cb on_closed;
    void *closed_arg;
    struct event closed_ev;
    int depth;
    bool free_pending;
};

/* group.c */
/* The monotonic clock, in ns: timeouts and the pools' breakers. */
int64_t tide__group_clock(void);
/* The group's own clock (options.clock): the routing's measures. `real`
 * is a reading of tide__group_clock, returned when there is none. */
static inline int64_t tide__group_now(const struct tide_group *g, int64_t real)
{
    return g->clock ? g->clock(g->clock_arg) : real;
}
/* A roll in [0, 1) from the group's seeded source. */
double tide__group_roll(struct tide_group *g);
void tide__group_enter(struct tide_group *g);
/* Returns false when the group was freed on the way out. */
bool tide__group_leave(struct tide_group *g);
/* Schedules the close's done once nothing is left. */
void tide__group_check_closed(struct tide_group *g);

/* group_members.c */
void tide__group_upstream_free(struct tide_group_upstream *u);
/* A removed upstream's record goes once its pool closed and nothing names
 * it any more. */
void tide__group_upstream_maybe_free(struct tide_group_upstream *u);
/* Drops a reference (refs) to u, which may free it. */
void tide__group_unref(struct tide_group_upstream *u);
/* Starts the drain of u (see group_members.c). */
void tide__group_drain(struct tide_group_upstream *u);

/* group_pick.c */
/* Fills the pick's scratch with a's candidates (a may be NULL): not
 * removed, not tried, and when skip_open, not held off. Returns how many. */
size_t tide__group_candidates(struct tide_group *g,
                              struct tide_group_acquire *a, int64_t now,
                              bool skip_open);
/* Of the n candidates filled in, the one to go to; NULL when n is 0. */
struct tide_group_upstream *tide__group_choose(struct tide_group *g, size_t n,
                                               int64_t now);
/* The mean latency average of the upstreams timed but `except` (NULL:
 * none), at rnow (the group's clock); 0 when none is. */
double tide__group_mean_latency(struct tide_group *g, int64_t rnow,
                                const struct tide_group_upstream *except);
/* The upstream a goes to next, or NULL when none is left. */
struct tide_group_upstream *tide__group_pick(struct tide_group_acquire *a,
                                             int64_t now);
/* Whether an open breaker's probe is due: an acquire would carry it. */
bool tide__group_probe_due(struct tide_group *g, int64_t now);
/* A probe's acquire has left its upstream u. */
void tide__group_probe_done(struct tide_group_acquire *a,
                            struct tide_group_upstream *u, int64_t now);

/* group_route.c */
void tide__ring_init(struct ring *r, int64_t span);
void tide__ring_add(struct ring *r, int64_t now, uint64_t a, uint64_t b);
/* The sums over the span ending now. */
void tide__ring_sum(struct ring *r, int64_t now, uint64_t *a, uint64_t *b);
void tide__route_init(struct tide_group_upstream *u, int64_t now);
void tide__route_dispose(struct tide_group_upstream *u);
/* The latency average of u decayed to now (ns); 0 before any loan ended. */
double tide__route_latency(const struct tide_group_upstream *u, int64_t now);
/* Its slow-start weight now, in [0.1, 1]. */
double tide__route_weight(struct tide_group_upstream *u, int64_t now);
/* Starts a slow start, with its latency set to `mean` (the others'). */
void tide__route_ramp(struct tide_group_upstream *u, int64_t now, double mean);
/* Whether u is held off now and, if so, whether its breaker is open:
 * notes a spell held off, which its next loan ends. The first look that
 * finds it no longer held after an outage starts its slow start (its
 * latency set to the others' mean), before any caller is sent to it. */
void tide__route_held(struct tide_group_upstream *u, int64_t now, bool held,
                      bool open);
/* A loan of resource from u starts (its answer): ends a spell held off,
 * with a slow start after an outage when no look began it ... */
void tide__route_lent(struct tide_group_upstream *u, void *resource,
                      int64_t now);
/* ... and ends: timed when `timed` (released, retired, discarded), else
 * only forgotten (abandoned, stale, never seen). */
void tide__route_ended(struct tide_group_upstream *u, void *resource,
                       int64_t now, bool timed);

/* group_budget.c */
int tide__budget_init(struct tide_group *g, int64_t window, int64_t floor);
void tide__budget_dispose(struct tide_group *g);
/* A request came (an acquire, a try_acquire that lent). */
void tide__budget_request(struct tide_group *g, int64_t now);
/* Spends a retry if the budget allows one: true when it did. */
bool tide__budget_spend(struct tide_group *g, int64_t now);

/* group_failover.c */
/* Sends a to the upstream the pick chooses, or answers it. */
void tide__group_dispatch(struct tide_group_acquire *a, int64_t now);

/* group_acquire.c */
/* A place under the cap came free: the oldest capped acquire goes on. */
void tide__group_slot_free(struct tide_group *g, int64_t now);
/* Records the answer and schedules its delivery. `why` is the pool's
 * (copied) or NULL. Gives up the cap slot unless a resource is lent. */
void tide__group_answer(struct tide_group_acquire *a, int status,
                        struct tide_group_upstream *u, void *resource,
                        const struct tide_why *why, int64_t now);
/* Adds a note to an answer's message: "cause (note)". */
void tide__group_answer_note(struct tide_group_acquire *a, const char *note);
void tide__group_acquire_free(struct tide_group_acquire *a);
/* The delivery event of an answered acquire. */
void tide__group_on_deliver(evutil_socket_t fd, short what, void *arg);

#endif
