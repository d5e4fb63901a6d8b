/* One row of the simulator: what the pool did in one second, as the API
 * names it, and how the row is printed. */
#ifndef TIDEPOOL_SIM_ROW_H
#define TIDEPOOL_SIM_ROW_H

#include <stdio.h>

#include <tidepool/evloop.h>

/* AFTER: the square wave's end, the calm load that follows its bursts. */
enum phase { CALM, BURST, DRAIN, OUTAGE, RECOVERY, AFTER, PHASES };

/* The breaker's states within one second, in order. INACTIVE lasts a whole
 * cooldown, so a second seldom holds more than three. */
#define ROW_TRAIL 4

struct row {
    enum phase phase; /* the phase the second was spent in */
    /* at the end of the second (tide_evpool_stats) */
    int64_t lent, idle, waiting;
    int64_t p99; /* ns: recent_p99, acquire waits over the last minute */
    /* in the second: the stats' counters moved by so much */
    int64_t made, make_failures, timeouts, queue_full;
    int64_t shed;   /* refused at once: shed, or held (makes held) */
    int64_t served; /* requests echoed back (the simulator's own count) */
    /* makes started while the breaker was RECOVERING: its probes */
    int64_t probes;
    /* ns: the shortest pause before a make that followed a failed one while
     * the breaker was ACTIVE, which only backoff explains; -1: none */
    int64_t held;
    enum tide_breaker_state trail[ROW_TRAIL];
    int n_trail;
    /* the square wave (--square): connections by demand, in the second */
    bool demand;     /* printed only then */
    int64_t ahead;   /* preconnects: makes opened before a caller waited */
    int64_t retired; /* idle ones retired as beyond recent demand */
    int64_t waited;  /* acquires that waited for a connect */
};

/* A row with nothing in it yet, the breaker last seen in state b. */
void row_start(struct row *r, enum tide_breaker_state b);
/* Notes the breaker's state as seen now; a change extends the trail (when
 * it is full the last entry is overwritten, so it always ends right). */
void row_see(struct row *r, enum tide_breaker_state b);
/* Whether the breaker was in state b at some point in the second. */
bool row_saw(const struct row *r, enum tide_breaker_state b);
/* Notes a make that began after a pause of `pause` ns following a failed
 * make while the breaker was ACTIVE. */
void row_held(struct row *r, int64_t pause);

const char *phase_name(enum phase p);
/* The API's name of a breaker state: ACTIVE, INACTIVE, RECOVERING. */
const char *breaker_name(enum tide_breaker_state b);

/* The legend (one line: what each column is) and the column heads; with
 * demand, the square wave's columns (ahead, retired, waited) too. */
void row_print_legend(FILE *out, bool demand);
/* Prints row r, the n-th second of the run (from 1), in at most 100
 * columns. */
void row_print(FILE *out, const struct row *r, int n);

#endif
