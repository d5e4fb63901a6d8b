/* The engine's event queue: what happens next in virtual time, standing in
 * for the event loop. A binary heap ordered by time, then by the order the
 * events were scheduled, so two events due at the same nanosecond always run
 * in the same order, natively and in wasm alike. */
#ifndef TIDEPOOL_WEB_EVENTS_H
#define TIDEPOOL_WEB_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

enum web_event_kind {
    WEB_EV_TICK,     /* arrivals, top-up, eviction: every millisecond */
    WEB_EV_MADE,     /* a connect finished: ok or refused */
    WEB_EV_SERVED,   /* a request finished on a connection */
    WEB_EV_TIMEOUT,  /* a waiter's acquire timeout */
    WEB_EV_RETRY,    /* a LATER's span is over: serve the queue again */
    WEB_EV_IDLE_CUT, /* the server closes a connection idle too long */
    WEB_EV_SETTLE,   /* a connection has lived a second: its make served */
};

struct web_event {
    int64_t at;   /* ns of virtual time */
    uint64_t seq; /* scheduling order, the tie-break */
    enum web_event_kind kind;
    uint32_t who; /* a connection or waiter index */
    uint32_t gen; /* its generation then: a stale event is ignored */
    bool ok;      /* WEB_EV_MADE: whether the connect succeeded */
};

struct web_events {
    struct web_event *heap; /* owned */
    uint32_t n, cap;
    uint64_t seq;
};

void web_events_init(struct web_events *q);
void web_events_dispose(struct web_events *q);
/* Schedules ev (its seq is set here). false when memory ran out. */
bool web_events_push(struct web_events *q, struct web_event ev);
/* The earliest event into *out; false when there is none. */
bool web_events_pop(struct web_events *q, struct web_event *out);
/* When the earliest event is due; INT64_MAX when there is none. */
int64_t web_events_next(const struct web_events *q);

#endif
