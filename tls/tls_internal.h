/* Internals of the TLS factory: tls.c (the factory, handshake, close),
 * context.c (the SSL_CTX from options) and sessions.c (the cache). */
#ifndef TIDEPOOL_TLS_TLS_INTERNAL_H
#define TIDEPOOL_TLS_TLS_INTERNAL_H

#include "net_internal.h"

struct tide_tls_factory {
    struct tide_tcp_factory tcp; /* the layer below; first */
    SSL_CTX *ctx;                /* one reference held */
    char *sni;                   /* NULL: none */
    char *verify_name;           /* NULL: no verification */
    bool verify_ip;              /* verify_name is an IP literal */
    unsigned char *alpn;         /* wire format, or NULL */
    unsigned int alpn_len;
    bool alpn_required;
    int64_t handshake_timeout;
    bool resumption;
    struct tide_tls_sessions *sessions;
    bool own_sessions;
    char *key; /* this upstream's key in the cache */
    /* the upgrade before the handshake (STARTTLS), or NULL: setup.c */
    tide_setup_cb upgrade;
    void *upgrade_arg;
    void (*upgrade_abort)(struct tide_net_setup *setup, void *arg);
    int64_t upgrade_timeout;
};

/* context.c: a client context from the options' CA, certificate and
 * version fields. 0, TIDE_ETLS_CONFIG or TIDE_ENOMEM. */
int tide__tls_context(const struct tide_tls_options *o, SSL_CTX **out);

/* sessions.c */
/* A session to offer for key, with a reference for the caller; NULL when
 * none. A TLS 1.3 ticket leaves the cache (used once); a TLS 1.2 session
 * stays for the next connection too. */
SSL_SESSION *tide__tls_sessions_take(struct tide_tls_sessions *s,
                                     const char *key);
/* Keeps sess (takes the caller's reference). */
void tide__tls_sessions_put(struct tide_tls_sessions *s, const char *key,
                            SSL_SESSION *sess);
size_t tide__tls_sessions_count_key(const struct tide_tls_sessions *s,
                                    const char *key);

#endif
