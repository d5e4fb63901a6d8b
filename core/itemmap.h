/* Item map: finds the slot of a resource by its pointer, in O(1).
 *
 * An open-addressed table of 32-bit cells with linear probing; the keys are
 * not stored twice but read from the caller's records (whose first member
 * is the key pointer), which keeps it at 8 to 16 bytes a slot.
 *
 * A cell holds a slot number, or, in a tagged map, a slot number in its low
 * bits and some bits of the key's hash above them (the map is at most half
 * full, so a slot number needs one bit fewer than the cell's position does,
 * and the bits left carry the tag). A probe then reads a record only when
 * the tag matches: one cache line a probe instead of two, which matters
 * once the records are out of cache and a lookup's probes land on others'
 * records. An untagged map's cells are plain slot numbers, read as they
 * are by a caller that indexes `cells` itself; tide__itemmap_slot_at reads
 * either kind.
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
    uint32_t *cells; /* TIDE__ITEMMAP_NONE when empty */
    uint32_t mask;   /* cells - 1; cells is a power of two */
    uint32_t tags;   /* the bits of a cell holding the tag; 0: untagged */
    unsigned shift;  /* 64 - log2(cells) */
    bool tagged;
    const char *records; /* borrowed: the records the slot numbers index */
    size_t stride;
};

/* An untagged map: its cells are slot numbers. */
void tide__itemmap_init(struct tide__itemmap *m);
/* A tagged map: read its cells with tide__itemmap_slot_at. */
void tide__itemmap_init_tagged(struct tide__itemmap *m);
void tide__itemmap_dispose(struct tide__itemmap *m);
/* Points the map at the records (after they move), each `stride` bytes with
 * the key pointer first. */
void tide__itemmap_bind(struct tide__itemmap *m, const void *records,
                        size_t stride);
/* Room for n keys at most half full, with slot numbers below n; rehashes.
 * 0 or -1 (no memory, map unchanged). */
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
static inline uint64_t tide__itemmap_hash(const void *key)
{
    return (uint64_t)(uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15);
}

static inline uint32_t tide__itemmap_home(const struct tide__itemmap *m,
                                          const void *key)
{
    return (uint32_t)(tide__itemmap_hash(key) >> m->shift);
}

/* The tag of a key in its cell: the hash's low word in the cell's bits
 * above the slot number (none when untagged). Its top bits, those a tag
 * keeps, depend on all of the pointer's low 32 bits, so two keys sharing
 * a home differ there unless their pointers differ only above bit 31
 * (then the record's key tells them apart). No shift: a probe already
 * spends one on the home. */
static inline uint32_t tide__itemmap_tag_of(const struct tide__itemmap *m,
                                            uint64_t hash)
{
    return (uint32_t)hash & m->tags;
}

static inline uint32_t tide__itemmap_tag(const struct tide__itemmap *m,
                                         const void *key)
{
    return tide__itemmap_tag_of(m, tide__itemmap_hash(key));
}

/* tide__itemmap_seek over the records bound, passed again by a caller that
 * knows their stride at compile time: the multiply becomes a shift. Also
 * writes the slot of key to *slot, TIDE__ITEMMAP_NONE when absent. The map
 * is read once into locals: the loop would otherwise load its fields again
 * after each record read, for all the compiler knows they may alias. */
static inline uint32_t tide__itemmap_seek_slot_in(const struct tide__itemmap *m,
                                                  const void *key,
                                                  const void *records,
                                                  size_t stride, uint32_t *slot)
{
    const uint32_t *cells = m->cells;
    uint32_t mask = m->mask;
    uint64_t hash = tide__itemmap_hash(key);
    uint32_t at = (uint32_t)(hash >> m->shift);
    uint32_t tag = tide__itemmap_tag_of(m, hash);
    for (;;) {
        uint32_t cell = cells[at];
        if (cell == TIDE__ITEMMAP_NONE) {
            *slot = cell;
            return at;
        }
        /* The tag matches when nothing above the slot number differs;
         * then what is left is the slot number. */
        uint32_t found = cell ^ tag;
        if (found <= mask &&
            tide__itemmap_key_in(records, stride, found) == key) {
            *slot = found;
            return at;
        }
        at = (at + 1) & mask;
    }
}

static inline uint32_t tide__itemmap_seek_in(const struct tide__itemmap *m,
                                             const void *key,
                                             const void *records, size_t stride)
{
    uint32_t slot;
    return tide__itemmap_seek_slot_in(m, key, records, stride, &slot);
}

/* The cell holding key, or else the empty cell where it would go. The map
 * must have cells (be reserved). */
static inline uint32_t tide__itemmap_seek(const struct tide__itemmap *m,
                                          const void *key)
{
    return tide__itemmap_seek_in(m, key, m->records, m->stride);
}

/* The slot number in cell `at`, or TIDE__ITEMMAP_NONE when it is empty. */
static inline uint32_t tide__itemmap_slot_at(const struct tide__itemmap *m,
                                             uint32_t at)
{
    uint32_t cell = m->cells[at];
    return cell == TIDE__ITEMMAP_NONE ? cell : cell & m->mask;
}

/* The slot of key, or TIDE__ITEMMAP_NONE. */
static inline uint32_t tide__itemmap_find(const struct tide__itemmap *m,
                                          const void *key)
{
    if (!m->cells)
        return TIDE__ITEMMAP_NONE;
    return tide__itemmap_slot_at(m, tide__itemmap_seek(m, key));
}

/* Fills the empty cell seek found for key, with nothing inserted or
 * removed since. */
static inline void tide__itemmap_put(struct tide__itemmap *m, uint32_t at,
                                     const void *key, uint32_t slot)
{
    m->cells[at] = tide__itemmap_tag(m, key) | slot;
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
