/* tidepool group: pools to the upstreams of one service, with a pick.
 *
 * A group holds one tide_evpool per upstream (a host:port over TCP or TLS,
 * or any resource a factory opens), each with its own factory, limits and
 * ward, so every pool keeps all of its own promises (FIFO waiters, no
 * barging, exactly-once answers, destroy once). An acquire on the group
 * picks an upstream (power of two choices, weighed by loans and latency:
 * "Latency-aware pick" below) and acquires there. Upstreams held off are
 * passed over: an open breaker while it says a retry is not yet due, one
 * RECOVERING, and those holding makes after failed makes (evloop.h) with
 * nothing to lend without one, where a caller would wait out the hold.
 * When every upstream is held off so, the acquire goes to one of them and
 * learns its cause (and see "Panic threshold" below). When the chosen
 * upstream cannot serve (its breaker or shedder refuses, a make fails, it
 * is being removed) the acquire moves on to another upstream it has not
 * tried, within the same timeout and the retry budget; it fails, with
 * the last upstream's own cause and tide_why, only when every upstream
 * refused or the budget is spent.
 *
 * Routing around trouble (group_pick.c, group_route.c, group_budget.c):
 *
 * - Latency-aware pick. Of two upstreams drawn at random (power of two
 *   choices) the acquire goes to the one of lower cost, where
 *       cost = latency x sqrt(pending + 1) / (1 - refusal)
 *   pending is its loans out plus acquires at its pool, refusal its
 *   breaker's refused share now, and latency a peak-EWMA of how long its
 *   loans last, in the form of Linkerd's balancer (tower's PeakEwma) rather
 *   than Finagle's: a loan longer than the average raises it to that loan
 *   at once (the peak: one slow answer is news, and waiting for an average
 *   to creep up sends a stream of callers into the slowness), a shorter one
 *   pulls it down by 1 - exp(-dt / decay) of the way, dt the time since the
 *   last update, and with no loans it decays towards 0 by exp(-dt / decay).
 *   Time-weighted rather than weighted per sample, the average forgets at
 *   the same pace at 10 or 10,000 loans a second; decaying while unused, a
 *   slow upstream that got no more callers is tried again after a while
 *   (about decay x ln(slowness / sqrt(callers at the others))) and so its
 *   recovery is seen, where Finagle's average, updated only by loans, would
 *   keep it out for good. The callers under a square root, where Linkerd
 *   and Finagle take latency x (pending + 1) (Envoy's least-request with
 *   an active_request_bias of 1/2 rather than 1): a group's upstreams serve
 *   their loans at once (a connection or a stream each), not one after
 *   another, so a fast upstream's seventh caller is answered about as soon
 *   as its first, and its peak-EWMA already holds its recent worst (and
 *   any queueing the load causes). Weighed linearly, a 10x slower
 *   upstream idle out-bid a fast one with five to nine callers, which
 *   eight callers over four upstreams give often: measured through the
 *   bench, it got 0.7% to 1% of requests in bursts, enough to put its
 *   100 ms at the p99. Weighed by the square root it needs a fast one with
 *   about 100 (25 at a fast one's peak of twice its typical loan), and
 *   gets the probes of its decay; among upstreams of like latency the
 *   fewer callers still win. Refusal stays outside the root, as it was: a
 *   refused share is a share of tries spent for nothing, whatever the
 *   callers. A slow upstream so gets fewer callers, by its slowness and
 *   its callers, without ever being ejected. The group times loans
 *   itself, from the answer to the loan's end, on its own clock
 *   (options.clock). An upstream with no loan timed yet costs the mean
 *   latency of the others.
 * - Slow start. An upstream added once the group has lent, or back after
 *   an outage (held off, below, for a second or more, or its breaker
 *   open), takes part in a pick with probability weight, which ramps
 *   linearly from 10% to 100% over options.slow_start (HAProxy's
 *   slowstart, Envoy's slow_start_config from 10%): a cold origin gets
 *   about weight x its fair share, and its latency average starts at the
 *   others' mean, not at a stale or flattering figure of its own (its
 *   average from before the outage, decayed while it was out). Both from
 *   the first pick that finds it back, not from its first loan: until a
 *   make for it (a connect, a handshake) answered, the pick would weigh
 *   the old figure, and a decayed one sends it every caller meanwhile.
 * - Retry budget. A retry is an acquire moved to another upstream after
 *   one was tried and failed (a failed make: refusals at once without
 *   touching the upstream, an open breaker or a full queue, cost nothing
 *   and are free), or a tide_group_retry. Retries may add at most
 *   options.retry_ratio of the requests (acquires and try_acquires lent)
 *   over the last options.retry_window, plus a reserve of
 *   options.retry_floor a second over that window whatever the ratio,
 *   so a quiet group can still retry, and one just made can retry the
 *   burst of its first failures (Envoy's retry budget, Finagle's
 *   RetryBudget and its minRetriesPerSec). Past it, an acquire gets the
 *   failure it had, with its upstream's cause and a note in the message,
 *   and tide_group_retry answers TIDE_EUNAVAILABLE: in a brown-out,
 *   retries that would each meet another failing upstream would multiply
 *   the load on a service already failing under it.
 * - Panic threshold. Upstreams held off (breaker open and its retry not
 *   due, its breaker RECOVERING, or makes held after failed makes) are
 *   passed over while others can serve. When more than options.panic of
 *   them are held off, the group passes over none and ignores breaker
 *   refusal in the cost: it spreads callers over all upstreams (Envoy's
 *   panic routing). Because when most upstreams look sick at once, the
 *   cause is more often shared (the network, a dependency, this client's
 *   own overload) than in each of them, and the few left would get the
 *   whole load and fall in turn; spread out, each pool's own guards still
 *   refuse at once where the breaker is open (no load on that upstream,
 *   no retry spent), and the rest keep feeding their breakers fresh
 *   outcomes, so recovery is seen as soon as it comes.
 *
 * Upstreams can be added and removed while the loop runs. A removed one
 * drains: it lends nothing more, its idle resources are destroyed at once,
 * its lent ones are destroyed as they are released, and its record is freed
 * after the last one came back.
 *
 * An upstream's pool may lend one resource to several callers at once
 * (limits.streams > 1, "Shared loans" in <tidepool/evloop.h>): each group
 * acquire is then one loan, and release, discard, retire, abandon and stale
 * end one loan as the pool's own calls do (a discard breaks the resource
 * for every loan of it, once). The cap and the group's lent count loans,
 * not resources.
 *
 * Threads, SIGPIPE and NULL: as in <tidepool/evloop.h>. A group belongs to
 * one event_base and its loop's thread; the application ignores SIGPIPE;
 * a function returning int answers TIDE_EINVAL for a NULL group, upstream
 * or required pointer, and the void ones do nothing with NULL.
 */
#ifndef TIDEPOOL_GROUP_H
#define TIDEPOOL_GROUP_H

#include <tidepool/evloop.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tide_group;
struct tide_group_upstream; /* one upstream: its name and its pool */
struct tide_group_acquire;  /* a pending acquire on the group, cancellable */

/* Zero fields take the preset. */
struct tide_group_options {
    /* At most this many loans at once across the group, counting acquires
     * on their way to an upstream; 0: no cap (each pool's own size still
     * bounds its connections). Past it, acquires wait in the group's FIFO
     * for a release, within their timeout. */
    int64_t cap;
    int64_t acquire_timeout; /* for acquire(timeout = 0); preset 30 s;
                                must be finite */
    int64_t queue_max;       /* acquires waiting for the cap at most;
                                preset 4096 */
    uint64_t seed;           /* the pick's random source; 0: from the clock */
    /* The clock the group times loans and runs its windows on (latency,
     * slow start, the retry budget, the last minute's shares): ns, any
     * origin, never going back; arg is passed back. NULL: CLOCK_MONOTONIC.
     * Timeouts and the pools' breakers run on the loop's real time
     * whatever this is; a test gives its own clock to drive the routing
     * through minutes at once. */
    int64_t (*clock)(void *arg);
    void *clock_arg;
    int64_t decay;        /* the latency average's time constant; preset
                             1 s: shorter than Linkerd's 10 s, as a busy
                             upstream's jitter peaks every few dozen
                             loans, and over 10 s its average sits at its
                             peaks rather than its typical loan, blurring
                             fast and slow together (measured: a 10x
                             slower origin of four got 1.2% of requests
                             at 10 s, 0.85% at 1 s) */
    int64_t slow_start;   /* the ramp from 10% to 100%; preset 30 s */
    double retry_ratio;   /* retries per request at most, over the
                             window; preset 0.2; at most 1 */
    int64_t retry_floor;  /* retries a second allowed whatever the ratio,
                             over the window (a reserve of floor x
                             window, in a burst if need be); preset 3 */
    int64_t retry_window; /* the budget's sliding window; preset 10 s */
    double panic;         /* the share of upstreams held off past which
                             the group spreads over all; preset 0.5; 1:
                             never */
};

/* Creates an empty group on `base` (borrowed; must outlive the group).
 * Returns 0; TIDE_EINVAL (NULL base or out, a negative cap or queue_max,
 * an infinite or negative acquire_timeout, a negative or infinite decay,
 * slow_start or retry_window, a negative retry_floor, retry_ratio or
 * panic outside [0, 1]); TIDE_ENOMEM. */
TIDE_API TIDE_MUST_USE int tide_group_new(struct event_base *base,
                                          const struct tide_group_options *o,
                                          struct tide_group **out);

/* Called once when a close has finished: every upstream drained and its
 * pool closed. May free the group. */
typedef void (*tide_group_closed_cb)(struct tide_group *g, void *arg);

/* Shuts the group: fails every acquire waiting for the cap with
 * TIDE_ECLOSED, closes every upstream's pool (which fails its waiters and
 * destroys lent resources as they come back) and calls done from the loop
 * when all are closed. 0, or TIDE_ECLOSED when already closing. */
TIDE_API int tide_group_close(struct tide_group *g, tide_group_closed_cb done,
                              void *arg);

/* Frees the group and every upstream's pool (tide_evpool_free: lent
 * resources are destroyed too). Pending acquires are dropped without
 * callbacks. Safe from inside a group callback. */
TIDE_API void tide_group_free(struct tide_group *g);

/* ---- upstreams -------------------------------------------------------- */

/* Adds an upstream: a pool made with tide_evpool_new(base, factory, o).
 * `name` (copied) is what stats and messages call it, such as
 * "127.0.0.1:8080". Returns 0 with *out (borrowed: valid until the
 * upstream is removed and drained, or the group freed), the codes of
 * tide_evpool_new, or TIDE_ECLOSED when the group is closing. */
TIDE_API TIDE_MUST_USE int tide_group_add(struct tide_group *g,
                                          const char *name,
                                          const struct tide_factory *factory,
                                          const struct tide_evpool_options *o,
                                          struct tide_group_upstream **out);

/* Removes an upstream: from now on no acquire picks it, acquires waiting
 * in its pool move on to another upstream, its idle resources are
 * destroyed, and each lent one is destroyed when released. The record
 * (and `u`) stays valid until the last loan came back. 0, or TIDE_ECLOSED
 * when it was removed already. */
TIDE_API int tide_group_remove(struct tide_group *g,
                               struct tide_group_upstream *u);

/* Upstreams not removed, in the order they were added: up to n into out;
 * returns how many there are. */
TIDE_API size_t tide_group_upstreams(struct tide_group *g,
                                     struct tide_group_upstream **out,
                                     size_t n);

/* The upstream's name (owned by it) and pool (borrowed: use it to read
 * its breaker or stats; acquire and release through the group). */
TIDE_API const char *
tide_group_upstream_name(const struct tide_group_upstream *u);
TIDE_API struct tide_evpool *
tide_group_upstream_pool(const struct tide_group_upstream *u);

/* ---- acquire and release ---------------------------------------------- */

/* The answer to a group acquire: status 0 with a resource now lent from
 * upstream u (give it back with tide_group_release or tide_group_discard,
 * naming u), or an error with resource NULL: TIDE_ETIMEDOUT (nothing within
 * the timeout, cap wait included), TIDE_ECLOSED (the group closed),
 * TIDE_ECANCELLED (notify asked), or the last upstream's own refusal
 * (TIDE_EUNAVAILABLE, a make's code) once every upstream refused; then u
 * is the upstream that answered last (NULL when none did) and why is its
 * answer. Runs from the loop, never inside acquire(), exactly once per
 * acquire unless cancelled first. May call any group function, free
 * included. */
typedef void (*tide_group_acquire_cb)(struct tide_group *g, int status,
                                      struct tide_group_upstream *u,
                                      void *resource,
                                      const struct tide_why *why, void *arg);

/* Starts an acquire; timeout 0 means the group's acquire_timeout, and it
 * spans the cap wait and every upstream tried. Returns 0 and, when handle
 * is not NULL, a handle valid until the callback or cancel returns. Fails
 * at once, with no callback, with TIDE_EINVAL, TIDE_ECLOSED (closing, or
 * no upstream at all) or TIDE_EQUEUEFULL (the cap's queue is full). */
TIDE_API int tide_group_acquire(struct tide_group *g, int64_t timeout,
                                tide_group_acquire_cb cb, void *arg,
                                struct tide_group_acquire **handle);

/* The synchronous path: an idle resource at once from the upstream the
 * pick chooses, when it has one free and nothing is queued before the
 * caller (at the cap, or at that pool). 0 with *u and *resource, now lent
 * (give it back with tide_group_release or tide_group_discard), or
 * TIDE_EWOULDBLOCK (then acquire, which waits, makes, moves on and knows
 * the cause of a refusal), TIDE_ECLOSED (closing, or no upstream),
 * TIDE_EINVAL. It never makes, probes an open breaker or moves on; while
 * a probe of an open breaker is due it answers TIDE_EWOULDBLOCK, so the
 * acquire that follows carries the probe (an upstream back from an
 * outage would otherwise wait until the fast path missed by chance). */
TIDE_API int tide_group_try_acquire(struct tide_group *g,
                                    struct tide_group_upstream **u,
                                    void **resource);

/* An acquire for a request that failed on upstream `failed` (it answered
 * 503, reset, timed out: the caller's protocol knows) and goes again:
 * one retry from the budget, and `failed` (NULL: none) is not tried
 * unless it is the only upstream. Otherwise as tide_group_acquire (the
 * retry's own failovers are retries too). Fails at once, with no
 * callback, with TIDE_EUNAVAILABLE when the budget is spent (the caller
 * answers its client with the failure it had), or as tide_group_acquire
 * does. */
TIDE_API int tide_group_retry(struct tide_group *g,
                              struct tide_group_upstream *failed,
                              int64_t timeout, tide_group_acquire_cb cb,
                              void *arg, struct tide_group_acquire **handle);

/* A retry, as tide_group_retry, of a request that failed on each of the n
 * upstreams in failed[] (in the order it met them; the last one's failure
 * is the one retried, and counts in its route's failures): none of them is
 * tried while another upstream can be, so a request that met two failing
 * upstreams is not sent back to the first (with tide_group_retry naming
 * the last alone, half of a group in a brown-out would be met again one
 * retry in three). When every upstream is among them, any may be tried.
 * The entries are compared with the group's upstreams, never read: one
 * removed and drained since may be named. n 0 is tide_group_retry with
 * NULL; TIDE_EINVAL for failed NULL with n > 0. */
TIDE_API int tide_group_retry_avoid(struct tide_group *g,
                                    struct tide_group_upstream *const *failed,
                                    size_t n, int64_t timeout,
                                    tide_group_acquire_cb cb, void *arg,
                                    struct tide_group_acquire **handle);

/* Cancels a pending acquire. After it returns the callback never runs,
 * unless notify: then it runs once, from the loop, with TIDE_ECANCELLED. */
TIDE_API void tide_group_cancel(struct tide_group_acquire *h, bool notify);

/* Gives back a resource lent from upstream u, as tide_evpool_release does
 * (a removed upstream destroys it instead). Frees a place under the cap.
 * 0, or the codes of tide_evpool_release. */
TIDE_API int tide_group_release(struct tide_group *g,
                                struct tide_group_upstream *u, void *resource);

/* Gives back a broken one, as tide_evpool_discard does. */
TIDE_API int tide_group_discard(struct tide_group *g,
                                struct tide_group_upstream *u, void *resource);

/* Gives back one that served but must not be reused (the upstream said it
 * closes), as tide_evpool_retire does: the upstream's success. */
TIDE_API int tide_group_retire(struct tide_group *g,
                               struct tide_group_upstream *u, void *resource);

/* Gives back one the borrower gave up mid-exchange (its client went away),
 * as tide_evpool_abandon does: no outcome for the upstream's breaker. */
TIDE_API int tide_group_abandon(struct tide_group *g,
                                struct tide_group_upstream *u, void *resource);

/* Gives back one whose exchange failed by a close before any byte of it
 * was answered, as tide_evpool_stale does: TIDE_STALE when upstream u's
 * pool took it for stale (no outcome; retry at once, on any upstream), 0
 * when it counted as a failed make, or the error. */
TIDE_API int tide_group_stale(struct tide_group *g,
                              struct tide_group_upstream *u, void *resource);

/* ---- stats ------------------------------------------------------------ */

struct tide_group_stats {
    int64_t upstreams;  /* not removed */
    int64_t draining;   /* removed, loans still out */
    int64_t open;       /* upstreams whose breaker is INACTIVE */
    int64_t lent;       /* loans out through the group (the cap counts these
                           and acquires on their way to an upstream) */
    int64_t capped;     /* acquires waiting for the cap */
    uint64_t acquires;  /* tide_group_acquire calls that returned 0, and
                           tide_group_try_acquire calls that lent */
    uint64_t served;    /* answered with a resource (try_acquire too) */
    uint64_t failed;    /* answered with an error (cancels excluded) */
    uint64_t failovers; /* an upstream could not serve and another was
                           tried */
    /* the upstreams' pool stats, summed: counts and counters add up; the
     * breaker field is the worst state, refusal, busiest and the wait
     * quantiles are the largest of any upstream (quantiles do not add) */
    struct tide_evpool_stats pools;
};

TIDE_API void tide_group_stats(struct tide_group *g,
                               struct tide_group_stats *out);

/* One upstream's pool stats (tide_evpool_stats), and the loans it has out
 * through the group in *lent when lent is not NULL. */
TIDE_API void tide_group_upstream_stats(struct tide_group_upstream *u,
                                        struct tide_evpool_stats *out,
                                        int64_t *lent);

/* How the group routes to one upstream now, for a person reading a stats
 * page: "last minute" is the last 60 s in 10 s steps, on the group's
 * clock. */
struct tide_group_route {
    double share;    /* its share of the group's loans lent in the last
                        minute, in [0, 1]; 0 when none were */
    uint64_t loans;  /* loans it lent in the last minute */
    int64_t latency; /* its peak-EWMA of loan durations (ns), decayed to
                        now; 0 before its first loan ended */
    int64_t mean;    /* the mean duration (ns) of its loans that ended in
                        the last minute; 0 when none did */
    int64_t pending; /* loans out plus acquires at its pool */
    enum tide_breaker_state breaker; /* ACTIVE when it has none */
    bool held;         /* passed over now (see "Panic threshold") */
    double weight;     /* slow-start weight in [0.1, 1]; 1 when not
                          ramping */
    uint64_t failures; /* retries spent on requests that failed on it
                          (failovers away from it, tide_group_retry
                          naming it), all time */
};

/* Fills *out for upstream u (one removed and draining included). */
TIDE_API void tide_group_route(struct tide_group_upstream *u,
                               struct tide_group_route *out);

/* The retry budget and the panic state, now. */
struct tide_group_budget {
    uint64_t requests; /* requests in the budget's window */
    uint64_t retries;  /* retries spent in the window */
    uint64_t allowed;  /* retries the window allows: ratio x requests,
                          plus the floor's reserve (floor x window) */
    uint64_t spent;    /* retries spent, all time */
    uint64_t refused;  /* retries refused by the budget, all time */
    bool panic;        /* more than options.panic held off: spreading over
                          all */
    int64_t held;      /* upstreams held off now */
};

TIDE_API void tide_group_budget(struct tide_group *g,
                                struct tide_group_budget *out);

#ifdef __cplusplus
}
#endif

#endif /* TIDEPOOL_GROUP_H */
