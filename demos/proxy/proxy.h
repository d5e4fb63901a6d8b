/* demos/proxy: an HTTP/1.1 reverse proxy on a tidepool group.
 *
 * Clients connect to the proxy's listener and are kept alive; each
 * request's head is read whole and sent upstream on a connection lent by
 * the group (one pool per upstream, picked with tide_pick), its body after
 * it as it comes (by length, or chunked with its trailers less those the
 * proxy controls), through bounded buffers: the client is not read while
 * 64 KiB of its body wait for the upstream. The response is streamed back
 * framed as it came (Content-Length), or chunked (chunked or until-close
 * bodies), or with no body at all (HEAD, 1xx, 204, 304). Chunked framing
 * is checked strictly both ways. The upstream connection goes back to
 * its pool only when the response is complete. Otherwise it is destroyed,
 * and its pool told whose doing that was, as its breaker and backoff judge
 * the upstream by it: retired (a success) after a whole response the
 * upstream closes (`Connection: close`, HTTP/1.0 without keep-alive, a
 * body until close); abandoned (no outcome) when the client went away;
 * discarded (a failure) only when the upstream failed.
 * Hop-by-hop headers are removed both ways and X-Forwarded-For is added.
 * Parsing is libhttp-parser's.
 *
 * Errors: a group acquire that fails with TIDE_ETIMEDOUT answers 504,
 * TIDE_EUNAVAILABLE (breaker open, shed) 503 with Retry-After from the
 * pool's retry time, anything else (cannot connect) 502 with the cause in
 * the body. A request whose connection fails before any response byte
 * came (an upstream that closed a kept connection just as we wrote) is
 * sent once more on another connection when its method is idempotent and
 * what went of its body (64 KiB of it are kept) can go again, never for
 * POST or PATCH. A client that leaves mid-response: the rest is
 * read for nobody when it is small (64 KiB at most, by length, within a
 * second) and the connection released whole; otherwise it is abandoned,
 * never lent again with half a response in it.
 *
 * GET or HEAD /_tidepool/stats (that path exactly, with any query)
 * answers the proxy's own counters (px_stats) and every upstream's pool
 * stats as JSON, with format=prometheus in the query as Prometheus text;
 * another method gets 405, and any other path goes upstream. A request
 * without Host (HTTP/1.0 allows it) goes upstream with the upstream's own
 * host:port, as HTTP/1.1 requires one. An HTTP/1.1 request without Host,
 * any with two or with an invalid one, gets 400 (RFC 9112 3.2); a target
 * in absolute-form goes upstream in origin-form, its authority as the
 * Host (RFC 9112 3.2.2).
 *
 * One proxy belongs to one event_base and its thread. SIGPIPE must be
 * ignored by the program.
 */
#ifndef TIDEPOOL_DEMO_PROXY_H
#define TIDEPOOL_DEMO_PROXY_H

#include <stdint.h>
#include <tidepool/group.h>

struct event_base;
struct px;

struct px_options {
    const char *listen_host;  /* an IP literal; preset 127.0.0.1 */
    int listen_port;          /* 0: any free port (see px_port) */
    int64_t acquire_timeout;  /* ns; preset 5 s */
    int64_t response_timeout; /* ns of upstream silence; preset 30 s */
    size_t max_body;          /* request body bytes at most; preset 64 MiB */
    /* ns; preset 60 s. A request's head must come whole within it of the
     * proxy being ready for it (a client idle between requests for as
     * long is closed), and its body may pause no longer between reads;
     * a request begun and not finished in time gets 408. So a client
     * that trickles a head a byte at a time, or stops mid-body, holds its
     * connection for a bounded time. */
    int64_t client_timeout;
    /* A request answered 503 by its upstream goes to another one, at most
     * twice, within the group's retry budget, when it can go again whole
     * (idempotent, its body kept); else, or past the budget, the 503 goes
     * to the client as it came (failover.c). Off: every answer is relayed
     * as it came. HTTP/1.1 upstreams. */
    bool retry_503;
};

/* Creates a proxy listening on o's address, serving through `group`
 * (borrowed; must outlive the proxy). 0, or -1 with errno set: EINVAL
 * for a host that is not an IPv4 literal, else bind's or listen's
 * (EADDRINUSE...). */
int px_new(struct event_base *base, struct tide_group *group,
           const struct px_options *o, struct px **out);

/* The port it listens on. */
int px_port(const struct px *p);

/* Stops listening and closes every client connection; lent upstream
 * connections are abandoned (half a response in them, through no fault
 * of the upstream). */
void px_free(struct px *p);

/* Called once from the loop when a drain has closed the last client. May
 * free the proxy. */
typedef void (*px_drained_cb)(struct px *p, void *arg);

/* Drains: stops listening (the port is let go), closes clients that are
 * between requests, and closes each other one once its exchange is done
 * (its response says Connection: close), a response still coming from its
 * upstream included. done(p, arg) runs from the loop when no client is
 * left (at once when there is none). A second call changes only the
 * callback. Bound the wait yourself: px_free ends what is left. */
void px_drain(struct px *p, px_drained_cb done, void *arg);

struct px_stats {
    uint64_t requests;  /* requests read from clients */
    uint64_t responses; /* responses completed to clients */
    uint64_t retries;   /* requests sent again on another connection
                           after no byte of the response came */
    uint64_t errors_502;
    uint64_t errors_503;
    uint64_t errors_504;
    uint64_t aborted;   /* clients gone mid-response */
    uint64_t orphans;   /* of those, responses read to their end for
                           nobody so the connection went back whole */
    uint64_t discarded; /* upstream connections discarded: the upstream
                           failed (a connect or read error, a reset, a bad,
                           cut or late response) */
    uint64_t stale;     /* upstream connections closed before any byte
                           of the response, having served before: the
                           upstream had closed them a moment before; no
                           failure of its own (tide_group_stale) */
    uint64_t retired;   /* ended after a whole response the upstream
                           closes (Connection: close, a body until close):
                           the upstream's success */
    uint64_t abandoned; /* ended because the client went away (or the
                           proxy closed): no outcome for the upstream */
    uint64_t paused;    /* times an upstream's reading stopped while a
                           slow client caught up */
    uint64_t accept_pauses; /* times accepting stopped for 100 ms because
                               accept() failed: at the descriptor limit
                               (EMFILE, ENFILE), or out of memory */
    int64_t clients;    /* client connections open */
    /* requests answered 503 sent to another upstream (retry_503) */
    uint64_t fail_overs;
};

void px_stats(const struct px *p, struct px_stats *out);

#endif
