/* Item map: pointer -> slot number, linear probing, backward-shift delete. */
#include <stdlib.h>
#include <string.h>

#include "itemmap.h"

static const void *key_of(const struct tide__itemmap *m, uint32_t slot)
{
    const void *key;
    memcpy(&key, m->records + (size_t)slot * m->stride, sizeof key);
    return key;
}

/* Fibonacci hashing: pointers share their low bits (alignment) and often
 * their high bits (one heap), so multiply and keep the top bits. */
static uint32_t home(const struct tide__itemmap *m, const void *key)
{
    uint64_t h = (uint64_t)(uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15);
    return (uint32_t)(h >> m->shift);
}

void tide__itemmap_init(struct tide__itemmap *m)
{
    memset(m, 0, sizeof *m);
}

void tide__itemmap_dispose(struct tide__itemmap *m)
{
    free(m->cells);
    m->cells = NULL;
}

void tide__itemmap_bind(struct tide__itemmap *m, const void *records,
                        size_t stride)
{
    m->records = records;
    m->stride = stride;
}

static void place(struct tide__itemmap *m, const void *key, uint32_t slot)
{
    uint32_t at = home(m, key);
    while (m->cells[at] != TIDE__ITEMMAP_NONE)
        at = (at + 1) & m->mask;
    m->cells[at] = slot;
}

int tide__itemmap_reserve(struct tide__itemmap *m, uint32_t n)
{
    uint64_t want = 2;
    unsigned bits = 1;
    while (want < (uint64_t)n * 2) {
        want <<= 1;
        bits++;
    }
    if (m->cells && want <= (uint64_t)m->mask + 1)
        return 0;
    if (want > ((uint64_t)1 << 32))
        return -1;
    uint32_t *cells = malloc((size_t)want * sizeof *cells);
    if (!cells)
        return -1;
    memset(cells, 0xff, (size_t)want * sizeof *cells);
    uint32_t *old = m->cells;
    uint64_t old_count = old ? (uint64_t)m->mask + 1 : 0;
    m->cells = cells;
    m->mask = (uint32_t)(want - 1);
    m->shift = 64 - bits;
    for (uint64_t i = 0; i < old_count; i++)
        if (old[i] != TIDE__ITEMMAP_NONE)
            place(m, key_of(m, old[i]), old[i]);
    free(old);
    return 0;
}

uint32_t tide__itemmap_find(const struct tide__itemmap *m, const void *key)
{
    if (!m->cells)
        return TIDE__ITEMMAP_NONE;
    for (uint32_t at = home(m, key);; at = (at + 1) & m->mask) {
        uint32_t slot = m->cells[at];
        if (slot == TIDE__ITEMMAP_NONE || key_of(m, slot) == key)
            return slot;
    }
}

void tide__itemmap_insert(struct tide__itemmap *m, const void *key,
                          uint32_t slot)
{
    place(m, key, slot);
}

void tide__itemmap_remove(struct tide__itemmap *m, const void *key)
{
    if (!m->cells)
        return;
    uint32_t at = home(m, key);
    while (m->cells[at] != TIDE__ITEMMAP_NONE && key_of(m, m->cells[at]) != key)
        at = (at + 1) & m->mask;
    if (m->cells[at] == TIDE__ITEMMAP_NONE)
        return;
    /* Backward shift: pull later entries of the run into the hole unless
     * their home lies cyclically after the hole (they would be lost). */
    uint32_t hole = at;
    for (uint32_t next = (hole + 1) & m->mask;
         m->cells[next] != TIDE__ITEMMAP_NONE; next = (next + 1) & m->mask) {
        uint32_t h = home(m, key_of(m, m->cells[next]));
        if (((next - h) & m->mask) >= ((next - hole) & m->mask)) {
            m->cells[hole] = m->cells[next];
            hole = next;
        }
    }
    m->cells[hole] = TIDE__ITEMMAP_NONE;
}
