/* Shares: rooms by loan count and the census of loans; see shares.h. */
#include <stdlib.h>
#include <string.h>

#include "shares.h"

/* Words of each bitmap level for rooms 0 .. streams - 1. */
static uint32_t leaf_words(uint32_t streams)
{
    return streams / 64 + 1;
}

static uint32_t mid_words(uint32_t streams)
{
    return leaf_words(streams) / 64 + 1;
}

int tide__shares_init(struct tide__shares *sh, uint32_t streams)
{
    memset(sh, 0, sizeof *sh);
    sh->streams = streams;
    sh->room = malloc((size_t)streams * sizeof *sh->room);
    sh->mid = calloc(mid_words(streams), sizeof *sh->mid);
    sh->leaf = calloc(leaf_words(streams), sizeof *sh->leaf);
    sh->census = calloc((size_t)streams + 1, sizeof *sh->census);
    if (!sh->room || !sh->mid || !sh->leaf || !sh->census) {
        tide__shares_dispose(sh);
        return -1;
    }
    for (uint32_t n = 0; n < streams; n++)
        sh->room[n] = TIDE__SHARE_NONE;
    return 0;
}

void tide__shares_dispose(struct tide__shares *sh)
{
    free(sh->of);
    free(sh->room);
    free(sh->mid);
    free(sh->leaf);
    free(sh->census);
    memset(sh, 0, sizeof *sh);
}

int tide__shares_reserve(struct tide__shares *sh, uint32_t from, uint32_t to)
{
    struct tide__share *of = realloc(sh->of, (size_t)to * sizeof *of);
    if (!of)
        return -1;
    sh->of = of;
    for (uint32_t i = from; i < to; i++)
        tide__shares_reset(sh, i, (uint16_t)sh->streams);
    return 0;
}

/* ---- the bitmap of rooms not empty ---- */

static void mark(struct tide__shares *sh, uint32_t n)
{
    sh->leaf[n >> 6] |= UINT64_C(1) << (n & 63);
    sh->mid[n >> 12] |= UINT64_C(1) << ((n >> 6) & 63);
    sh->top |= UINT64_C(1) << (n >> 12);
}

static void unmark(struct tide__shares *sh, uint32_t n)
{
    if ((sh->leaf[n >> 6] &= ~(UINT64_C(1) << (n & 63))) != 0)
        return;
    if ((sh->mid[n >> 12] &= ~(UINT64_C(1) << ((n >> 6) & 63))) != 0)
        return;
    sh->top &= ~(UINT64_C(1) << (n >> 12));
}

/* The highest and the lowest bit set in w, which is not 0. */
static unsigned highest_bit(uint64_t w)
{
#if defined(__GNUC__)
    return 63u - (unsigned)__builtin_clzll(w);
#else
    unsigned b = 0;
    while (w >>= 1)
        b++;
    return b;
#endif
}

static unsigned lowest_bit(uint64_t w)
{
#if defined(__GNUC__)
    return (unsigned)__builtin_ctzll(w);
#else
    unsigned b = 0;
    while (!(w & 1)) {
        w >>= 1;
        b++;
    }
    return b;
#endif
}

/* The fullest room not empty; there must be one. */
static uint32_t fullest(const struct tide__shares *sh)
{
    uint32_t k = highest_bit(sh->top);
    uint32_t w = k * 64 + highest_bit(sh->mid[k]);
    return w * 64 + highest_bit(sh->leaf[w]);
}

/* The emptiest room not empty; there must be one. */
static uint32_t emptiest(const struct tide__shares *sh)
{
    uint32_t k = lowest_bit(sh->top);
    uint32_t w = k * 64 + lowest_bit(sh->mid[k]);
    return w * 64 + lowest_bit(sh->leaf[w]);
}

/* ---- rooms ---- */

void tide__shares_enter_room(struct tide__shares *sh, uint32_t i)
{
    struct tide__share *s = &sh->of[i];
    uint32_t n = s->loans;
    uint32_t first = sh->room[n];
    s->prev = TIDE__SHARE_NONE;
    s->next = first;
    if (first == TIDE__SHARE_NONE)
        mark(sh, n);
    else
        sh->of[first].prev = i;
    sh->room[n] = i;
}

void tide__shares_leave_room(struct tide__shares *sh, uint32_t i)
{
    struct tide__share *s = &sh->of[i];
    if (s->next != TIDE__SHARE_NONE)
        sh->of[s->next].prev = s->prev;
    if (s->prev != TIDE__SHARE_NONE) {
        sh->of[s->prev].next = s->next;
    } else {
        sh->room[s->loans] = s->next;
        if (s->next == TIDE__SHARE_NONE)
            unmark(sh, s->loans);
    }
    s->prev = TIDE__SHARE_OUT;
    s->next = TIDE__SHARE_NONE;
}

/* ---- the census ---- */

static void count_up(struct tide__shares *sh, uint32_t loans)
{
    if (loans > 1)
        sh->census[loans - 1]--;
    sh->census[loans]++;
    if (loans > sh->busiest)
        sh->busiest = loans;
}

/* A count goes down by one at a time, so the busiest does too: when the
 * last at the top comes down, it is the new top. */
static void count_down(struct tide__shares *sh, uint32_t loans)
{
    uint32_t was = loans + 1;
    if (--sh->census[was] == 0 && was == sh->busiest)
        sh->busiest = loans;
    if (loans > 0)
        sh->census[loans]++;
}

void tide__shares_place(struct tide__shares *sh, uint32_t i, bool open)
{
    struct tide__share *s = &sh->of[i];
    if (tide__shares_in_room(sh, i))
        tide__shares_leave_room(sh, i);
    if (open && s->loans > 0 && s->loans < s->streams)
        tide__shares_enter_room(sh, i);
}

void tide__shares_move(struct tide__shares *sh, uint32_t i, int delta,
                       bool open)
{
    struct tide__share *s = &sh->of[i];
    if (tide__shares_in_room(sh, i))
        tide__shares_leave_room(sh, i);
    if (delta > 0)
        count_up(sh, ++s->loans);
    else
        count_down(sh, --s->loans);
    if (open && s->loans > 0 && s->loans < s->streams)
        tide__shares_enter_room(sh, i);
}

uint32_t tide__shares_pick(const struct tide__shares *sh,
                           enum tide_sharing sharing)
{
    if (sh->top == 0)
        return TIDE__SHARE_NONE;
    return sh->room[sharing == TIDE_SHARING_SPREAD ? emptiest(sh)
                                                   : fullest(sh)];
}
