/* Internals of the evloop adapter shared between its files.
 *
 * Who does what:
 *   evpool.c   creation, options, close, free, stats
 *   conns.c    the record of every resource the pool made, found by pointer
 *   serve.c    the pump: hands resources (idle or made) to waiters in order
 *   waiters.c  acquire, cancel, delivery of answers
 *   deadlines.c  acquire timeouts: one timer per distinct timeout
 *   loans.c    try_acquire, release, discard, lost, destroy
 *   makes.c    make tokens: factory calls, make timeouts, answers
 *   upkeep.c   timers armed only while there is work: eviction and the
 *              minimum, health checks, leak reports, loop-lag probes
 *   aside.c    resources aside for a factory hook: a health check of an
 *              idle one (health.c runs the rounds), a reset of a released
 *              one
 *   waits.c    the acquire-wait distribution
 *   shared.c   loans of a resource several borrowers hold at once
 *              (streams > 1): their ends, break, capacity, alone
 *
 * Re-entrancy: user callbacks (acquire answers, leak reports, close done)
 * run only from the pool's own event callbacks, inside enter()/leave(), so
 * tide_evpool_free from inside one is deferred until the outermost returns.
 * Factory answers (made, unmade, checked, lost) only change state and
 * schedule the pump; they never call a user callback themselves. */
#ifndef TIDEPOOL_EVLOOP_INTERNAL_H
#define TIDEPOOL_EVLOOP_INTERNAL_H

#include <event2/event.h>
#include <event2/event_struct.h>
#include <tidepool/evloop.h>

#include "inline.h"
#include "itemmap.h"
#include "list.h"

/* ---- resources ---- */

enum conn_state {
    CONN_FREE = 0,
    CONN_IDLE,
    CONN_LENT,      /* lent to a caller, or set aside for a waiter */
    CONN_CHECKING,  /* in a health check */
    CONN_RESETTING, /* released, being reset before it goes idle */
    CONN_LEAVING,   /* on its way to destroy: hooks may still run on it */
};

struct conn {
    void *resource; /* first: the item map reads it as the key */
    int64_t lent_at;
    int64_t made_at;
    uint32_t loans;
    uint32_t next_free;
    /* Loans of it out now, with streams > 1 only (shared.c): with streams
     * 1 a lent resource has one, and this stays 0. */
    uint32_t out;
    uint32_t slot; /* the core's slot for its key: gives skip its lookup */
    uint8_t state;
    bool leak_reported;
    /* Made, and its make's outcome still open: settled when its first
     * loan ends or it dies, a failure when it died young (a server that
     * accepts and closes, or speaks first), and with no outcome when its
     * record ends first (tide__conn_remove). See makes.c. */
    bool untried;
    /* ... and that make was the breaker's probe, in the spell of
     * RECOVERING still under way: its place is given back if the make
     * ends with no outcome. */
    bool probe;
};

#define CONN_NONE TIDE__ITEMMAP_NONE

/* The core's item for conn i is its record number (plus one: the core
 * takes no NULL), not the resource. What the core hands out (a take, an
 * eviction, a close) then names the record at once, with no lookup; only
 * a resource coming back from the caller is looked up, once. */
static inline void *tide__conn_key(uint32_t i)
{
    return (void *)((uintptr_t)i + 1);
}

static inline uint32_t tide__conn_of_key(const void *key)
{
    return (uint32_t)((uintptr_t)key - 1);
}

/* ---- waiters ---- */

enum waiter_state {
    WAITER_QUEUED = 0, /* in the FIFO, no answer yet */
    WAITER_READY,      /* answered, waiting to be delivered */
    WAITER_DELIVERING, /* its callback is running: on no list; a cancel
                          from inside it is a no-op */
};

struct tide_acquire {
    struct tide_evpool *pool;
    struct tide_acquire *prev; /* in the queue, or the ready list */
    struct tide_acquire *next;
    /* its acquire timeout: a place in a deadline queue (deadlines.c) when
     * queue >= 0, else a timer of its own when none could take it, else
     * none (timer NULL) */
    union {
        struct {
            struct tide_acquire *sooner;
            struct tide_acquire *later;
        };
        struct event *timer;
    };
    tide_acquire_cb cb;
    void *arg;
    int64_t start;
    int64_t deadline; /* start + its timeout */
    /* Makes held after failed makes when it came to need one: the run of
     * failures (the core's count) it waits through, 0 if none. A failure
     * after that one is the make it waited for failing: it is answered. */
    int held;
    /* the answer, once READY; the tide_why the callback reads is made from
     * it at delivery */
    void *resource;
    int64_t retry_after;
    char *message; /* owned copy of the answer's message, or NULL */
    int status;
    int make_error;
    int8_t queue;  /* its deadline queue, or -1 */
    uint8_t state; /* enum waiter_state */
    uint8_t guard; /* enum tide_guard */
    bool alone;    /* wants a resource with no other loan (shared.c) */
};

struct waiter_list TIDE__LIST_OF(struct tide_acquire);

/* Records of acquires answered, kept for the next ones (linked by next):
 * a busy pool then queues and answers its callers with no malloc or free.
 * A few are kept for good, enough for the callers in flight at once on a
 * steady loop; a burst's, up to queue_max (or SPARE_BURST), only until the
 * next eviction round, which gives them back to the heap: bursts a round
 * apart reuse them, and an idle pool holds no more than the few. */
#define SPARE_WAITERS 64
#define SPARE_BURST   65536
/* ... except under AddressSanitizer, which then still catches a handle
 * used after its callback returned for the use after free it is. */
#if defined(__SANITIZE_ADDRESS__)
#define SPARES_KEPT 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPARES_KEPT 0
#endif
#endif
#ifndef SPARES_KEPT
#define SPARES_KEPT SPARE_WAITERS
#endif

/* ---- makes and checks ---- */

struct tide_make {
    struct tide_evpool *pool; /* NULL once the pool is gone */
    struct tide_make *prev;
    struct tide_make *next;
    struct event timer; /* make timeout */
    bool for_waiter;    /* made for a queued caller (else for the minimum) */
    bool probe;         /* let through by a RECOVERING breaker ... */
    uint64_t spell;     /* ... in this spell of its state (breaker_spell) */
    bool abandoned;     /* timed out or cancelled: the core has forgotten it */
    bool cancelled;     /* the factory's cancel ran: it runs once at most */
    /* kept to close a late success after the pool is gone */
    void (*destroy)(void *resource, void *arg);
    void *destroy_arg;
};

/* A resource aside for a factory hook that answers later: a health check
 * of an idle one, or a reset of a released one. While aside it is live
 * and lent to nobody. The two public tokens wrap it, each as its first
 * member, so one list and one answer serve both. */
enum aside_kind {
    ASIDE_CHECK,
    ASIDE_RESET,
};

struct aside {
    struct tide_evpool *pool; /* NULL once the pool is gone */
    struct aside *prev;
    struct aside *next;
    void *resource;
    /* kept to close the resource after the pool is gone */
    void (*destroy)(void *resource, void *arg);
    void *destroy_arg;
    enum aside_kind kind;
};

struct tide_check {
    struct aside a;
};

struct tide_reset {
    struct aside a;
};

/* ---- wait distribution ---- */

#define WAITS_BUCKETS (64 * 8)

struct waits {
    uint64_t count;
    int64_t max;
    uint64_t buckets[WAITS_BUCKETS];
};

/* The recent waits: a ring of slices of RECENT_SLICE each, the newest
 * holding now, so "the last minute" moves on in RECENT_SLICE steps. */
#define RECENT_SLICES 4
#define RECENT_SLICE  TIDE_SEC(15)

struct recent_waits {
    int64_t newest; /* slice index (clock / RECENT_SLICE) of the newest */
    int64_t newest_starts; /* the clock value where the newest slice starts */
    bool started;
    struct waits slices[RECENT_SLICES];
};

void tide__waits_add(struct waits *w, int64_t ns);
/* The smallest bucket bound below which a share q of the waits fall. */
int64_t tide__waits_quantile(const struct waits *w, double q);
/* A wait of ns that ended at now, added to both: the whole distribution and
 * the recent one (what every answered acquire does; the bucket is found
 * once for the two). */
void tide__wait_ended(struct waits *all, struct recent_waits *r, int64_t now,
                      int64_t ns);
/* n waits of 0 that ended at now, added to both. */
void tide__waits_zero(struct waits *all, struct recent_waits *r, int64_t now,
                      uint64_t n);
/* The waits of the slices within the last RECENT_SLICES x RECENT_SLICE of
 * now, merged into *out. */
void tide__recent_merge(struct recent_waits *r, int64_t now, struct waits *out);

/* ---- the pool ---- */

struct counters {
    uint64_t made;
    uint64_t destroyed;
    uint64_t make_failures;
    uint64_t timeouts;
    uint64_t shed;
    uint64_t stale;
    uint64_t evicted;
    uint64_t health_failures;
    uint64_t leaks;
    uint64_t lost;
    uint64_t acquires;
    uint64_t queue_full;
    uint64_t cancels;
    uint64_t dirty;
    uint64_t reset_failures;
    uint64_t retired;
    uint64_t abandoned;
    uint64_t broken;
    uint64_t stale_loans;
    uint64_t held;
    uint64_t preconnects;
    uint64_t demand_retired;
    uint64_t connect_waits;
};

/* A timer that is armed only while there is work for it. */
struct upkeep_timer {
    struct event ev;
    struct tide_evpool *pool;
    void (*work)(struct tide_evpool *p); /* what it does when it fires */
    bool armed;
    int64_t period;
    int64_t due; /* lag probe: when it should have fired */
};

/* An upkeep key no state folds into: the next sync looks at every timer. */
#define UPKEEP_STALE 0x100u

/* A one-shot timer that runs the pump when it fires: the waiters' retry
 * after a LATER, and the top-up's wake when its hold ends. */
struct wake {
    struct event ev;
    struct tide_evpool *pool;
    bool armed;
};

/* The waiters with one acquire timeout, oldest first: they were queued in
 * that order, so they time out in it, and one timer at the head's deadline
 * serves them all (deadlines.c). */
#define DEADLINE_QUEUES 8
_Static_assert(DEADLINE_QUEUES <= INT8_MAX,
               "a waiter keeps its deadline queue's number in an int8_t");

struct deadline_queue {
    struct event timer;
    struct tide_evpool *pool;
    int64_t span; /* the timeout of all in it; 0 while it has none */
    bool armed;
    struct tide_acquire *head;
    struct tide_acquire *tail;
    int64_t count;
};

struct tide_evpool {
    struct event_base *base;
    struct tide_factory factory;
    struct tide_pool *core;
    struct tide_breaker *breaker; /* the core's, or NULL */
    /* Changes of the breaker's state heard so far: a probe belongs to the
     * spell it was let through in, and a change forgets the probes out. */
    uint64_t breaker_spell;
    int64_t probes; /* records flagged `probe` */
    bool shedding;  /* the ward has a shedder */
    /* limits.streams > 1: a resource may carry several loans (shared.c) */
    bool shared;
    int64_t streams; /* limits.streams */

    int64_t min;
    int64_t make_timeout;
    int64_t acquire_timeout;
    int64_t queue_max;
    int64_t leak_after;
    int64_t retire_after;
    tide_leak_cb on_leak;
    void *leak_arg;

    /* resources */
    struct conn *conns;
    uint32_t conn_capacity;
    uint32_t conn_free;
    struct tide__itemmap map;
    int64_t lent;
    int64_t checking;
    int64_t resetting;

    /* callers */
    struct waiter_list queued;
    struct waiter_list ready;
    struct tide_acquire *spare;
    int64_t spares;
    int64_t spares_burst;  /* spares kept while eviction runs */
    const char *lent_text; /* tide_strerror(0), the message of every loan */
    int deadline_hint;     /* the deadline queue the last acquire went to */
    struct deadline_queue deadlines[DEADLINE_QUEUES];

    /* makes, and checks and resets, in progress */
    struct make_list TIDE__LIST_OF(struct tide_make) makes;
    struct aside_list TIDE__LIST_OF(struct aside) asides;
    int64_t makes_for_waiters;
    int64_t makes_pending; /* answered by neither the factory nor a timeout */
    /* Makes are held after failed makes, ward or not (the core's backoff
     * is the ward's, else the preset): the top-up to min waits out the
     * hold on this wake, while below min. */
    struct wake topup_wake;

    /* events */
    struct event pump;
    bool pump_due; /* the pump event is active: a schedule has nothing to do */
    bool pumping;  /* the pump runs: a schedule asks it for another round */
    bool pump_again;
    int delivering;            /* an acquire's callback is running */
    struct wake retry;         /* after LATER, for the waiters */
    struct upkeep_timer evict; /* eviction, and the rounds of top-ups */
    bool evicting;             /* evict_interval is not TIDE_FOREVER */
    struct upkeep_timer health;
    struct upkeep_timer leak;
    struct upkeep_timer lag;
    struct upkeep_timer shrink; /* demand: idle beyond it retired (demand.c) */
    /* connections by demand (demand.c): loans are noted as they start,
     * and the pump opens the preconnects they make due */
    bool noting;
    bool preconnecting;
    unsigned upkeep_key; /* what the timers were last synced for */
    struct event closed_ev;

    uint64_t rng;
    int64_t now; /* the last clock reading: see tide__evpool_now_fast */
    /* The last reading is young enough for try_acquire and release (see
     * upkeep.c, "The pool's reading"): always, or while eviction runs. */
    bool reading_untimed;
    bool reading_by_eviction;

    bool closing;
    bool close_done;
    tide_closed_cb on_closed;
    void *closed_arg;
    int depth;
    bool free_pending;

    struct counters counters;
    struct waits waits;
    struct recent_waits recent;
    /* Answers delivered in the same callback of the pool as they were
     * given (a caller acquiring again from its callback) waited 0: they
     * are counted once the callback ends (tide__evpool_leave) or stats are
     * read, not one by one. */
    uint64_t zero_waits;
    int make_error;     /* the last make's code: 0 once one succeeds */
    int last_error;     /* the last failed make's code, kept */
    char *last_message; /* and its message */
};

/* t + span, saturating at TIDE_FOREVER (span >= 0): spans come from the
 * options and may be as large as the user likes. */
static inline int64_t tide__after(int64_t t, int64_t span)
{
    return span > INT64_MAX - t ? TIDE_FOREVER : t + span;
}

/* evpool.c */
/* Reads the monotonic clock into p->now. */
int64_t tide__evpool_clock(struct tide_evpool *p);

/* Inside one of the pool's own callbacks the clock was read on entry; the
 * calls a callback makes (acquire, release, ...) reuse that reading, as
 * libevent's cached time does, instead of paying a clock read each. */
static inline int64_t tide__evpool_now(struct tide_evpool *p)
{
    return p->depth > 0 ? p->now : tide__evpool_clock(p);
}

/* The time try_acquire and release decide with. A clock read costs more
 * than the rest of a loan (30 to 40 ns against a few), and what those two
 * stamp with the time (idle since, keep and life, the breaker's windows)
 * is looked at once an eviction round at best. So while a timer refreshes
 * the reading at least that often (upkeep.c, reading_init) they take
 * it as it is, and read the clock only when it may be older. */
static inline int64_t tide__evpool_now_fast(struct tide_evpool *p)
{
    bool young =
        p->reading_untimed || (p->reading_by_eviction && p->evict.armed);
    return young ? p->now : tide__evpool_now(p);
}
double tide__evpool_roll(struct tide_evpool *p);
void tide__evpool_enter(struct tide_evpool *p);
/* Returns false when the pool was freed on the way out. */
bool tide__evpool_leave(struct tide_evpool *p);
void tide__evpool_check_closed(struct tide_evpool *p);
void tide__timeval(int64_t ns, struct timeval *tv);

/* conns.c */
int tide__conns_init(struct tide_evpool *p, uint32_t capacity);
void tide__conns_dispose(struct tide_evpool *p);
/* The record of resource, or CONN_NONE. Inline, with the stride known
 * here: every loan looks up its resource, and a call and a multiply cost
 * as much as the probe. */
static inline uint32_t tide__conn_find(const struct tide_evpool *p,
                                       const void *resource)
{
    if (!resource || !p->map.cells)
        return CONN_NONE;
    return p->map.cells[tide__itemmap_seek_in(&p->map, resource, p->conns,
                                              sizeof *p->conns)];
}
/* A record for a new resource; CONN_NONE when out of memory. */
uint32_t tide__conn_add(struct tide_evpool *p, void *resource);
/* The record of conn i ends, however its resource goes (destroyed after a
 * loan or while idle, evicted, closed, freed): its make, if still open,
 * is settled here with no outcome (tide__conn_forgo), so no end of a
 * resource leaves a promise behind. */
void tide__conn_remove(struct tide_evpool *p, uint32_t i);

/* loans.c */
/* An idle resource the core handed out (READY or STALE) leaves idle: a
 * stale one is destroyed, a dead one (the factory's alive says so) is
 * destroyed and reported to the breaker. Returns the record of a live one,
 * lent in the core and ready for tide__loan_start, or CONN_NONE. */
uint32_t tide__conn_take_idle(struct tide_evpool *p, struct tide_taken t);
/* Lends the idle head at once (nobody may be queued): 0 with *resource,
 * or TIDE_EWOULDBLOCK, TIDE_EUNAVAILABLE (shed, counted), TIDE_ECLOSED.
 * What try_acquire does, and an acquire that can be answered at once.
 * alone: an exclusive loan, an idle resource only (streams > 1). */
int tide__lend_now_kind(struct tide_evpool *p, int64_t now, void **resource,
                        bool alone);
static inline int tide__lend_now(struct tide_evpool *p, int64_t now,
                                 void **resource)
{
    return tide__lend_now_kind(p, now, resource, false);
}
/* Hands conn i (lent in the core) to a caller: counts the loan. */
void tide__loan_start(struct tide_evpool *p, uint32_t i);
/* Takes back a loan the caller never saw (set aside for a waiter that was
 * cancelled before delivery): no loan counted, no reusable() asked. */
void tide__loan_undo(struct tide_evpool *p, uint32_t i);
/* The same for a resource lent to a caller who gave it up before seeing it
 * (a cancel of an answer ready but not delivered, here or in a group), the
 * clock read for its give: false when p has no such loan. */
bool tide__loan_unseen(struct tide_evpool *p, void *resource);
/* Moves conn i to `to` and, if it was idle, stops watching it. The state
 * moves first, so a loss reported from inside watch(false) is refused. */
void tide__conn_leave_idle(struct tide_evpool *p, uint32_t i,
                           enum conn_state to);
/* Takes conn i off the books in the core, then destroys its resource. */
void tide__conn_destroy(struct tide_evpool *p, uint32_t i);
/* Destroys a resource that has no record (a late or orphan make). */
void tide__resource_destroy(struct tide_evpool *p, void *resource);
/* A lent conn comes back to the core: idle (watched) or destroyed. */
void tide__conn_give(struct tide_evpool *p, uint32_t i);
/* Reports how a loan went to the breaker (see core.h, "What feeds the
 * ward"). */
void tide__report(struct tide_evpool *p, bool ok);

/* shared.c: loans of a resource that may carry several (streams > 1) */
/* How a loan ends. */
enum loan_end {
    LOAN_RELEASED,  /* release: back fit, for the next borrower */
    LOAN_FAILED,    /* discard: the backend's failure */
    LOAN_SERVED,    /* retire: it served, and must not be reused */
    LOAN_ABANDONED, /* abandon: the borrower gave it up; no outcome */
    LOAN_STALE,     /* stale: closed before any byte was answered; no
                       outcome unless a first loan died young */
};
/* One loan of lent conn i ends (release, discard, retire, abandon or
 * stale); the last one back does what an exclusive loan's end does.
 * Returns 0, or TIDE_STALE for a loan taken for stale; conn i may be gone
 * after. */
int tide__shared_end(struct tide_evpool *p, uint32_t i, enum loan_end how);
/* The core's calls for a caller of either kind: an exclusive one (alone)
 * takes an idle resource or a make, never room beside other loans. */
static inline struct tide_taken tide__take_idle_for(struct tide_evpool *p,
                                                    int64_t now, bool alone)
{
    return alone ? tide_pool_take_idle_alone(p->core, now)
                 : tide_pool_take_idle(p->core, now);
}
static inline struct tide_taken
tide__take_for(struct tide_evpool *p, int64_t now, double roll, bool alone)
{
    return alone ? tide_pool_take_alone(p->core, now, roll)
                 : tide_pool_take(p->core, now, roll);
}
static inline bool tide__must_wait_for(const struct tide_evpool *p, bool alone)
{
    return alone ? tide_pool_must_wait_alone(p->core)
                 : tide_pool_must_wait(p->core);
}

/* How many waiters at the queue's head the makes in flight cover: one
 * each, or with streams > 1 as many as a new resource carries (a make
 * for an exclusive waiter is counted so too: it errs toward waiting for
 * a make rather than making more than the queue needs). */
static inline int64_t tide__covered(const struct tide_evpool *p)
{
    return p->makes_for_waiters * p->streams;
}

/* serve.c */
/* The pump's event made active, once for any number of callers. */
void tide__serve_activate(struct tide_evpool *p);
/* Has the pump run soon. While it runs, what would schedule it (a caller
 * acquiring again from its callback, a release there) asks for another
 * round of the same run instead: no event made active and dispatched, no
 * clock read, per caller served, on a busy loop. Inline, as that is the
 * common case and a call would cost its callers their registers. */
static inline void tide__serve_schedule(struct tide_evpool *p)
{
    if (p->pumping)
        p->pump_again = true;
    else
        tide__serve_activate(p);
}
void tide__wake_init(struct tide_evpool *p, struct wake *w);
/* Arms w to run the pump in span ns, unless it is armed already. */
void tide__wake_in(struct wake *w, int64_t span);
void tide__wake_stop(struct wake *w);
void tide__serve(struct tide_evpool *p);
/* A made resource (lent in the core) goes to the oldest waiter, or idle. */
void tide__serve_made(struct tide_evpool *p, uint32_t i);

/* waiters.c */
void tide__waiter_answer(struct tide_evpool *p, struct tide_acquire *w,
                         int status, void *resource, enum tide_guard guard,
                         int64_t retry_after, const char *message);
/* The answer of a loan: tide__waiter_answer with status 0 and nothing
 * else to say. */
void tide__waiter_lend(struct tide_evpool *p, struct tide_acquire *w,
                       void *resource);
void tide__waiters_deliver(struct tide_evpool *p);
void tide__waiters_fail_all(struct tide_evpool *p, int status);
void tide__waiters_free_all(struct tide_evpool *p);

/* deadlines.c */
void tide__deadlines_init(struct tide_evpool *p);
/* Starts w's acquire timeout of span ns (TIDE_FOREVER: none); 0, or
 * TIDE_ENOMEM. */
int tide__deadline_start(struct tide_evpool *p, struct tide_acquire *w,
                         int64_t span);
void tide__deadline_stop_timer(struct tide_acquire *w);
/* tide__deadline_stop out of line, for the rare record freed with its
 * timeout still running (a cancel, a free): kept out of the paths that
 * free a record every loan. */
void tide__deadline_drop(struct tide_acquire *w);

/* w joins deadline queue k (q) at its tail. */
static inline void tide__deadline_join(struct deadline_queue *q, int k,
                                       struct tide_acquire *w)
{
    w->queue = (int8_t)k;
    w->sooner = q->tail;
    w->later = NULL;
    if (q->tail)
        q->tail->later = w;
    else
        q->head = w;
    q->tail = w;
    q->count++;
}

static inline void tide__deadline_leave(struct deadline_queue *q,
                                        struct tide_acquire *w)
{
    if (w->sooner)
        w->sooner->later = w->later;
    else
        q->head = w->later;
    if (w->later)
        w->later->sooner = w->sooner;
    else
        q->tail = w->sooner;
    w->sooner = w->later = NULL;
    q->count--;
}

/* tide__deadline_start, inline for a busy pool's acquire: the queue the
 * last acquire joined has this span and its timer running, so joining it
 * is a link and nothing more. */
static inline int tide__deadline_begin(struct tide_evpool *p,
                                       struct tide_acquire *w, int64_t span)
{
    struct deadline_queue *q = &p->deadlines[p->deadline_hint];
    if (q->span != span || !q->armed)
        return tide__deadline_start(p, w, span);
    tide__deadline_join(q, p->deadline_hint, w);
    return 0;
}

/* w is answered or cancelled: its timeout ends. */
static inline void tide__deadline_stop(struct tide_acquire *w)
{
    if (w->queue >= 0) {
        tide__deadline_leave(&w->pool->deadlines[w->queue], w);
        w->queue = -1;
    } else if (w->timer) {
        tide__deadline_stop_timer(w);
    }
}
/* Stops the timer of each deadline queue left empty: a pending timer holds
 * the loop. Left armed until here, a queue that empties and fills again
 * within a pump run (a caller acquiring again from its callback) costs no
 * timer change at all. */
void tide__deadlines_sync(struct tide_evpool *p);
void tide__deadlines_stop_all(struct tide_evpool *p);

/* Gives the spare records beyond the few kept for good back to the heap. */
void tide__waiters_trim(struct tide_evpool *p);

/* makes.c */
void tide__make_start(struct tide_evpool *p, bool for_waiter);
/* A resource younger than this when it dies untried was never really
 * made: a server that accepts and closes, or greets and is read as
 * unasked bytes, does it within milliseconds. One that lived longer and
 * was closed by the server's idle timeout proved its make. */
#define UNTRIED_SPAN TIDE_SEC(1)
/* Settles the open make of conn i, if it is untried: `died` when it was
 * found dead (lost, alive() false, a failed check) or its first loan
 * failed (discarded, refused on release), not when that loan came back
 * fit or it was retired. Returns true when that counted as a failed make
 * (so it is no further outcome of its own). */
bool tide__conn_settle_make(struct tide_evpool *p, uint32_t i, bool died);
/* Inline: every release asks, and all but a resource's first loan answer
 * no. */
static inline bool tide__conn_settle(struct tide_evpool *p, uint32_t i,
                                     bool died)
{
    return p->conns[i].untried && tide__conn_settle_make(p, i, died);
}
/* The open make of conn i ends with no outcome: its resource left before
 * its first loan could prove or fail it (the borrower abandoned that loan,
 * or the pool evicted, closed or freed it unused). Neither the breaker nor
 * the backoff hears of it, but a probe gives its place back: held, the
 * breaker would stay RECOVERING, refusing every make, for good. */
void tide__conn_forgo(struct tide_evpool *p, uint32_t i);
/* The breaker changed state: the probes out belong to a spell that is
 * over (see tide_breaker_forgo). */
void tide__probes_forget(struct tide_evpool *p);
void tide__makes_cancel_all(struct tide_evpool *p);
void tide__makes_orphan_all(struct tide_evpool *p);

/* aside.c */
/* Takes conn i aside for the factory's check (it is idle) or reset (it was
 * just released: no longer counted as lent). */
void tide__aside_start(struct tide_evpool *p, uint32_t i, enum aside_kind kind);
/* The pool is being freed: each resource aside is left to its token,
 * which destroys it when the factory answers. */
void tide__asides_orphan_all(struct tide_evpool *p);

/* upkeep.c */
void tide__upkeep_init(struct tide_evpool *p, int64_t evict_interval,
                       int64_t health_interval, int64_t lag_interval);
/* Arms each timer that has work and is not armed, and stops each that has
 * none, so an idle pool holds no pending event; cheap when nothing
 * changes. Call it after anything that changes the counts. */
void tide__upkeep_sync(struct tide_evpool *p);
void tide__upkeep_stop(struct tide_evpool *p);
void tide__topup(struct tide_evpool *p);

/* health.c */
void tide__health_round(struct tide_evpool *p);

/* demand.c */
/* Reads the knobs from the core's limits: what is noted, and the shrink
 * timer's period (before tide__upkeep_init). */
void tide__demand_setup(struct tide_evpool *p);
/* The pump's step: the preconnects the core says are due. */
void tide__preconnect(struct tide_evpool *p);
/* The shrink timer's work. */
void tide__shrink(struct tide_evpool *p);

#endif
