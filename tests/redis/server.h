/* A real redis-server for one test: Debian's, started by the test on
 * 127.0.0.1 at a free port (and, when asked, a Unix socket and a TLS port
 * with certificates made at run time), with nothing saved to disk, stopped
 * by its pid. An admin connection (hiredis's blocking context, its own
 * socket) configures and inspects it beside the client under test. */
#ifndef TIDEPOOL_TEST_REDIS_SERVER_H
#define TIDEPOOL_TEST_REDIS_SERVER_H

#include <limits.h>
#include <stdbool.h>

#include "child.h"

#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

struct redis_server {
    struct tide_test_child child; /* its directory: log, Unix socket, PEMs */
    int port;                     /* plain TCP, always on */
    int tls_port;                 /* 0 without TLS */
    char unix_path[128];
    char cert_path[PATH_MAX]; /* leaf certificate and its key */
    char ca_path[PATH_MAX];
    bool tls;
    char *const *extra; /* more arguments, NULL-terminated; borrowed */
    char password[64];  /* the admin's AUTH, once a test set requirepass */
};

/* Whether redis-server can be run at all (on PATH). */
bool redis_server_installed(void);

/* Starts a server: TLS too when cert is not NULL (cert and key as its
 * certificate, ca as the CA it names), with extra arguments (borrowed,
 * NULL-terminated, may be NULL). Waits until it answers PING (at most 5 s).
 * Retries with another port when the one picked was taken. */
bool redis_server_start(struct redis_server *s, X509 *cert, EVP_PKEY *key,
                        X509 *ca, char *const *extra);
/* SIGTERM, and the wait for it to end (SIGKILL after 5 s). The files stay
 * for a restart. */
void redis_server_stop(struct redis_server *s);
/* Sends sig, without waiting; redis_server_exited then tells when it has
 * ended (and reaps it), so the loop can run meanwhile. */
void redis_server_signal(struct redis_server *s, int sig);
bool redis_server_exited(struct redis_server *s);
/* Starts it again on the same ports, with the same arguments. */
bool redis_server_restart(struct redis_server *s);
/* Stops it when running and removes its files. */
void redis_server_dispose(struct redis_server *s);

/* A blocking admin connection (NULL when it cannot connect). */
redisContext *redis_admin(const struct redis_server *s);
/* One admin command on a connection of its own; the reply (free it with
 * freeReplyObject) or NULL. */
redisReply *redis_admin_command(const struct redis_server *s, const char *fmt,
                                ...);
/* The clients connected now (INFO clients), the admin's own not counted;
 * -1 when it cannot be asked. */
long redis_clients(const struct redis_server *s);

#endif
