/* Internals of the TCP and TLS factories, shared between their files.
 *
 * Who does what:
 *   tcp.c       the TCP factory: options, the make/cancel/destroy hooks,
 *               stats; the engine every make runs on
 *   resolve.c   A and AAAA queries through evdns, the address queues
 *   hosts.c     the hosts file, for a factory with its own resolver
 *   dial.c      Happy Eyeballs: attempts raced over the addresses, timers
 *   sock.c      one non-blocking socket: options, connect, errno classes
 *   unix.c      a Unix domain socket upstream: the path as the one address
 *   setup.c     the session setup between connected and made, and a TLS
 *               factory's upgrade (STARTTLS) between connected and the
 *               handshake
 *   conns.c     the live connections, found by bufferevent
 *   watch.c     idle watch, alive and reusable checks
 *   errors.c    failure detail, sentences, the public getters
 *   tls.c       the TLS factory: handshake, verification, destroy
 *   context.c   building the SSL_CTX from options
 *   sessions.c  the session cache
 *
 * Every answer to the pool (made, unmade, lost) comes from the loop: a make
 * starts from an event, never inside the pool's make() call. */
#ifndef TIDEPOOL_TLS_NET_INTERNAL_H
#define TIDEPOOL_TLS_NET_INTERNAL_H

#include <event2/event.h>
#include <event2/event_struct.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <tidepool/tls.h>

/* ---- failures ---- */

#define FAIL_TEXT 320

struct tide__net_fail {
    struct tide_net_detail d;
    char text[FAIL_TEXT];
};

/* Sets a failure: code, detail fields left as they are, and a sentence. */
void tide__net_fail_set(struct tide__net_fail *f, int code, const char *fmt,
                        ...) __attribute__((format(printf, 3, 4)));
/* The code for a connect() errno, and how telling it is (a higher rank
 * wins when several addresses failed differently). */
int tide__net_errno_code(int err, int *rank);
/* Copies a failure out: the getters' shape. */
int tide__net_fail_get(const struct tide__net_fail *f,
                       struct tide_net_detail *detail, char *buf, size_t len);
/* The first OpenSSL error of a bufferevent's queue that is a real one
 * (libevent pushes SSL_get_error codes with library 0 among them); the
 * queue is drained. 0 when there is none. */
unsigned long tide__net_ssl_error(struct bufferevent *bev);

/* ---- addresses ---- */

union tide__net_sa {
    struct sockaddr sa;
    struct sockaddr_in in;
    struct sockaddr_in6 in6;
    struct sockaddr_un un; /* a Unix socket upstream's one address */
};

struct tide__net_addr {
    union tide__net_sa u;
    socklen_t len;
};

/* "[::1]:443", "127.0.0.1:443" or "unix:/run/x.sock", for messages. */
void tide__net_addr_text(const struct tide__net_addr *a, char *buf, size_t len);

/* hosts.c: the addresses a hosts file lists for host (of family, or any
 * for AF_UNSPEC), in file order, at most max; 0 when none or no file. */
int tide__net_hosts_lookup(const char *path, const char *host, uint16_t port,
                           int family, struct tide__net_addr *out, int max);

/* ---- sockets (sock.c) ---- */

struct tide_tcp_factory;

/* A non-blocking, close-on-exec TCP socket with the factory's options,
 * connecting to a. Returns the fd (connect in progress or done) or -1 with
 * errno set. */
evutil_socket_t tide__net_sock_connect(const struct tide_tcp_factory *f,
                                       const struct tide__net_addr *a);
/* The pending error of a connecting socket (SO_ERROR), 0 when connected. */
int tide__net_sock_error(evutil_socket_t fd);
/* Non-blocking look at an idle socket: 0 nothing pending, 1 bytes pending,
 * -1 closed or failed (errno in *err). */
int tide__net_sock_peek(evutil_socket_t fd, int *err);

/* ---- a make in progress: resolution and connect attempts ---- */

#define DIAL_ADDRS    8 /* addresses kept per family */
#define DIAL_ATTEMPTS 8 /* attempts running at once */

struct tide__net_query; /* one DNS question in flight (resolve.c) */

struct tide__net_attempt {
    evutil_socket_t fd; /* -1: slot free */
    struct event ev;
    struct tide__net_addr addr;
    struct tide__net_dial *dial;
};

struct tide__net_family {
    struct tide__net_addr addrs[DIAL_ADDRS];
    int n;    /* received */
    int next; /* next to try */
    struct tide__net_query *query;
    bool asked;
    bool done;
    int dns_error;
};

struct tide__net_make;

/* The answer of a dial: fd >= 0 connected (ownership passes), or -1 with
 * the failure in d->fail. */
typedef void (*tide__net_dial_cb)(struct tide__net_dial *d, evutil_socket_t fd);

struct tide__net_dial {
    struct tide_tcp_factory *f;
    tide__net_dial_cb cb;
    struct tide__net_family v6;
    struct tide__net_family v4;
    int last_family; /* family of the last attempt started */
    bool held;       /* waiting out the resolution delay for AAAA */
    bool full;       /* a Unix listener's backlog was full: asking again */
    bool waited;     /* ... and it has passed */
    struct tide__net_attempt att[DIAL_ATTEMPTS];
    int running;
    int tried;
    struct event kick;     /* start from the loop */
    struct event next;     /* attempt delay, and the resolution delay */
    struct event deadline; /* connect_timeout */
    bool next_armed;
    int rank; /* of the failure kept in fail */
    struct tide__net_fail fail;
    struct tide__net_addr winner;
};

/* Sets up d (no I/O yet) and starts it from the loop. */
void tide__net_dial_start(struct tide__net_dial *d, struct tide_tcp_factory *f,
                          tide__net_dial_cb cb);
/* Stops d without an answer: sockets closed, queries let go, timers off. */
void tide__net_dial_abort(struct tide__net_dial *d);
/* Before the memory of a stopped d is freed: its events are embedded, and
 * libevent's debug mode tracks them until told. */
void tide__net_dial_forget(struct tide__net_dial *d);

/* resolve.c, for dial.c */
/* Fills in what is known at once (literals, localhost) and asks DNS for the
 * rest; answers arrive later through tide__net_dial_resolved. */
void tide__net_resolve_start(struct tide__net_dial *d);
void tide__net_resolve_abort(struct tide__net_dial *d);
/* A family got its answer (addresses added, or dns_error set). */
void tide__net_dial_resolved(struct tide__net_dial *d,
                             struct tide__net_family *fam);
/* True when both families are answered (or not asked). */
bool tide__net_resolve_done(const struct tide__net_dial *d);

/* ---- the TCP factory ---- */

struct tide__net_conn;

struct tide__net_conns {
    struct tide__net_conn **slots; /* open addressing by bufferevent pointer */
    size_t cap;                    /* a power of two, or 0 */
    size_t n;
};

struct tide__net_make {
    struct tide_tcp_factory *f;
    struct tide_make *token;
    struct tide__net_make *prev;
    struct tide__net_make *next;
    struct tide__net_dial dial;
    /* TLS phase */
    struct bufferevent *bev;
    struct event hs_timer;
    bool hs_armed;
    /* setup phase (setup.c): the token while the setup runs, else NULL */
    struct tide_net_setup *setup;
    struct event setup_timer;
};

struct tide_tls_factory;

struct tide_tcp_factory {
    struct event_base *base;
    struct evdns_base *dns;
    bool own_dns;
    char *host;
    uint16_t port;
    bool literal;   /* host is an address */
    bool loopback;  /* host is "localhost" */
    bool unix_path; /* host is a Unix socket's path, fixed[0] its address */
    /* addresses known without DNS: the literal, localhost's ::1 and
     * 127.0.0.1, or the hosts file's (own resolver only); DNS is asked
     * only when there are none */
    struct tide__net_addr fixed[DIAL_ADDRS];
    int n_fixed;
    int family;
    int64_t connect_timeout;
    int64_t attempt_delay;
    int64_t keepalive_idle;
    int64_t keepalive_interval;
    int keepalive_count;
    tide_idle_data_cb on_idle_data;
    void *idle_data_arg;
    tide_setup_cb setup;
    void *setup_arg;
    void (*setup_abort)(struct tide_net_setup *setup, void *arg);
    int64_t setup_timeout;

    struct tide_tls_factory *tls; /* the layer above, when this is the TCP
                                     part of a TLS factory */
    struct tide__net_conns conns;
    /* watch.c: counts the loans of this factory's connections that ended
     * stale; a connection idle since before the last one is looked at
     * before its next loan */
    uint64_t stale_epoch;
    struct tide__net_make *makes;
    struct tide__net_fail last;
    struct tide_net_stats stats;
};

/* tcp.c */
int tide__tcp_init(struct tide_tcp_factory *f, struct event_base *base,
                   const struct tide_tcp_options *o);
void tide__tcp_dispose(struct tide_tcp_factory *f);
/* The make hooks, shared with TLS (arg is the tcp factory). */
void tide__net_make_begin(struct tide_tcp_factory *f, struct tide_make *token);
void tide__net_make_cancel(struct tide_tcp_factory *f, struct tide_make *token);
/* Ends a make: unlinks it, answers the pool, frees it. */
void tide__net_make_done(struct tide__net_make *m, struct bufferevent *bev);
void tide__net_make_failed(struct tide__net_make *m,
                           const struct tide__net_fail *fail);

/* unix.c: the options of a Unix socket upstream (o->path set) into f:
 * checked, the path kept as f->host and its address as f->fixed[0]. 0,
 * TIDE_EINVAL or TIDE_ENOMEM. */
int tide__net_unix_init(struct tide_tcp_factory *f,
                        const struct tide_tcp_options *o);

/* setup.c: the connection of m is ready (connected, handshaken): runs the
 * setup on it, or ends the make at once when there is none. Takes bev;
 * m may be gone when this returns. */
void tide__net_setup_start(struct tide__net_make *m, struct bufferevent *bev);
/* setup.c: a TLS factory's upgrade (STARTTLS) on the connected fd
 * (taken): a plain exchange, then tide__tls_handshake on the same socket,
 * or a failed make. m may be gone when this returns. */
void tide__net_upgrade_start(struct tide__net_make *m, evutil_socket_t fd);
/* setup.c: the factory gives up on m's setup, if one runs: setup_abort is
 * told, the connection closed. m itself stays for its caller to end. */
void tide__net_setup_abort(struct tide__net_make *m);

/* ---- live connections (conns.c) ---- */

struct tide__net_conn {
    struct bufferevent *bev;
    struct tide_tcp_factory *f;
    struct tide_evpool *pool; /* while watched */
    bool idle;
    bool tls;
    bool closed; /* the release check found the peer gone (watch.c) */
    bool served; /* lent before: alive() on one never lent looks at its
                    socket (a server that speaks first) */
    bool stirred; /* its watch was not quiet when it left idle: reading
                     stopped or a poll's news unread (watch.c) */
    uint64_t epoch; /* the factory's stale_epoch when it went idle */
};

/* Registers bev; NULL when out of memory. */
struct tide__net_conn *tide__net_conn_add(struct tide_tcp_factory *f,
                                          struct bufferevent *bev, bool tls);
struct tide__net_conn *tide__net_conn_find(const struct tide_tcp_factory *f,
                                           const struct bufferevent *bev);
void tide__net_conn_remove(struct tide_tcp_factory *f,
                           struct tide__net_conn *c);
void tide__net_conns_dispose(struct tide_tcp_factory *f);
/* bev's timeouts cleared, and its watermarks for events: a call into
 * libevent only when there are any. Each of libevent's calls re-adds the
 * events it has added to do so, set or not, and a connection's every
 * lend and release made three of them for nothing (the fields are in
 * <event2/bufferevent_struct.h>, which watch.c reads too). */
void tide__net_untime(struct bufferevent *bev);
void tide__net_unmark(struct bufferevent *bev, short events);
/* A connection in the state a borrower gets it: no callbacks, reading and
 * writing enabled, no timeouts, no watermarks. */
void tide__net_hand_over(struct bufferevent *bev);

/* ---- watch.c: the hooks ---- */

void tide__net_watch(struct tide_evpool *pool, void *resource, bool idle,
                     void *arg);
bool tide__net_alive(void *resource, void *arg);
bool tide__net_reusable(void *resource, void *arg);
void tide__net_stale(void *resource, void *arg);

/* ---- TLS ---- */

/* tls.c: the TCP phase of a TLS make is over; fd is connected (taken):
 * the upgrade first when there is one, else the handshake. */
void tide__tls_dialed(struct tide__net_make *m, evutil_socket_t fd);
/* tls.c: the handshake on connected fd (taken), then the setup. */
void tide__tls_handshake(struct tide__net_make *m, evutil_socket_t fd);
/* tls.c: a TLS connection's part of destroy (close_notify). */
void tide__tls_close(struct bufferevent *bev);
void tide__tls_make_abort(struct tide__net_make *m);

#endif
