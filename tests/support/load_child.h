/* The child side of the Redis and SMTP suites' out-of-time load tests: one
 * run of demos/load.c in this process that runs out of time with requests
 * in flight, then the client (or sender) freed and the run disposed of,
 * as the load programs do. Run in a fresh process (tide_test_child_run_self)
 * so that anything left behind shows: an open descriptor here, a leak
 * report under AddressSanitizer at exit. */
#ifndef TIDEPOOL_TEST_LOAD_CHILD_H
#define TIDEPOOL_TEST_LOAD_CHILD_H

#include <event2/event.h>
#include <stdbool.h>

#include "load.h"

/* open(base, arg) makes the client or sender on base (false: it could
 * not); close(arg) frees it, its last requests still in flight. ops and
 * arg go to the run, with conc requests at once. Returns the exit code for
 * the child: 0 when the run ran out of time and no descriptor is left; 2
 * when it could not start or run, 3 when it did not run out of time, 4
 * when descriptors are left (said on stderr). */
int tide_test_load_out_of_time(const struct tide_demo_load_ops *ops, void *arg,
                               int conc,
                               bool (*open)(struct event_base *base, void *arg),
                               void (*close)(void *arg));

#endif
