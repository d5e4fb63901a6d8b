/* Item map: pointer -> slot number, linear probing, backward-shift delete.
 * The probes are inline in itemmap.h. */
#include <stdlib.h>
#include <string.h>

#include "itemmap.h"

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

/* Puts a key known to be absent in the first empty cell from its home. */
static void place(struct tide__itemmap *m, const void *key, uint32_t slot)
{
    uint32_t at = tide__itemmap_home(m, key);
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
            place(m, tide__itemmap_key(m, old[i]), old[i]);
    free(old);
    return 0;
}

void tide__itemmap_insert(struct tide__itemmap *m, const void *key,
                          uint32_t slot)
{
    place(m, key, slot);
}

/* Backward shift: pulls later entries of the run into the hole unless
 * their home lies cyclically after the hole (they would be lost), so no
 * tombstones pile up. The map is copied to a local: a store to a cell could
 * alias its fields, which the loop would then load again each time. */
void tide__itemmap_shift(struct tide__itemmap *m, uint32_t hole)
{
    const struct tide__itemmap map = *m;
    for (uint32_t next = (hole + 1) & map.mask;
         map.cells[next] != TIDE__ITEMMAP_NONE; next = (next + 1) & map.mask) {
        uint32_t h =
            tide__itemmap_home(&map, tide__itemmap_key(&map, map.cells[next]));
        if (((next - h) & map.mask) >= ((next - hole) & map.mask)) {
            map.cells[hole] = map.cells[next];
            hole = next;
        }
    }
    map.cells[hole] = TIDE__ITEMMAP_NONE;
}

void tide__itemmap_remove(struct tide__itemmap *m, const void *key)
{
    if (!m->cells)
        return;
    uint32_t at = tide__itemmap_seek(m, key);
    if (m->cells[at] != TIDE__ITEMMAP_NONE)
        tide__itemmap_erase(m, at);
}
