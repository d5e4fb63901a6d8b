/* Shares: the bookkeeping of shared loans (limits.streams > 1), for the
 * pool. Per slot, how many loans its resource carries and how many it may
 * carry now; which resources have room for one more, grouped by how many
 * they carry, so a take finds the busiest or the least busy one at once;
 * and how many of the others carry each count, so the busiest of all is
 * known.
 *
 * The groups ("rooms") are lists linked through the slots' records, newest
 * first, one per loan count from 1 to streams - 1, and a bitmap of the
 * rooms that are not empty, in as many levels of 64-bit words as the
 * streams need: one up to 64 streams, two up to 4096, three up to 65535.
 * The fullest or emptiest room is then one to three word scans away, so a
 * pick is O(1) in the pool's size and O(log64) in its streams. Moving a
 * resource between rooms, as every shared loan taken or given does, is a
 * list unlink and push. A lent resource is in a room or in the census of
 * the rest (full, or taking no new loan), never both: the census, with its
 * own bitmap, changes only when a resource crosses between the two, so the
 * common loan, which moves a resource from one room to the next, does not
 * touch it. Nothing here allocates after init and reserve.
 *
 * The steps a take and a give run are inline: they are the shared loan's
 * fast path, and a call each would cost as much as the step.
 *
 * Which resources belong in a room is the pool's to say (a broken, drained,
 * exclusive or expired one takes no new loan whatever its count): it says
 * so with each move. This file knows nothing else of slots. */
#ifndef TIDEPOOL_CORE_SHARES_H
#define TIDEPOOL_CORE_SHARES_H

#include <stdbool.h>
#include <stdint.h>

#include <tidepool/core.h>

#include "inline.h"

#define TIDE__SHARE_NONE UINT32_MAX       /* no slot */
#define TIDE__SHARE_OUT  (UINT32_MAX - 1) /* prev: in no room */

/* 12 bytes a slot. */
struct tide__share {
    uint16_t loans;   /* loans of it out now */
    uint16_t streams; /* loans it may carry now (>= 1; a drain is the
                         pool's state, not a capacity of 0) */
    uint32_t prev;    /* in a room: the newer one, or TIDE__SHARE_NONE for
                         the newest; in none: TIDE__SHARE_OUT */
    uint32_t next;    /* in a room: the older one, or TIDE__SHARE_NONE */
};

/* A set of counts 0 .. 65535: one level, bit n of top is n (counts below
 * 64); two, bit w of top says leaf[w] is not 0 and bit b of leaf[w] is
 * 64w + b (below 4096); three, top over mid over leaf likewise. */
struct tide__bitmap {
    uint64_t top;
    uint64_t *mid;
    uint64_t *leaf;
    unsigned levels;
};

struct tide__shares {
    struct tide__share *of;      /* per slot, `capacity` of them */
    uint32_t *room;              /* room[n]: the newest with n loans and room
                                    for more, 1 <= n < streams */
    struct tide__bitmap rooms;   /* the rooms not empty */
    uint32_t *census;            /* census[n]: resources lent with n loans and
                                    in no room, 1 <= n <= streams */
    struct tide__bitmap counted; /* the counts census holds */
    uint32_t streams;            /* limits.streams */
};

/* 0, or -1 when out of memory (nothing to dispose then). */
int tide__shares_init(struct tide__shares *sh, uint32_t streams);
void tide__shares_dispose(struct tide__shares *sh);
/* Records for slots [from, to) after the pool's slots grew to `to`. 0 or
 * -1 (out of memory: the records already there are kept). */
int tide__shares_reserve(struct tide__shares *sh, uint32_t from, uint32_t to);
/* The most loans one resource carries now; 0 with none out. */
uint32_t tide__shares_busiest(const struct tide__shares *sh);

/* A slot's record for a resource with no loan yet, carrying `streams`. */
static inline void tide__shares_reset(struct tide__shares *sh, uint32_t i,
                                      uint16_t streams)
{
    sh->of[i] = (struct tide__share){.loans = 0,
                                     .streams = streams,
                                     .prev = TIDE__SHARE_OUT,
                                     .next = TIDE__SHARE_NONE};
}

static inline bool tide__shares_in_room(const struct tide__shares *sh,
                                        uint32_t i)
{
    return sh->of[i].prev != TIDE__SHARE_OUT;
}

static inline bool tide__shares_any_room(const struct tide__shares *sh)
{
    return sh->rooms.top != 0;
}

/* ---- bitmaps ---- */

static inline uint64_t tide__bit(uint32_t n)
{
    return UINT64_C(1) << (n & 63);
}

/* The highest and the lowest bit set in w, which is not 0. */
static inline uint32_t tide__highest_bit(uint64_t w)
{
#if defined(__GNUC__)
    return 63u - (uint32_t)__builtin_clzll(w);
#else
    uint32_t b = 0;
    while (w >>= 1)
        b++;
    return b;
#endif
}

static inline uint32_t tide__lowest_bit(uint64_t w)
{
#if defined(__GNUC__)
    return (uint32_t)__builtin_ctzll(w);
#else
    uint32_t b = 0;
    while (!(w & 1)) {
        w >>= 1;
        b++;
    }
    return b;
#endif
}

static inline uint32_t tide__end_bit(uint64_t w, bool low)
{
    return low ? tide__lowest_bit(w) : tide__highest_bit(w);
}

static inline void tide__bitmap_mark(struct tide__bitmap *b, uint32_t n)
{
    if (b->levels == 1) {
        b->top |= tide__bit(n);
        return;
    }
    b->leaf[n >> 6] |= tide__bit(n);
    if (b->levels == 2) {
        b->top |= tide__bit(n >> 6);
        return;
    }
    b->mid[n >> 12] |= tide__bit(n >> 6);
    b->top |= tide__bit(n >> 12);
}

static inline void tide__bitmap_unmark(struct tide__bitmap *b, uint32_t n)
{
    if (b->levels == 1) {
        b->top &= ~tide__bit(n);
        return;
    }
    if ((b->leaf[n >> 6] &= ~tide__bit(n)) != 0)
        return;
    if (b->levels == 2) {
        b->top &= ~tide__bit(n >> 6);
        return;
    }
    if ((b->mid[n >> 12] &= ~tide__bit(n >> 6)) != 0)
        return;
    b->top &= ~tide__bit(n >> 12);
}

/* The lowest or the highest count in the set, which is not empty. */
static inline uint32_t tide__bitmap_end(const struct tide__bitmap *b, bool low)
{
    uint32_t n = tide__end_bit(b->top, low);
    if (b->levels == 1)
        return n;
    if (b->levels == 3)
        n = n * 64 + tide__end_bit(b->mid[n], low);
    return n * 64 + tide__end_bit(b->leaf[n], low);
}

/* ---- rooms and the census ---- */

/* Puts i, not in a room, at the head of the room of its loans. */
static TIDE__INLINE void tide__shares_enter_room(struct tide__shares *sh,
                                                 uint32_t i)
{
    struct tide__share *s = &sh->of[i];
    uint32_t n = s->loans;
    uint32_t first = sh->room[n];
    s->prev = TIDE__SHARE_NONE;
    s->next = first;
    if (first == TIDE__SHARE_NONE)
        tide__bitmap_mark(&sh->rooms, n);
    else
        sh->of[first].prev = i;
    sh->room[n] = i;
}

/* Takes i, in a room, out of it. */
static TIDE__INLINE void tide__shares_leave_room(struct tide__shares *sh,
                                                 uint32_t i)
{
    struct tide__share *s = &sh->of[i];
    if (s->next != TIDE__SHARE_NONE)
        sh->of[s->next].prev = s->prev;
    if (s->prev != TIDE__SHARE_NONE) {
        sh->of[s->prev].next = s->next;
    } else {
        sh->room[s->loans] = s->next;
        if (s->next == TIDE__SHARE_NONE)
            tide__bitmap_unmark(&sh->rooms, s->loans);
    }
    s->prev = TIDE__SHARE_OUT;
}

static TIDE__INLINE void tide__shares_count(struct tide__shares *sh,
                                            uint32_t loans)
{
    if (sh->census[loans]++ == 0)
        tide__bitmap_mark(&sh->counted, loans);
}

static TIDE__INLINE void tide__shares_uncount(struct tide__shares *sh,
                                              uint32_t loans)
{
    if (--sh->census[loans] == 0)
        tide__bitmap_unmark(&sh->counted, loans);
}

/* Takes i out of where its loans are counted: its room, or the census. */
static TIDE__INLINE void tide__shares_lift(struct tide__shares *sh, uint32_t i)
{
    if (tide__shares_in_room(sh, i))
        tide__shares_leave_room(sh, i);
    else if (sh->of[i].loans > 0)
        tide__shares_uncount(sh, sh->of[i].loans);
}

/* Puts i where its loans are counted: the room of its count when `open`
 * and it has room (entered anew, so the newest there), else the census;
 * nowhere with no loan out. */
static TIDE__INLINE void tide__shares_settle(struct tide__shares *sh,
                                             uint32_t i, bool open)
{
    struct tide__share *s = &sh->of[i];
    if (open && s->loans > 0 && s->loans < s->streams)
        tide__shares_enter_room(sh, i);
    else if (s->loans > 0)
        tide__shares_count(sh, s->loans);
}

/* ---- moves ----
 *
 * Inline for the fast paths of a take and a give, which run each once;
 * out of line (shares.c) for every other caller, so the core keeps one
 * copy of them: it is compiled to WebAssembly too, where every copy
 * weighs on the page. */

/* One loan more (+1) or fewer (-1) on slot i; it is then in the room of
 * its new count when `open` and it has room, and counted otherwise. */
static TIDE__INLINE void tide__shares_move(struct tide__shares *sh, uint32_t i,
                                           int delta, bool open)
{
    tide__shares_lift(sh, i);
    sh->of[i].loans = (uint16_t)(sh->of[i].loans + delta);
    tide__shares_settle(sh, i, open);
}

/* tide__shares_move, out of line. */
void tide__shares_change(struct tide__shares *sh, uint32_t i, int delta,
                         bool open);
/* Slot i's place after a change of its capacity or openness. */
void tide__shares_place(struct tide__shares *sh, uint32_t i, bool open);

/* The room the next shared loan goes to under `sharing`: the fullest
 * (pack) or the emptiest (spread). One must not be empty. */
static inline uint32_t tide__shares_room_to_pick(const struct tide__shares *sh,
                                                 enum tide_sharing sharing)
{
    return tide__bitmap_end(&sh->rooms, sharing == TIDE_SHARING_SPREAD);
}

/* The resource the next shared loan goes to under `sharing`, among those
 * in a room: the newest of the fullest room (pack) or of the emptiest
 * (spread). TIDE__SHARE_NONE when no resource has room. */
static TIDE__INLINE uint32_t tide__shares_pick(const struct tide__shares *sh,
                                               enum tide_sharing sharing)
{
    if (!tide__shares_any_room(sh))
        return TIDE__SHARE_NONE;
    return sh->room[tide__shares_room_to_pick(sh, sharing)];
}

/* tide__shares_move(+1, open) of i, the newest of room n: what a take
 * does with the pick, its room known, so the list is left at its head. */
static TIDE__INLINE void tide__shares_lend_picked(struct tide__shares *sh,
                                                  uint32_t i, uint32_t n)
{
    struct tide__share *s = &sh->of[i];
    uint32_t next = s->next;
    sh->room[n] = next;
    if (next == TIDE__SHARE_NONE)
        tide__bitmap_unmark(&sh->rooms, n);
    else
        sh->of[next].prev = TIDE__SHARE_NONE;
    s->loans = (uint16_t)(n + 1);
    if (n + 1 < s->streams) {
        tide__shares_enter_room(sh, i);
    } else {
        s->prev = TIDE__SHARE_OUT;
        tide__shares_count(sh, n + 1);
    }
}

/* ---- flat rooms: the fast paths' moves ----
 *
 * With fewer than 64 rooms (streams up to 64) their set is the one word
 * rooms.top. A take and a give then step a resource from one room to the
 * next with that word in a register, written back once, and ask the levels
 * once for both steps: the moves above ask them at every mark and unmark,
 * and go through memory between the two, which cost a shared loan twice
 * an exclusive one. The word the steps change is *top; the caller reads
 * rooms.top into it and writes it back. */

static inline bool tide__shares_flat(const struct tide__shares *sh)
{
    return sh->rooms.levels == 1;
}

/* Takes i, the newest of room n, out of it. */
static TIDE__INLINE void tide__shares_flat_leave_head(struct tide__shares *sh,
                                                      uint32_t i, uint32_t n,
                                                      uint64_t *top)
{
    uint32_t next = sh->of[i].next;
    sh->room[n] = next;
    if (next == TIDE__SHARE_NONE)
        *top &= ~tide__bit(n);
    else
        sh->of[next].prev = TIDE__SHARE_NONE;
}

/* Takes i, in room n, out of it, from wherever it is there. */
static TIDE__INLINE void tide__shares_flat_leave(struct tide__shares *sh,
                                                 uint32_t i, uint32_t n,
                                                 uint64_t *top)
{
    struct tide__share *s = &sh->of[i];
    uint32_t prev = s->prev;
    uint32_t next = s->next;
    if (next != TIDE__SHARE_NONE)
        sh->of[next].prev = prev;
    if (prev != TIDE__SHARE_NONE) {
        sh->of[prev].next = next;
    } else {
        sh->room[n] = next;
        if (next == TIDE__SHARE_NONE)
            *top &= ~tide__bit(n);
    }
}

/* Puts i, in no room, at the head of room n, and its loans at n. */
static TIDE__INLINE void tide__shares_flat_enter(struct tide__shares *sh,
                                                 uint32_t i, uint32_t n,
                                                 uint64_t *top)
{
    struct tide__share *s = &sh->of[i];
    uint32_t first = sh->room[n];
    s->loans = (uint16_t)n;
    s->prev = TIDE__SHARE_NONE;
    s->next = first;
    if (first == TIDE__SHARE_NONE)
        *top |= tide__bit(n);
    else
        sh->of[first].prev = i;
    sh->room[n] = i;
}

#endif
