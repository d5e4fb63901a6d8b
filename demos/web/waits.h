/* Acquire waits over the last minute, for the row's p99: a histogram per
 * simulated second in a ring of 60, with bins of three significant bits
 * (within 12.5% of the true value), so a quantile costs no sort and the
 * memory is fixed. Integer arithmetic only: the native and the wasm builds
 * answer alike. */
#ifndef TIDEPOOL_WEB_WAITS_H
#define TIDEPOOL_WEB_WAITS_H

#include <stdint.h>

#define WEB_WAITS_SECONDS 60
#define WEB_WAITS_BINS    400

struct web_waits {
    uint32_t bins[WEB_WAITS_SECONDS][WEB_WAITS_BINS];
    uint32_t count[WEB_WAITS_SECONDS];
    int64_t second; /* the second the newest slot holds */
};

void web_waits_init(struct web_waits *w);
/* Records a wait of `ns` nanoseconds in simulated second `second` (seconds
 * only move forward). */
void web_waits_add(struct web_waits *w, int64_t second, int64_t ns);
/* The q-th percentile (1..100) of the waits in the 60 seconds ending with
 * `second`, in ns (a bin's upper bound); 0 when there were none. */
int64_t web_waits_quantile(struct web_waits *w, int64_t second, int q);

#endif
