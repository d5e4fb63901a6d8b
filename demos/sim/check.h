/* --check: did each phase of the run show what it should? */
#ifndef TIDEPOOL_SIM_CHECK_H
#define TIDEPOOL_SIM_CHECK_H

#include <stdio.h>

#include "row.h"

/* Checks the n rows of a run against what each phase must show, for a
 * pool of `size` connections, and prints one verdict line per phase to
 * out. True when every phase showed it:
 *   calm      every second served, nothing refused, the breaker ACTIVE;
 *   burst     more callers queued than the pool has connections, then
 *             (drain) the queue drained: connections idle, few waiting;
 *   outage    makes failed; backoff held makes (each make that followed a
 *             failed one while the breaker was ACTIVE came after a pause);
 *             the breaker opened (INACTIVE) and callers were shed;
 *   recovery  then the breaker probed (RECOVERING, a make let through) and
 *             came back (ACTIVE), serving to the last second. */
bool check_run(const struct row *rows, int n, int64_t size, FILE *out);

#endif
