/* Item map: finds the slot of a resource by its pointer, in O(1).
 *
 * An open-addressed table of 32-bit slot numbers with linear probing; the
 * keys are not stored twice but read from the caller's records (whose first
 * member is the key pointer), which keeps it at 8 to 16 bytes a slot. */
#ifndef TIDEPOOL_ITEMMAP_H
#define TIDEPOOL_ITEMMAP_H

#include <stddef.h>
#include <stdint.h>

#define TIDE__ITEMMAP_NONE UINT32_MAX

struct tide__itemmap {
    uint32_t *cells;    /* slot numbers, TIDE__ITEMMAP_NONE when empty */
    uint32_t mask;      /* cells - 1; cells is a power of two */
    unsigned shift;     /* 64 - log2(cells) */
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
uint32_t tide__itemmap_find(const struct tide__itemmap *m, const void *key);
/* The key must be absent and the map reserved for it. */
void tide__itemmap_insert(struct tide__itemmap *m, const void *key,
                          uint32_t slot);
void tide__itemmap_remove(struct tide__itemmap *m, const void *key);

#endif
