/* The smtp tests' fixture: per test a fresh event_base and certificates
 * made at run time; each test starts its own aiosmtpd (server.h) with the
 * behaviour it needs. The teardown proves nothing leaked: no descriptor
 * left open, no event left on the base. Tests end their senders with
 * sender_end, which also checks the books: every session made was
 * destroyed once, and the server saw each of them close. */
#ifndef TIDEPOOL_TEST_SMTP_FIXTURE_H
#define TIDEPOOL_TEST_SMTP_FIXTURE_H

#include <event2/event.h>
#include <stdbool.h>

#include "certs.h"
#include "runner.h"
#include "server.h"
#include "smtp.h"

struct smtp_fixture {
    struct event_base *base;
    struct pki pki;
    char *ca_pem; /* pki.ca as PEM */
    struct smtp_server server;
    int fds_at_start;
};

extern struct smtp_fixture *sx;

/* Adds the fixture (checked: one per test) and a timeout in seconds. */
void smtp_fixture_add(TCase *tc, int seconds);
/* The suite's main: exit 77 (meson's SKIP) without python3-aiosmtpd. */
int smtp_test_main(Suite *(*make_suite)(void));

int64_t now_ms(void);
void run_ms(int ms);
bool run_until(bool (*pred)(void *), void *arg, int ms);

/* Starts the fixture's server (asserted). */
void server_up(const struct smtp_server_opts *o);
/* The server's record now (asserted readable); smtp_record_free it. */
struct smtp_record record_now(void);

/* ---- senders ---- */

/* Options for the fixture's server in plaintext, a pool of `size`. */
struct tide_smtp_options plain_options(int64_t size);
/* TLS options trusting the test CA, verifying `name`. */
struct tide_tls_options tls_options(const char *name);
struct tide_smtp_sender *sender_new(const struct tide_smtp_options *o);
/* Checks the books (nothing lent; after the pool's close every session
 * made was destroyed once), frees the sender and waits until the server
 * has seen every session close. Returns the stats read after the close. */
struct tide_smtp_stats sender_end(struct tide_smtp_sender *s);

/* One answer, recorded. */
struct sent {
    int calls;
    int status;
    int reply;
    char text[512];
    size_t accepted;
    int attempts;
    int rcpt_reply[8];
};

void on_sent(struct tide_smtp_sender *s, int status,
             const struct tide_smtp_result *r, void *arg);
bool sent_answered(void *sent);
/* A message with header X-Test-Id: id, the body after it. */
char *message_text(const char *id, const char *body);
/* Sends a message with that id and body to n recipients and waits (at most
 * ms) for its answer (asserted). */
struct sent send_wait(struct tide_smtp_sender *s, const char *id,
                      const char *const *rcpts, size_t n, const char *body,
                      int ms);

#endif
