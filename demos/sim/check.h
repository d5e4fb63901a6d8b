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

/* Checks a square wave's rows (--square), one verdict line each:
 *   bursts    from the second burst on, at most 1% of the requests
 *             waited for a connect and at most 1% as many connections
 *             were made (the goal: 99% served without a wait):
 *             the bursts are served by connections kept from the one
 *             before. Not none: the pool keeps the peak of the last
 *             window's loans, and a burst whose arrivals peak a few above
 *             the one before's needs a few more (seen on a quiet machine,
 *             with this code and the code before it: 3 to 6 made and 1
 *             to 3 waiting, of some 6,000 requests);
 *   ahead     preconnects opened connections before callers needed them;
 *   after     once the bursts stop, the pool stepped down (retired by
 *             demand) to at most twice what the calm load used at once,
 *             and served every second. */
bool check_square(const struct row *rows, int n, FILE *out);

#endif
