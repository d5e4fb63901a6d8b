/* tidepool smtp: a mail sender that reuses SMTP sessions, on a tide_evpool.
 * Installed as <tidepool/smtp.h> with libtidepool-smtp (pkg-config
 * tidepool-smtp).
 *
 * A sender owns a pool of SMTP sessions to one server, made by tidepool's
 * TCP or TLS factory (<tidepool/tls.h>). Opening a session is the costly
 * part of sending mail (connect, greeting, EHLO, STARTTLS and a TLS
 * handshake, EHLO again, AUTH: five or six round trips before the first
 * MAIL FROM); a sender pays it once per session and then sends message
 * after message on it.
 *
 *   struct tide_smtp_sender *s;
 *   struct tide_smtp_options o = {.tcp = {.host = "127.0.0.1", .port = 25}};
 *   if (tide_smtp_sender_new(base, &o, &s) != 0) ...
 *   const char *to[] = {"a@example.com", "b@example.com"};
 *   tide_smtp_send(s, "me@example.com", to, 2, text, strlen(text),
 *                  on_sent, arg);
 *   ...
 *   tide_smtp_sender_free(s);
 *
 * A session's life:
 * - Opening (the factory's upgrade and setup steps, before the pool sees
 *   it): the greeting (220), EHLO (HELO instead when the server answers
 *   EHLO 500 or 502 and neither STARTTLS nor AUTH is needed); with
 *   starttls, STARTTLS offered and answered 220, the TLS handshake on the
 *   same socket (verified as any TLS connection), EHLO again; AUTH PLAIN
 *   (or LOGIN when only that is offered) when credentials are given. A
 *   greeting of 421 or 554, a missing STARTTLS, a refused AUTH fail the
 *   make in the server's words; the pool's backoff spaces the reconnects,
 *   so a server that turns everyone away is not stormed.
 * - A message: MAIL FROM, RCPT TO per recipient (each answered on its own:
 *   some may be refused while the others get the message), DATA, the
 *   message dot-stuffed and with every line ending in CRLF, then the
 *   server's verdict.
 * - Back to the pool: RSET through the pool's reset hook, so the next
 *   message starts from a clean state whatever happened in this one. NOOP
 *   is the health check of an idle session. A session carries at most
 *   max_messages messages (servers limit them; the pool's retire_after)
 *   and is then closed.
 * - Closing: QUIT, written at once without waiting for any answer (it must
 *   not block), then the socket (for TLS, close_notify) closed.
 * A session the server closes while idle (its idle timeout, a 421) is
 * dropped by the factory's idle watch before anyone is handed it. A
 * session that breaks before the message's final "." was sent is no
 * failure of the message: nothing was delivered, and it is sent again on
 * another session: after a session that had carried messages before (a
 * stale one, which says nothing about the server; when a firewall forgot
 * every idle session, the next one is stale too) as often as it takes, up
 * to 16 sessions in all; after a fresh session once, so a server that
 * breaks every session is not hammered by each message. That includes a
 * server that stops reading in the middle of the message: while the
 * message goes out, reply_timeout bounds a write that makes no progress
 * (not the whole upload), and the "." counts as sent only once the
 * sender's buffer has run dry. After the final ".", a session that breaks
 * before the verdict fails the message (TIDE_SMTP_EUNKNOWN): it may or may
 * not have been delivered, and sending it again could deliver it twice.
 * The first reply after the "." is the verdict, even when the server says
 * more after it (the session is then closed, out of step). While a
 * session opens, a reply with more bytes behind it (the server speaking
 * out of turn) fails the make with TIDE_SMTP_EPROTOCOL, naming the step.
 *
 * Threads: a sender belongs to one event_base and is used from that loop's
 * thread only. The application must ignore SIGPIPE (see <tidepool/evloop.h>).
 */
#ifndef TIDEPOOL_SMTP_H
#define TIDEPOOL_SMTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tidepool/tls.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;

/* Errors of the sender, beside tidepool's own (tide_smtp_strerror knows
 * both). */
enum tide_smtp_error {
    /* the server answered 4xx: try again later; the message holds its
     * reply */
    TIDE_SMTP_ETEMPORARY = -100,
    /* the server answered 5xx: do not try again; its reply is the
     * message */
    TIDE_SMTP_EPERMANENT = -101,
    /* the server's bytes are not SMTP replies, or a reply is of the wrong
     * kind (neither the one asked for nor a refusal: a 250 to DATA): the
     * session was dropped */
    TIDE_SMTP_EPROTOCOL = -102,
    /* no verdict within the message's timeout (waiting for a session
     * included) */
    TIDE_SMTP_ETIMEDOUT = -103,
    /* the session broke after the whole message was sent and before the
     * server's verdict: it may have been delivered; not sent again */
    TIDE_SMTP_EUNKNOWN = -104,
    /* AUTH was refused (535 and the like), or the server offers no
     * mechanism this sender speaks */
    TIDE_SMTP_EAUTH = -105,
};

/* A sentence for a person, for the codes above and every tidepool code;
 * never NULL, static storage. */
TIDE_API const char *tide_smtp_strerror(int code);

/* How the sender connects and behaves. Zero fields take the preset; spans
 * are ns. Strings are copied at creation; what is marked borrowed must
 * outlive tide_smtp_sender_new only. */
struct tide_smtp_options {
    /* Where and how to connect (preset port 25), timeouts, resolver. Its
     * setup, setup_arg, setup_abort and on_idle_data fields belong to the
     * sender: leave them zero (TIDE_EINVAL otherwise). */
    struct tide_tcp_options tcp;
    /* NULL: plaintext. Otherwise TLS with these options (borrowed): trust
     * store, verification name, SNI, sessions; their tcp field is ignored
     * and the one above used, their upgrade fields must be zero. */
    const struct tide_tls_options *tls;
    /* With tls: STARTTLS on a plaintext connection (port 25 or 587),
     * instead of TLS from the first byte (port 465). */
    bool starttls;
    /* The name given in EHLO; preset "localhost". One word of 1 to 255
     * bytes, without CR or LF (TIDE_EINVAL otherwise). */
    const char *helo_name;
    /* AUTH on every new session when both are given. Only over TLS:
     * credentials in plaintext are readable by anyone on the path, so
     * without tls a user is refused at creation (TIDE_EINVAL), unless ... */
    const char *user;
    const char *password;
    /* DANGER: ... this is set. For a test server on loopback only. */
    bool insecure_auth_over_plaintext;
    /* The pool: limits (size preset 4), min, make timeout (preset 20 s,
     * above connect, upgrade, handshake and setup together), acquire
     * timeout, health_interval (how often idle sessions are NOOPed; preset
     * 30 s), ward; retire_after is max_messages. Without a ward backoff
     * the preset backoff (100 ms doubling to 1 s) is used, so a server
     * refusing sessions is not stormed. */
    struct tide_evpool_options pool;
    /* Messages per session before it is closed (a QUIT and a new
     * session); preset 100; TIDE_UNLIMITED for none. */
    int64_t max_messages;
    /* From tide_smtp_send until the verdict, waiting for a session
     * included. Preset 60 s; TIDE_FOREVER for none. */
    int64_t timeout;
    /* How long one reply may take during a message, a RSET or a NOOP;
     * preset 10 s. */
    int64_t reply_timeout;
};

struct tide_smtp_sender;

/* Creates a sender on base (borrowed; must outlive the sender). Returns 0
 * with *out (free it with tide_smtp_sender_free); TIDE_EINVAL (a NULL
 * argument, a user without a password or the reverse, AUTH over
 * plaintext without its option, starttls without tls, a helo_name EHLO
 * cannot carry, a negative span or count, the factory's or the pool's
 * refusals); TIDE_ENOMEM; the factory's and the pool's codes. *out is
 * NULL on failure when out is not. */
TIDE_API TIDE_MUST_USE int
tide_smtp_sender_new(struct event_base *base, const struct tide_smtp_options *o,
                     struct tide_smtp_sender **out);

/* Frees the sender, its pool and its sessions. Messages not yet answered
 * are dropped without callbacks. Safe from inside a callback: it completes
 * when that callback returns. NULL is ignored. */
TIDE_API void tide_smtp_sender_free(struct tide_smtp_sender *s);

/* How one recipient fared: the reply to its RCPT TO. */
struct tide_smtp_rcpt {
    const char *address; /* as given to send */
    int reply;           /* 250, 251: accepted; 4xx, 5xx: refused; 0: not
                            asked (the message failed before) */
    const char *text;    /* the server's text ("" when none) */
};

/* The answer to one message. */
struct tide_smtp_result {
    int reply;        /* the reply that decided (250 to the final "." on
                         success, else the refusal's; 0 when the session
                         failed without one) */
    const char *text; /* its text, or the failure's sentence */
    size_t n;         /* recipients */
    const struct tide_smtp_rcpt *rcpts;
    size_t accepted; /* recipients accepted (the message went to those) */
    int attempts;    /* sessions the message was tried on */
};

/* The answer to one message. status 0: the server took the message for
 * the accepted recipients (result->accepted >= 1; refused ones are in
 * result->rcpts). TIDE_SMTP_ETEMPORARY / TIDE_SMTP_EPERMANENT: the server
 * refused it (MAIL FROM, every RCPT TO, DATA or the final verdict);
 * another code: no session, or the session failed (tidepool's codes, with
 * the factory's sentence), TIDE_SMTP_ETIMEDOUT, TIDE_SMTP_EUNKNOWN.
 * result and everything in it is borrowed: valid during the callback
 * only. Runs from the loop, never inside tide_smtp_send, exactly once per
 * message unless the sender is freed first. May call any sender function,
 * free included. */
typedef void (*tide_smtp_cb)(struct tide_smtp_sender *s, int status,
                             const struct tide_smtp_result *result, void *arg);

/* Sends one message from `from` to n recipients. message: len bytes, the
 * headers and body as they should arrive; lines may end in LF, CR or
 * CRLF (all are sent as CRLF), lines starting with "." are dot-stuffed,
 * and a last line without an end gets one. Everything is copied before
 * the call returns. from may be "" (MAIL FROM:<>, the null reverse-path
 * of bounces); a recipient may not. Returns 0 and answers cb once; fails
 * at once, without a callback, with TIDE_EINVAL (NULL sender, from,
 * recipients, message or cb; n == 0; an empty recipient; an address with
 * CR, LF, '<' or '>', or of 512 bytes or more), TIDE_ENOMEM, or the
 * pool's refusal (TIDE_EQUEUEFULL, TIDE_ECLOSED). */
TIDE_API int tide_smtp_send(struct tide_smtp_sender *s, const char *from,
                            const char *const *recipients, size_t n,
                            const char *message, size_t len, tide_smtp_cb cb,
                            void *arg);

/* What a sender has done: its pool's and its factory's counters, and its
 * own. sessions opened = net.made. */
struct tide_smtp_stats {
    struct tide_evpool_stats pool;
    struct tide_net_stats net;
    uint64_t messages;  /* send calls taken */
    uint64_t delivered; /* answered 0 */
    uint64_t refused;   /* answered TEMPORARY or PERMANENT */
    uint64_t failed;    /* answered with another code */
    uint64_t retried;   /* sent again after a session broke before the
                           final "." */
    uint64_t resets;    /* RSETs after a message */
    uint64_t checks;    /* NOOPs of idle sessions */
    uint64_t quits;     /* QUITs written when closing a session */
};

/* The counters into *out; a NULL sender gives zeros, a NULL out is
 * ignored. */
TIDE_API void tide_smtp_sender_stats(struct tide_smtp_sender *s,
                                     struct tide_smtp_stats *out);

/* The pool under the sender (borrowed; lives as long as the sender). NULL
 * for NULL. */
TIDE_API struct tide_evpool *
tide_smtp_sender_pool(struct tide_smtp_sender *s);

#ifdef __cplusplus
}
#endif

#endif /* TIDEPOOL_SMTP_H */
