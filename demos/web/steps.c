/* The engine's state at every step, into a ring: see steps.h. */
#include <stdlib.h>

#include "steps.h"

struct web_steps {
    struct web_engine *engine; /* borrowed */
    int32_t *ring; /* owned: cap steps of WEB_STEP_VALUES, first the oldest */
    uint32_t cap, first, held;
    int64_t next; /* the next step to record, ms */
};

int web_steps_new(struct web_engine *e, uint32_t cap, struct web_steps **out)
{
    if (cap == 0)
        return TIDE_EINVAL;
    struct web_steps *s = calloc(1, sizeof *s);
    int32_t *ring = calloc(cap, WEB_STEP_VALUES * sizeof *ring);
    if (!s || !ring) {
        free(s);
        free(ring);
        return TIDE_ENOMEM;
    }
    s->engine = e;
    s->ring = ring;
    s->cap = cap;
    *out = s;
    return 0;
}

void web_steps_free(struct web_steps *s)
{
    if (!s)
        return;
    free(s->ring);
    free(s);
}

static void record(struct web_steps *s)
{
    int64_t lent, idle, waiting;
    web_engine_live(s->engine, &lent, &idle, &waiting);
    int32_t *v = &s->ring[(s->first + s->held) % s->cap * WEB_STEP_VALUES];
    /* within int32: a run is at most an hour (3.6 M ms), and the pool and
     * the queue are bounded far below (engine.c) */
    v[WEB_STEP_MS] = (int32_t)s->next;
    v[WEB_STEP_LENT] = (int32_t)lent;
    v[WEB_STEP_IDLE] = (int32_t)idle;
    v[WEB_STEP_WAITING] = (int32_t)waiting;
    s->held++;
    s->next++;
}

int64_t web_steps_run(struct web_steps *s, int64_t until)
{
    struct web_engine *e = s->engine;
    while (!web_engine_done(e) && s->held < s->cap &&
           s->next * WEB_STEP_NS <= until) {
        web_engine_run(e, s->next * WEB_STEP_NS);
        record(s);
    }
    /* the rest of the way, short of the next step; with the ring full, no
     * further than the step just recorded, so none is skipped */
    return web_engine_run(e, s->held == s->cap ? web_engine_now(e) : until);
}

uint32_t web_steps_take(struct web_steps *s, int32_t *out, uint32_t max)
{
    uint32_t n = max < s->held ? max : s->held;
    for (uint32_t k = 0; k < n; k++) {
        const int32_t *v = &s->ring[(s->first + k) % s->cap * WEB_STEP_VALUES];
        for (int j = 0; j < WEB_STEP_VALUES; j++)
            out[k * WEB_STEP_VALUES + j] = v[j];
    }
    s->first = (s->first + n) % s->cap;
    s->held -= n;
    return n;
}

uint32_t web_steps_held(const struct web_steps *s)
{
    return s->held;
}
