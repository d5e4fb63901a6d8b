/* A reference model of the pool and a driver that runs the real pool and the
 * model side by side, checking every answer and the invariants after every
 * operation. Shared by the model-based test and the libFuzzer target.
 *
 * The model covers shared loans (limits.streams > 1) too: loans per
 * resource, the rooms that pack and spread pick from (by loan count, the
 * newest first among equals; one past its life passed over), capacities
 * changed and drained, breaks and drops with loans out, exclusive loans.
 *
 * Invariants checked after each step:
 *   live <= size; idle <= the idle limit;
 *   every resource is in exactly one place (idle, lent, held, gone);
 *   a held resource returns among the idle at its place by rest time;
 *   busy = lent + reserved, live = idle + busy (the pool's counts agree with
 *   the places the driver saw each resource go); loans and the busiest
 *   resource's loans agree with the model's, and each resource's share
 *   (loans, capacity, broken, draining, alone) too;
 *   no loan beyond a resource's capacity when lent; none on a resource
 *   broken, drained, exclusive or past its life; nothing lent alone while
 *   it has another loan;
 *   nothing handed out twice (READY/STALE only ever hand out an idle one,
 *   or with shared loans one with room);
 *   nothing lost (drive_finish: every resource ever made left exactly once,
 *   through STALE, evict, close, "not kept" or drop, and never with a loan
 *   out). */
#ifndef TIDEPOOL_TEST_POOL_MODEL_H
#define TIDEPOOL_TEST_POOL_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <tidepool/core.h>

/* Called when a check fails; the test and the fuzzer each define it. */
void drive_failed(const char *what, const char *file, int line);

#define DRIVE_CHECK(cond)                                                      \
    do {                                                                       \
        if (!(cond))                                                           \
            drive_failed(#cond, __FILE__, __LINE__);                           \
    } while (0)

enum place { PLACE_NONE = 0, PLACE_IDLE, PLACE_LENT, PLACE_HELD, PLACE_GONE };

/* What a lent or held resource takes, with its loans out. */
enum lent_as {
    LENT_PLAIN = 0, /* streams 1: its one loan */
    LENT_SHARED,    /* takes more loans while it has room */
    LENT_ALONE,     /* one exclusive loan */
    LENT_BROKEN,    /* no new loan; leaves with its last */
    LENT_DRAINED,   /* the same, no failure */
};

#define DRIVE_ITEMS 4096

struct model_idle {
    int id;
    int64_t dies;
    int64_t since;
};

struct drive {
    struct tide_pool *pool;
    struct tide_limits limits; /* resolved */
    bool shared;               /* limits.streams > 1 */
    bool guarded; /* a ward is present: the pool may refuse where the
                     model would lend or make */
    int64_t now;
    bool closed;
    /* the model */
    struct model_idle idle[DRIVE_ITEMS]; /* stack: idle[n_idle - 1] on top */
    int n_idle;
    int64_t lent_dies[DRIVE_ITEMS];     /* by id, while lent or held */
    int64_t held_since[DRIVE_ITEMS];    /* by id, while held: rest time */
    int64_t reserved_life[DRIVE_ITEMS]; /* FIFO of spread lives */
    int res_head;
    int n_reserved;
    /* shared loans, by id, while on the books */
    int loans[DRIVE_ITEMS];
    int capacity[DRIVE_ITEMS];         /* loans it may carry now */
    enum lent_as lent_as[DRIVE_ITEMS]; /* while lent */
    bool held_drained[DRIVE_ITEMS];    /* while held: drained meanwhile */
    bool in_room[DRIVE_ITEMS];    /* takes the next shared loan if picked */
    long room_stamp[DRIVE_ITEMS]; /* when it came to its room */
    long stamps;
    /* where each resource is, as the driver saw it go */
    enum place place[DRIVE_ITEMS];
    int n_items;     /* ids handed to the pool so far */
    int n_lent;      /* lent and held: both count as busy */
    long departures; /* resources that left the pool */
    long made;       /* resources that entered it */
    long reentries;  /* gone pointers that entered again */
    long steps;
    /* connections by demand (limits.demand, limits.preconnect): the
     * model's peaks, a window of TIDE_DEMAND_TICKS periods kept oldest
     * first and shifted as the clock moves (the pool keeps a ring) */
    bool dm_on;
    int64_t dm_width; /* ns a period; 0: demand off */
    bool dm_started;
    int64_t dm_period;                   /* the newest period noted */
    int64_t dm_peaks[TIDE_DEMAND_TICKS]; /* [last]: dm_period's */
    int64_t dm_quota;
    int64_t dm_quota_period;
    bool dm_quota_set;
    long dm_shrunk;      /* resources shrink handed back */
    long dm_preconnects; /* MAKEs preconnect answered */
    char arena[DRIVE_ITEMS];
};

/* Sets up a drive over a new pool; 0 or the pool's error. */
int drive_init(struct drive *d, const struct tide_limits *limits,
               const struct tide_ward *ward);
/* One operation chosen by `op` (any value), with `arg` picking a resource,
 * `roll` in [0, 1) and the clock moved forward by `dt` ns first. */
void drive_step(struct drive *d, uint32_t op, uint32_t arg, double roll,
                int64_t dt);
/* Closes the pool, gives back every loan out, checks nothing was lost, and
 * frees the pool. */
void drive_finish(struct drive *d);

#endif
