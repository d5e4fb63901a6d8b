#include "events.h"

#include <stdlib.h>

void web_events_init(struct web_events *q)
{
    *q = (struct web_events){0};
}

void web_events_dispose(struct web_events *q)
{
    free(q->heap);
    *q = (struct web_events){0};
}

static bool before(const struct web_event *a, const struct web_event *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

bool web_events_push(struct web_events *q, struct web_event ev)
{
    if (q->n == q->cap) {
        uint32_t cap = q->cap ? q->cap * 2 : 256;
        struct web_event *heap = realloc(q->heap, cap * sizeof *heap);
        if (!heap)
            return false;
        q->heap = heap;
        q->cap = cap;
    }
    ev.seq = q->seq++;
    uint32_t i = q->n++;
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!before(&ev, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = ev;
    return true;
}

bool web_events_pop(struct web_events *q, struct web_event *out)
{
    if (q->n == 0)
        return false;
    *out = q->heap[0];
    struct web_event last = q->heap[--q->n];
    uint32_t i = 0;
    for (;;) {
        uint32_t child = 2 * i + 1;
        if (child >= q->n)
            break;
        if (child + 1 < q->n && before(&q->heap[child + 1], &q->heap[child]))
            child++;
        if (!before(&q->heap[child], &last))
            break;
        q->heap[i] = q->heap[child];
        i = child;
    }
    if (q->n > 0)
        q->heap[i] = last;
    return true;
}

int64_t web_events_next(const struct web_events *q)
{
    return q->n ? q->heap[0].at : INT64_MAX;
}
