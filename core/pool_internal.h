/* The pool's books, shared by its two files and by nothing else: pool.c
 * (the slots, the idle stack, the reservations, the ward, and lending one
 * borrower at a time) and pool_shared.c (the states and paths of shared
 * loans, over the bookkeeping of shares.h). What both read is here, as
 * static inline helpers named as they were inside pool.c; what one file
 * calls in the other is declared at the end, prefixed tide__pool_.
 *
 * Every resource, and every reservation being made, has a slot:
 *   idle      item set, in the idle stack, link == its place there
 *   lent      item set, link == LENT (streams 1: its one loan)
 *   shared    item set, link == SHARED (streams > 1: one loan or more,
 *             counted in the shares; in a room while it has room for one
 *             more and has not outlived its life)
 *   alone     item set, link == ALONE (streams > 1: one exclusive loan)
 *   broken    item set, link == BROKEN: loans out, no new one; it leaves
 *             the books when the last comes back
 *   drained   item set, link == DRAINED: the same, for a capacity set to 0
 *             (a server going away, no failure)
 *   held      item set, link == HELD (aside for a check), or HELD_DRAINED
 *             once drained meanwhile: it leaves when the check gives it back
 *   reserved  item NULL, on the reservation queue (FIFO, linked through
 *             link), dies holds its spread life until made() turns it into
 *             a deadline
 *   free      item NULL, on the free list through link
 * and the item map finds a held item's slot by pointer. Slots are 32 bytes;
 * with the map, 40 to 48 bytes a slot. A pool with streams > 1 keeps a
 * share record per slot beside them (shares.h, 12 bytes); one with streams
 * 1 keeps none, and its paths are the ones it always had: a check of
 * `shared` sends the others away from them. */
#ifndef TIDEPOOL_CORE_POOL_INTERNAL_H
#define TIDEPOOL_CORE_POOL_INTERNAL_H

#include "core_internal.h"
#include "demand.h"
#include "itemmap.h"
#include "shares.h"

#define NIL          UINT32_MAX /* no slot; in the stack, a hole */
#define LENT         (UINT32_MAX - 1)
#define SHARED       (UINT32_MAX - 2)
#define HELD         (UINT32_MAX - 3)
#define ALONE        (UINT32_MAX - 4)
#define BROKEN       (UINT32_MAX - 5)
#define DRAINED      (UINT32_MAX - 6)
#define HELD_DRAINED (UINT32_MAX - 7) /* the lowest state: see out() */

struct slot {
    void *item;
    int64_t dies;   /* when life retires it (TIDE_FOREVER: never) */
    int64_t since;  /* idle: when it came back; lent: when it was lent,
                       with shared loans the mean of their starts;
                       reserved: when the MAKE was answered */
    uint32_t link;  /* idle: its place in the stack; a state (LENT, HELD,
                       ...); reserved: the next reservation; free: the next
                       free slot */
    uint32_t stack; /* the idle stack's entry at place (this slot's number) */
};

/* The reservations: joined at the tail, left from the head. */
struct list {
    uint32_t head;
    uint32_t tail;
};

struct tide_pool {
    struct tide_limits limits;
    struct slot *slots;
    uint32_t capacity;
    uint32_t free_head;
    /* The idle stack, `capacity` places: idle_count entries, the rest
     * holes, from idle_bottom (the oldest) up to idle_top (one past the
     * newest). Neither end is a hole while one is idle, so the newest and
     * the oldest are read directly; both are 0 while none is. */
    uint32_t idle_bottom;
    uint32_t idle_top;
    /* The place the last push went to and the item it pushed, or NIL once
     * a place has been written otherwise (see idle_push): a take from that
     * place, the newest idle one lent right after it came back, answers
     * this item without waiting on the slot number pushed there, which the
     * give found in the map, nor on the slot. */
    uint32_t pushed_place;
    void *pushed_item;
    struct list reserved; /* head: oldest reservation */
    int64_t idle_count;
    int64_t idle_most; /* limits.idle, 0 once closed: what keeps() asks */
    int64_t busy_count;     /* resources lent, held and reserved */
    int64_t held_count;     /* of those, held: no shedder ticket */
    int64_t reserved_count; /* of those, reserved */
    int64_t extra_loans;    /* loans beyond the first of each resource */
    struct tide__itemmap map;
    bool closed;
    bool shared; /* streams > 1: the shares are kept */
    bool detour; /* closed or shared: not for tide_pool_take's path for one
                    loan a resource, and so asked with a single test */
    struct tide__shares shares;

    bool has_breaker;
    bool has_bucket;
    bool has_backoff;
    bool has_shedder;
    struct tide_breaker breaker;
    struct tide_bucket bucket;
    struct tide_shedder shedder;
    struct tide_backoff backoff;
    int backoff_failures;     /* makes failed in a row */
    int64_t backoff_until;    /* no MAKE before this (INT64_MIN: none) */
    int64_t backoff_previous; /* the last delay drawn */
    /* While makes fail (backoff_failures > 0), one make at a time: a
     * probe was let through once the hold ended and is being made (made,
     * made_untried or unmade ends it). Never set without a failure. */
    bool probing;
    /* Connections by demand (demand.c); untouched by take and give. */
    struct tide__demand demand;
};

/* ---- the idle stack ---- */

static inline uint32_t *stack_at(struct tide_pool *p, uint32_t place)
{
    return &p->slots[place].stack;
}

/* The newest idle one, the next to lend; one must be idle. */
static inline uint32_t idle_newest(struct tide_pool *p)
{
    return *stack_at(p, p->idle_top - 1);
}

/* Steps the ends of the idle stack over holes. */
void tide__pool_idle_trim(struct tide_pool *p);

/* Whether the stack has no place left above its top: then, a slot coming
 * back not being idle, there are holes to close first. */
static inline bool idle_full(const struct tide_pool *p)
{
    return p->idle_top == p->capacity;
}

/* Puts slot i, holding item, on the top, the newest idle one; the stack
 * is not full. Only a push writes pushed_place; whatever else writes a
 * place (a removal, a compaction, an unhold) sets it to NIL, so while it
 * names a place, the slot there holds pushed_item. */
static TIDE__INLINE void idle_push(struct tide_pool *p, uint32_t i, void *item)
{
    uint32_t place = p->idle_top++;
    *stack_at(p, place) = i;
    p->slots[i].link = place;
    p->idle_count++;
    p->pushed_place = place;
    p->pushed_item = item;
}

/* Takes the newest idle one off the top; one must be idle. */
static TIDE__INLINE uint32_t idle_pop(struct tide_pool *p)
{
    uint32_t place = --p->idle_top;
    uint32_t i = *stack_at(p, place);
    if (--p->idle_count == 0 || *stack_at(p, place - 1) == NIL)
        tide__pool_idle_trim(p);
    return i;
}

/* Frees a slot and forgets its item. */
void tide__pool_slot_release(struct tide_pool *p, uint32_t i);

/* Hands the idle one at place out of the pool (evict, shrink): its place
 * left a hole, its slot released; returns its item. The caller trims the
 * stack's ends once after a run of these (tide__pool_idle_trim). */
static inline void *idle_hand_out(struct tide_pool *p, uint32_t place)
{
    uint32_t i = *stack_at(p, place);
    void *item = p->slots[i].item;
    *stack_at(p, place) = NIL;
    p->pushed_place = NIL;
    p->idle_count--;
    tide__pool_slot_release(p, i);
    return item;
}

/* Returns a slot to the free list; its item, if any, is off the map. */
static inline void slot_free(struct tide_pool *p, uint32_t i)
{
    struct slot *s = &p->slots[i];
    s->item = NULL;
    s->link = p->free_head;
    p->free_head = i;
}

/* The slot of item, on the books (idle, lent or held), in *at: 0, or
 * TIDE_EINVAL (NULL) or TIDE_EUNKNOWN, the answers of every call that
 * names a resource the pool must hold. */
static inline int find_held(const struct tide_pool *p, const void *item,
                            uint32_t *at)
{
    if (!p || !item)
        return TIDE_EINVAL;
    *at = tide__itemmap_find(&p->map, item);
    return *at == TIDE__ITEMMAP_NONE ? TIDE_EUNKNOWN : 0;
}

/* ---- decisions ---- */

/* Idle, lent and being made. */
static inline int64_t live(const struct tide_pool *p)
{
    return p->idle_count + p->busy_count;
}

/* Loans out and makes under way: the shedder's tickets, counted from the
 * pool's own books rather than kept twice. */
static inline int64_t in_flight(const struct tide_pool *p)
{
    return p->busy_count - p->held_count + p->extra_loans;
}

/* Past its life: it takes no new loan. */
static inline bool aged(const struct slot *s, int64_t now)
{
    return s->dies != TIDE_FOREVER && now >= s->dies;
}

static inline bool expired(const struct tide_pool *p, const struct slot *s,
                           int64_t now)
{
    if (aged(s, now))
        return true;
    return p->limits.keep != TIDE_FOREVER &&
           tide__elapsed(s->since, now) >= p->limits.keep;
}

/* Whether expired may say yes, asked with two comparisons and no more: a
 * take's fast path asks this, and leaves a yes to the slow path, which
 * asks expired. The unsigned difference now - since is below keep for
 * nearly every fresh one, and then it has not rested keep: the limits make
 * keep at least 1, and where now > since the difference is the elapsed
 * time, or past INT64_MAX, where both are at least keep. */
static inline bool may_be_expired(const struct tide_pool *p,
                                  const struct slot *s, int64_t now)
{
    return now >= s->dies ||
           (uint64_t)now - (uint64_t)s->since >= (uint64_t)p->limits.keep;
}

/* Out of the idle stack in one of the states (lent, shared, held ...):
 * they are the values from HELD_DRAINED up to NIL, which no place in the
 * stack reaches. For a slot the map found. */
static inline bool out(const struct slot *s)
{
    return s->link >= HELD_DRAINED && s->link != NIL;
}

/* Held for a check, drained meanwhile or not. */
static inline bool held(const struct slot *s)
{
    return s->link == HELD || s->link == HELD_DRAINED;
}

_Static_assert(sizeof(struct tide_taken) == 16,
               "the answer must stay small enough to return in registers");

static inline struct tide_taken answer(enum tide_answer a, void *item,
                                       int64_t span, enum tide_guard guard)
{
    if (a == TIDE_LATER)
        return (struct tide_taken){.answer = a, .guard = guard, .span = span};
    return (struct tide_taken){.answer = a, .guard = guard, .item = item};
}

/* Whether a resource given back now is kept idle: the pool is not closed
 * and fewer than limits.idle are, asked as one comparison. */
static inline bool keeps(const struct tide_pool *p)
{
    return p->idle_count < p->idle_most;
}

/* Keeps slot i, holding item, idle, the newest: 1, give's answer. */
static TIDE__INLINE int give_idle(struct tide_pool *p, uint32_t i, void *item,
                                  int64_t now)
{
    p->slots[i].since = now;
    idle_push(p, i, item);
    return 1;
}

/* The two ends of a give that are out of line (pool.c). */
int tide__pool_give_compacting(struct tide_pool *p, uint32_t i, int64_t now);
int tide__pool_give_shifting(struct tide_pool *p, uint32_t at);

/* The end of a give whose loan is settled: the resource (item, in slot i)
 * becomes the idle head (1) or leaves the books (0). No call but a tail
 * one, so the common give stays a leaf. */
static TIDE__INLINE int idle_or_leave(struct tide_pool *p, uint32_t i,
                                      void *item, uint32_t at, int64_t now)
{
    if (!keeps(p)) {
        slot_free(p, i); /* first: then nothing is live across the erase */
        return tide__itemmap_clear(&p->map, at)
                   ? 0
                   : tide__pool_give_shifting(p, at);
    }
    if (idle_full(p))
        return tide__pool_give_compacting(p, i, now);
    return give_idle(p, i, item, now);
}

/* ---- pool.c, for pool_shared.c ---- */

/* The answers of the exclusive pool's take, each decided from the start:
 * take_new with none idle (a make, if the limits and the guards allow),
 * take_slow everything (closed, the breaker down, shared loans ...). */
struct tide_taken tide__pool_take_new(struct tide_pool *p, int64_t now,
                                      double roll);
struct tide_taken tide__pool_take_slow(struct tide_pool *p, int64_t now,
                                       double roll);
/* Whether the pool lends nothing now, closed or its breaker down, and
 * then the refusal in *no. */
bool tide__pool_refuses(struct tide_pool *p, int64_t now,
                        struct tide_taken *no);
/* The newest idle one lent as `state` (LENT, SHARED, ALONE), or handed
 * back STALE, or SHED by the shedder. */
struct tide_taken tide__pool_take_idle_as(struct tide_pool *p, int64_t now,
                                          uint32_t state);
/* The newest idle one, past keep or life: out of the pool and the count. */
struct tide_taken tide__pool_hand_stale(struct tide_pool *p);
/* Takes idle slot i out of the stack, from wherever it is. */
void tide__pool_idle_unlink(struct tide_pool *p, uint32_t i);
/* Settles the loan of a lent or held slot. */
void tide__pool_end_loan(struct tide_pool *p, struct slot *s, int64_t now);
/* idle_or_leave, out of line. */
int tide__pool_idle_or_leave(struct tide_pool *p, uint32_t i, uint32_t at,
                             int64_t now);
/* Resource i leaves the books: 0, give's answer (the caller closes it). */
int tide__pool_leave_books(struct tide_pool *p, uint32_t i, uint32_t at);

/* ---- pool_shared.c, for pool.c ---- */

/* tide_pool_take off its path for one loan a resource: a pool with shared
 * loans, or one closed or with its breaker down, which its first test sends
 * on to take_slow whatever its streams. */
struct tide_taken tide__pool_take_shared_fast(struct tide_pool *p, int64_t now,
                                              double roll);
/* A shared take once the pool lends (make: or WAIT where only a live one
 * will do). */
struct tide_taken tide__pool_take_shared(struct tide_pool *p, int64_t now,
                                         double roll, bool make);
/* tide_pool_take_idle on a pool with shared loans. */
struct tide_taken tide__pool_take_live_shared(struct tide_pool *p, int64_t now);
/* The newest idle one's first shared loan, as SHARED or ALONE. */
struct tide_taken tide__pool_lend_idle_shared(struct tide_pool *p, int64_t now,
                                              uint32_t state);
/* A new resource's first loan in slot i, with shared loans. */
void tide__pool_first_shared_loan(struct tide_pool *p, uint32_t i);
/* give of one loan of slot i (map cell at): SHARED, from tide_pool_give. */
int tide__pool_give_shared(struct tide_pool *p, uint32_t i, uint32_t at,
                           int64_t now);
/* give in a state of shared loans, a break or a drain (all but LENT and
 * HELD). */
int tide__pool_give_loan(struct tide_pool *p, uint32_t i, uint32_t at,
                         int64_t now);
/* give_at of a SHARED slot when others of its loans stay out: 1, with no
 * lookup; -1 for any other give (the caller gives the usual way). */
int tide__pool_give_at_shared(struct tide_pool *p, uint32_t slot, int64_t now);
/* drop of one loan of a resource in a state of shared loans (or broken or
 * drained): it breaks for every loan; the loans still out. */
uint32_t tide__pool_drop_loan(struct tide_pool *p, uint32_t i, int64_t now);

#endif
