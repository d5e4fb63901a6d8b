/* Internals of the group (<tidepool/group.h>) shared between its files.
 *
 * Who does what:
 *   group.c           creation, close, free, the clock and random source,
 *                     the enter/leave guard
 *   group_members.c   add, remove and drain upstreams; their records
 *   group_pick.c      which upstream an acquire goes to
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

    struct upstream_list upstreams; /* active and draining, added order */
    int64_t active;                 /* not removed */
    int64_t slots;                  /* loans plus acquires at pools */
    struct acquire_list capped;     /* waiting for the cap, in order */
    struct acquire_list pending;    /* at a pool, or ready to deliver */

    /* scratch for the pick, sized to the upstreams */
    struct tide_pool **pick_pools;
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
/* The monotonic clock, in ns. */
int64_t tide__group_clock(void);
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
/* The upstream a goes to next, or NULL when none is left. */
struct tide_group_upstream *tide__group_pick(struct tide_group_acquire *a,
                                             int64_t now);
/* A probe's acquire has left its upstream u. */
void tide__group_probe_done(struct tide_group_acquire *a,
                            struct tide_group_upstream *u, int64_t now);

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
void tide__group_acquire_free(struct tide_group_acquire *a);
/* The delivery event of an answered acquire. */
void tide__group_on_deliver(evutil_socket_t fd, short what, void *arg);

#endif
