/* Doubly linked lists threaded through their elements' own `prev` and
 * `next` pointers, with a head, a tail and a count: the pool's waiters (in
 * order), its makes and its health checks in progress. Macros, so each list
 * keeps its element type; arguments are evaluated more than once, so pass
 * plain lvalues. */
#ifndef TIDEPOOL_EVLOOP_LIST_H
#define TIDEPOOL_EVLOOP_LIST_H

#include <stdint.h>

/* The body of a list of `type`: struct name TIDE__LIST_OF(struct x); */
#define TIDE__LIST_OF(type)                                                    \
    {                                                                          \
        type *head;                                                            \
        type *tail;                                                            \
        int64_t count;                                                         \
    }

#define TIDE__LIST_APPEND(list, elem)                                          \
    do {                                                                       \
        (elem)->next = NULL;                                                   \
        (elem)->prev = (list)->tail;                                           \
        if ((list)->tail)                                                      \
            (list)->tail->next = (elem);                                       \
        else                                                                   \
            (list)->head = (elem);                                             \
        (list)->tail = (elem);                                                 \
        (list)->count++;                                                       \
    } while (0)

#define TIDE__LIST_UNLINK(list, elem)                                          \
    do {                                                                       \
        if ((elem)->prev)                                                      \
            (elem)->prev->next = (elem)->next;                                 \
        else                                                                   \
            (list)->head = (elem)->next;                                       \
        if ((elem)->next)                                                      \
            (elem)->next->prev = (elem)->prev;                                 \
        else                                                                   \
            (list)->tail = (elem)->prev;                                       \
        (elem)->prev = (elem)->next = NULL;                                    \
        (list)->count--;                                                       \
    } while (0)

#endif
