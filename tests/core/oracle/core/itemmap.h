/* Item map: finds the slot of a resource by its pointer, in O(1).
 *
 * An open-addressed table of 32-bit slot numbers with linear probing; the
 * keys are not stored twice but read from the caller's records (whose first
 * member is the key pointer), which keeps it at 8 to 16 bytes a slot.
 *
 * The lookups are inline: they are the pool's hottest loop, and a call would
 * cost as much as the probe. A cell found by tide__itemmap_seek serves the
 * insert or removal that follows, so a lookup and its update probe once. */
#ifndef TIDEPOOL_ITEMMAP_H
#define TIDEPOOL_ITEMMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TIDE__ITEMMAP_NONE UINT32_MAX

struct tide__itemmap {
    uint32_t *cells;     /* slot numbers, TIDE__ITEMMAP_NONE when empty */
    uint32_t mask;       /* cells - 1; cells is a power of two */
    unsigned shift;      /* 64 - log2(cells) */
    const char *records; /* borrowed: the records the slot numbers index */
    size_t stride;
};

void tide__itemmap_init(struct tide__itemmap *m);
void tide__itemmap_dispose(struct tide__itemmap *m);
/* Points the map at the records (after they move), each `stride` bytes with
 * the key pointer first. */
void tide__itemmap_bind(struct tide__itemmap *m, const void *records,
                        size_t stride);
/* Room for n keys at most half full; rehashes. 0 or -1 (no memory, map
 * unchanged). */
int tide__itemmap_reserve(struct tide__itemmap *m, uint32_t n);
/* The key must be absent and the map reserved for it. */
void tide__itemmap_insert(struct tide__itemmap *m, const void *key,
                          uint32_t slot);
void tide__itemmap_remove(struct tide__itemmap *m, const void *key);

/* The key of record `slot`: the pointer its record starts with. */
static inline const void *tide__itemmap_key_in(const void *records,
                                               size_t stride, uint32_t slot)
{
    const void *key;
    memcpy(&key, (const char *)records + (size_t)slot * stride, sizeof key);
    return key;
}

static inline const void *tide__itemmap_key(const struct tide__itemmap *m,
                                            uint32_t slot)
{
    return tide__itemmap_key_in(m->records, m->stride, slot);
}

/* Fibonacci hashing: pointers share their low bits (alignment) and often
 * their high bits (one heap), so multiply and keep the top bits. */
static inline uint32_t tide__itemmap_home(const struct tide__itemmap *m,
                                          const void *key)
{
    uint64_t h = (uint64_t)(uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15);
    return (uint32_t)(h >> m->shift);
}

/* tide__itemmap_seek over the records bound, passed again by a caller that
 * knows their stride at compile time: the multiply becomes a shift. */
static inline uint32_t tide__itemmap_seek_in(const struct tide__itemmap *m,
                                             const void *key,
                                             const void *records, size_t stride)
{
    uint32_t at = tide__itemmap_home(m, key);
    for (;;) {
        uint32_t slot = m->cells[at];
        if (slot == TIDE__ITEMMAP_NONE ||
            tide__itemmap_key_in(records, stride, slot) == key)
            return at;
        at = (at + 1) & m->mask;
    }
}

/* The cell holding key, or else the empty cell where it would go. The map
 * must have cells (be reserved). */
static inline uint32_t tide__itemmap_seek(const struct tide__itemmap *m,
                                          const void *key)
{
    return tide__itemmap_seek_in(m, key, m->records, m->stride);
}

/* The slot of key, or TIDE__ITEMMAP_NONE. */
static inline uint32_t tide__itemmap_find(const struct tide__itemmap *m,
                                          const void *key)
{
    if (!m->cells)
        return TIDE__ITEMMAP_NONE;
    return m->cells[tide__itemmap_seek(m, key)];
}

/* Fills the empty cell seek found for a key, with nothing inserted or
 * removed since. */
static inline void tide__itemmap_put(struct tide__itemmap *m, uint32_t at,
                                     uint32_t slot)
{
    m->cells[at] = slot;
}

/* Closes the hole left at `hole` by pulling later entries of its run back;
 * out of line, since most holes have an empty cell after them. */
void tide__itemmap_shift(struct tide__itemmap *m, uint32_t hole);

/* Empties the cell seek found a key in when no entry after it may need
 * to move into it: true when done, false when tide__itemmap_shift must
 * close the hole. A caller in a hurry can then end in that call. */
static inline bool tide__itemmap_clear(struct tide__itemmap *m, uint32_t at)
{
    if (m->cells[(at + 1) & m->mask] != TIDE__ITEMMAP_NONE)
        return false;
    m->cells[at] = TIDE__ITEMMAP_NONE;
    return true;
}

/* Empties the cell seek found a key in. */
static inline void tide__itemmap_erase(struct tide__itemmap *m, uint32_t at)
{
    if (!tide__itemmap_clear(m, at))
        tide__itemmap_shift(m, at);
}

#endif
