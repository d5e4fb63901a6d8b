/* A real SMTP server for one test: Debian's python3-aiosmtpd with the
 * handler in smtpd.py (it records every session and every accepted
 * message), started by the test on 127.0.0.1 at a free port, with
 * certificates made at run time, and stopped by its pid. */
#ifndef TIDEPOOL_TEST_SMTP_SERVER_H
#define TIDEPOOL_TEST_SMTP_SERVER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "child.h"

#include <openssl/evp.h>
#include <openssl/x509.h>

/* How the server behaves. */
struct smtp_server_opts {
    X509 *cert;            /* STARTTLS with this certificate; NULL: none */
    EVP_PKEY *key;         /* its key */
    bool require_starttls; /* 530 to MAIL before STARTTLS */
    int timeout_ms;        /* idle sessions closed after; 0: 300 s */
    const char *auth;      /* "user:password": AUTH required; NULL: none */
    const char *refuse;    /* a recipient answered 550; NULL: none */
    bool greet421;         /* every session greeted 421 and closed */
    int delay_ms;          /* before the verdict on each message */
    int drop_mail;         /* a session's drop_mail-th MAIL FROM closes it
                              without an answer; 0: never */
    bool drop_421;         /* ... after a 421 */
};

struct smtp_server {
    struct tide_test_child child; /* its directory: the record, PEM files */
    int port;
    char record[PATH_MAX];
    char cert_path[PATH_MAX];
    char key_path[PATH_MAX];
    struct smtp_server_opts o; /* cert and key not kept */
    bool tls;                  /* started with a certificate */
    int starts;                /* READY lines the record should hold */
};

/* Whether /usr/bin/python3 can import aiosmtpd. */
bool smtp_server_installed(void);

/* Starts a server with o (copied; the certificate borrowed until the
 * call returns); waits until it listens (at most 10 s). Retries with
 * another port when the one picked was taken. */
bool smtp_server_start(struct smtp_server *s, const struct smtp_server_opts *o);
/* SIGTERM to its pid and the wait for it to end (SIGKILL after 5 s). The
 * files stay, for a restart. */
void smtp_server_stop(struct smtp_server *s);
/* SIGKILL, without waiting for anything but the process's end: a crash. */
void smtp_server_kill(struct smtp_server *s);
/* Starts it again on the same port with the same options. */
bool smtp_server_restart(struct smtp_server *s);
/* Stops it when running and removes its files. */
void smtp_server_dispose(struct smtp_server *s);

/* One accepted message, as recorded. */
struct smtp_message {
    char id[64];     /* its X-Test-Id header, "-" without one */
    char rcpts[512]; /* the recipients, joined by "," */
    char *content;   /* as the server received it (dots unstuffed) */
    size_t len;
};

/* What the record holds now. */
struct smtp_record {
    int conns; /* sessions opened, since the server's last (re)start */
    int gone;  /* ... and closed since then */
    int auth_ok;
    int auth_bad;
    int drops; /* sessions closed at MAIL FROM */
    int n;     /* messages */
    struct smtp_message *msgs;
};

/* Reads the record; false when it cannot be read. Free with
 * smtp_record_free. */
bool smtp_record_read(const struct smtp_server *s, struct smtp_record *r);
void smtp_record_free(struct smtp_record *r);
/* The messages recorded with this id. */
int smtp_record_count(const struct smtp_record *r, const char *id);

#endif
