/* What the chaos tests' servers (the echo and the multiplexed echo) share:
 * a listener on a fresh loopback port, and an accepted socket made into a
 * server bufferevent, plain TCP or TLS. */
#ifndef TIDEPOOL_TEST_CHAOS_LISTEN_H
#define TIDEPOOL_TEST_CHAOS_LISTEN_H

#include <event2/listener.h>
#include <openssl/ssl.h>
#include <stdint.h>

struct bufferevent;

/* Listens on 127.0.0.1 at a port the kernel picks, told in *port; accepts
 * go to cb with arg (borrowed). base is borrowed and must outlive the
 * listener, which the caller frees. NULL when a socket call failed. */
struct evconnlistener *chaos_listen(struct event_base *base,
                                    evconnlistener_cb cb, void *arg,
                                    uint16_t *port);

/* The accepted fd as the server's end, with TCP_NODELAY (answers are small
 * and must not wait for Nagle): over TLS with ctx (borrowed; each
 * connection takes its own SSL) when ctx is set, else plain. The
 * bufferevent owns fd and its callbacks are deferred. NULL, with fd closed,
 * when it could not be made. */
struct bufferevent *chaos_accepted(struct event_base *base, evutil_socket_t fd,
                                   SSL_CTX *ctx);

#endif
