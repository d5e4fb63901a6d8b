/* Internals of the SMTP sender, shared between its files.
 *
 * Who does what:
 *   reply.c    SMTP replies read from a buffer: one line or many, the code,
 *              the text, EHLO's extensions
 *   data.c     a message made ready for DATA: CRLF line ends, dot-stuffing,
 *              the final "."
 *   session.c  a session's opening (greeting, EHLO, STARTTLS, AUTH) in the
 *              factory's upgrade and setup steps, and its close (QUIT)
 *   probe.c    RSET after a message (the pool's reset hook) and NOOP (its
 *              health check)
 *   send.c     one message: MAIL FROM, RCPT TO, DATA, the verdict
 *   sender.c   the sender: options, the factory and pool, stats, teardown
 */
#ifndef TIDEPOOL_SMTP_INTERNAL_H
#define TIDEPOOL_SMTP_INTERNAL_H

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/event_struct.h>

#include "demo_list.h"
#include "smtp.h"

/* ---- replies (reply.c) ---- */

#define TIDE__SMTP_TEXT 512  /* a reply's text kept, cut short beyond */
#define TIDE__SMTP_LINE 2048 /* RFC 5321 4.5.3.1.5: 512; servers send more */
#define TIDE__SMTP_LINES 1000 /* lines of one reply (EHLO's are a dozen) */

/* One reply, built line by line as its lines arrive. */
struct tide__smtp_reply {
    int code;                   /* of the lines so far; the reply's once done */
    int lines;                  /* read so far */
    char text[TIDE__SMTP_TEXT]; /* the lines' texts joined by "\n" */
    size_t len;
    /* EHLO's extensions, from the lines after the first */
    bool starttls;
    bool auth_plain;
    bool auth_login;
};

void tide__smtp_reply_clear(struct tide__smtp_reply *r);
/* Reads from in until one whole reply is in r: 1 (a whole reply; bytes
 * after it stay in in), 0 (more to come; r keeps what was read), -1 (not
 * SMTP: a line without a code, codes that disagree, a line longer than
 * TIDE__SMTP_LINE before its CRLF or LF, more than TIDE__SMTP_LINES
 * lines). The same replies and verdict whatever reads the bytes came in. */
int tide__smtp_reply_read(struct evbuffer *in, struct tide__smtp_reply *r);

/* ---- DATA (data.c) ---- */

/* msg (len bytes) as DATA sends it: every line end CRLF, lines starting
 * with "." doubled, the last line ended, ".\r\n" after. A malloc'd buffer
 * into *out and its length into *out_len; false when out of memory (or len
 * so large that twice it does not fit in a size_t). */
bool tide__smtp_data(const char *msg, size_t len, char **out, size_t *out_len);

/* ---- the sender ---- */

struct tide__smtp_open;
struct tide__smtp_probe;
struct tide__smtp_msg;

struct tide_smtp_sender {
    struct event_base *base;
    struct tide_tcp_factory *tcp; /* one of the two */
    struct tide_tls_factory *tls;
    struct tide_factory inner; /* the factory's own table */
    struct tide_factory table; /* the pool's: inner's, wrapped */
    struct tide_evpool *pool;
    char *helo_name;
    char *user;
    char *password;
    bool starttls;
    int64_t timeout;
    int64_t reply_timeout;
    struct tide__smtp_open *opens;   /* sessions being opened */
    struct tide__smtp_probe *probes; /* RSETs and NOOPs running */
    struct tide__smtp_msg *msgs;     /* messages not yet answered */
    /* the sessions that have carried a message, until destroyed: a break
     * on one of them is a stale session, not the server's trouble */
    void **seasoned;
    size_t nseasoned;
    size_t seasoned_cap;
    struct tide_smtp_stats stats;
    int depth;  /* inside a user callback */
    bool dying; /* freed from inside one: finish when it returns */
};

struct timeval tide__smtp_tv(int64_t ns);
/* The code for a reply other than the one asked for: 4xx come back later
 * (TIDE_SMTP_ETEMPORARY), 5xx do not (TIDE_SMTP_EPERMANENT), and a 2xx or
 * 3xx is a server out of step (TIDE_SMTP_EPROTOCOL). */
int tide__smtp_refusal(int reply);
/* Around user callbacks: a free from inside one completes after it. */
void tide__smtp_enter(struct tide_smtp_sender *s);
void tide__smtp_leave(struct tide_smtp_sender *s);
/* Writes a command line (text, then CRLF). */
int tide__smtp_write(struct bufferevent *bev, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* sender.c: the sessions that carried a message (see seasoned above).
 * add does nothing when out of memory: the session then counts as fresh,
 * which costs at most a retry. */
void tide__smtp_seasoned_add(struct tide_smtp_sender *s, void *session);
bool tide__smtp_seasoned_has(const struct tide_smtp_sender *s, void *session);
void tide__smtp_seasoned_drop(struct tide_smtp_sender *s, void *session);

/* session.c: the factory's upgrade and setup hooks, and destroy */
void tide__smtp_upgrade(struct tide_net_setup *setup, struct bufferevent *bev,
                        void *arg);
void tide__smtp_setup(struct tide_net_setup *setup, struct bufferevent *bev,
                      void *arg);
void tide__smtp_open_abort(struct tide_net_setup *setup, void *arg);
void tide__smtp_destroy(void *resource, void *arg);

/* probe.c: the pool's reset and check hooks */
void tide__smtp_reset(struct tide_evpool *pool, struct tide_reset *token,
                      void *resource, void *arg);
void tide__smtp_check(struct tide_evpool *pool, struct tide_check *token,
                      void *resource, void *arg);
/* Answers every probe still running "not ok" (the sender is going). */
void tide__smtp_probes_end(struct tide_smtp_sender *s);

/* send.c: drops every message not yet answered, without callbacks */
void tide__smtp_msgs_end(struct tide_smtp_sender *s);

#endif
