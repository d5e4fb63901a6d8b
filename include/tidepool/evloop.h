/* tidepool evloop: a resource pool on a libevent event_base.
 *
 * The adapter owns what needs a runtime: a FIFO queue of waiting callers,
 * timers (acquire and make timeouts, eviction, health checks, leak reports,
 * loop-lag probes, retries after LATER), a monotonic clock and a seeded random
 * source. Every decision is the core's (<tidepool/core.h>); resources are
 * opened and closed only through a factory, so the pool holds anything: a
 * bufferevent (see <tidepool/tls.h>), a hiredis context, a child process.
 *
 * Threads: a tide_evpool belongs to one event_base and is used from that
 * loop's thread only. A multi-threaded program runs one loop and one pool per
 * thread. Nothing here takes a lock.
 *
 * The application must ignore SIGPIPE (signal(SIGPIPE, SIG_IGN)): libevent
 * writes without MSG_NOSIGNAL, and a write to a closed peer must be an error,
 * not the end of the process.
 *
 * What feeds the breaker (and backoff), as in core.h: an accepted release
 * and a successful make are successes; a failed make, a discard, a release
 * that reusable() refuses and a failed health check are failures. A make's
 * outcome waits for what its resource does first: one that dies (lost,
 * alive() false, a failed check) or whose first loan fails (discarded,
 * refused on release) within a second of being made was never really made
 * (a server that accepts and closes, or speaks first), and counts as a
 * failed make, for backoff too; otherwise the make was a success. One
 * that leaves before its first loan could prove or fail it (that loan
 * abandoned; evicted, closed or freed unused) settles its make with no
 * outcome, and a make that was a RECOVERING breaker's probe then gives the
 * probe's place back, so the next make probes. A resource that dies while
 * idle after that (a server closing idle connections) is no outcome, and
 * so is a loan that ends stale (tide_evpool_stale: it served before and
 * failed by a close before any byte of its exchange was answered). A
 * fresh resource is checked with alive() before its first loan, and one
 * dead already is a failed make.
 *
 * Makes are held while makes fail (core.h, "Makes held while makes
 * fail"), with or without a backoff in the ward: the ward's, else the
 * preset (100 ms doubling to 1 s, jittered), so a server that accepts and
 * closes at once, or speaks first, is not stormed with connects by the
 * top-up to `min` or by callers asking again. While makes are held, a
 * caller who would need one waits for the hold to end when its acquire
 * timeout outlasts it, else it is answered at once: TIDE_EUNAVAILABLE,
 * guard TIDE_GUARD_BACKOFF, make_error the failed make's code, the
 * message its cause, retry_after the hold's rest (stats.held counts
 * them). Once the hold ends one make goes at a time (a probe) and callers
 * who would need another wait while it is being made (not for its first
 * loan); when a make they waited for fails, the caller it was made for
 * gets its error and the rest are answered as held, each with the time to
 * retry. The first success lifts it all at once: a make that follows a
 * success is never held. For no wait, give the ward a
 * backoff of 1 ns (makes still go one at a time while they fail). Whatever
 * opens the breaker (tide_breaker_deactivate by hand, the policy, a
 * strategy), the callers parked on it are failed at once with
 * TIDE_EUNAVAILABLE and the retry time; closing it serves them again.
 *
 * Time: the pool reads CLOCK_MONOTONIC on entry to each of its own
 * callbacks and in each public call, except try_acquire and release: they
 * decide with the last reading while eviction rounds (at most a second
 * and half a keep or life apart) refresh it, as libevent's timers use the
 * time read once per loop pass. So a resource is lent or evicted within
 * an eviction round of its keep, as eviction alone already allows, plus
 * however long the loop was kept from running. They read the clock when
 * a stamp must be exact: with leak reports or a shedder, a resource's
 * first loan, or a breaker with no eviction rounds.
 *
 * NULL: a function returning int answers TIDE_EINVAL for a NULL pool,
 * token or required pointer; the void ones do nothing with NULL, as
 * free(NULL) does.
 */
#ifndef TIDEPOOL_EVLOOP_H
#define TIDEPOOL_EVLOOP_H

#include <tidepool/core.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;

/* Errors of this layer (the table is shared: tide_strerror knows them). */
enum tide_evloop_error {
    TIDE_ETIMEDOUT = -20,     /* no resource within the acquire timeout */
    TIDE_EUNAVAILABLE = -21,  /* refused at once: breaker open or shed; the
                                 tide_why says which guard and when to retry */
    TIDE_EQUEUEFULL = -22,    /* the waiter queue is at its bound */
    TIDE_ECANCELLED = -23,    /* the acquire was cancelled (notify asked) */
    TIDE_EMAKE = -24,         /* the factory failed without a code of its own */
    TIDE_EMAKETIMEDOUT = -25, /* the factory did not answer in make_timeout */
    TIDE_EWOULDBLOCK = -26,   /* try_acquire: nothing idle to hand out now */
    TIDE_EBUSY = -27,         /* release/discard of a resource not lent */
    TIDE_EUNPROVEN = -28,     /* made, then within a second found dead
                                 before its first loan (the peer closed it
                                 or spoke first) or failed in it: counted
                                 as a failed make */
};

/* tide_evpool_stale's answer when the loan was stale: retry at once. */
#define TIDE_STALE 1

struct tide_evpool;
struct tide_acquire; /* a pending acquire, cancellable */
struct tide_make;    /* one make in progress, answered by the factory */
struct tide_check;   /* one health check in progress */
struct tide_reset;   /* one reset of a released resource in progress */

/* ---- the factory ------------------------------------------------------ */

/* How the pool opens, closes and checks resources. make and destroy are
 * required; the rest are optional (NULL). Every callback gets `arg` last.
 * None of them may call tide_evpool_free, nor release or discard the
 * resource it is called about; each may call the answer function it is
 * given a token for, at once or later from the loop, and watch may report
 * a loss with tide_evpool_lost at any time (from inside watch(false) it is
 * refused with TIDE_ENOTIDLE: the resource is already leaving idle). */
struct tide_factory {
    /* Begins opening one resource. Answer exactly once, now or later, with
     * tide_evpool_made(token, resource) or tide_evpool_unmade(token, code,
     * message), also after a cancel. The pool enforces make_timeout itself. */
    void (*make)(struct tide_evpool *pool, struct tide_make *token, void *arg);
    /* Closes one. Called exactly once for every resource ever made, never
     * for one still lent out (it comes back first), and may not block. */
    void (*destroy)(void *resource, void *arg);
    /* Optional: the pool has given up on this make (timeout, close, free).
     * Stop early if you can; you must still answer the token. */
    void (*cancel)(struct tide_make *token, void *arg);
    /* Optional: a quick synchronous check before lending (false: destroyed,
     * and the caller is served with another). */
    bool (*alive)(void *resource, void *arg);
    /* Optional: a check on release (false: destroyed instead of kept). */
    bool (*reusable)(void *resource, void *arg);
    /* Optional: an asynchronous health check of an idle resource (a PING).
     * Answer once with tide_evpool_checked(token, ok); while it runs the
     * resource counts as live and is not lent. */
    void (*check)(struct tide_evpool *pool, struct tide_check *token,
                  void *resource, void *arg);
    /* Optional: readies a released resource for its next borrower before
     * it goes idle (SMTP RSET, PostgreSQL DISCARD ALL). Answer once, now or
     * later from the loop, with tide_evpool_reset_done(token, ok); while
     * it runs the resource counts as live and is lent to nobody, and the
     * waiters see a release that took a little longer (the oldest gets it
     * when the reset is done). Not ok: destroyed, and a failure for the
     * breaker. Not run for a resource retired (retire_after), refused by
     * reusable(), or released while the pool closes. */
    void (*reset)(struct tide_evpool *pool, struct tide_reset *token,
                  void *resource, void *arg);
    /* Optional: watch an idle resource for a peer close. Called with
     * idle = true when it goes idle and idle = false before it is lent,
     * checked or destroyed. Report a loss with tide_evpool_lost. */
    void (*watch)(struct tide_evpool *pool, void *resource, bool idle,
                  void *arg);
    /* Optional: a loan of resource ended stale (tide_evpool_stale): the
     * peer had closed it before the borrower's exchange began. Told
     * before the resource is destroyed, so a factory that lends on what it
     * already knows rather than asking the peer (<tidepool/tls.h>) can
     * look harder at what it holds idle: the peer may have closed others
     * the same way, and the next loan must not be given one of them
     * unlooked. */
    void (*stale)(void *resource, void *arg);
    void *arg; /* borrowed; passed to every callback */
};

/* ---- options ---------------------------------------------------------- */

/* A loan older than leak_after; called once per loan, from the loop. With
 * streams > 1, once per spell a resource has loans out, counted from the
 * first of them. */
typedef void (*tide_leak_cb)(struct tide_evpool *pool, void *resource,
                             int64_t held, void *arg);

/* Zero fields take the preset; spans are ns; TIDE_FOREVER turns a timer
 * off and TIDE_UNLIMITED lifts a bound. */
struct tide_evpool_options {
    struct tide_limits limits; /* the core's limits (presets: see core.h).
                                  With limits.demand the pool destroys
                                  idle resources beyond what the window's
                                  peak of loans needs, a share each period
                                  (demand / TIDE_DEMAND_TICKS), never below
                                  min; with limits.preconnect it opens the
                                  next one from the loop as loans reach
                                  that share of what is live (stats count
                                  both). Off by preset. */
    struct tide_ward ward;     /* guards; pointers borrowed during new */
    int64_t min;               /* made at start and kept; preset 0; at
                                  most limits.size and limits.idle */
    int64_t make_timeout;      /* preset 10 s */
    int64_t acquire_timeout;   /* for acquire(timeout = 0); preset 30 s;
                                  must be finite */
    int64_t health_interval;   /* checks of idle resources (factory check);
                                  preset 30 s */
    int64_t evict_interval;    /* eviction of idle past keep/life; preset
                                  1 s */
    int64_t queue_max;         /* waiters at most; preset 4096 */
    int64_t leak_after;        /* report loans older; preset TIDE_FOREVER */
    int64_t retire_after;      /* destroy after this many loans; preset
                                  TIDE_UNLIMITED. With streams > 1 it
                                  drains at that many: no new loan, and
                                  destroyed after its last */
    int64_t lag_interval;      /* loop-lag probe period for the shedder;
                                  preset 100 ms */
    uint64_t seed;             /* random source; 0: seeded from the clock */
    tide_leak_cb on_leak;      /* optional */
    void *leak_arg;
};

/* ---- lifecycle -------------------------------------------------------- */

/* Creates a pool on `base` (borrowed; must outlive the pool). The factory
 * table is copied; factory->arg is borrowed. Starts making `min` resources.
 * Returns 0; TIDE_EINVAL (NULL base/factory/out, make or destroy missing,
 * min > size or min > idle, an infinite acquire_timeout, a negative span or
 * count); the core's TIDE_ELIMITS/EBREAKER/EBUCKET/EBACKOFF/ESHEDDER;
 * TIDE_ENOMEM. limits.streams above 1 lends shared: see "Shared loans". */
TIDE_API TIDE_MUST_USE int tide_evpool_new(struct event_base *base,
                                           const struct tide_factory *factory,
                                           const struct tide_evpool_options *o,
                                           struct tide_evpool **out);

/* Called once when a close has finished: every resource destroyed, nothing
 * pending. May free the pool. */
typedef void (*tide_closed_cb)(struct tide_evpool *pool, void *arg);

/* Shuts the pool: fails every waiter with TIDE_ECLOSED, destroys idle
 * resources, cancels makes, destroys lent ones as they come back, and calls
 * done (from the loop) when the last is destroyed. Afterwards the pool holds
 * no pending event, so the loop can exit. 0, or TIDE_ECLOSED when already
 * closing (nothing changes; the first done still comes). */
TIDE_API int tide_evpool_close(struct tide_evpool *p, tide_closed_cb done,
                               void *arg);

/* Frees the pool. Waiters are dropped without callbacks; every resource the
 * pool made is destroyed, lent ones included (do not use them after).
 * Safe from inside any pool callback (it completes when that returns). */
TIDE_API void tide_evpool_free(struct tide_evpool *p);

/* ---- acquire and release ---------------------------------------------- */

/* Why an acquire failed, beyond its code; valid during the callback only. */
struct tide_why {
    enum tide_guard guard; /* TIDE_EUNAVAILABLE: who refused */
    int64_t retry_after;   /* ns until a retry may succeed; 0 if unknown */
    int make_error;        /* the last make's code: 0 when it succeeded
                              or none ran (tide_evpool_last_error keeps
                              the last failure) */
    const char *message;   /* for a person: the factory's message, or the
                              code's sentence; never NULL */
};

/* The answer to an acquire: status 0 with a resource now lent to the caller
 * (give it back with release or discard), or an error with resource NULL.
 * Runs from the loop, never inside acquire(), exactly once per acquire
 * unless cancelled first. May call any pool function, free included. */
typedef void (*tide_acquire_cb)(struct tide_evpool *pool, int status,
                                void *resource, const struct tide_why *why,
                                void *arg);

/* Queues an acquire. timeout 0 means the pool's acquire_timeout. Returns 0
 * and, when `handle` is not NULL, a handle valid until the callback returns
 * or cancel returns (a cancel from inside the acquire's own callback does
 * nothing: the answer is given); afterwards the pool may reuse it for a
 * later acquire, so it must not be kept. Fails at once, with no callback, with
 * TIDE_EINVAL, TIDE_ECLOSED or TIDE_EQUEUEFULL. */
TIDE_API int tide_evpool_acquire(struct tide_evpool *p, int64_t timeout,
                                 tide_acquire_cb cb, void *arg,
                                 struct tide_acquire **handle);

/* Cancels a pending acquire. After it returns the callback never runs,
 * unless notify: then it runs once, from the loop, with TIDE_ECANCELLED. A
 * resource already set aside for it passes to the next waiter. */
TIDE_API void tide_evpool_cancel(struct tide_acquire *h, bool notify);

/* The synchronous path: an idle resource at once, when one is free and no
 * one is queued. 0 with *resource, or TIDE_EWOULDBLOCK (none idle, or
 * callers queued: never a barge past them), TIDE_EUNAVAILABLE, TIDE_ECLOSED.
 * It never makes: use acquire for that. */
TIDE_API int tide_evpool_try_acquire(struct tide_evpool *p, void **resource);

/* Gives a lent resource back; it goes to the oldest waiter, else idle, else
 * (idle full, retired, not reusable) it is destroyed. An accepted release
 * is a success for the breaker; one reusable() refuses (a connection with
 * unread bytes, a request half written) is destroyed, counted in
 * stats.dirty, and a failure. 0, or TIDE_EBUSY / TIDE_EUNKNOWN when it is
 * not a resource lent by this pool.
 * A second release of the same pointer is caught only while the resource
 * is not lent again: once the pool has lent it to another caller, a stale
 * release looks exactly like that caller's, since resources are known by
 * their address. Release once. With streams > 1 a release ends one loan
 * of a resource several borrowers may hold: see "Shared loans". */
TIDE_API int tide_evpool_release(struct tide_evpool *p, void *resource);

/* Gives back a broken one: destroyed, and its place wakes a waiter. It also
 * counts as a failure for the breaker. 0, TIDE_EBUSY or TIDE_EUNKNOWN. */
TIDE_API int tide_evpool_discard(struct tide_evpool *p, void *resource);

/* The other two ways a lent resource ends, when it must not be reused
 * though the backend did nothing wrong. Both destroy it at once, and its
 * place wakes a waiter. 0, TIDE_EBUSY (not lent: idle, or already given
 * back) or TIDE_EUNKNOWN.
 *
 * retire: it served, and the server said it closes after this exchange
 * (HTTP's `Connection: close`, a response framed by the close): an accepted
 * release for the breaker, and a first loan proves its make, as when
 * retire_after retires one. */
TIDE_API int tide_evpool_retire(struct tide_evpool *p, void *resource);
/* abandon: the borrower gave it up for its own reasons, mid-exchange (the
 * client it served went away): no outcome at all, for the breaker or the
 * backoff, and a first loan leaves its make unproven either way; if that
 * make was a RECOVERING breaker's probe, the probe's place is given back,
 * so the next make probes again. Use discard when the backend failed (a
 * reset, a bad or late answer). */
TIDE_API int tide_evpool_abandon(struct tide_evpool *p, void *resource);

/* The stale connection: the borrower's exchange failed before any byte of
 * it was answered, by a close (the request's write met a closed
 * connection, or the first read found EOF or a reset; not a timeout: a
 * backend that does not answer is failing). A connection that served
 * before fails so when the server closed it a moment before, its close
 * still on the way when the connection was lent (a server closing after
 * each reply, or at its keep-alive limit or idle timeout): no fault of the
 * backend's. Destroyed at once, and its place wakes a waiter.
 *
 * Returns TIDE_STALE (1) when the pool took it for stale: no outcome for
 * the breaker or the backoff (counted in stats.stale_loans), the factory's
 * stale hook told, and the borrower may retry at once on another
 * connection (an idempotent request; the next loan is not handed a
 * connection in the same state unlooked: see the hook). 0 when it was
 * the connection's first loan within a second of its make: a server that
 * accepts and closes, counted as a failed make as discard would (the
 * backend failed; retry as after any failure). TIDE_EBUSY, TIDE_EUNKNOWN
 * or TIDE_EINVAL as discard. A first loan on a connection older than that
 * proved its make by living: stale. */
TIDE_API int tide_evpool_stale(struct tide_evpool *p, void *resource);

/* With limits.streams above 1 a resource carries up to that many loans at
 * once (a Redis connection pipelining, an HTTP/2 connection's streams): an
 * acquire is answered with a resource already lent to others when one has
 * room (limits.sharing picks which), before a make. With streams 1 (the
 * preset) nothing here changes anything: every loan is alone.
 *
 * A loan is named by its resource and counted. acquire hands the same
 * pointer to several borrowers; release, discard, retire, abandon and stale
 * end one loan of it, and one more than are out answers TIDE_EBUSY. The
 * pool cannot tell which borrower's loan a call ends, so a second release
 * by one borrower while others hold the resource ends another's loan: the
 * protocol layer names its borrowers (a stream id, a tag in each frame),
 * and ends each one's loan exactly once.
 *
 * How each end of a loan works on a shared resource:
 *   release   one loan ends. The last one back (none other out) is what a
 *             release of an exclusive loan is: reusable() is asked, reset
 *             runs, and it goes idle (watched) or is destroyed. Before
 *             that, bytes in flight belong to the other borrowers.
 *   discard   the borrower says the connection broke: it breaks for every
 *             loan (tide_evpool_break); it takes no new loan and is
 *             destroyed, once, when its last loan comes back (by release,
 *             discard or abandon). The breaker and backoff hear ONE
 *             failure for it, however many loans are discarded.
 *   retire    an accepted release, and the resource drains: no new loan,
 *             destroyed when its last loan is back.
 *   abandon   no outcome; it drains (an exchange was left half done).
 *   stale     the peer closed it before answering: TIDE_STALE and no
 *             outcome, as for an exclusive loan (a first loan dying young
 *             is a failed make); it drains, for every loan.
 * The idle watch, health checks, alive() and reset run only on a resource
 * with no loan out; while it is being reset it takes no loan. One with
 * loans is neither watched nor checked: the protocol layer sees its
 * failures (a read error, EOF with replies owed) and calls break.
 *
 * An exclusive loan (acquire_alone, try_acquire_alone): a resource with no
 * other loan, which nobody shares while it is held (Redis MULTI/WATCH,
 * blocking commands, a subscriber). Shared and exclusive acquires wait in
 * ONE FIFO queue: an exclusive caller at the head holds back the shared
 * ones behind it until a resource drains to no loan or one can be made,
 * so it is never starved by a stream of shared loans.
 *
 * The pattern a protocol layer follows:
 *   - One reader per connection, owned by the protocol layer, not by a
 *     borrower: the layer keeps, beside each connection, the table of its
 *     borrowers with requests in flight (in order, for Redis; by stream or
 *     tag, for HTTP/2 or a tagged protocol). It installs the connection's
 *     read callback when the connection gets its first borrower and keeps
 *     it for as long as any loan is out; a borrower never touches the
 *     read side (nor sets callbacks) of a shared resource.
 *   - A borrower writes its request (tagged, or queued in order) and waits
 *     for the layer to call it back; the reader parses each reply and
 *     hands it to the borrower its tag (or the head of the in-order
 *     queue) names, and only then does that borrower release its loan.
 *     A reply for no borrower in flight is a protocol error: break.
 *   - On a read error, EOF or a protocol error with loans out, the layer
 *     calls tide_evpool_break once and fails every borrower in flight;
 *     each then discards (or abandons) its loan, and the resource is
 *     destroyed after the last. On a peer's GOAWAY or SETTINGS, it calls
 *     tide_evpool_set_streams.
 *   - When the last loan is back the layer stops reading before release
 *     (the pool's idle watch takes over the read side while idle).
 */

/* tide_evpool_acquire for an exclusive loan (see "Shared loans"). With
 * streams 1 it is tide_evpool_acquire. */
TIDE_API int tide_evpool_acquire_alone(struct tide_evpool *p, int64_t timeout,
                                       tide_acquire_cb cb, void *arg,
                                       struct tide_acquire **handle);
/* tide_evpool_try_acquire for an exclusive loan: an idle resource only. */
TIDE_API int tide_evpool_try_acquire_alone(struct tide_evpool *p,
                                           void **resource);
/* The protocol layer saw a shared resource fail with loans out (a reset,
 * EOF with replies owed, a GOAWAY with an error): it takes no new loan and
 * is destroyed once its last loan is back. 1 when this call broke it (the
 * one failure the breaker hears), 0 when it was broken already (a break,
 * or a discard of one of its loans); TIDE_EBUSY (no loan out),
 * TIDE_EUNKNOWN, TIDE_EINVAL (NULL, or streams 1: discard the loan). */
TIDE_API int tide_evpool_break(struct tide_evpool *p, void *resource);
/* How many loans resource may carry from now on (an HTTP/2 SETTINGS),
 * held to limits.streams; loans out above it stay out. 0 drains it (a
 * GOAWAY): no new loan, destroyed once none is out (an idle one at once),
 * with no failure; a drain is final. Waiters are served again as room
 * appears. 0; TIDE_EINVAL (negative, NULL), TIDE_EUNKNOWN, TIDE_EBUSY (on
 * its way to destroy). */
TIDE_API int tide_evpool_set_streams(struct tide_evpool *p, void *resource,
                                     int64_t streams);
/* How resource is shared now (see core.h's struct tide_share): 0,
 * TIDE_EINVAL or TIDE_EUNKNOWN. */
TIDE_API int tide_evpool_share(const struct tide_evpool *p,
                               const void *resource, struct tide_share *out);

/* ---- answers from the factory ----------------------------------------- */

/* A make succeeded: the pool takes ownership of resource (a make that
 * already timed out or was cancelled destroys it at once). */
TIDE_API void tide_evpool_made(struct tide_make *token, void *resource);
/* A make failed: code (negative; anything else becomes TIDE_EMAKE) and a
 * message for a person (copied; may be NULL) are handed unchanged to the
 * waiter that needed it. */
TIDE_API void tide_evpool_unmade(struct tide_make *token, int code,
                                 const char *message);
/* The pool the make belongs to; NULL once the pool is gone. */
TIDE_API struct tide_evpool *tide_make_pool(const struct tide_make *token);
/* A health check finished. A failed one destroys the resource, tells the
 * breaker and makes a replacement when below min. */
TIDE_API void tide_evpool_checked(struct tide_check *token, bool ok);
/* A reset finished: ok puts the resource back (to the oldest waiter, else
 * idle), not ok destroys it and tells the breaker. The token is gone
 * after; NULL does nothing. */
TIDE_API void tide_evpool_reset_done(struct tide_reset *token, bool ok);
/* An idle resource died (peer closed): dropped and destroyed at once; its
 * place wakes a waiter. 0, or TIDE_ENOTIDLE / TIDE_EUNKNOWN. */
TIDE_API int tide_evpool_lost(struct tide_evpool *p, void *resource);

/* ---- breaker, stats ----------------------------------------------------- */

/* The core pool's breaker (NULL without one): read its state, activate,
 * deactivate, install a strategy. Borrowed; lives as long as the pool. */
TIDE_API struct tide_breaker *tide_evpool_breaker(struct tide_evpool *p);

struct tide_evpool_stats {
    int64_t live; /* idle + lent + making + in checks + resetting */
    int64_t idle;
    int64_t lent;
    int64_t making;
    int64_t checking;
    int64_t resetting; /* released, being reset (factory reset) */
    int64_t waiting;
    enum tide_breaker_state breaker; /* ACTIVE when there is none */
    double refusal;                  /* the breaker's refused share now */
    uint64_t made;
    uint64_t destroyed;
    uint64_t make_failures;
    uint64_t timeouts; /* acquires that timed out */
    uint64_t shed;     /* acquires refused at once (the breaker, the
                          shedder, memory; held ones: see held) */
    uint64_t stale;    /* destroyed as past keep/life when lent */
    uint64_t evicted;  /* destroyed by the eviction timer */
    uint64_t health_failures;
    uint64_t leaks;
    uint64_t lost;           /* idle resources found dead */
    uint64_t acquires;       /* acquire and try_acquire calls */
    uint64_t queue_full;     /* acquires refused: the queue was at its bound */
    uint64_t cancels;        /* acquires cancelled before their answer */
    uint64_t dirty;          /* releases reusable() refused (unread bytes, a
                                request half written): destroyed */
    uint64_t reset_failures; /* resets answered not ok: destroyed */
    uint64_t retired;        /* lent ones given back by tide_evpool_retire */
    uint64_t abandoned;      /* loans given back by tide_evpool_abandon */
    uint64_t held;           /* acquires refused at once because makes are
                                held after a failed make (guard
                                TIDE_GUARD_BACKOFF); not counted in shed */
    uint64_t stale_loans;    /* loans tide_evpool_stale took for stale: no
                                outcome (its first loans that count as
                                failed makes are in make_failures) */
    /* shared loans (streams > 1; with streams 1 loans = lent, busiest is
     * 0 or 1): live, idle and lent above count resources (connections) */
    int64_t loans;   /* loans out now, answers not yet delivered and
                        resources being reset included */
    int64_t busiest; /* the most loans one resource carries now */
    uint64_t broken; /* resources broken with loans out (discard, break,
                        dirty last release), each once */
    /* acquire-wait distribution (ns), from acquire to callback, served
     * acquires only; 0 before the first */
    int64_t wait_p50;
    int64_t wait_p90;
    int64_t wait_p99;
    int64_t wait_max;
    /* the same over the last minute (in 15 s steps), so a recent spike is
     * not lost in a long life */
    int64_t recent_p50;
    int64_t recent_p90;
    int64_t recent_p99;
    int64_t recent_max;
    /* connections by demand (limits.demand and limits.preconnect, both
     * off by preset: see core.h, "Connections by demand") */
    uint64_t preconnects;    /* makes opened ahead of a caller (failed
                                ones are in make_failures too) */
    uint64_t demand_retired; /* idle ones destroyed as beyond recent
                                demand (not in evicted) */
    uint64_t connect_waits;  /* acquires that waited for a make: answered
                                with a resource made while they waited */
    int64_t needed; /* resources the peak of loans over the demand window
                       needs (preconnect's headroom included); with
                       demand off, what the loans out now need */
};

TIDE_API void tide_evpool_stats(struct tide_evpool *p,
                                struct tide_evpool_stats *out);

/* The last make failure's message, into buf (always NUL-terminated when
 * len > 0). Returns its code, 0 when no make has failed. */
TIDE_API int tide_evpool_last_error(const struct tide_evpool *p, char *buf,
                                    size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TIDEPOOL_EVLOOP_H */
