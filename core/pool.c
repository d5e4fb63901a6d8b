/* Pool: the bookkeeping of holding a limited number of things.
 *
 * Every resource, and every reservation being made, has a slot:
 *   idle      item set, on the idle list (LIFO: head is the last returned)
 *   lent      item set, prev == LENT, next == NIL
 *   held      item set, prev == LENT, next == HELD (aside for a check)
 *   reserved  item NULL, on the reservation queue (FIFO, linked through
 *             next; prev unused), dies holds its spread life until made()
 *             turns it into a deadline
 *   free      item NULL, prev == FREE, on the free list through next
 * and the item map finds a held item's slot by pointer. Slots are 32 bytes;
 * with the map, 40 to 48 bytes a slot. */
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "itemmap.h"

#define NIL  UINT32_MAX
#define LENT (UINT32_MAX - 1)
#define FREE (UINT32_MAX - 2)
#define HELD (UINT32_MAX - 3)

/* A finite size up to this is allocated whole at creation, so take and give
 * never allocate; beyond it (or unlimited) the books grow by doubling. */
#define PREALLOC_MAX (INT64_C(1) << 20)
#define GROW_FIRST   64
#define SLOTS_MAX    (UINT32_MAX - 4)

struct slot {
    void *item;
    int64_t dies;  /* when life retires it (TIDE_FOREVER: never) */
    int64_t since; /* idle: when it came back; lent: when it was lent;
                      reserved: when the MAKE was answered */
    uint32_t prev;
    uint32_t next;
};

struct list {
    uint32_t head;
    uint32_t tail;
};

struct tide_pool {
    struct tide_limits limits;
    struct slot *slots;
    uint32_t capacity;
    uint32_t free_head;
    struct list idle;     /* head: most recently returned */
    struct list reserved; /* head: oldest reservation */
    int64_t idle_count;
    int64_t busy_count; /* lent, held and reserved */
    int64_t held_count; /* of those, held: no shedder ticket */
    struct tide__itemmap map;
    bool closed;

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
};

/* ---- lists of slots ---- */

static void list_push_head(struct tide_pool *p, struct list *l, uint32_t i)
{
    struct slot *s = &p->slots[i];
    s->prev = NIL;
    s->next = l->head;
    if (l->head != NIL)
        p->slots[l->head].prev = i;
    else
        l->tail = i;
    l->head = i;
}

static void list_push_tail(struct tide_pool *p, struct list *l, uint32_t i)
{
    struct slot *s = &p->slots[i];
    s->next = NIL;
    s->prev = l->tail;
    if (l->tail != NIL)
        p->slots[l->tail].next = i;
    else
        l->head = i;
    l->tail = i;
}

/* Unlinks the head of a list that is not empty, and returns it. */
static uint32_t list_pop_head(struct tide_pool *p, struct list *l)
{
    uint32_t i = l->head;
    uint32_t next = p->slots[i].next;
    l->head = next;
    if (next != NIL)
        p->slots[next].prev = NIL;
    else
        l->tail = NIL;
    return i;
}

static void list_unlink(struct tide_pool *p, struct list *l, uint32_t i)
{
    struct slot *s = &p->slots[i];
    if (s->prev != NIL)
        p->slots[s->prev].next = s->next;
    else
        l->head = s->next;
    if (s->next != NIL)
        p->slots[s->next].prev = s->prev;
    else
        l->tail = s->prev;
}

/* The reservations queue through `next` alone: they join at the tail and
 * leave from the head, never from the middle. */
static void queue_push(struct tide_pool *p, struct list *q, uint32_t i)
{
    p->slots[i].next = NIL;
    if (q->head == NIL)
        q->head = i;
    else
        p->slots[q->tail].next = i;
    q->tail = i;
}

/* Takes the head of a queue that is not empty; the tail is stale once the
 * head is NIL, and queue_push looks at the head. */
static uint32_t queue_pop(struct tide_pool *p, struct list *q)
{
    uint32_t i = q->head;
    q->head = p->slots[i].next;
    return i;
}

/* ---- slots ---- */

static void chain_free(struct tide_pool *p, uint32_t from, uint32_t to)
{
    for (uint32_t i = to; i > from; i--) {
        struct slot *s = &p->slots[i - 1];
        s->item = NULL;
        s->prev = FREE;
        s->next = p->free_head;
        p->free_head = i - 1;
    }
}

/* Out of line: it runs a few dozen times in a pool's life, and inlined it
 * would weigh on the make path that checks for it. */
TIDE__NOINLINE static int grow(struct tide_pool *p, uint32_t capacity)
{
    struct slot *slots = realloc(p->slots, (size_t)capacity * sizeof *slots);
    if (!slots)
        return TIDE_ENOMEM;
    p->slots = slots;
    tide__itemmap_bind(&p->map, slots, sizeof *slots);
    if (tide__itemmap_reserve(&p->map, capacity) != 0)
        return TIDE_ENOMEM; /* slots stay valid; the map keeps its size */
    chain_free(p, p->capacity, capacity);
    p->capacity = capacity;
    return 0;
}

/* Makes sure a free slot exists; false when an unbounded pool cannot grow. */
static bool ensure_free_slot(struct tide_pool *p)
{
    if (p->free_head != NIL)
        return true;
    if (p->capacity >= SLOTS_MAX)
        return false;
    uint64_t want = p->capacity ? (uint64_t)p->capacity * 2 : GROW_FIRST;
    if (want > SLOTS_MAX)
        want = SLOTS_MAX;
    return grow(p, (uint32_t)want) == 0;
}

static uint32_t slot_take_free(struct tide_pool *p)
{
    uint32_t i = p->free_head;
    p->free_head = p->slots[i].next;
    return i;
}

/* Returns a slot to the free list; its item, if any, is off the map. */
static void slot_free(struct tide_pool *p, uint32_t i)
{
    struct slot *s = &p->slots[i];
    s->item = NULL;
    s->prev = FREE;
    s->next = p->free_head;
    p->free_head = i;
}

/* Returns a slot to the free list and forgets its item. */
static void slot_release(struct tide_pool *p, uint32_t i)
{
    if (p->slots[i].item)
        tide__itemmap_remove(&p->map, p->slots[i].item);
    slot_free(p, i);
}

/* The map cell of item, or the empty one where it would go. */
static uint32_t seek(const struct tide_pool *p, const void *item)
{
    return tide__itemmap_seek_in(&p->map, item, p->slots, sizeof *p->slots);
}

/* ---- creation ---- */

static int build_ward(struct tide_pool *p, const struct tide_ward *w,
                      int64_t now)
{
    if (w->breaker) {
        struct tide_breaker_options o = tide__breaker_resolve(*w->breaker);
        int rc = tide__breaker_check(&o);
        if (rc)
            return rc;
        tide__breaker_init(&p->breaker, &o);
        p->has_breaker = true;
    }
    if (w->bucket) {
        struct tide_bucket_options o = tide__bucket_resolve(*w->bucket);
        int rc = tide__bucket_check(&o);
        if (rc)
            return rc;
        tide__bucket_init(&p->bucket, &o, now);
        p->has_bucket = true;
    }
    if (w->backoff) {
        int rc = tide_backoff_check(w->backoff);
        if (rc)
            return rc;
        p->backoff = tide_backoff_resolve(*w->backoff);
        p->has_backoff = true;
    }
    if (w->shedder) {
        struct tide_shedder_options o = tide__shedder_resolve(*w->shedder);
        int rc = tide__shedder_check(&o);
        if (rc)
            return rc;
        tide__shedder_init(&p->shedder, &o, p->limits.size);
        p->has_shedder = true;
    }
    return 0;
}

/* The values of the guards that are not there, read by the fast paths
 * without asking whether they are: nothing shed, no bucket to fill, no
 * hold, no settle to make, a breaker quiet for ever (its successes are
 * counted and never read). build_ward overwrites those it sets up. */
static void absent_guards(struct tide_pool *p)
{
    p->breaker.state = TIDE_BREAKER_ACTIVE;
    p->breaker.quiet_from = INT64_MIN;
    p->breaker.quiet_until = INT64_MAX;
    p->shedder.room = INT64_MAX;
    p->shedder.steady_after = INT64_MIN;
    p->bucket.full_from = INT64_MIN;
    p->backoff_until = INT64_MIN;
}

int tide_pool_new(const struct tide_limits *limits,
                  const struct tide_ward *ward, int64_t now,
                  struct tide_pool **out)
{
    if (!out)
        return TIDE_EINVAL;
    *out = NULL;
    struct tide_limits l = limits ? *limits : (struct tide_limits){0};
    int rc = tide_limits_check(&l);
    if (rc)
        return rc;
    struct tide_pool *p = calloc(1, sizeof *p);
    if (!p)
        return TIDE_ENOMEM;
    p->limits = tide_limits_resolve(l);
    p->free_head = NIL;
    p->idle = (struct list){NIL, NIL};
    p->reserved = (struct list){NIL, NIL};
    absent_guards(p);
    tide__itemmap_init_tagged(&p->map);
    rc = ward ? build_ward(p, ward, now) : 0;
    if (rc == 0 && p->limits.size <= PREALLOC_MAX)
        rc = grow(p, (uint32_t)p->limits.size);
    if (rc) {
        tide_pool_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void tide_pool_free(struct tide_pool *p)
{
    if (!p)
        return;
    tide__itemmap_dispose(&p->map);
    free(p->slots);
    free(p);
}

/* ---- decisions ---- */

/* Idle, lent and being made. */
static int64_t live(const struct tide_pool *p)
{
    return p->idle_count + p->busy_count;
}

/* Lent and being made: the shedder's tickets, counted from the pool's own
 * books rather than kept twice. */
static int64_t in_flight(const struct tide_pool *p)
{
    return p->busy_count - p->held_count;
}

static bool expired(const struct tide_pool *p, const struct slot *s,
                    int64_t now)
{
    if (s->dies != TIDE_FOREVER && now >= s->dies)
        return true;
    return p->limits.keep != TIDE_FOREVER &&
           tide__elapsed(s->since, now) >= p->limits.keep;
}

_Static_assert(sizeof(struct tide_taken) == 16,
               "the answer must stay small enough to return in registers");

static struct tide_taken answer(enum tide_answer a, void *item, int64_t span,
                                enum tide_guard guard)
{
    if (a == TIDE_LATER)
        return (struct tide_taken){.answer = a, .guard = guard, .span = span};
    return (struct tide_taken){.answer = a, .guard = guard, .item = item};
}

/* The life of a resource made with this roll: life shortened by a share
 * of up to `spread`. The roll is held to [0, 1) here, where it is used. */
static int64_t spread_life(const struct tide_pool *p, double roll)
{
    int64_t life = p->limits.life;
    if (life == TIDE_FOREVER || p->limits.spread == 0.0)
        return life;
    double share = p->limits.spread * tide__roll(roll);
    return life - (int64_t)((double)life * share);
}

/* Lends the head of the idle list, known fresh. */
static TIDE__INLINE struct tide_taken lend(struct tide_pool *p, int64_t now)
{
    struct slot *s = &p->slots[list_pop_head(p, &p->idle)];
    p->idle_count--;
    s->prev = LENT;
    s->next = NIL;
    s->since = now;
    p->busy_count++;
    return answer(TIDE_READY, s->item, 0, TIDE_GUARD_NONE);
}

static struct tide_taken lend_idle(struct tide_pool *p, int64_t now)
{
    uint32_t i = p->idle.head;
    struct slot *s = &p->slots[i];
    if (expired(p, s, now)) {
        void *item = s->item;
        list_unlink(p, &p->idle, i);
        p->idle_count--;
        slot_release(p, i);
        return answer(TIDE_STALE, item, 0, TIDE_GUARD_NONE);
    }
    return lend(p, now);
}

/* Reserves the free slot at the head of the free list for a make answered
 * now; the guards have let it through, and the bucket's token is taken. */
static TIDE__INLINE struct tide_taken reserve_slot(struct tide_pool *p,
                                                   int64_t now, double roll)
{
    uint32_t i = slot_take_free(p);
    struct slot *s = &p->slots[i]; /* a free slot holds no item */
    s->dies = spread_life(p, roll);
    s->since = now;
    queue_push(p, &p->reserved, i);
    p->busy_count++;
    return answer(TIDE_MAKE, NULL, 0, TIDE_GUARD_NONE);
}

/* Room for one more is there: asks the guards, in order, and reserves. */
TIDE__NOINLINE static struct tide_taken reserve(struct tide_pool *p,
                                                int64_t now, double roll)
{
    roll = tide__roll(roll); /* the breaker may rescale it */
    if (now < p->backoff_until)
        return answer(TIDE_LATER, NULL, tide__elapsed(now, p->backoff_until),
                      TIDE_GUARD_BACKOFF);
    if (p->has_bucket) {
        tide__bucket_refill(&p->bucket, now);
        if (p->bucket.tokens < 1.0)
            return answer(TIDE_LATER, NULL, tide_bucket_next(&p->bucket, now),
                          TIDE_GUARD_BUCKET);
    }
    /* Room in the books before the breaker counts a probe it cannot use. */
    if (!ensure_free_slot(p))
        return answer(TIDE_SHED, NULL, 0, TIDE_GUARD_MEMORY);
    if (p->has_breaker && !tide__breaker_admit(&p->breaker, now, &roll))
        return answer(TIDE_SHED, NULL, 0, TIDE_GUARD_BREAKER);
    if (p->has_bucket)
        tide__bucket_spend(&p->bucket, now, p->bucket.tokens); /* refilled */
    return reserve_slot(p, now, roll);
}

/* Whether reserve would let a make through at once, with nothing to
 * record, asked without side effects: a "no" leaves reserve to decide from
 * the start. A bucket must be full, so its token is taken with no
 * arithmetic; one that is not goes the long way. */
static bool guards_open(const struct tide_pool *p, int64_t now)
{
    if (now < p->backoff_until)
        return false;
    if (now < p->bucket.full_from)
        return false;
    return p->free_head != NIL && tide__breaker_admits(&p->breaker, now);
}

/* No idle one: make one, if the limits and the guards allow. */
TIDE__NOINLINE static struct tide_taken take_new(struct tide_pool *p,
                                                 int64_t now, double roll)
{
    if (live(p) >= p->limits.size)
        return answer(TIDE_WAIT, NULL, 0, TIDE_GUARD_NONE);
    if (!tide__shedder_admit(&p->shedder, in_flight(p)))
        return answer(TIDE_SHED, NULL, 0, TIDE_GUARD_SHEDDER);
    if (!guards_open(p, now))
        return reserve(p, now, roll);
    if (p->has_bucket)
        tide__bucket_spend_full(&p->bucket, now);
    return reserve_slot(p, now, roll);
}

/* Everything take decides, in order, for the cases tide_pool_take leaves:
 * a closed pool, a breaker that is down, an idle head stale or held back. */
TIDE__NOINLINE static struct tide_taken take_slow(struct tide_pool *p,
                                                  int64_t now, double roll)
{
    if (p->closed)
        return answer(TIDE_SHED, NULL, 0, TIDE_GUARD_CLOSED);
    if (p->has_breaker && tide__breaker_blocks(&p->breaker, now))
        return answer(TIDE_SHED, NULL, 0, TIDE_GUARD_BREAKER);
    if (p->idle.head != NIL) {
        /* A stale one is handed back even while shedding: closing it is
         * the cleanup a loaded host wants, and it lends nothing. */
        if (p->has_shedder && !expired(p, &p->slots[p->idle.head], now) &&
            !tide__shedder_admit(&p->shedder, in_flight(p)))
            return answer(TIDE_SHED, NULL, 0, TIDE_GUARD_SHEDDER);
        return lend_idle(p, now);
    }
    return take_new(p, now, roll);
}

/* The common cases first: a fresh idle one to lend, or none and room to
 * make one. The checks here have no side effects, so whatever they leave
 * to take_slow is decided there from the start, exactly as ever. A breaker
 * that is down goes that way because asking it whether to recover may call
 * the user's strategy. */
struct tide_taken tide_pool_take(struct tide_pool *p, int64_t now, double roll)
{
    if (!p)
        return answer(TIDE_SHED, NULL, 0, TIDE_GUARD_CLOSED);
    if (p->closed || p->breaker.state == TIDE_BREAKER_INACTIVE)
        return take_slow(p, now, roll);
    uint32_t i = p->idle.head;
    if (i == NIL)
        return take_new(p, now, roll);
    if (expired(p, &p->slots[i], now) ||
        !tide__shedder_admit(&p->shedder, in_flight(p)))
        return take_slow(p, now, roll);
    return lend(p, now);
}

struct tide_taken tide_pool_grow(struct tide_pool *p, int64_t now, double roll)
{
    if (!p || p->closed)
        return answer(TIDE_SHED, NULL, 0, TIDE_GUARD_CLOSED);
    if (p->has_breaker && tide__breaker_blocks(&p->breaker, now))
        return answer(TIDE_SHED, NULL, 0, TIDE_GUARD_BREAKER);
    if (live(p) >= p->limits.size)
        return answer(TIDE_WAIT, NULL, 0, TIDE_GUARD_NONE);
    return reserve(p, now, roll);
}

int tide_pool_hold(struct tide_pool *p, void *item)
{
    if (!p || !item)
        return TIDE_EINVAL;
    uint32_t i = tide__itemmap_find(&p->map, item);
    if (i == TIDE__ITEMMAP_NONE)
        return TIDE_EUNKNOWN;
    struct slot *s = &p->slots[i];
    if (s->prev == LENT)
        return TIDE_ENOTIDLE;
    list_unlink(p, &p->idle, i);
    p->idle_count--;
    s->prev = LENT;
    s->next = HELD;
    p->busy_count++;
    p->held_count++;
    return 0;
}

/* Puts a held resource back among the idle at its place by rest time, so
 * the idle list stays ordered for keep. Walks past the ones returned while
 * it was held: few, since a check is short. */
TIDE__NOINLINE static void unhold(struct tide_pool *p, uint32_t i)
{
    struct slot *s = &p->slots[i];
    uint32_t before = p->idle.head;
    while (before != NIL && p->slots[before].since > s->since)
        before = p->slots[before].next;
    if (before == p->idle.head) {
        list_push_head(p, &p->idle, i);
    } else if (before == NIL) {
        list_push_tail(p, &p->idle, i);
    } else {
        uint32_t after = p->slots[before].prev;
        s->prev = after;
        s->next = before;
        p->slots[after].next = i;
        p->slots[before].prev = i;
    }
    p->idle_count++;
}

/* Turns the oldest reservation into a lent resource born now; `at` is the
 * empty map cell seek found for item. */
static TIDE__INLINE uint32_t fill_reservation(struct tide_pool *p, void *item,
                                              int64_t now, uint32_t at)
{
    uint32_t i = queue_pop(p, &p->reserved);
    struct slot *s = &p->slots[i];
    s->item = item;
    s->dies = tide__later(now, s->dies);
    s->prev = LENT;
    s->next = NIL;
    s->since = now;
    tide__itemmap_put(&p->map, at, item, i);
    return i;
}

/* A make succeeded: the backoff resets and the breaker counts a success.
 * With no failure in a row there is nothing to reset (the hold, if any,
 * was set by a failure; failures are counted only with a backoff). The
 * breaker goes last: a made() then has nothing to keep across its slow
 * path, a call, and needs no stack frame on its fast one. */
static TIDE__INLINE void make_succeeded(struct tide_pool *p, int64_t now)
{
    if (p->backoff_failures) {
        p->backoff_failures = 0;
        p->backoff_previous = 0;
        p->backoff_until = INT64_MIN;
    }
    tide__breaker_success(&p->breaker, now);
}

/* A make failed: the breaker counts a failure and backoff holds makes. */
static void make_failed(struct tide_pool *p, int64_t now, double roll)
{
    if (p->has_breaker)
        tide_breaker_failure(&p->breaker, now);
    if (p->has_backoff) {
        int retry = p->backoff_failures < 64 ? p->backoff_failures : 64;
        p->backoff_failures++;
        p->backoff_previous = tide_backoff_delay(
            &p->backoff, retry, tide__roll(roll), p->backoff_previous);
        p->backoff_until = tide__later(now, p->backoff_previous);
    }
}

/* The checks of made and made_untried; then the oldest reservation takes
 * item. 0 or the error, nothing changed. */
static int fill_checked(struct tide_pool *p, void *item, int64_t now)
{
    if (!p || !item)
        return TIDE_EINVAL;
    if (p->reserved.head == NIL)
        return TIDE_ENORESERVE;
    /* A reservation means the map has cells: the slot came from a grow. */
    uint32_t at = seek(p, item);
    if (tide__itemmap_slot_at(&p->map, at) != TIDE__ITEMMAP_NONE)
        return TIDE_EDUPLICATE;
    (void)fill_reservation(p, item, now, at);
    return 0;
}

int tide_pool_made(struct tide_pool *p, void *item, int64_t now)
{
    int rc = fill_checked(p, item, now);
    if (rc == 0)
        make_succeeded(p, now);
    return rc;
}

int tide_pool_made_untried(struct tide_pool *p, void *item, int64_t now)
{
    return fill_checked(p, item, now);
}

void tide_pool_tried(struct tide_pool *p, int64_t now, double roll, bool ok)
{
    if (!p)
        return;
    if (ok)
        make_succeeded(p, now);
    else
        make_failed(p, now, roll);
}

void tide_pool_report(struct tide_pool *p, int64_t now, bool ok)
{
    if (!p)
        return;
    if (ok)
        tide__breaker_success(&p->breaker, now); /* absent: quiet for ever */
    else if (p->has_breaker)
        tide_breaker_failure(&p->breaker, now);
}

int tide_pool_unmade(struct tide_pool *p, int64_t now, double roll)
{
    if (!p)
        return TIDE_EINVAL;
    if (p->reserved.head == NIL)
        return TIDE_ENORESERVE;
    uint32_t i = queue_pop(p, &p->reserved);
    int64_t since = p->slots[i].since;
    p->busy_count--;
    slot_release(p, i);
    if (p->has_shedder)
        tide__shedder_settle(&p->shedder, since, now);
    make_failed(p, now, roll);
    return 0;
}

/* A pointer the pool never lent fills the oldest open reservation (a MAKE
 * whose made() was skipped); NIL when none is open. */
TIDE__NOINLINE static uint32_t adopt(struct tide_pool *p, void *item,
                                     int64_t now, uint32_t at)
{
    if (p->reserved.head == NIL)
        return NIL;
    uint32_t i = fill_reservation(p, item, now, at);
    make_succeeded(p, now); /* a made() skipped: the make did succeed */
    return i;
}

/* Finds the slot of an item coming back, and its map cell in *at; an
 * unknown one is adopted. NIL when neither. A map without cells has never
 * had a slot, so no reservation either. */
static uint32_t slot_of_returning(struct tide_pool *p, void *item, int64_t now,
                                  uint32_t *at)
{
    if (!p->map.cells)
        return NIL;
    *at = seek(p, item);
    uint32_t i = tide__itemmap_slot_at(&p->map, *at);
    return i != TIDE__ITEMMAP_NONE ? i : adopt(p, item, now, *at);
}

/* Settles the loan of a lent slot; a held one had no ticket. */
static void end_loan(struct tide_pool *p, struct slot *s, int64_t now)
{
    p->busy_count--;
    if (s->next == HELD)
        p->held_count--;
    else if (p->has_shedder)
        tide__shedder_settle(&p->shedder, s->since, now);
}

/* Closes the hole a resource that left made in the map (see
 * tide__itemmap_clear); 0, give's answer, so give can end in it. */
TIDE__NOINLINE static int give_shifting(struct tide_pool *p, uint32_t at)
{
    tide__itemmap_shift(&p->map, at);
    return 0;
}

/* Whether a resource given back now is kept idle. */
static bool keeps(const struct tide_pool *p)
{
    return !p->closed && p->idle_count < p->limits.idle;
}

/* The end of a give whose loan is settled: the resource becomes the idle
 * head (1) or leaves the books (0). No call but a tail one, so the common
 * give stays a leaf. */
static TIDE__INLINE int idle_or_leave(struct tide_pool *p, uint32_t i,
                                      uint32_t at, int64_t now)
{
    if (!keeps(p)) {
        slot_free(p, i); /* first: then nothing is live across the erase */
        return tide__itemmap_clear(&p->map, at) ? 0 : give_shifting(p, at);
    }
    p->slots[i].since = now;
    list_push_head(p, &p->idle, i);
    p->idle_count++;
    return 1;
}

/* give, once the slot and its map cell are known: every case. */
TIDE__NOINLINE static int give_slot(struct tide_pool *p, uint32_t i,
                                    uint32_t at, int64_t now)
{
    struct slot *s = &p->slots[i];
    if (s->prev != LENT)
        return TIDE_EDOUBLE;
    bool held = s->next == HELD;
    end_loan(p, s, now);
    if (held && keeps(p)) {
        unhold(p, i); /* back at its place by rest time */
        return 1;
    }
    return idle_or_leave(p, i, at, now);
}

/* give of a pointer the pool does not know: adopted, then given. */
TIDE__NOINLINE static int give_unknown(struct tide_pool *p, void *item,
                                       int64_t now, uint32_t at)
{
    uint32_t i = adopt(p, item, now, at);
    return i == NIL ? TIDE_EUNKNOWN : give_slot(p, i, at, now);
}

/* The common give, the one give_slot would make of a lent resource whose
 * ticket settles with nothing to change, here with no call in its way (a
 * call would make it save registers); the rest goes to give_slot. */
int tide_pool_give(struct tide_pool *p, void *item, int64_t now)
{
    if (!p || !item)
        return TIDE_EINVAL;
    if (!p->map.cells)
        return TIDE_EUNKNOWN; /* never had a slot: nothing lent or reserved */
    uint32_t at = seek(p, item);
    uint32_t i = tide__itemmap_slot_at(&p->map, at);
    if (i == TIDE__ITEMMAP_NONE)
        return give_unknown(p, item, now, at);
    struct slot *s = &p->slots[i];
    if (s->prev != LENT || s->next == HELD || now <= p->shedder.steady_after)
        return give_slot(p, i, at, now);
    p->busy_count--; /* end_loan, with no ticket to settle */
    return idle_or_leave(p, i, at, now);
}

int tide_pool_drop(struct tide_pool *p, void *item, int64_t now)
{
    if (!p || !item)
        return TIDE_EINVAL;
    uint32_t at;
    uint32_t i = slot_of_returning(p, item, now, &at);
    if (i == NIL)
        return TIDE_EUNKNOWN;
    struct slot *s = &p->slots[i];
    if (s->prev == LENT) {
        end_loan(p, s, now);
    } else {
        list_unlink(p, &p->idle, i);
        p->idle_count--;
    }
    tide__itemmap_erase(&p->map, at);
    slot_free(p, i);
    return 0;
}

size_t tide_pool_evict(struct tide_pool *p, int64_t now, void **out, size_t n)
{
    if (!p || !out)
        return 0;
    size_t k = 0;
    uint32_t i = p->idle.tail; /* oldest first: keep retires from the tail */
    while (i != NIL && k < n) {
        struct slot *s = &p->slots[i];
        uint32_t newer = s->prev;
        if (expired(p, s, now)) {
            out[k++] = s->item;
            list_unlink(p, &p->idle, i);
            p->idle_count--;
            slot_release(p, i);
        }
        i = newer;
    }
    return k;
}

size_t tide_pool_close(struct tide_pool *p, void **out, size_t n)
{
    if (!p)
        return 0;
    p->closed = true;
    if (!out)
        return 0;
    size_t k = 0;
    while (p->idle.head != NIL && k < n) {
        uint32_t i = p->idle.head;
        out[k++] = p->slots[i].item;
        list_unlink(p, &p->idle, i);
        p->idle_count--;
        slot_release(p, i);
    }
    return k;
}

/* ---- counts and guards ---- */

int64_t tide_pool_live(const struct tide_pool *p)
{
    return p ? live(p) : 0;
}

int64_t tide_pool_idle(const struct tide_pool *p)
{
    return p ? p->idle_count : 0;
}

int64_t tide_pool_busy(const struct tide_pool *p)
{
    return p ? p->busy_count : 0;
}

double tide_pool_refusal(struct tide_pool *p, int64_t now)
{
    return p && p->has_breaker ? tide_breaker_refusal(&p->breaker, now) : 0.0;
}

struct tide_breaker *tide_pool_breaker(struct tide_pool *p)
{
    return p && p->has_breaker ? &p->breaker : NULL;
}

void tide_pool_overload(struct tide_pool *p, int64_t now, int64_t lag)
{
    if (p && p->has_shedder)
        tide__shedder_feed(&p->shedder, now, lag, in_flight(p));
}

void tide_pool_guards(struct tide_pool *p, int64_t now,
                      struct tide_pool_guards *out)
{
    if (!out)
        return;
    *out = (struct tide_pool_guards){.bucket_tokens = -1.0,
                                     .shedder_ceiling = -1.0};
    if (!p)
        return;
    if (p->has_bucket)
        out->bucket_tokens = tide__bucket_level(&p->bucket, now);
    if (now < p->backoff_until)
        out->backoff_hold = tide__elapsed(now, p->backoff_until);
    out->backoff_failures = p->backoff_failures;
    if (p->has_shedder)
        out->shedder_ceiling = p->shedder.ceiling;
}

struct tide_limits tide_pool_limits(const struct tide_pool *p)
{
    return p ? p->limits : tide_limits_resolve((struct tide_limits){0});
}
