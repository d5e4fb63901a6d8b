/* The engine's state at every step, for a chart drawn from the run rather
 * than from whenever someone looked: the engine moves in millisecond ticks
 * (arrivals, top-up, eviction), and a page that sampled it once a frame saw
 * three points of a 24-second run at 100x, so a burst rising in a few
 * milliseconds drew as a ramp across seconds. This runs the engine one step
 * at a time and records, after each, the pool's lent, idle and waiting into
 * a ring that its reader drains (the page, each frame; vsim --steps, as it
 * goes).
 *
 * Step k is the state once every event due at or before k ms has run: the
 * tick at k ms and whatever it set off. A run of S seconds has S * 1000 + 1
 * steps, 0 to S * 1000 ms; the last is the state the last row closed on.
 * Nothing here decides anything: the steps are the same whether the run
 * goes in one call or in many (the page's frames), natively and in wasm. */
#ifndef TIDEPOOL_WEB_STEPS_H
#define TIDEPOOL_WEB_STEPS_H

#include <stdint.h>

#include "engine.h"

/* What a step holds, in this order, as int32_t each. */
enum web_step_value {
    WEB_STEP_MS, /* the step's virtual time, ms from the run's start */
    WEB_STEP_LENT,
    WEB_STEP_IDLE,
    WEB_STEP_WAITING,
    WEB_STEP_VALUES
};

#define WEB_STEP_NS TIDE_MS(1)

struct web_steps;

/* A recorder for engine e, whose run has not moved yet, keeping up to cap
 * (at least 1) steps that were not taken. e is borrowed and must outlive
 * it; from now on e moves only through web_steps_run, or steps are lost.
 * 0, or TIDE_EINVAL for cap 0, or TIDE_ENOMEM. Caller owns *out; free with
 * web_steps_free. */
int web_steps_new(struct web_engine *e, uint32_t cap, struct web_steps **out);
void web_steps_free(struct web_steps *s);
/* Runs e to virtual time `until` ns, recording every step on the way. When
 * the ring fills first, stops on the last step recorded: take the steps
 * and call again to go on (nothing is dropped). Returns e's rows closed. */
int64_t web_steps_run(struct web_steps *s, int64_t until);
/* Moves up to max of the oldest steps recorded into out[max *
 * WEB_STEP_VALUES], oldest first; returns how many. */
uint32_t web_steps_take(struct web_steps *s, int32_t *out, uint32_t max);
/* How many steps the ring holds now. */
uint32_t web_steps_held(const struct web_steps *s);

#endif
