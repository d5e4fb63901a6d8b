/* tidepool redis: a pooled asynchronous Redis client on hiredis's reader.
 *
 * A client owns a tide_evpool over tidepool's TCP or TLS factory
 * (<tidepool/tls.h>). A command borrows a connection, writes the command in
 * RESP, reads the reply with hiredis's redisReader, and gives the
 * connection back once the whole reply has been read and nothing else is
 * waiting on it; a connection that broke the protocol, timed out or was
 * closed under the command is discarded instead, so no reply ever reaches
 * the wrong command (one the server closed before any byte of a reply,
 * having served before, goes back stale: the server closed it a moment
 * before, no failure of its own; the command still fails, and may be sent
 * again). Over plain TCP the replies are read from the socket by the
 * client itself, one recv a read: libevent 2.1's bufferevent asks
 * ioctl(FIONREAD) before each of its reads. hiredis's own asynchronous context
 * is not used: in hiredis 0.14 it opens its own socket and cannot adopt a
 * pooled one.
 *
 *   struct tide_redis_client *c;
 *   struct tide_redis_options o = {.tcp = {.host = "127.0.0.1", .port = 6379}};
 *   if (tide_redis_client_new(base, &o, &c) != 0) ...
 *   const char *argv[] = {"GET", "key"};
 *   tide_redis_command(c, 2, argv, NULL, on_reply, arg);
 *   ...
 *   tide_redis_client_free(c);
 *
 * New connections: the factory's setup step runs AUTH and SELECT when
 * configured, or else a PING, before the pool takes the connection. A
 * refusal there (a wrong password, maxclients reached: the server accepts,
 * answers "-ERR max number of clients reached" and closes) is a failed make
 * with code TIDE_ESETUP and Redis's own words as the message, which reaches
 * the command that was waiting; the pool's backoff spaces the reconnects.
 *
 * Shared connections (auto-pipelining): with pool.limits.streams K above
 * 1, commands from any number of callers share connections, K commands
 * or pipelines in flight on each (each holds one loan from the moment it
 * is lent until its last reply; pool.limits.sharing picks the
 * connection: TIDE_SHARING_PACK fills one before the next, SPREAD evens
 * them out; pool.limits.size bounds the connections). What callers issue
 * in one pass of the loop goes out in one write per connection; Redis
 * answers a connection's commands in order, and each reply goes to its
 * own command; a pipeline's commands go out together and in order. A
 * command past its timeout is answered TIDE_REDIS_ETIMEDOUT at once,
 * alone: its reply is read and dropped when it comes, and the connection
 * goes on, unless it owes more than late_max such replies (then it is
 * given up, and what it carries fails). A connection that breaks fails
 * every command written on it with the cause (a command that may have
 * run is never sent twice); commands not yet written go to another
 * connection. With streams 1 (the pool's preset) every command or
 * pipeline borrows a connection of its own, as below.
 *
 * For throughput on a few connections: SPREAD with pool.limits.preconnect,
 * e.g. {.size = 4, .streams = 64, .sharing = TIDE_SHARING_SPREAD,
 * .preconnect = 0.2}. Neither PACK nor SPREAD alone opens a connection
 * while one has room, so up to K callers queue on one connection in strict
 * ping-pong (the client idle while the server works, and the other way
 * round); preconnect opens the next once the commands in flight reach that
 * share of the open connections' room (ceil(in flight / (share x K)), so
 * 50 callers get 4 connections at 0.2), and SPREAD puts the callers on all
 * of them, each connection's write overlapping the others' replies. At
 * one caller it still opens one connection.
 *
 * Which commands take which path (session.c): these take an exclusive
 * loan, a connection nobody else's commands share while they run, so
 * they never delay shared commands and no shared command runs in their
 * session: a pipeline with MULTI or WATCH (even one its EXEC, DISCARD or
 * UNWATCH ends), a blocking command (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH,
 * BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP, WAIT, WAITAOF, XREAD and XREADGROUP
 * with BLOCK), tide_redis_subscribe, and every command that changes the
 * session (below). Every other command shares. Exclusive loans and shared
 * ones wait in one queue: an exclusive command waits for a connection
 * with no loan, or for one to be made, within pool.limits.size, and the
 * commands queued after it wait their turn; so give size room for the
 * exclusive sessions held at once (subscribers, blocking commands) beside
 * the shared connections.
 *
 * Sessions: a command that changes its connection's session (SELECT,
 * AUTH, HELLO, RESET, QUIT, SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, MONITOR,
 * READONLY, READWRITE, ASKING, CLIENT SETNAME, REPLY, TRACKING, CACHING,
 * NO-EVICT, NO-TOUCH, SETINFO, and a MULTI or WATCH its own pipeline does
 * not end with EXEC, DISCARD or UNWATCH) gets its replies as any other,
 * and its connection is then closed rather than lent to the next command
 * (stats.retired). Put what needs the session in one pipeline: {SELECT 2,
 * GET k} reads db 2; a transaction is {MULTI, ..., EXEC}. Pushed messages
 * (pub/sub, MONITOR) reach a command only through tide_redis_subscribe:
 * elsewhere only the first reply to each command is delivered. Refused
 * (TIDE_EINVAL, nothing sent), as the client could not answer them:
 * CLIENT REPLY OFF and SKIP (replies are matched to commands by their
 * order) and HELLO with a protocol other than 2 (the reader knows RESP2
 * only).
 *
 * Replies: a Redis error reply ("-ERR ...", "-WRONGPASS ...") is a reply:
 * the connection is fine and goes back to the pool, and the command is
 * answered with TIDE_REDIS_EREPLY and the server's own text. Failures of
 * the connection (refused, closed, reset, TLS) keep tidepool's codes
 * (<tidepool/tls.h>), with the factory's sentence as the message. An
 * array reply that announces more than 2^24 (16,777,216) elements is a
 * protocol error: hiredis 0.14's reader makes room for every element as
 * soon as it reads the count, so 12 bytes from a server ("*999999999")
 * asked for 8 GB.
 *
 * Threads: a client belongs to one event_base and is used from that loop's
 * thread only. The application must ignore SIGPIPE (see <tidepool/evloop.h>).
 */
#ifndef TIDEPOOL_REDIS_H
#define TIDEPOOL_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tidepool/tls.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;
struct redisReply;

/* Errors of the client, beside tidepool's own (tide_redis_strerror knows
 * both). */
enum tide_redis_error {
    /* the server answered with an error reply; the message is its text */
    TIDE_REDIS_EREPLY = -90,
    /* the bytes from the server are not RESP, or more came than were asked
     * for: the connection was discarded */
    TIDE_REDIS_EPROTOCOL = -91,
    /* no whole reply within the command's timeout (waiting for a
     * connection included: then the message says so, and gives the last
     * connect's failure when the last one failed, "Connection refused",
     * "WRONGPASS ..."): the connection, if any, was discarded (a shared
     * one stays: the late reply is read and dropped, see late_max) */
    TIDE_REDIS_ETIMEDOUT = -92,
    /* the client is being freed */
    TIDE_REDIS_ECLOSED = -93,
};

/* A sentence for a person, for the codes above and every tidepool code;
 * never NULL, static storage. */
TIDE_API const char *tide_redis_strerror(int code);
/* The code's name ("TIDE_REDIS_ETIMEDOUT", "TIDE_EREFUSED"), for the codes
 * above and every tidepool code (tide_err_name knows only tidepool's);
 * never NULL, static storage. */
TIDE_API const char *tide_redis_err_name(int code);

/* How the client connects and behaves. Zero fields take the preset; spans
 * are ns. Strings are copied at creation; what is marked borrowed must
 * outlive the call to tide_redis_client_new only. */
struct tide_redis_options {
    /* Where and how to connect: host and port (preset 6379) or a Unix
     * socket's path, resolver, timeouts, keepalive, setup_timeout (preset
     * 5 s). Its setup, setup_arg, setup_abort and on_idle_data fields
     * belong to the client: leave them zero (TIDE_EINVAL otherwise). */
    struct tide_tcp_options tcp;
    /* NULL: plain TCP. Otherwise TLS with these options (borrowed): trust
     * store, verification name, SNI, sessions. Their tcp field is ignored;
     * the one above is used. */
    const struct tide_tls_options *tls;
    /* The pool: limits (size preset 10), min, make timeout (preset here
     * 15 s, above connect, handshake and setup together), acquire timeout,
     * health_interval (how often idle connections are PINGed; preset 30 s),
     * ward. A ward without a backoff gets tidepool's preset backoff (100 ms
     * doubling to 1 s), so a server refusing connections is not stormed by
     * callers; the other guards are used as given. */
    struct tide_evpool_options pool;
    /* AUTH on every new connection: password alone (AUTH password), or
     * user and password (AUTH user password, Redis 6 ACLs). NULL: none. */
    const char *user;
    const char *password;
    /* SELECT on every new connection when above 0. */
    int db;
    /* Without AUTH or SELECT, a new connection is PINGed before the pool
     * takes it, so that a server that accepts and refuses at once fails the
     * make in its own words rather than the first command. true skips it:
     * a round trip less per new connection. */
    bool no_ping;
    /* From tide_redis_command until the whole reply, waiting for a
     * connection included. Preset 5 s; TIDE_FOREVER for none (the wait for
     * a connection is still bounded, by pool.acquire_timeout). */
    int64_t timeout;
    /* How long a health check's PING may take; preset 1 s. */
    int64_t check_timeout;
    /* Shared connections (pool.limits.streams above 1): how many late
     * replies (to commands answered TIDE_REDIS_ETIMEDOUT already) one
     * connection may owe; one more and it is given up, failing what it
     * carries. Preset 16. */
    int64_t late_max;
};

struct tide_redis_client;

/* Creates a client on base (borrowed; must outlive the client). Returns 0
 * with *out (free it with tide_redis_client_free); TIDE_EINVAL (a NULL
 * argument, a user without a password, a negative db or span, and whatever
 * the factory or the pool refuse); TIDE_ENOMEM; the factory's and the
 * pool's codes, among them TIDE_ETLS_CONFIG for a CA file, certificate or
 * key that would not load (OpenSSL's error queue names the file and says
 * why: ERR_print_errors_fp(stderr)). *out is NULL on failure when out is
 * not. */
TIDE_API TIDE_MUST_USE int
tide_redis_client_new(struct event_base *base,
                      const struct tide_redis_options *o,
                      struct tide_redis_client **out);

/* Frees the client, its pool and its connections. Commands not yet
 * answered are dropped without callbacks (as tide_evpool_free drops its
 * waiters). Safe from inside a command's callback: it completes when that
 * callback returns. NULL is ignored. */
TIDE_API void tide_redis_client_free(struct tide_redis_client *c);

/* The answer to one command. status 0 with the reply; TIDE_REDIS_EREPLY
 * with the error reply (its text is also the message); any other code with
 * reply NULL and a sentence for a person (the factory's, for a connection
 * that failed). reply and message are borrowed: valid during the callback
 * only. Runs from the loop, never inside tide_redis_command, exactly once
 * per command, unless the client is freed first. May call any client
 * function, free included. */
typedef void (*tide_redis_cb)(struct tide_redis_client *c, int status,
                              const struct redisReply *reply,
                              const char *message, void *arg);

/* Sends one command: argc arguments argv[i] of argvlen[i] bytes each
 * (argvlen NULL: each is a NUL-terminated string). The arguments are
 * copied before the call returns. Returns 0 and answers cb once; fails at
 * once, without a callback, with TIDE_EINVAL (NULL client, argv or cb,
 * argc < 1, a NULL argument, a command the client cannot answer: see
 * Sessions above), TIDE_ENOMEM, or the pool's refusal (TIDE_EQUEUEFULL,
 * TIDE_ECLOSED). */
TIDE_API int tide_redis_command(struct tide_redis_client *c, int argc,
                                const char *const *argv, const size_t *argvlen,
                                tide_redis_cb cb, void *arg);

/* One command of a pipeline, as the arguments of tide_redis_command. */
struct tide_redis_cmd {
    int argc;
    const char *const *argv;
    const size_t *argvlen; /* NULL: NUL-terminated strings */
    tide_redis_cb cb;
    void *arg;
};

/* Sends n commands on one connection in one write; the replies come back
 * in order, each to its own callback, under one timeout for the whole
 * pipeline. When the connection fails, commands answered already stay
 * answered and the rest get the failure. Returns as tide_redis_command
 * (TIDE_EINVAL also for n < 1 or a bad command, and then none is sent). */
TIDE_API int tide_redis_pipeline(struct tide_redis_client *c, size_t n,
                                 const struct tide_redis_cmd *cmds);

/* tide_redis_pipeline with a timeout of its own for these commands (ns;
 * 0: the client's, TIDE_FOREVER: none), from the call until the last
 * reply. On a shared connection a command past it is answered
 * TIDE_REDIS_ETIMEDOUT at once, alone: the others on the connection go on,
 * and its reply is read and dropped when it comes (see late_max).
 * TIDE_EINVAL also for a negative timeout. */
TIDE_API int tide_redis_pipeline_timed(struct tide_redis_client *c,
                                       int64_t timeout, size_t n,
                                       const struct tide_redis_cmd *cmds);

/* A subscription: a connection of its own in pub/sub mode. */
struct tide_redis_subscription;

/* Sends SUBSCRIBE, PSUBSCRIBE or SSUBSCRIBE (argv[0], with at least one
 * channel or pattern) on an exclusive connection, and hands cb every
 * reply that comes on it: the confirmations (["subscribe", channel, n]),
 * then each message (["message", channel, data], ["pmessage", pattern,
 * channel, data]) in the order the server sent them, status 0, until
 * tide_redis_unsubscribe. The client's timeout bounds the wait for a
 * connection and the first reply only. When the connection fails, or no
 * first reply comes in time, cb is called once more with the failure
 * (reply NULL) and the subscription is over: do not unsubscribe then.
 * 0 with *out (a handle valid until then); TIDE_EINVAL (NULL client, out
 * or cb, another command, no channel), TIDE_ENOMEM, the pool's refusal;
 * *out is NULL on failure. */
TIDE_API int tide_redis_subscribe(struct tide_redis_client *c, int argc,
                                  const char *const *argv,
                                  const size_t *argvlen, tide_redis_cb cb,
                                  void *arg,
                                  struct tide_redis_subscription **out);

/* Ends a subscription: cb is not called again, and its connection is
 * closed (a connection in pub/sub mode serves no other command; closing
 * it costs the server nothing an UNSUBSCRIBE would not). Safe from
 * inside cb. NULL does nothing. */
TIDE_API void tide_redis_unsubscribe(struct tide_redis_client *c,
                                     struct tide_redis_subscription *sub);

/* What a client has done: its pool's and its factory's counters, and its
 * own. */
struct tide_redis_stats {
    struct tide_evpool_stats pool; /* loans, makes, waits */
    struct tide_net_stats net;     /* connects, resumed TLS sessions */
    uint64_t commands;             /* commands sent */
    uint64_t replies;              /* answered with a reply (errors too) */
    uint64_t error_replies;        /* ... of them error replies */
    uint64_t failed;               /* answered with no reply */
    uint64_t timeouts;             /* ... of them timed out */
    uint64_t discarded;            /* connections given up after a fault */
    uint64_t stale;                /* closed by the server before any byte
                                      of a reply, having served before: no
                                      fault (tide_evpool_stale) */
    uint64_t retired;              /* closed: a batch changed the session */
    uint64_t writes;               /* shared connections: writes (each carries
                                      what callers issued in one loop pass) */
    uint64_t late;           /* ... commands timed out while lent shared */
    uint64_t late_replies;   /* ... their replies, read and dropped */
    uint64_t moved;          /* ... commands sent again on another
                                connection: theirs broke before any byte of
                                them was written */
    uint64_t checks;         /* health-check PINGs */
    uint64_t check_failures; /* ... that failed */
};

/* The counters into *out; a NULL client gives zeros, a NULL out is
 * ignored. */
TIDE_API void tide_redis_client_stats(struct tide_redis_client *c,
                                      struct tide_redis_stats *out);

/* The pool under the client (borrowed; lives as long as the client), for
 * its breaker and stats. NULL for NULL. */
TIDE_API struct tide_evpool *
tide_redis_client_pool(struct tide_redis_client *c);

#ifdef __cplusplus
}
#endif

#endif /* TIDEPOOL_REDIS_H */
