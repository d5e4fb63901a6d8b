/* The engine's face to JavaScript: what the wasm module exports, in shapes
 * that cross as plain numbers (pointers and doubles; int64_t crosses as a
 * BigInt, so only the clock does). Memory is the module's: the page asks
 * for buffers with malloc (exported) and reads them through typed arrays,
 * made again after any call that may allocate (a grown memory detaches the
 * old buffer). Built for wasm32 only, beside the same engine sources the
 * native vsim links. */
#include <stdlib.h>

#include "engine.h"
#include "steps.h"

#define EXPORT(name) __attribute__((export_name(name)))

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

/* The index of the first of params[param_count()] the engine refuses, or
 * -1 when it takes them all: what the page names after a refused run. */
EXPORT("params_check") int web_wasm_params_check(const double *p)
{
    return web_params_check(p);
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

EXPORT("row_field_count") int web_wasm_row_field_count(void)
{
    return WEB_ROW_FIELDS;
}

EXPORT("row_field_name") const char *web_wasm_row_field_name(int i)
{
    return web_row_field_name(i);
}

/* Row i's fields (fields.c) into out[row_field_count()]; 0, or -1 past the
 * last. */
EXPORT("row_values")
int web_wasm_row_values(struct web_engine *e, int i, double *out)
{
    const struct web_row *r = web_engine_row(e, i);
    if (!r)
        return -1;
    int64_t v[WEB_ROW_FIELDS];
    web_row_values(r, v);
    for (int k = 0; k < WEB_ROW_FIELDS; k++)
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

/* A recorder of e's every step (steps.h), holding up to cap; 0 when memory
 * ran out. From then on run e with steps_run only. Free it (before e) with
 * steps_free. */
EXPORT("steps_new")
struct web_steps *web_wasm_steps_new(struct web_engine *e, int cap)
{
    struct web_steps *s;
    return cap > 0 && web_steps_new(e, (uint32_t)cap, &s) == 0 ? s : NULL;
}

EXPORT("steps_free") void web_wasm_steps_free(struct web_steps *s)
{
    web_steps_free(s);
}

/* Runs to `until` ns recording each step, or until the ring is full; the
 * number of rows closed. */
EXPORT("steps_run") int web_wasm_steps_run(struct web_steps *s, int64_t until)
{
    return (int)web_steps_run(s, until);
}

/* Up to max of the oldest steps into out[max * step_values()]; how many. */
EXPORT("steps_take")
int web_wasm_steps_take(struct web_steps *s, int32_t *out, int max)
{
    return max > 0 ? (int)web_steps_take(s, out, (uint32_t)max) : 0;
}

EXPORT("step_values") int web_wasm_step_values(void)
{
    return WEB_STEP_VALUES;
}
