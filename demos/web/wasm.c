/* The engine's face to JavaScript: what the wasm module exports, in shapes
 * that cross as plain numbers (pointers and doubles; int64_t crosses as a
 * BigInt, so only the clock does). Memory is the module's: the page asks
 * for buffers with malloc (exported) and reads them through typed arrays,
 * made again after any call that may allocate (a grown memory detaches the
 * old buffer). Built for wasm32 only, beside the same engine sources the
 * native vsim links. */
#include <stdlib.h>

#include "engine.h"

#define EXPORT(name) __attribute__((export_name(name)))

/* The fields tide_web_row_values writes, in this order; their names, so the
 * page needs no copy of the list. */
static const char *const row_fields[] = {
    "second",          "phase",          "lent",       "idle",
    "waiting",         "p99_ns",         "refusal_pm", "bucket_span_ns",
    "backoff_span_ns", "retry_after_ns", "made",       "make_failures",
    "timeouts",        "queue_full",     "shed",       "served",
    "shed_breaker",    "shed_shedder",   "shed_other", "later_bucket",
    "later_backoff",   "breaker_last",
};
#define ROW_FIELDS (int)(sizeof row_fields / sizeof row_fields[0])

EXPORT("malloc") void *web_malloc(size_t n)
{
    return malloc(n);
}

EXPORT("free") void web_free(void *p)
{
    free(p);
}

EXPORT("param_count") int web_param_count(void)
{
    return WEB_PARAMS;
}

/* A parameter's name, NUL-terminated in static storage. */
EXPORT("param_name") const char *web_wasm_param_name(int i)
{
    return web_param_name(i);
}

/* The presets into out[param_count()]. */
EXPORT("params_preset") void web_wasm_params_preset(double *out)
{
    web_params_preset(out);
}

/* A run with params[param_count()] (copied); 0 when they are refused.
 * Free it with engine_free. */
EXPORT("engine_new") struct web_engine *web_wasm_engine_new(const double *p)
{
    struct web_engine *e;
    return web_engine_new(p, &e) == 0 ? e : NULL;
}

EXPORT("engine_free") void web_wasm_engine_free(struct web_engine *e)
{
    web_engine_free(e);
}

/* Runs to `until` ns of virtual time; the number of rows closed. */
EXPORT("engine_run")
int web_wasm_engine_run(struct web_engine *e, int64_t until)
{
    return (int)web_engine_run(e, until);
}

EXPORT("engine_now") double web_wasm_engine_now(struct web_engine *e)
{
    return (double)web_engine_now(e);
}

EXPORT("engine_done") int web_wasm_engine_done(struct web_engine *e)
{
    return web_engine_done(e);
}

EXPORT("engine_decisions")
double web_wasm_engine_decisions(struct web_engine *e)
{
    return (double)web_engine_decisions(e);
}

/* Now: lent, idle, waiting, the breaker's state, its refused share (per
 * mille), the phase and the breaker's retry_after (ns), into out[7]. */
EXPORT("engine_live")
void web_wasm_engine_live(struct web_engine *e, double *out)
{
    int64_t lent, idle, waiting;
    web_engine_live(e, &lent, &idle, &waiting);
    out[0] = (double)lent;
    out[1] = (double)idle;
    out[2] = (double)waiting;
    out[3] = (double)web_engine_breaker(e);
    out[4] = (double)web_engine_refusal_pm(e);
    out[5] = (double)web_engine_phase(e);
    out[6] = (double)web_engine_retry_after(e);
}

EXPORT("row_field_count") int web_row_field_count(void)
{
    return ROW_FIELDS;
}

EXPORT("row_field_name") const char *web_row_field_name(int i)
{
    return i >= 0 && i < ROW_FIELDS ? row_fields[i] : NULL;
}

/* Row i's fields into out[row_field_count()]; 0, or -1 past the last. */
EXPORT("row_values")
int web_row_values(struct web_engine *e, int i, double *out)
{
    const struct web_row *r = web_engine_row(e, i);
    if (!r)
        return -1;
    const int64_t v[] = {
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
    };
    _Static_assert(sizeof v / sizeof v[0] == ROW_FIELDS, "one per field");
    for (int k = 0; k < ROW_FIELDS; k++)
        out[k] = (double)v[k];
    return 0;
}

/* Row i as the native vsim prints it, into buf[row_text_size()]; its
 * length, or -1 past the last. */
EXPORT("row_text") int web_wasm_row_text(struct web_engine *e, int i, char *buf)
{
    const struct web_row *r = web_engine_row(e, i);
    return r ? (int)web_row_text(r, buf) : -1;
}

EXPORT("row_text_size") int web_row_text_size(void)
{
    return WEB_ROW_TEXT;
}

EXPORT("row_heads") const char *web_wasm_row_heads(void)
{
    return web_row_heads();
}
