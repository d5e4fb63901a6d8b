/* The chaos tests' load: one phase is a fresh event_base with an echo server
 * (TCP or TLS), the fault-injecting proxy in front of it, a factory of
 * <tidepool/tls.h> dialling the proxy and a pool of <tidepool/evloop.h> (size
 * 16) over it, driven by 50 callers at once.
 *
 * Callers behave as correct users do: each acquires with a 1 s timeout, sets
 * its own callbacks and 1 s timeouts on the connection, writes one framed
 * request carrying a unique id, reads the whole reply, releases on success,
 * gives the connection back stale on a close before any byte of the reply
 * (tide_evpool_stale) and discards on any other error, timeout or
 * unexpected reply, thinks a few ms and acquires again. A phase runs warm (no fault), then with the fault on,
 * then healed; then the pool is closed, and everything is freed from the
 * loop, which must then end on its own (event_base_dispatch returns).
 *
 * The figures say what a user relies on: no reply handed to the wrong
 * caller, every acquire answered exactly once by its deadline, every
 * connection made also destroyed, no descriptor left open, and, while the
 * fault leaves the backend up, the breaker refusing at most a few percent
 * of acquires. */
#ifndef TIDEPOOL_TEST_CHAOS_LOAD_H
#define TIDEPOOL_TEST_CHAOS_LOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "proxy.h"

/* The breaker in front of the backend. */
enum chaos_ward {
    CHAOS_WARD_ADAPTIVE = 0, /* the preset adaptive breaker alone */
    CHAOS_WARD_STRIKES,      /* five strikes (300 ms cooldown) and the
                                preset backoff */
};

struct chaos_phase {
    const char *name;
    bool tls;
    enum chaos_fault fault;
    struct chaos_knobs knobs;
    bool backend_down; /* the fault takes the backend down: refusals then
                          are the breaker doing its job */
    enum chaos_ward ward;
    int think_ms; /* the most a caller pauses between exchanges; 0: up to
                     18 ms (callers differ). Longer leaves connections
                     quiet in the pool, where the idle faults strike. */
    /* Shared loans (limits.streams > 1): the callers speak the multiplexed
     * echo protocol of mux.h, several on one connection, to its server
     * (in place of the echo server). 0 or 1: one borrower a connection. */
    int streams;
    bool reorder;    /* the server answers out of order */
    int close_every; /* the server closes a connection, loans out, every
                        n-th frame, while the fault is on */
    bool drain;      /* while the fault is on, the connection with the
                        most borrowers is drained (capacity 0) every 60 ms */
    int alone_every; /* every n-th caller acquires alone (exclusive) */
};

/* One phase's figures. Counts are over the whole phase unless said. */
struct chaos_figures {
    char name[64];
    bool tls;
    bool backend_down;
    enum chaos_ward ward;
    bool setup_ok;         /* servers, factory and pool all started */
    uint64_t acquires;     /* acquire calls */
    uint64_t answers;      /* acquire answers (callbacks and refusals) */
    uint64_t exchanges;    /* connections lent (status 0) */
    uint64_t ok;           /* exchanges whose reply was the request's */
    uint64_t ok_healed;    /* ... of them after the fault was lifted */
    uint64_t faults;       /* fault actions the proxy took */
    uint64_t wrong_caller; /* replies carrying another request's id */
    uint64_t malformed;    /* replies that were no frame at all */
    uint64_t io_errors;    /* EOF, reset, TLS error or I/O timeout */
    uint64_t hung;         /* acquires answered past their deadline, or never */
    uint64_t doubled;      /* second answers to one acquire */
    uint64_t misuse;       /* release/discard refused by the pool */
    uint64_t timeouts;     /* TIDE_ETIMEDOUT answers */
    uint64_t refused;      /* TIDE_EUNAVAILABLE from the breaker */
    uint64_t acquires_up;  /* acquires while the backend was up */
    uint64_t refused_up;   /* ... of them refused by the breaker */
    uint64_t other_errors; /* any other failed answer */
    uint64_t made;         /* the factory's connections made ... */
    uint64_t destroyed;    /* ... and closed */
    int64_t live;          /* ... and still open after the pool is freed */
    uint64_t pool_made;    /* the pool's counts at close */
    uint64_t pool_destroyed;
    uint64_t make_failures;
    uint64_t lost;
    uint64_t stale_loans; /* loans the pool took for stale */
    /* shared loans (streams > 1) */
    uint64_t breaks;        /* connections the protocol layer broke */
    uint64_t stray;         /* replies for no borrower in flight */
    uint64_t drains;        /* connections drained with loans out */
    uint64_t destroyed_lent; /* connections destroyed with a borrower on
                                them (the protocol layer's session open) */
    uint64_t alone_shared;  /* exclusive loans that found another borrower
                               on their connection */
    int64_t most_at_break;  /* the most borrowers on a broken connection */
    int64_t most_shared;    /* the most borrowers seen on one connection */
    int64_t sessions_left;  /* protocol sessions open after the close */
    bool closed;       /* tide_evpool_close's done came */
    bool close_forced; /* it did not within 5 s: freed by force */
    bool loop_exited;  /* event_base_dispatch returned */
    int fds_before, fds_after;
};

/* Runs one phase to its end; fills *out. Asserts nothing. */
void chaos_run(const struct chaos_phase *ph, struct chaos_figures *out);
/* Prints the phase's line, adds it to the totals, then asserts every
 * promise above with a message that names the figure. */
void chaos_check(const struct chaos_figures *f);
/* Runs ph and checks it: the body of one test. */
void chaos_phase(const struct chaos_phase *ph);

/* An unchecked fixture pair for the suite's case: the totals over every
 * phase, printed once at the end (phases run in forked children, so the
 * figures travel through a file). */
void chaos_totals_open(void);
void chaos_totals_close(void);

/* Check's per-test timeout for a phase, with room for ASan. */
#define CHAOS_TEST_TIMEOUT 30

#endif
