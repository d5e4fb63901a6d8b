/* Shares: rooms by loan count and the census of the rest; see shares.h.
 * The steps of a take and a give are inline there; here is what runs
 * once, or seldom. */
#include <stdlib.h>
#include <string.h>

#include "shares.h"

/* A bitmap of counts 0 .. most. 0, or -1 when out of memory (what it
 * holds is freed by bitmap_dispose either way). */
static int bitmap_init(struct tide__bitmap *b, uint32_t most)
{
    memset(b, 0, sizeof *b);
    b->levels = most < 64 ? 1 : most < 64 * 64 ? 2 : 3;
    if (b->levels >= 2 && !(b->leaf = calloc(most / 64 + 1, sizeof *b->leaf)))
        return -1;
    if (b->levels == 3 &&
        !(b->mid = calloc(most / (64 * 64) + 1, sizeof *b->mid)))
        return -1;
    return 0;
}

static void bitmap_dispose(struct tide__bitmap *b)
{
    free(b->leaf);
    free(b->mid);
}

int tide__shares_init(struct tide__shares *sh, uint32_t streams)
{
    memset(sh, 0, sizeof *sh);
    sh->streams = streams;
    sh->room = malloc((size_t)streams * sizeof *sh->room);
    sh->census = calloc((size_t)streams + 1, sizeof *sh->census);
    /* rooms hold 1 .. streams - 1 loans, the census 1 .. streams */
    int rooms = bitmap_init(&sh->rooms, streams - 1);
    int counted = bitmap_init(&sh->counted, streams);
    if (!sh->room || !sh->census || rooms || counted) {
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
    free(sh->census);
    bitmap_dispose(&sh->rooms);
    bitmap_dispose(&sh->counted);
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

void tide__shares_change(struct tide__shares *sh, uint32_t i, int delta,
                         bool open)
{
    tide__shares_move(sh, i, delta, open);
}

void tide__shares_place(struct tide__shares *sh, uint32_t i, bool open)
{
    tide__shares_lift(sh, i);
    tide__shares_settle(sh, i, open);
}

/* The fullest room, or the highest count of the rest. */
uint32_t tide__shares_busiest(const struct tide__shares *sh)
{
    uint32_t in_room = sh->rooms.top ? tide__bitmap_end(&sh->rooms, false) : 0;
    uint32_t rest = sh->counted.top ? tide__bitmap_end(&sh->counted, false) : 0;
    return in_room > rest ? in_room : rest;
}
