/* The backend of the chaos tests: an echo server on 127.0.0.1, plain TCP or
 * TLS, in the test process. It writes back every byte it reads, so a framed
 * request comes back as its own reply, and closes a connection when the
 * peer does. */
#ifndef TIDEPOOL_TEST_CHAOS_ECHO_H
#define TIDEPOOL_TEST_CHAOS_ECHO_H

#include <openssl/ssl.h>
#include <stdint.h>

struct event_base;
struct chaos_echo;

/* Listens on a fresh port; ctx NULL: plain TCP, else TLS with ctx (taken:
 * freed with the server). base is borrowed and must outlive the server.
 * NULL when a socket call failed (ctx is freed then too). */
struct chaos_echo *chaos_echo_new(struct event_base *base, SSL_CTX *ctx);
/* Closes the listener and every connection. NULL is ignored. */
void chaos_echo_free(struct chaos_echo *e);
uint16_t chaos_echo_port(const struct chaos_echo *e);

/* A TLS server context for cert and key (both borrowed: the context takes
 * its own references). NULL on failure. */
SSL_CTX *chaos_echo_tls_ctx(X509 *cert, EVP_PKEY *key);

#endif
