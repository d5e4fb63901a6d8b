/* The intrusive doubly linked list the demos keep their records in flight
 * in (the Redis client's batches, checks and setups; the SMTP sender's
 * openings, probes and messages): a struct with prev and next members and
 * a head pointer, newest first. Unlinking clears the record's links, so a
 * record taken out never points into the list. */
#ifndef TIDEPOOL_DEMO_LIST_H
#define TIDEPOOL_DEMO_LIST_H

#define TIDE_DEMO_LINK(head, x)                                                \
    do {                                                                       \
        (x)->prev = NULL;                                                      \
        (x)->next = *(head);                                                   \
        if (*(head))                                                           \
            (*(head))->prev = (x);                                             \
        *(head) = (x);                                                         \
    } while (0)

#define TIDE_DEMO_UNLINK(head, x)                                              \
    do {                                                                       \
        if ((x)->prev)                                                         \
            (x)->prev->next = (x)->next;                                       \
        else                                                                   \
            *(head) = (x)->next;                                               \
        if ((x)->next)                                                         \
            (x)->next->prev = (x)->prev;                                       \
        (x)->prev = (x)->next = NULL;                                          \
    } while (0)

#endif
