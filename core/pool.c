/* Pool: the bookkeeping of holding a limited number of things: the
 * slots, the idle stack, the reservations, the ward, and the paths of
 * lending one borrower at a time; shared loans are pool_shared.c's, and
 * the books both read are pool_internal.h's.
 *
 * The idle ones are a stack of slot numbers, oldest at the bottom, newest
 * (the next lent) at the top, rather than a list linked through the slots:
 * with the whole pool out and back in an order of its own, a linked pop
 * must read the slot it lends to find the next one, a cache miss waited
 * for before the next take can start, where a stack holds the next numbers
 * side by side and the slots they name can be fetched at once. One taken
 * from below the top (a drop, a hold, an eviction) leaves a hole, which a
 * pop or a removal at either end steps over, and a compaction closes when
 * a push finds the top at the last place; the stack starts again from the
 * first place whenever it empties. It has as many places as there are
 * slots and lives in them: place k is slot k's `stack` (nothing to do
 * with slot k itself), in the four bytes the two 8-byte times would
 * otherwise leave as padding, so it costs no memory. */
#include <stdlib.h>
#include <string.h>

#include "pool_internal.h"

/* A finite size up to this is allocated whole at creation, so take and give
 * never allocate; beyond it (or unlimited) the books grow by doubling. */
#define PREALLOC_MAX (INT64_C(1) << 20)
#define GROW_FIRST   64
#define SLOTS_MAX    (UINT32_MAX - 8)

/* ---- the idle stack ---- */

/* Steps the ends over holes, so that neither is one; empty, the stack
 * starts again from the first place. Out of line: a pop calls it only when
 * the next one down is a hole or none is left. */
TIDE__NOINLINE void tide__pool_idle_trim(struct tide_pool *p)
{
    if (p->idle_count == 0) {
        p->idle_bottom = p->idle_top = 0;
        return;
    }
    while (*stack_at(p, p->idle_top - 1) == NIL)
        p->idle_top--;
    while (*stack_at(p, p->idle_bottom) == NIL)
        p->idle_bottom++;
}

/* Closes the holes: the entries slide down to the first place, in order.
 * Each hole it closes was left by a removal, and each place it frees below
 * the bottom by one too, so those pay for it. */
TIDE__NOINLINE static void idle_compact(struct tide_pool *p)
{
    uint32_t to = 0;
    for (uint32_t from = p->idle_bottom; from < p->idle_top; from++) {
        uint32_t i = *stack_at(p, from);
        if (i != NIL) {
            *stack_at(p, to) = i;
            p->slots[i].link = to;
            to++;
        }
    }
    p->idle_bottom = 0;
    p->idle_top = to;
    p->pushed_place = NIL; /* places written: see idle_push */
}

/* A take fetches the slot of the idle one PREFETCH_AHEAD places under the
 * new top, in a stack of PREFETCH_FROM places or more: when many are taken
 * in a row (a burst, or the whole pool out at once), that slot is then in
 * cache by the time it is lent, where each take would otherwise wait for
 * its own miss, one after the other (a take must read its slot: the item
 * it answers, the life and rest it checks). Below that size the slots stay
 * in cache anyway and the fetch would only cost. */
#define PREFETCH_AHEAD 8
#define PREFETCH_FROM  16384

static TIDE__INLINE void idle_prefetch(struct tide_pool *p)
{
#if defined(__GNUC__)
    if (p->capacity >= PREFETCH_FROM && p->idle_count > PREFETCH_AHEAD) {
        /* idle_count > AHEAD: that place is above the bottom */
        uint32_t i = *stack_at(p, p->idle_top - (PREFETCH_AHEAD + 1));
        if (i != NIL)
            __builtin_prefetch(&p->slots[i], 1);
    }
#else
    (void)p;
#endif
}

/* Takes idle slot i out of the stack, from wherever it is. */
void tide__pool_idle_unlink(struct tide_pool *p, uint32_t i)
{
    *stack_at(p, p->slots[i].link) = NIL;
    p->pushed_place = NIL;
    p->idle_count--;
    tide__pool_idle_trim(p);
}

/* The reservations queue through `link` alone: they join at the tail and
 * leave from the head, never from the middle. */
static void queue_push(struct tide_pool *p, struct list *q, uint32_t i)
{
    p->slots[i].link = NIL;
    if (q->head == NIL)
        q->head = i;
    else
        p->slots[q->tail].link = i;
    q->tail = i;
}

/* Takes the head of a queue that is not empty; the tail is stale once the
 * head is NIL, and queue_push looks at the head. */
static uint32_t queue_pop(struct tide_pool *p, struct list *q)
{
    uint32_t i = q->head;
    q->head = p->slots[i].link;
    return i;
}

/* ---- slots ---- */

static void chain_free(struct tide_pool *p, uint32_t from, uint32_t to)
{
    for (uint32_t i = to; i > from; i--) {
        struct slot *s = &p->slots[i - 1];
        s->item = NULL;
        s->link = p->free_head;
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
    if (p->shared &&
        tide__shares_reserve(&p->shares, p->capacity, capacity) != 0)
        return TIDE_ENOMEM; /* likewise */
    chain_free(p, p->capacity, capacity);
    p->capacity = capacity; /* the stack's places stay where they are */
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
    p->free_head = p->slots[i].link;
    return i;
}

/* Returns a slot to the free list and forgets its item. */
void tide__pool_slot_release(struct tide_pool *p, uint32_t i)
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

/* The most loans the pool may have out at once: the shedder's ceiling on
 * work in flight starts there, as every loan is a caller's request. */
static int64_t loans_most(const struct tide_limits *l)
{
    if (l->size == TIDE_UNLIMITED || l->size > TIDE_UNLIMITED / l->streams)
        return TIDE_UNLIMITED;
    return l->size * l->streams;
}

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
        tide__shedder_init(&p->shedder, &o, loans_most(&p->limits));
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
    p->idle_most = p->limits.idle;
    p->free_head = NIL;
    p->pushed_place = NIL;
    p->reserved = (struct list){NIL, NIL};
    absent_guards(p);
    tide__demand_init(&p->demand, &p->limits);
    tide__itemmap_init(&p->map);
    if (p->limits.streams > 1) {
        if (tide__shares_init(&p->shares, (uint32_t)p->limits.streams) != 0) {
            tide_pool_free(p);
            return TIDE_ENOMEM;
        }
        p->shared = p->detour = true;
    }
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
    if (p->shared)
        tide__shares_dispose(&p->shares);
    free(p->slots);
    free(p);
}

/* ---- decisions ---- */

/* in_flight with one loan a resource, where there are no extra loans: for
 * the paths only such a pool takes, which then count as they always did. */
static int64_t in_flight_alone(const struct tide_pool *p)
{
    return p->busy_count - p->held_count;
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

/* The end of a take whose pop left a hole on top: the ends are stepped
 * (see idle_pop) out of line, on that rare path only, so the common take
 * makes no call and needs no frame. (None left idle, the stack starts
 * again from the first place, in line: a pool of one lends so every
 * time.) */
TIDE__NOINLINE static struct tide_taken lent_trimming(struct tide_pool *p,
                                                      void *item)
{
    tide__pool_idle_trim(p);
    return answer(TIDE_READY, item, 0, TIDE_GUARD_NONE);
}

/* Lends the head of the idle stack, known fresh: idle_pop, with the trim
 * left to the end. The item comes from the push that put it there when
 * that was the last write to its place (see pushed_place): a resource
 * given back and taken again at once is then answered as soon as the top
 * is known, where the slot number and the slot are a chain of loads
 * behind the map lookup of its give. */
static TIDE__INLINE struct tide_taken lend(struct tide_pool *p, int64_t now)
{
    uint32_t place = p->idle_top - 1;
    struct slot *s = &p->slots[*stack_at(p, place)];
    bool just_back = place == p->pushed_place;
    void *item = just_back ? p->pushed_item : s->item;
    s->link = LENT;
    s->since = now;
    p->busy_count++;
    p->idle_top = place;
    if (--p->idle_count == 0) { /* the trim's first case, with no call */
        p->idle_bottom = p->idle_top = 0;
        return (struct tide_taken){.answer = TIDE_READY, .item = item};
    }
    if (*stack_at(p, place - 1) == NIL)
        return lent_trimming(p, item); /* no fetch ahead: rare */
    /* No fetch ahead for the one just given back: takes in a row (a
     * burst) lend below the last push after their first, where one taken
     * and given back in turn lends it each time, and its fetch, of a slot
     * it never reaches, cost a pool of 10^5 or 10^6 about 1 ns of its 11
     * to 12 a take and give (bench_core, pingpong). */
    if (!just_back)
        idle_prefetch(p); /* after the count: it reads below the new top */
    /* answer()'s, spelt out: GCC 12 builds it here in six instructions */
    return (struct tide_taken){.answer = TIDE_READY, .item = item};
}

/* The newest idle one, past keep or life: out of the pool and the count,
 * for the caller to close. */
struct tide_taken tide__pool_hand_stale(struct tide_pool *p)
{
    uint32_t i = idle_pop(p);
    void *item = p->slots[i].item;
    tide__pool_slot_release(p, i);
    return answer(TIDE_STALE, item, 0, TIDE_GUARD_NONE);
}

static struct tide_taken lend_idle(struct tide_pool *p, int64_t now)
{
    if (expired(p, &p->slots[idle_newest(p)], now))
        return tide__pool_hand_stale(p);
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
    p->reserved_count++;
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
    /* the hold is over but the last make failed: one probe at a time, and
     * who comes meanwhile waits for its outcome; a breaker that recovers
     * has probes of its own, and refuses the rest at once */
    if (p->probing && p->breaker.state != TIDE_BREAKER_RECOVERING)
        return answer(TIDE_WAIT, NULL, 0, TIDE_GUARD_BACKOFF);
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
    p->probing = p->backoff_failures > 0;
    return reserve_slot(p, now, roll);
}

/* Whether reserve would let a make through at once, with nothing to
 * record, asked without side effects: a "no" leaves reserve to decide from
 * the start. A bucket must be full, so its token is taken with no
 * arithmetic; one that is not goes the long way. */
static bool guards_open(const struct tide_pool *p, int64_t now)
{
    if (now < p->backoff_until || p->backoff_failures > 0)
        return false;
    if (now < p->bucket.full_from)
        return false;
    return p->free_head != NIL && tide__breaker_admits(&p->breaker, now);
}

/* No idle one: make one, if the limits and the guards allow. */
TIDE__NOINLINE struct tide_taken tide__pool_take_new(struct tide_pool *p,
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

/* Whether the pool lends nothing now, closed or its breaker down, and
 * then the refusal in *no. */
bool tide__pool_refuses(struct tide_pool *p, int64_t now, struct tide_taken *no)
{
    if (p->closed)
        *no = answer(TIDE_SHED, NULL, 0, TIDE_GUARD_CLOSED);
    else if (p->has_breaker && tide__breaker_blocks(&p->breaker, now))
        *no = answer(TIDE_SHED, NULL, 0, TIDE_GUARD_BREAKER);
    else
        return false;
    return true;
}

/* The newest idle one, lent as `state` unless the shedder holds lending
 * back. A stale one is handed back even while shedding: closing it is the
 * cleanup a loaded host wants, and it lends nothing. */
struct tide_taken tide__pool_take_idle_as(struct tide_pool *p, int64_t now,
                                          uint32_t state)
{
    if (p->has_shedder && !expired(p, &p->slots[idle_newest(p)], now) &&
        !tide__shedder_admit(&p->shedder, in_flight(p)))
        return answer(TIDE_SHED, NULL, 0, TIDE_GUARD_SHEDDER);
    if (state == LENT)
        return lend_idle(p, now);
    return tide__pool_lend_idle_shared(p, now, state);
}

/* Everything take decides, in order, for the cases tide_pool_take leaves:
 * a closed pool, a breaker that is down, an idle head stale or held back,
 * and every take of a pool with shared loans. */
TIDE__NOINLINE struct tide_taken tide__pool_take_slow(struct tide_pool *p,
                                                      int64_t now, double roll)
{
    struct tide_taken no;
    if (tide__pool_refuses(p, now, &no))
        return no;
    if (p->shared)
        return tide__pool_take_shared(p, now, roll, true);
    if (p->idle_count > 0)
        return tide__pool_take_idle_as(p, now, LENT);
    return tide__pool_take_new(p, now, roll);
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
    /* the way out of this path: a shared pool's own, whose first test
     * sends a closed pool, or one whose breaker is down, to take_slow */
    if (p->detour || p->breaker.state == TIDE_BREAKER_INACTIVE)
        return tide__pool_take_shared_fast(p, now, roll);
    if (p->idle_top == 0) /* none idle: see struct tide_pool */
        return tide__pool_take_new(p, now, roll);
    if (may_be_expired(p, &p->slots[idle_newest(p)], now) ||
        !tide__shedder_admit(&p->shedder, in_flight_alone(p)))
        return tide__pool_take_slow(p, now, roll);
    return lend(p, now);
}

struct tide_taken tide_pool_take_idle(struct tide_pool *p, int64_t now)
{
    if (!p)
        return answer(TIDE_SHED, NULL, 0, TIDE_GUARD_CLOSED);
    if (p->shared)
        return tide__pool_take_live_shared(p, now);
    if (p->idle_count == 0)
        return answer(TIDE_WAIT, NULL, 0, TIDE_GUARD_NONE);
    /* take's own path with one idle: the roll is for makes, and there is
     * none to make */
    if (p->closed || p->breaker.state == TIDE_BREAKER_INACTIVE ||
        may_be_expired(p, &p->slots[idle_newest(p)], now) ||
        !tide__shedder_admit(&p->shedder, in_flight_alone(p)))
        return tide__pool_take_slow(p, now, 0.0);
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
    uint32_t i;
    int rc = find_held(p, item, &i);
    if (rc)
        return rc;
    struct slot *s = &p->slots[i];
    if (out(s))
        return TIDE_ENOTIDLE;
    tide__pool_idle_unlink(p, i);
    s->link = HELD;
    p->busy_count++;
    p->held_count++;
    return 0;
}

/* Puts a held resource back among the idle at its place by rest time, so
 * the stack stays ordered for keep. Walks down from the top past the ones
 * that rested less (those returned while it was held: few, since a check
 * is short), then moves them up one place, into the lowest hole walked
 * past if there is one, else onto a new top. */
TIDE__NOINLINE static void unhold(struct tide_pool *p, uint32_t i)
{
    struct slot *s = &p->slots[i];
    if (idle_full(p))
        idle_compact(p);
    p->pushed_place = NIL;     /* places written below */
    uint32_t at = p->idle_top; /* where i goes: the walk moves it down */
    uint32_t hole = NIL;
    for (; at > p->idle_bottom; at--) {
        uint32_t e = *stack_at(p, at - 1);
        if (e != NIL && p->slots[e].since <= s->since)
            break;
        if (e == NIL)
            hole = at - 1;
    }
    uint32_t to = hole == NIL ? p->idle_top++ : hole;
    for (; to > at; to--) { /* no hole below `to` down to `at` */
        uint32_t e = *stack_at(p, to - 1);
        *stack_at(p, to) = e;
        p->slots[e].link = to;
    }
    *stack_at(p, at) = i;
    s->link = at;
    if (p->idle_count++ == 0)
        p->idle_bottom = at; /* 0: the stack was empty */
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
    s->link = LENT;
    s->since = now;
    tide__itemmap_put(&p->map, at, i);
    p->reserved_count--;
    if (p->shared)
        tide__pool_first_shared_loan(p, i);
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
        p->probing = false;
    }
    tide__breaker_success(&p->breaker, now);
}

/* A make failed: the breaker counts a failure and backoff holds makes,
 * then lets one through at a time until one succeeds. */
static void make_failed(struct tide_pool *p, int64_t now, double roll)
{
    if (p->has_breaker)
        tide_breaker_failure(&p->breaker, now);
    if (p->has_backoff) {
        p->probing = false;
        int retry = p->backoff_failures < 64 ? p->backoff_failures : 64;
        p->backoff_failures++;
        p->backoff_previous = tide_backoff_delay(
            &p->backoff, retry, tide__roll(roll), p->backoff_previous);
        p->backoff_until = tide__later(now, p->backoff_previous);
    }
}

/* The checks of made and made_untried; then the oldest reservation takes
 * item. 0 or the error, nothing changed. */
static TIDE__INLINE int fill_checked(struct tide_pool *p, void *item,
                                     int64_t now)
{
    if (!p || !item)
        return TIDE_EINVAL;
    if (p->reserved.head == NIL)
        return TIDE_ENORESERVE;
    /* A reservation means the map has cells: the slot came from a grow. */
    uint32_t at = seek(p, item);
    if (p->map.cells[at] != TIDE__ITEMMAP_NONE)
        return TIDE_EDUPLICATE;
    (void)fill_reservation(p, item, now, at);
    p->probing = false; /* made: the next make may go (see core.h) */
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
    p->reserved_count--;
    tide__pool_slot_release(p, i);
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
    uint32_t i = p->map.cells[*at];
    return i != TIDE__ITEMMAP_NONE ? i : adopt(p, item, now, *at);
}

/* Settles the loan of a lent slot; a held one had no ticket. */
void tide__pool_end_loan(struct tide_pool *p, struct slot *s, int64_t now)
{
    p->busy_count--;
    if (held(s))
        p->held_count--;
    else if (p->has_shedder)
        tide__shedder_settle(&p->shedder, s->since, now);
}

/* Resource i leaves the books, its loans all ended: 0, give's answer
 * (the caller closes it). */
int tide__pool_leave_books(struct tide_pool *p, uint32_t i, uint32_t at)
{
    slot_free(p, i);
    tide__itemmap_erase(&p->map, at);
    return 0;
}

/* Closes the hole a resource that left made in the map (see
 * tide__itemmap_clear); 0, give's answer, so give can end in it. */
TIDE__NOINLINE int tide__pool_give_shifting(struct tide_pool *p, uint32_t at)
{
    tide__itemmap_shift(&p->map, at);
    return 0;
}

/* give_idle once the stack's holes are closed; out of line, so the give
 * that needs no compaction makes no call. */
TIDE__NOINLINE int tide__pool_give_compacting(struct tide_pool *p, uint32_t i,
                                              int64_t now)
{
    idle_compact(p);
    return give_idle(p, i, p->slots[i].item, now);
}

TIDE__NOINLINE int tide__pool_idle_or_leave(struct tide_pool *p, uint32_t i,
                                            uint32_t at, int64_t now)
{
    return idle_or_leave(p, i, p->slots[i].item, at, now);
}

/* give, once the slot and its map cell are known: every case. */
TIDE__NOINLINE static int give_found(struct tide_pool *p, uint32_t i,
                                     uint32_t at, int64_t now)
{
    struct slot *s = &p->slots[i];
    if (!out(s))
        return TIDE_EDOUBLE;
    if (s->link != LENT && s->link != HELD)
        return tide__pool_give_loan(p, i, at, now);
    bool was_held = s->link == HELD;
    tide__pool_end_loan(p, s, now);
    if (was_held && keeps(p)) {
        unhold(p, i); /* back at its place by rest time */
        return 1;
    }
    return idle_or_leave(p, i, s->item, at, now);
}

/* give of a pointer the pool does not know: adopted, then given. */
TIDE__NOINLINE static int give_unknown(struct tide_pool *p, void *item,
                                       int64_t now, uint32_t at)
{
    uint32_t i = adopt(p, item, now, at);
    return i == NIL ? TIDE_EUNKNOWN : give_found(p, i, at, now);
}

/* The common give, the one give_found would make of a lent resource whose
 * ticket settles with nothing to change, here with no call in its way (a
 * call would make it save registers); the rest goes to give_found. */
int tide_pool_give(struct tide_pool *p, void *item, int64_t now)
{
    if (!p || !item)
        return TIDE_EINVAL;
    if (!p->map.cells)
        return TIDE_EUNKNOWN; /* never had a slot: nothing lent or reserved */
    uint32_t at = seek(p, item);
    uint32_t i = p->map.cells[at];
    if (i == TIDE__ITEMMAP_NONE)
        return give_unknown(p, item, now, at);
    struct slot *s = &p->slots[i];
    if (s->link != LENT || now <= p->shedder.steady_after)
        return s->link == SHARED ? tide__pool_give_shared(p, i, at, now)
                                 : give_found(p, i, at, now);
    p->busy_count--; /* tide__pool_end_loan, with no ticket to settle */
    return idle_or_leave(p, i, item, at, now);
}

uint32_t tide_pool_slot(const struct tide_pool *p, const void *item)
{
    if (!p || !item || !p->map.cells)
        return TIDE_NO_SLOT;
    uint32_t i = p->map.cells[seek(p, item)];
    return i == TIDE__ITEMMAP_NONE ? TIDE_NO_SLOT : i;
}

/* tide_pool_give without the lookup for the common give: a lent resource
 * kept idle with no ticket to settle. A slot that does not hold item (a
 * caller's stale note) and every other case go the way of give, whose
 * answers it keeps. A free slot holds no item, and an item is in one slot
 * at most, so a slot holding it is its own. */
/* give_at that is not the common give. A loan of a shared resource that
 * leaves others out needs no map cell, so no lookup either; the rest go
 * the way of give. */
TIDE__NOINLINE static int give_at_other(struct tide_pool *p, uint32_t slot,
                                        void *item, int64_t now)
{
    int kept = tide__pool_give_at_shared(p, slot, now);
    return kept == 1 ? kept : tide_pool_give(p, item, now);
}

int tide_pool_give_at(struct tide_pool *p, uint32_t slot, void *item,
                      int64_t now)
{
    if (!p || !item || slot >= p->capacity || p->slots[slot].item != item)
        return tide_pool_give(p, item, now);
    if (p->slots[slot].link != LENT || now <= p->shedder.steady_after ||
        !keeps(p))
        return give_at_other(p, slot, item, now);
    p->busy_count--; /* tide__pool_end_loan, with no ticket to settle */
    if (idle_full(p))
        return tide__pool_give_compacting(p, slot, now);
    return give_idle(p, slot, item, now);
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
    if (!out(s)) {
        tide__pool_idle_unlink(p, i);
    } else if (s->link == LENT || held(s)) {
        tide__pool_end_loan(p, s, now);
    } else {
        /* A loan of a shared resource (or of one broken or drained): the
         * borrower says the connection broke, which it did for every
         * loan of it. The last of them to come back hands it over. */
        if (tide__pool_drop_loan(p, i, now) > 0)
            return 1;
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
    /* oldest first: keep retires those */
    for (uint32_t place = p->idle_bottom; place < p->idle_top && k < n;
         place++) {
        uint32_t i = *stack_at(p, place);
        if (i != NIL && expired(p, &p->slots[i], now))
            out[k++] = idle_hand_out(p, place);
    }
    if (k > 0)
        tide__pool_idle_trim(p);
    return k;
}

size_t tide_pool_close(struct tide_pool *p, void **out, size_t n)
{
    if (!p)
        return 0;
    p->closed = p->detour = true;
    p->idle_most = 0; /* keeps nothing given back */
    if (!out)
        return 0;
    size_t k = 0;
    while (p->idle_count > 0 && k < n) {
        uint32_t i = idle_pop(p);
        out[k++] = p->slots[i].item;
        tide__pool_slot_release(p, i);
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

/* Exactly the path of tide_pool_take that answers WAIT with no side
 * effect: not closed, the breaker not INACTIVE (tide__pool_take_slow), nothing
 * idle, and tide__pool_take_new's first test. */
bool tide_pool_must_wait(const struct tide_pool *p)
{
    return tide_pool_must_wait_alone(p) &&
           !(p->shared && tide__shares_any_room(&p->shares));
}

bool tide_pool_lendable(const struct tide_pool *p)
{
    return p && (p->idle_count > 0 ||
                 (p->shared && tide__shares_any_room(&p->shares)));
}

/* An exclusive take is served by an idle one or a make, never by room
 * beside other loans: the path of tide_pool_take_alone that answers WAIT
 * with no side effect. */
bool tide_pool_must_wait_alone(const struct tide_pool *p)
{
    return p && !p->closed && p->breaker.state != TIDE_BREAKER_INACTIVE &&
           p->idle_count == 0 && live(p) >= p->limits.size;
}

int64_t tide_pool_busy(const struct tide_pool *p)
{
    return p ? p->busy_count : 0;
}

int64_t tide_pool_loans(const struct tide_pool *p)
{
    if (!p)
        return 0;
    return p->busy_count - p->held_count - p->reserved_count + p->extra_loans;
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
    out->backoff_probing = p->probing;
    if (p->has_shedder)
        out->shedder_ceiling = p->shedder.ceiling;
}

struct tide_limits tide_pool_limits(const struct tide_pool *p)
{
    return p ? p->limits : tide_limits_resolve((struct tide_limits){0});
}
