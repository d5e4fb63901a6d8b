/* Shares: the bookkeeping of shared loans (limits.streams > 1), for the
 * pool. Per slot, how many loans its resource carries and how many it may
 * carry now; which resources have room for one more, grouped by how many
 * they carry, so a take finds the busiest or the least busy one at once;
 * and how many resources carry each count, so the busiest is known.
 *
 * The groups ("rooms") are lists linked through the slots' records, newest
 * first, one per loan count from 1 to streams - 1, and a bitmap of the
 * rooms that are not empty, in three levels of 64-bit words: the fullest
 * or emptiest room is three word scans away whatever the streams (up to
 * 64^3 of them), so a pick is O(1) in the pool's size and O(log64) in its
 * streams. Moving a resource between rooms, as every shared loan taken or
 * given does, is a list unlink and push. Nothing here allocates after
 * init and reserve.
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

#define TIDE__SHARE_NONE UINT32_MAX /* no slot */

/* 12 bytes a slot. */
struct tide__share {
    uint16_t loans;   /* loans of it out now */
    uint16_t streams; /* loans it may carry now (>= 1; a drain is the
                         pool's state, not a capacity of 0) */
    uint32_t prev;    /* in a room: the newer one, or TIDE__SHARE_NONE for
                         the newest; not in one: TIDE__SHARE_OUT */
    uint32_t next;    /* in a room: the older one, or TIDE__SHARE_NONE */
};

#define TIDE__SHARE_OUT (UINT32_MAX - 1)

struct tide__shares {
    struct tide__share *of; /* per slot, `capacity` of them */
    uint32_t *room;         /* room[n]: the newest with n loans and room
                               for more, 1 <= n < streams */
    uint64_t top;           /* bit k: mid[k] is not 0 */
    uint64_t *mid;          /* bit j of mid[k]: leaf[64k + j] is not 0 */
    uint64_t *leaf;         /* bit b of leaf[w]: room[64w + b] not empty */
    uint32_t *census;       /* census[n]: resources carrying n loans,
                               1 <= n <= TIDE_STREAMS_MAX */
    uint32_t busiest;       /* the most loans one resource carries */
    uint32_t streams;       /* limits.streams */
};

/* 0, or -1 when out of memory (nothing to dispose then). */
int tide__shares_init(struct tide__shares *sh, uint32_t streams);
void tide__shares_dispose(struct tide__shares *sh);
/* Records for slots [from, to) after the pool's slots grew to `to`. 0 or
 * -1 (out of memory: the records already there are kept). */
int tide__shares_reserve(struct tide__shares *sh, uint32_t from, uint32_t to);

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

void tide__shares_leave_room(struct tide__shares *sh, uint32_t i);
void tide__shares_enter_room(struct tide__shares *sh, uint32_t i);

/* One loan more (+1) or fewer (-1) on slot i; it is then in the room of
 * its new count when `open` and it has room, and in none otherwise. */
void tide__shares_move(struct tide__shares *sh, uint32_t i, int delta,
                       bool open);

/* Slot i's room after a change of its capacity or openness: as
 * tide__shares_move with no loan more or fewer. */
void tide__shares_place(struct tide__shares *sh, uint32_t i, bool open);

/* The resource the next shared loan goes to under `sharing`, among those
 * in a room: the newest of the fullest room (pack) or of the emptiest
 * (spread). TIDE__SHARE_NONE when no resource has room. */
uint32_t tide__shares_pick(const struct tide__shares *sh,
                           enum tide_sharing sharing);

static inline bool tide__shares_any_room(const struct tide__shares *sh)
{
    return sh->top != 0;
}

#endif
