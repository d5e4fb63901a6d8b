/* The client's insides, shared by its files: the client itself, the loans
 * commands run on (batches) and the health checks. */
#ifndef TIDEPOOL_REDIS_INTERNAL_H
#define TIDEPOOL_REDIS_INTERNAL_H

#include <event2/event.h>
#include <event2/event_struct.h>
#include <hiredis/hiredis.h>

#include "demo_list.h"
#include "redis.h"

struct bufferevent;
struct evbuffer;

/* Readers kept for reuse: one is taken per loan, and one that saw a whole
 * exchange through is as good as new (its buffer holds no unread byte). */
#define TIDE__REDIS_SPARE_READERS 64

/* The most elements an array reply may announce. hiredis 0.14's reader
 * allocates an array's table of elements from the count in its header,
 * before any element has come: "*999999999\r\n", 12 bytes from a server,
 * asked for 8 GB (found by fuzz/fuzz_redis_reply). Past this count the
 * header is a protocol error; at it, the table is 128 MB. The fuzzer
 * builds the client with a small one: the same code, and a count near the
 * limit then costs it no time. */
#ifndef TIDE__REDIS_MAX_ELEMENTS
#define TIDE__REDIS_MAX_ELEMENTS (1 << 24)
#endif

struct tide__redis_batch;
struct tide__redis_link;
struct tide__redis_check;
struct tide__redis_setup;

struct tide_redis_client {
    struct event_base *base;
    struct tide_tcp_factory *tcp; /* one of the two */
    struct tide_tls_factory *tls;
    struct tide_factory inner; /* as the factory bound it */
    struct tide_factory table; /* forwards to inner; check is the client's */
    struct tide_evpool *pool;

    int64_t timeout; /* per command, ns; TIDE_FOREVER for none */
    /* the same as libevent's common timeout: every command has the same
     * span, so a queue rather than the heap */
    const struct timeval *timeout_tv;
    int64_t check_timeout; /* per PING */
    char *user;            /* AUTH; NULL for none */
    char *password;
    int db;       /* SELECT when > 0 */
    bool no_ping; /* no PING in a setup with nothing else to say */

    /* limits.streams above 1: commands that keep the session share
     * connections (link.c); the rest take exclusive loans */
    bool shared;
    /* late replies a shared connection may owe before it is given up */
    size_t late_max;

    struct tide__redis_batch *batches; /* unanswered, waiting or lent */
    struct tide__redis_link *links;    /* shared connections with loans */
    struct tide__redis_check *checks;  /* PINGs in flight */
    struct tide__redis_setup *setups;  /* opening exchanges in flight */

    redisReader *spare[TIDE__REDIS_SPARE_READERS];
    size_t spares;
    /* the readers' reply functions: hiredis's own (create_array keeps
     * its), arrays past TIDE__REDIS_MAX_ELEMENTS refused; each reader's
     * privdata is the client */
    redisReplyObjectFunctions reply_fns;
    void *(*create_array)(const redisReadTask *task, int elements);
    int refused_elements; /* the count of the last array refused */

    /* Callbacks into the application nest; a free asked for inside one
     * waits until the outermost returns. */
    int depth;
    bool dying;

    struct tide_redis_stats stats; /* pool and net filled on demand */
};

/* A client as tide_redis_client_new makes it, over a factory of the
 * caller's instead of the TCP or TLS one o->tcp and o->tls ask for (they
 * are not used; the table is copied, its arg borrowed and must outlive the
 * client): the client's whole path from a connection's bytes to each
 * command's answer, over connections that are not sockets. For
 * fuzz/fuzz_redis_reply, which feeds the replies from memory. No setup
 * runs on its connections (the setup is the TCP factory's step). */
int tide__redis_client_new_over(struct event_base *base,
                                const struct tide_redis_options *o,
                                const struct tide_factory *inner,
                                struct tide_redis_client **out);

/* Entering and leaving a callback from the loop: leave frees the client
 * when a free was asked for inside and this was the outermost. */
void tide__redis_enter(struct tide_redis_client *c);
void tide__redis_leave(struct tide_redis_client *c);

/* A reader for one loan (NULL when out of memory); give back a clean one
 * (a whole exchange read, nothing buffered) to be reused, anything else is
 * freed. */
redisReader *tide__redis_reader_take(struct tide_redis_client *c);
void tide__redis_reader_give(struct tide_redis_client *c, redisReader *r,
                             bool clean);
/* Why the reader failed, for a person: its own words, or the array
 * refused past TIDE__REDIS_MAX_ELEMENTS (in buf). */
const char *tide__redis_reader_error(struct tide_redis_client *c,
                                     const redisReader *r, char *buf,
                                     size_t len);
/* Moves everything in `in` into the reader. 0, or -1 when out of memory. */
int tide__redis_feed(redisReader *r, struct evbuffer *in);
/* Whether the reader holds bytes it has not made a reply of. */
bool tide__redis_reader_holds(const redisReader *r);

/* The length of argument i of a command (argvlen NULL: its arguments are
 * NUL-terminated). */
size_t tide__redis_arg_len(const char *const *argv, const size_t *argvlen,
                           int i);
/* RESP for one command: the bytes it takes (0 when the lengths add up
 * past what memory could hold), and writing them (out has that many). */
size_t tide__redis_resp_size(int argc, const char *const *argv,
                             const size_t *argvlen);
char *tide__redis_resp_write(char *out, int argc, const char *const *argv,
                             const size_t *argvlen);

/* The factory's check hook: a PING with check_timeout. */
void tide__redis_check(struct tide_evpool *pool, struct tide_check *token,
                       void *resource, void *arg);
/* Answers every PING in flight as failed (after the pool was freed: it
 * destroys their connections through the factory). */
void tide__redis_checks_end(struct tide_redis_client *c);

/* The factory's setup step (AUTH, SELECT, PING) and its abort. */
void tide__redis_setup(struct tide_net_setup *token, struct bufferevent *bev,
                       void *arg);
void tide__redis_setup_abort(struct tide_net_setup *token, void *arg);

/* Drops every unanswered command without callbacks, at free. */
void tide__redis_batches_end(struct tide_redis_client *c);

/* ---- batches: one command or pipeline, one loan ---- */

struct tide__redis_slot {
    tide_redis_cb cb;
    void *arg;
};

struct tide__redis_batch {
    struct tide__redis_batch *prev, *next; /* the client's batches */
    struct tide_redis_client *client;
    struct tide_acquire *acquire; /* while waiting for a connection */
    struct bufferevent *bev;      /* while lent alone */
    redisReader *reader;          /* while lent alone */
    struct event timer;
    bool timed; /* timer pending */
    /* A plain TCP connection's replies are read from its socket by the
     * batch (raw), not through the bufferevent: libevent 2.1's
     * evbuffer_read asks ioctl(FIONREAD) before every read, whatever the
     * bufferevent's read limit, to size it; a recv into a buffer of our
     * own is the read alone. The bufferevent still writes and reports
     * write failures. TLS goes through it (OpenSSL reads the socket). */
    bool raw;
    bool drained;    /* raw: the last read came short of its room */
    bool any_byte;   /* a byte of a reply came */
    struct event rd; /* raw: EV_READ, persistent */
    bool keep;       /* the session is as the setup left it after the batch */
    bool alone;      /* needs an exclusive loan (session.c) */
    /* A subscription: every reply goes to the one callback, for as long
     * as the loan lasts (tide_redis_subscribe) */
    bool stream;
    bool delivering;   /* stream: inside its callback */
    bool unsubscribed; /* stream: asked from inside its callback */
    /* shared loans (link.c) */
    struct tide__redis_link *link;    /* while lent shared */
    struct tide__redis_batch *queued; /* next in its link's order */
    uint64_t from;                    /* its first byte in the link's stream */
    size_t got;                       /* replies read */
    bool late;       /* answered by its timeout; its replies are still owed */
    bool moved;      /* sent again after its connection broke unwritten */
    int64_t timeout; /* ns, TIDE_FOREVER for none */
    const struct timeval *tv; /* the timer's span: the client's common
                                 one, or span */
    struct timeval span;
    size_t n;    /* commands */
    size_t done; /* answered */
    size_t len;  /* of resp */
    char *resp;  /* the commands in RESP, after the slots */
    struct tide__redis_slot slots[];
};

/* Answers b's next command (status, reply, message), counted. */
void tide__redis_answer(struct tide__redis_batch *b, int status,
                        const redisReply *reply, const char *message);
/* Asks for a connection for b (again, after its connection broke before
 * any byte of it was written): 0, or the pool's refusal (b untouched). */
int tide__redis_batch_send(struct tide__redis_batch *b);
/* Answers b's unanswered commands with code and message, takes it off the
 * books and frees it; b holds no loan. */
void tide__redis_batch_fail(struct tide__redis_batch *b, int code,
                            const char *message);
/* Takes b off the books (timer, pending acquire, the client's list) and
 * frees it. */
void tide__redis_batch_drop(struct tide__redis_batch *b);

/* ---- shared connections (link.c) ---- */

/* b got a shared loan of bev: it joins bev's link (opened with the first
 * loan) and its bytes go out with the link's next write, in this pass of
 * the loop. 0, or TIDE_ENOMEM with the loan still b's (the caller ends
 * it). */
int tide__redis_link_attach(struct tide__redis_batch *b,
                            struct bufferevent *bev);
/* b's timeout ran out while it was lent shared: its commands are answered
 * TIDE_REDIS_ETIMEDOUT, its replies will be read and dropped. */
void tide__redis_link_timeout(struct tide__redis_batch *b);
/* At free: every link stops (no callbacks; the pool destroys the
 * connections). */
void tide__redis_links_end(struct tide_redis_client *c);

/* What a batch's commands do to their connection's session (session.c):
 * a transaction or a WATCH still open at its end, or a command that
 * changes the session for good. Noted command by command, in order. */
struct tide__redis_session {
    bool multi;   /* MULTI not yet ended by EXEC or DISCARD */
    bool watch;   /* WATCH not yet ended by EXEC, DISCARD or UNWATCH */
    bool changed; /* SELECT, AUTH, SUBSCRIBE, CLIENT SETNAME ... */
    /* cannot share a connection with other callers' commands: a MULTI or
     * WATCH (even one the batch ends), a blocking command, or any of the
     * above */
    bool alone;
};
void tide__redis_session_note(struct tide__redis_session *s, int argc,
                              const char *const *argv, const size_t *argvlen);
/* Whether the client can answer the command: false for CLIENT REPLY OFF
 * or SKIP (no reply to match) and HELLO other than 2 (RESP3). */
bool tide__redis_answerable(int argc, const char *const *argv,
                            const size_t *argvlen);
/* Whether the connection is left as its setup made it, fit for another
 * command after the batch. */
bool tide__redis_session_clean(const struct tide__redis_session *s);

/* timeval for a span in ns. */
struct timeval tide__redis_tv(int64_t ns);

#endif
