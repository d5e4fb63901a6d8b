/* demos/proxy: what an HTTP/2 upstream (h2c://, h2://) adds to its pool's
 * factory (h2.c), for config.c, which builds the upstreams.
 *
 * The TCP or TLS factory opens the connection and runs HTTP/2's session
 * setup on it (px_h2_upstream_setup: the preface and SETTINGS out, the
 * server's SETTINGS awaited); the pool sees a wrapper of that factory
 * (px_h2_upstream_wrap) whose idle watch, alive, reusable and health check
 * (a PING) are HTTP/2's, as the proxy reads an HTTP/2 connection for its
 * whole life. Its pool lends shared (limits.streams = px_h2_streams_max(),
 * each connection held to its server's SETTINGS_MAX_CONCURRENT_STREAMS).
 */
#ifndef TIDEPOOL_DEMO_PROXY_H2_H
#define TIDEPOOL_DEMO_PROXY_H2_H

#include <stdbool.h>
#include <stdint.h>
#include <tidepool/evloop.h>
#include <tidepool/tls.h>

struct px_h2_upstream;

/* One upstream's HTTP/2 state, for host:port (the :authority of requests
 * that name none), over TLS or not. NULL when out of memory. */
struct px_h2_upstream *px_h2_upstream_new(const char *host, int port, bool tls);

/* Puts HTTP/2's session setup into the TCP options the upstream's TCP or
 * TLS factory is made with (up is borrowed by them). */
void px_h2_upstream_setup(const struct px_h2_upstream *up,
                          struct tide_tcp_options *t);

/* The factory the pool is given: inner's (copied), wrapped. */
void px_h2_upstream_wrap(struct px_h2_upstream *up,
                         const struct tide_factory *inner,
                         struct tide_factory *out);

/* The pool the wrapped factory serves (borrowed), once it exists: set
 * before its first make. */
void px_h2_upstream_bind(struct px_h2_upstream *up, struct tide_evpool *pool);

/* Frees up, after its pool (which destroys its connections) and before the
 * inner factory. NULL does nothing. */
void px_h2_upstream_free(struct px_h2_upstream *up);

/* limits.streams of an HTTP/2 upstream's pool: the most streams the proxy
 * opens on one connection, whatever its server allows. */
int64_t px_h2_streams_max(void);

#endif
