/* Servers in the test process, on loopback: TCP or TLS (a bufferevent per
 * connection, echoing what it reads unless told otherwise, or answering
 * through the test's own request hook), a listener that accepts and never
 * speaks, one that closes every connection as it accepts it, one that greets
 * first, or one whose backlog is full. The test drives them: close every
 * connection, reset them, send bytes, send a TLS session ticket or a key
 * update. */
#ifndef TIDEPOOL_TEST_TLS_SERVERS_H
#define TIDEPOOL_TEST_TLS_SERVERS_H

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>

#include "certs.h"

struct server_conn {
    struct test_server *s;
    struct bufferevent *bev; /* NULL for a raw one */
    evutil_socket_t raw;     /* a raw (never speaking) connection's fd */
    struct server_conn *next;
    bool handshaken;
    bool resumed;
    bool peer_closed; /* EOF (for TLS: a close_notify came) */
    bool peer_error;
    void *user; /* free for the test's request hook */
};

/* Bytes came on c (they are in `in`): answer them with bufferevent_write on
 * c->bev and drain what was consumed. Runs from the loop; must not free c. */
typedef void (*server_request_cb)(struct server_conn *c, struct evbuffer *in,
                                  void *arg);

struct test_server {
    struct event_base *base;
    struct evconnlistener *listener;
    evutil_socket_t backlog_fd; /* a listener that never accepts, or -1 */
    int family;
    uint16_t port;
    char path[108];     /* a Unix socket server's path ("" otherwise): unlinked
                           at stop */
    SSL_CTX *ctx;       /* NULL: plain TCP */
    bool raw;           /* accept and hold: never read, write or handshake */
    bool echo;          /* echo what it reads (default true) */
    bool close_at_once; /* close each connection as it is accepted (a
                           server at its connection limit) */
    const char *greeting; /* written to each connection as it is accepted
                             (after the handshake for TLS): a server that
                             speaks first; NULL: none. Borrowed. */
    server_request_cb on_request; /* instead of echo, when set */
    void *request_arg;
    struct server_conn *conns;
    int accepted;
    int handshakes;
    int resumptions;
    int closed_by_peer;
    int closed_cleanly;     /* EOF: for TLS a close_notify came first */
    char sni[256];          /* last SNI seen ("" when none) */
    char alpn[64];          /* what the server chose last */
    const char *alpn_offer; /* what the server supports, wire format */
    size_t alpn_offer_len;
};

/* Server context: cert and key, versions (0: any), tickets as OpenSSL sends
 * them. want_client: request and verify a client certificate against ca. */
SSL_CTX *server_ctx(X509 *cert, EVP_PKEY *key, int min_version, int max_version,
                    X509 *client_ca);

/* Starts on 127.0.0.1 (AF_INET) or ::1 (AF_INET6), port 0 or `port`; takes
 * ctx. raw, echo, close_at_once, greeting, on_request and alpn_offer may be
 * set after the start: they are read when a connection comes. */
bool server_start(struct test_server *s, struct event_base *base, int family,
                  uint16_t port, SSL_CTX *ctx);
/* The same on a Unix domain socket at path (which must not exist yet). */
bool server_start_unix(struct test_server *s, struct event_base *base,
                       const char *path, SSL_CTX *ctx);
/* A listener with a full backlog: connects to it hang. */
bool server_start_full_backlog(struct test_server *s, int family);
void server_stop(struct test_server *s);

void server_close_all(struct test_server *s); /* TLS: close_notify first */
void server_reset_all(struct test_server *s); /* RST */
void server_send_all(struct test_server *s, const char *text);
void server_ticket_all(struct test_server *s);     /* TLS 1.3 */
void server_key_update_all(struct test_server *s); /* TLS 1.3 */
int server_live(const struct test_server *s);

#endif
