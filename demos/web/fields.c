/* A row's fields by name, one table for the wasm exports (the page reads
 * the boards from them) and for vsim --fields (the differential test
 * compares them), so every number the page shows is held to the native
 * engine's, not only the printed columns. */
#include "engine.h"

static const char *const names[WEB_ROW_FIELDS] = {
    "second",          "phase",          "lent",         "idle",
    "waiting",         "p99_ns",         "refusal_pm",   "bucket_span_ns",
    "backoff_span_ns", "retry_after_ns", "made",         "make_failures",
    "timeouts",        "queue_full",     "shed",         "served",
    "shed_breaker",    "shed_shedder",   "shed_other",   "later_bucket",
    "later_backoff",   "breaker_last",   "bucket_milli", "backoff_hold_ns",
    "ceiling_milli",   "held",           "preconnects",  "demand_retired",
    "connect_waits",   "needed",
};

const char *web_row_field_name(int i)
{
    return i >= 0 && i < WEB_ROW_FIELDS ? names[i] : NULL;
}

void web_row_values(const struct web_row *r, int64_t *out)
{
    const int64_t v[WEB_ROW_FIELDS] = {
        r->second,        r->phase,
        r->lent,          r->idle,
        r->waiting,       r->p99,
        r->refusal_pm,    r->bucket_span,
        r->backoff_span,  r->retry_after,
        r->made,          r->make_failures,
        r->timeouts,      r->queue_full,
        r->shed,          r->served,
        r->shed_breaker,  r->shed_shedder,
        r->shed_other,    r->later_bucket,
        r->later_backoff, r->trail[r->n_trail - 1],
        r->bucket_milli,  r->backoff_hold,
        r->ceiling_milli, r->held,
        r->preconnects,   r->demand_retired,
        r->connect_waits, r->needed,
    };
    for (int k = 0; k < WEB_ROW_FIELDS; k++)
        out[k] = v[k];
}
