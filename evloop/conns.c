/* The record of every resource the pool made, found by pointer in O(1).
 * Records live in one array with stable indices (a free list threads the
 * unused ones), so the core's item map can read their keys in place. */
#include <stdlib.h>
#include <string.h>

#include "evloop_internal.h"

static int grow(struct tide_evpool *p, uint32_t capacity)
{
    struct conn *conns = realloc(p->conns, (size_t)capacity * sizeof *conns);
    if (!conns)
        return TIDE_ENOMEM;
    p->conns = conns;
    tide__itemmap_bind(&p->map, conns, sizeof *conns);
    if (tide__itemmap_reserve(&p->map, capacity) != 0)
        return TIDE_ENOMEM;
    for (uint32_t i = capacity; i > p->conn_capacity; i--) {
        memset(&conns[i - 1], 0, sizeof conns[0]);
        conns[i - 1].next_free = p->conn_free;
        p->conn_free = i - 1;
    }
    p->conn_capacity = capacity;
    return 0;
}

int tide__conns_init(struct tide_evpool *p, uint32_t capacity)
{
    tide__itemmap_init(&p->map);
    p->conn_free = CONN_NONE;
    return grow(p, capacity > 0 ? capacity : 1);
}

void tide__conns_dispose(struct tide_evpool *p)
{
    tide__itemmap_dispose(&p->map);
    free(p->conns);
    p->conns = NULL;
}

uint32_t tide__conn_add(struct tide_evpool *p, void *resource)
{
    if (p->conn_free == CONN_NONE) {
        uint64_t want = (uint64_t)p->conn_capacity * 2;
        if (want >= CONN_NONE || grow(p, (uint32_t)want) != 0)
            return CONN_NONE;
    }
    uint32_t i = p->conn_free;
    struct conn *c = &p->conns[i];
    p->conn_free = c->next_free;
    memset(c, 0, sizeof *c);
    c->resource = resource;
    c->state = CONN_LENT;
    tide__itemmap_insert(&p->map, resource, i);
    return i;
}

void tide__conn_remove(struct tide_evpool *p, uint32_t i)
{
    struct conn *c = &p->conns[i];
    tide__itemmap_remove(&p->map, c->resource);
    c->resource = NULL;
    c->state = CONN_FREE;
    c->next_free = p->conn_free;
    p->conn_free = i;
}
