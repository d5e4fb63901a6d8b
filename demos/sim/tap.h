/* A tap on a factory: it forwards every callback to the factory it wraps
 * and tells an observer each time the pool starts a make. The pool keeps
 * no record of what its breaker let through, and a probe (a make started
 * while the breaker is RECOVERING) lasts less than a millisecond against a
 * refused port: only the moment a make starts shows it. */
#ifndef TIDEPOOL_SIM_TAP_H
#define TIDEPOOL_SIM_TAP_H

#include <tidepool/evloop.h>

/* Called as each make starts, before the wrapped factory sees it; it may
 * read the pool (stats, breaker), not change it. */
typedef void (*tap_started_cb)(struct tide_evpool *pool, void *arg);

struct tap {
    struct tide_factory inner; /* the wrapped factory, copied */
    tap_started_cb started;
    void *arg; /* borrowed; passed to started */
};

/* Fills *out with a factory that forwards to t->inner and calls
 * t->started first on each make. t is borrowed and must outlive every pool
 * made with *out; the optional callbacks inner lacks stay NULL in *out, as
 * their presence changes what the pool does. */
void tap_bind(struct tap *t, struct tide_factory *out);

#endif
