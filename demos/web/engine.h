/* The virtual-time simulator: the real core (a tide_pool and every guard of
 * its ward) driven by a simulated clock, seeded callers and a simulated
 * backend, with a small event queue standing in for the loop. No libevent,
 * no sockets, no clock, no libm: the same source builds natively and to
 * wasm32, and a run is a function of its parameters and seed alone, so the
 * two builds print the same rows byte for byte.
 *
 * The run has the terminal simulator's phases (demos/sim): calm, a burst
 * past the pool's size, the drain after it, a backend outage (connects
 * refused, open connections cut) and the recovery; with wave_s, the burst
 * is a square wave (bursts and calm spells by turns), which with demand_s
 * and preconnect shows connections kept by demand. It closes one row per
 * simulated second with what demos/sim prints, plus the guards' answers. */
#ifndef TIDEPOOL_WEB_ENGINE_H
#define TIDEPOOL_WEB_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tidepool/core.h>

/* Every parameter of a run, by index. Values are doubles in the units the
 * name says; web_param_name gives the names the native program's
 * `name=value` arguments and the page's controls use. */
enum web_param {
    WEB_P_SEED,
    WEB_P_SECONDS,
    WEB_P_SIZE,
    WEB_P_IDLE,   /* 0: follow size */
    WEB_P_KEEP_S, /* idle time before retiring; 0: the core's preset */
    WEB_P_LIFE_S, /* 0: forever */
    WEB_P_SPREAD,
    WEB_P_MIN,
    WEB_P_QUEUE_MAX,
    WEB_P_ACQUIRE_TIMEOUT_MS,
    WEB_P_BREAKER, /* 0 none, 1 adaptive, 2 strikes */
    WEB_P_BREAKER_K,
    WEB_P_BREAKER_WINDOW_S,
    WEB_P_STRIKES,
    WEB_P_COOLDOWN_MS,
    WEB_P_PROBES,
    WEB_P_BUCKET_RATE, /* makes a second; 0: no bucket */
    WEB_P_BUCKET_BURST,
    WEB_P_BACKOFF, /* 0 off, 1 on */
    WEB_P_BACKOFF_BASE_MS,
    WEB_P_BACKOFF_CAP_MS,
    WEB_P_SHEDDER,        /* 0 off, 1 on */
    WEB_P_LOAN_TARGET_MS, /* the shedder's loan target; 0: off */
    WEB_P_BURST_LAG_MS,   /* loop lag fed to the shedder each tick of the
                             burst, as a host busy with it would show */
    WEB_P_RATE_CALM,      /* requests a second outside the burst */
    WEB_P_RATE_BURST,     /* requests a second in the burst */
    WEB_P_SERVICE_MS,     /* mean service time */
    WEB_P_SERVICE_SPREAD, /* service time uniform over mean x [1-s, 1+s] */
    WEB_P_SLOW_SHARE,     /* share of requests ten times slower */
    WEB_P_CONNECT_MS,
    WEB_P_FAIL_SHARE, /* share of connects refused outside the outage */
    WEB_P_BURST_START_S,
    WEB_P_BURST_LEN_S,
    WEB_P_OUTAGE_START_S,
    WEB_P_OUTAGE_LEN_S,
    WEB_P_SERVER_IDLE_S, /* the server closes connections idle this long;
                            0: never */
    /* connections by demand (core.h), off by preset */
    WEB_P_DEMAND_S,   /* the window of the peak of loans; 0: off */
    WEB_P_RETIRE,     /* the excess retired a period; 0: the core's 0.5 */
    WEB_P_PRECONNECT, /* the share of live capacity in use that opens the
                         next one ahead; 0: off */
    WEB_P_WAVE_S,     /* a square wave: from burst_start_s, for burst_len_s,
                         bursts and calm spells of this long by turns;
                         0: one burst */
    WEB_PARAMS
};

enum web_phase { WEB_CALM, WEB_BURST, WEB_DRAIN, WEB_OUTAGE, WEB_RECOVERY };

#define WEB_TRAIL 4

/* One simulated second. */
struct web_row {
    int64_t second; /* from 1 */
    enum web_phase phase;
    /* at the end of the second */
    int64_t lent, idle, waiting;
    int64_t p99;          /* ns, acquire waits over the last minute */
    int refusal_pm;       /* the breaker's refused share, per mille */
    int64_t bucket_span;  /* ns: the last LATER the bucket answered, or 0 */
    int64_t backoff_span; /* ns: the last LATER backoff answered, or 0 */
    int64_t retry_after;  /* ns: the breaker's own retry_after now */
    /* the guards as the core holds them now (tide_pool_guards) */
    int64_t bucket_milli;  /* bucket tokens x 1000; -1 without a bucket */
    int64_t backoff_hold;  /* ns until makes may resume; 0: no hold */
    int64_t ceiling_milli; /* shedder ceiling x 1000; -1 without one */
    /* in the second */
    int64_t made, make_failures, timeouts, queue_full, shed, served;
    int64_t shed_breaker, shed_shedder, shed_other;
    int64_t later_bucket, later_backoff;
    int64_t held; /* callers refused: makes held after a failed make */
    /* connections by demand, in the second */
    int64_t preconnects;    /* makes opened before a caller waited */
    int64_t demand_retired; /* idle ones retired as beyond recent demand */
    int64_t connect_waits;  /* callers served by a make they waited for */
    int64_t needed; /* at the end: what the window's peak needs (core) */
    enum tide_breaker_state trail[WEB_TRAIL];
    int n_trail;
};

struct web_engine;

/* The presets (the terminal simulator's run) into params[WEB_PARAMS]. */
void web_params_preset(double *params);
/* A parameter's name ("size", "outage_start_s"), or NULL past the last. */
const char *web_param_name(int i);
/* The index of a named parameter, or -1. */
int web_param_find(const char *name);
/* The first parameter of params[WEB_PARAMS] outside the bounds the engine
 * holds a run to (engine.c: a range each, whole numbers for counts, the
 * seed and spans in seconds, 0 to 2 for breaker and 0 or 1 for backoff and
 * shedder), or -1 when every one is within them, so that a refusal can
 * name the value at fault rather than say "invalid". */
int web_params_check(const double *params);

/* A run with these parameters (copied), at virtual time 0. 0, or a
 * tidepool code (TIDE_ELIMITS...) when the core refused them, or
 * TIDE_ENOMEM. Caller owns *out; free with web_engine_free. */
int web_engine_new(const double *params, struct web_engine **out);
void web_engine_free(struct web_engine *e);
/* Runs every event up to virtual time `until` ns (the run ends at its last
 * second). Returns the number of rows closed so far. */
int64_t web_engine_run(struct web_engine *e, int64_t until);
/* The virtual time reached, ns. */
int64_t web_engine_now(const struct web_engine *e);
/* Whether every second of the run is done. */
bool web_engine_done(const struct web_engine *e);
/* Row i (from 0) of those closed; NULL past the last. Borrowed. */
const struct web_row *web_engine_row(const struct web_engine *e, int64_t i);
/* How many calls into the core (take, made, give, ...) the run made. */
uint64_t web_engine_decisions(const struct web_engine *e);
/* The pool's live view now: lent, idle, waiting. */
void web_engine_live(const struct web_engine *e, int64_t *lent, int64_t *idle,
                     int64_t *waiting);
/* The breaker's state now (ACTIVE without one). */
enum tide_breaker_state web_engine_breaker(struct web_engine *e);
/* The phase in force now. */
enum web_phase web_engine_phase(const struct web_engine *e);
/* While the breaker is INACTIVE, ns until it lets a probe through (its own
 * retry_after); 0 otherwise. */
int64_t web_engine_retry_after(struct web_engine *e);
/* The breaker's refused share of new makes now, per mille (0 without one). */
int web_engine_refusal_pm(struct web_engine *e);

/* Row r as one line of text, the terminal simulator's columns plus the
 * refusal share, NUL-terminated, no newline, into buf (at least
 * WEB_ROW_TEXT bytes). Returns its length. No printf: formatting is the
 * engine's own, so both builds print alike. */
#define WEB_ROW_TEXT 160
size_t web_row_text(const struct web_row *r, char *buf);
/* A row's fields as numbers, in a fixed order (fields.c names them), for
 * whoever shows more than the text: the page's boards. */
#define WEB_ROW_FIELDS 30
/* Field i's name ("made", "bucket_span_ns"), or NULL past the last. */
const char *web_row_field_name(int i);
/* Row r's fields into out[WEB_ROW_FIELDS]. */
void web_row_values(const struct web_row *r, int64_t *out);

/* The column heads for web_row_text. Static storage. */
const char *web_row_heads(void);

#endif
