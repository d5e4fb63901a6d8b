/* tidepool tls: TCP and TLS connection factories for the evloop adapter.
 *
 * A factory opens connections to one upstream (a host and a port, or a Unix
 * socket's path) for a tide_evpool: the resources it makes are connected
 * `struct bufferevent *` (for TLS: handshaken, verified and, with a setup,
 * set up), and it closes them, validates them before lending and watches
 * them while they sit idle.
 *
 *   struct tide_tls_factory *f;
 *   struct tide_tls_options o = {.tcp = {.host = "example.com", .port = 443},
 *                                .alpn = (const char *[]){"http/1.1", NULL}};
 *   if (tide_tls_factory_new(base, &o, &f) != 0) ...
 *   struct tide_factory table;
 *   tide_tls_factory_bind(f, &table);
 *   tide_evpool_new(base, &table, NULL, &pool);
 *   ...
 *   tide_evpool_free(pool);      // the pool first: it destroys its connections
 *   tide_tls_factory_free(f);    // then the factory they came from
 *
 * Connecting: the host name is resolved through an evdns_base (yours, or one
 * the factory builds from the system configuration), A and AAAA at once, and
 * every address is tried, IPv6 and IPv4 interleaved and raced in the manner of
 * Happy Eyeballs (RFC 8305): the next address starts when the current one has
 * not connected within attempt_delay, and the first to connect wins. All of it
 * runs within one connect_timeout. Sockets are made by the factory with
 * SOCK_NONBLOCK|SOCK_CLOEXEC and TCP_NODELAY (not on a Unix socket: TCP
 * options fail there), then handed to a bufferevent with
 * BEV_OPT_CLOSE_ON_FREE|BEV_OPT_DEFER_CALLBACKS.
 *
 * TLS: verification is on by default (chain and host name, or the IP address
 * for an IP literal, read from the certificate's subjectAltName only: a
 * subject CN is not taken for a name, RFC 9525); SNI is sent for names; ALPN is
 * optional; sessions are cached per upstream and offered on the next connection
 * (TLS 1.3 tickets are used once each), and a connection is closed with
 * close_notify so its session stays resumable.
 *
 * A connection you are lent has no callbacks set, reading and writing enabled
 * and no timeouts: set your own with bufferevent_setcb. Give it back with
 * tide_evpool_release when the exchange is complete (nothing left unread,
 * nothing left to write), tide_evpool_stale when it failed by a close (EOF,
 * a reset, a write error) before any byte of the answer came, or
 * tide_evpool_discard when it failed otherwise; never free it yourself. A connection the server ended after a whole exchange (a FIN,
 * a close_notify or a reset after its answer: HTTP/1.0, a keep-alive limit)
 * may be released too: the loan counts as served, not as the backend's
 * failure, and the connection is lent to nobody again. Bytes left unread
 * make a release dirty, closed or not (the breaker hears of it).
 *
 * Session setup: a protocol that opens with an exchange (Redis AUTH, SELECT
 * or HELLO, an SMTP greeting and EHLO, a PostgreSQL startup) runs it in an
 * optional setup callback on every new connection, after connect (after the
 * handshake for TLS) and before the pool sees it. A setup that fails or times
 * out is a failed make: the waiter gets its message, and backoff and the
 * breaker count it. A setup that sends "PING\r\n" and waits for "+PONG\r\n":
 *
 *   static void on_reply(struct bufferevent *bev, void *arg)
 *   {
 *       struct tide_net_setup *setup = arg;
 *       struct evbuffer *in = bufferevent_get_input(bev);
 *       size_t n;
 *       char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF_STRICT);
 *       if (!line)
 *           return;                       // not all of it yet
 *       if (strcmp(line, "+PONG") == 0)
 *           tide_net_setup_done(setup);
 *       else
 *           tide_net_setup_failed(setup, TIDE_ESETUP, line);
 *       free(line);
 *   }
 *   static void on_event(struct bufferevent *bev, short what, void *arg)
 *   {
 *       char why[256];
 *       int code = tide_net_event_error(bev, what, NULL, why, sizeof why);
 *       tide_net_setup_failed(arg, code, why);  // keeps the I/O code
 *   }
 *   static void ping(struct tide_net_setup *setup, struct bufferevent *bev,
 *                    void *arg)
 *   {
 *       bufferevent_setcb(bev, on_reply, NULL, on_event, setup);
 *       bufferevent_write(bev, "PING\r\n", 6);
 *   }
 *   ...
 *   struct tide_tcp_options o = {.host = "127.0.0.1", .port = 6379,
 *                                .setup = ping};
 *
 * Upgrade in place (STARTTLS): a TLS factory with an upgrade callback
 * connects in plaintext, runs the protocol's exchange that asks for TLS
 * (SMTP's EHLO and STARTTLS, IMAP's STARTTLS, PostgreSQL's SSLRequest) on
 * the same token type as the setup, then the handshake on the same socket,
 * verified as any TLS connection, then the setup over TLS. The protocol's
 * words stay in the protocol's code: the factory only switches the socket.
 *
 * Unix domain sockets: `path` instead of host and port connects to a local
 * socket (a Redis or PostgreSQL on the same machine), with the same
 * timeouts, errors, idle watch, checks and setup. No listener on the socket
 * file is TIDE_EREFUSED, no file at all TIDE_ENOSOCKET; a listener whose
 * backlog is full is asked again until connect_timeout
 * (TIDE_ECONNECT_TIMEOUT), as a TCP connect would wait. TLS over one needs
 * verify_name (or insecure_skip_verify): there is no host name to check the
 * certificate against.
 *
 * Idle connections are watched: a peer close (EOF, reset) or unexpected bytes
 * make the connection lost (tide_evpool_lost) at once, so nobody is handed a
 * dead socket after a quiet spell. TLS post-handshake records (session
 * tickets, key updates) are handled by OpenSSL and do not count as bytes.
 *
 * Lending and release cost no call of their own: the checks ask the socket
 * nothing while what the process already knows vouches for it, as nginx's
 * and HAProxy's kept connections do. What they rely on:
 *   - the bufferevent's input buffer (what libevent read and nobody
 *     consumed) and, for TLS, OpenSSL's buffer and state (records read and
 *     not consumed, a close_notify received, a fatal error);
 *   - the bufferevent's read event, which watches the socket the whole
 *     time the connection reads, idle or lent: while it is added and not
 *     made active by a poll whose callback is still to run, nothing that
 *     reached the socket before the loop's last poll is unread (but the
 *     rest of a burst larger than one of libevent's reads, 4 KiB in 2.1,
 *     which the next poll reports: an answer's rest, which its borrower
 *     reads before release), and a close libevent read has stopped it;
 *   - the borrower: it releases after reading its whole answer (its
 *     protocol knows where the answer ends), with reading left on. A
 *     connection given back with reading off (disabled, or held at a
 *     high watermark), or whose read event has news, is looked at: a peek
 *     of the socket for TCP, SSL_peek for TLS (which also consumes session
 *     tickets and key updates waiting there). A borrower that reads the
 *     socket itself (not through the bufferevent) turns the bufferevent's
 *     reading back on before release only when its last read left nothing
 *     behind (it came short of the room it was given); otherwise it leaves
 *     reading off and the factory looks.
 * A connection never lent yet is looked at before its first loan (a server
 * that speaks first); that is its make's last step, not the lend path.
 * What arrives after the loop's last poll (a close a moment after the
 * previous answer) no check sees without asking the peer: the borrower
 * meets it before any byte of its own answer, and gives the connection
 * back with tide_evpool_stale, which does not blame the backend and lets
 * it retry at once; after that, every connection idle at that moment is
 * looked at once before its next loan (the factory's stale hook).
 *
 * Bad input: every function here that returns an int returns TIDE_EINVAL
 * for a NULL object or a NULL required pointer, and one returning bool or
 * size_t returns false or 0; a void one does nothing with NULL, as free(NULL)
 * does, except that bind and stats clear the struct they fill, so nothing
 * uninitialised is read after them. Options out of range (a port above
 * 65535, a negative span) are refused at creation, never wrapped or clamped.
 *
 * Threads: a factory belongs to one event_base, like the pools it serves.
 * The application must ignore SIGPIPE (see <tidepool/evloop.h>).
 *
 * Timeouts: connect, handshake and setup run one after the other inside
 * one make. Keep connect_timeout + handshake_timeout + setup_timeout under
 * the pool's make_timeout, so a waiter learns the precise failure (DNS,
 * refused, handshake, setup...) rather than TIDE_EMAKETIMEDOUT. Without a
 * setup the presets (connect 5 s, handshake 4 s) end within the pool's
 * preset make_timeout (10 s); with one (setup 5 s) they add up to 14 s: raise
 * the pool's make_timeout to 15 s or more, or shorten the spans here.
 *
 * Order of teardown: free (or close and wait for) every pool that uses a
 * factory before freeing the factory; then free the evdns_base you lent it;
 * then run the loop once (libevent finishes closing sockets and delivers
 * cancelled DNS queries from the loop); then free the event_base.
 */
#ifndef TIDEPOOL_TLS_H
#define TIDEPOOL_TLS_H

#include <openssl/ssl.h>
#include <tidepool/evloop.h>

#ifdef __cplusplus
extern "C" {
#endif

struct bufferevent;
struct evdns_base;

/* Errors of this layer (the table is shared: tide_strerror knows them).
 * A make that fails answers the pool with one of these; the detail behind it
 * (errno, resolver error, verify result, OpenSSL error) is kept by the
 * factory: see tide_tcp_factory_last_error. */
enum tide_tls_error {
    /* the name did not resolve: no such name, no address, or the DNS
     * server failed or refused (dns_error says which) */
    TIDE_EDNS = -40,
    /* no DNS answer in time (the resolver's own timeout, or connect_timeout
     * ran out first) */
    TIDE_EDNS_TIMEOUT = -41,
    /* the connection was refused (ECONNREFUSED) */
    TIDE_EREFUSED = -42,
    /* no route to any address (ENETUNREACH, EHOSTUNREACH, no local address
     * of the family) */
    TIDE_EUNREACHABLE = -43,
    /* no address connected within connect_timeout */
    TIDE_ECONNECT_TIMEOUT = -44,
    /* connecting failed otherwise (sys_errno says how) */
    TIDE_ECONNECT = -45,
    /* the TLS handshake failed: a protocol error, an alert, the server
     * closed (ssl_error or sys_errno) */
    TIDE_EHANDSHAKE = -46,
    /* no handshake within handshake_timeout */
    TIDE_EHANDSHAKE_TIMEOUT = -47,
    /* the certificate chain does not lead to a trusted CA (self-signed,
     * unknown issuer...) */
    TIDE_EUNTRUSTED = -48,
    /* the certificate is not for this host name or IP address */
    TIDE_ENAME_MISMATCH = -49,
    /* the certificate has expired, or is not valid yet */
    TIDE_EEXPIRED = -50,
    /* alpn_required, and the server chose none of the offered protocols */
    TIDE_EALPN = -51,
    /* the TLS context could not be built: a CA, certificate or key would
     * not load (the OpenSSL error queue holds the reason, and names the
     * option and its file) */
    TIDE_ETLS_CONFIG = -52,
    /* the peer closed the connection */
    TIDE_EPEER_CLOSED = -53,
    /* the connection broke: a reset or another I/O error (sys_errno) */
    TIDE_ECONN_BROKEN = -54,
    /* a TLS error on an established connection (ssl_error) */
    TIDE_ETLS = -55,
    /* a read or write on the connection timed out */
    TIDE_EIO_TIMEOUT = -56,
    /* no socket at that path (ENOENT): nothing listens there, and nothing
     * ever did since the file is missing */
    TIDE_ENOSOCKET = -57,
    /* the session setup failed: the protocol refused (a wrong password,
     * an unknown database), or it left bytes unread */
    TIDE_ESETUP = -58,
    /* the session setup did not finish within setup_timeout */
    TIDE_ESETUP_TIMEOUT = -59,
    /* the upgrade to TLS (STARTTLS) failed: the exchange went wrong, or
     * bytes came after the server's go-ahead, before the handshake (they
     * could be an attacker's, injected in plaintext: RFC 7457 2.2) */
    TIDE_EUPGRADE = -60,
    /* the server does not offer the upgrade (no STARTTLS in its EHLO) */
    TIDE_EUPGRADE_UNOFFERED = -61,
    /* the server refused the upgrade (SMTP 454, "TLS not available") */
    TIDE_EUPGRADE_REFUSED = -62,
    /* the upgrade did not finish within upgrade_timeout */
    TIDE_EUPGRADE_TIMEOUT = -63,
};

/* The detail behind a failure, beyond its code. Fields that do not apply
 * are 0. */
struct tide_net_detail {
    int code;                /* the tidepool code; 0 when nothing failed */
    int sys_errno;           /* errno of the socket call that failed */
    int dns_error;           /* libevent's DNS_ERR_* (evdns_err_to_string) */
    long verify_result;      /* SSL_get_verify_result: X509_V_ERR_*
                                (X509_verify_cert_error_string) */
    unsigned long ssl_error; /* the first real OpenSSL error code
                                (ERR_error_string_n) */
};

/* Bytes arrived on an idle connection; they are in the bufferevent's input
 * buffer. Return true to keep the connection (the bytes stay for the next
 * borrower, or drain what you have consumed: a protocol that pushes data),
 * false to have it dropped as lost. Runs from the loop, and also inside the
 * checks before lending and on release (bytes the borrower left unread);
 * it must not free the bufferevent or call the pool. */
typedef bool (*tide_idle_data_cb)(struct bufferevent *bev, void *arg);

/* ---- session setup ------------------------------------------------------ */

struct tide_net_setup; /* one setup in progress; answered exactly once */

/* Runs the protocol's opening exchange on a new connection: bev is connected
 * (for TLS: handshaken and verified) and has no callbacks set; set your own
 * (bufferevent_setcb), write, read, then answer exactly once, now or later
 * from the loop, with tide_net_setup_done or tide_net_setup_failed.
 * Do not free bev, and leave nothing unread in its input buffer when done
 * (bytes left are a failed setup: the next borrower would read them).
 * Runs from the loop. Whatever callbacks and timeouts you set on bev are
 * cleared before the pool sees it.
 *
 * The factory may give up on a setup in progress (setup_timeout, the pool's
 * make timeout or cancel, the factory freed): then it frees bev and calls
 * setup_abort when you gave one; after that the token must not be answered.
 * Without setup_abort you must still answer the token once (the answer is
 * then ignored: the token lives until it is answered), and touch bev only
 * from its own callbacks, which stop when the factory frees it. */
typedef void (*tide_setup_cb)(struct tide_net_setup *setup,
                              struct bufferevent *bev, void *arg);

/* The setup succeeded: the connection goes to the pool. With bytes left in
 * the input buffer it is a failed setup instead (TIDE_ESETUP): they would
 * reach the next borrower as the answer to its request. NULL does nothing. */
TIDE_API void tide_net_setup_done(struct tide_net_setup *setup);

/* The setup failed: the connection is closed and the make fails with code
 * and message. code: negative, kept (a protocol's own, e.g. one from
 * tide_net_event_error: a peer that closed during the setup stays
 * TIDE_EPEER_CLOSED); anything else becomes TIDE_ESETUP. message: for a
 * person, copied, may be NULL; it reaches the waiter's why->message and
 * tide_tcp_factory_last_error. NULL setup does nothing. */
TIDE_API void tide_net_setup_failed(struct tide_net_setup *setup, int code,
                                    const char *message);

/* ---- TCP ---------------------------------------------------------------- */

/* Where and how to connect: host and port (or service), or a Unix socket's
 * path. Zero fields take the preset; spans are ns.
 * Strings are copied at creation; pointers marked borrowed must outlive the
 * factory. Checked once by tide_tcp_factory_new (TIDE_EINVAL). */
struct tide_tcp_options {
    const char *host;           /* required (unless path): a DNS name, or an
                                   IPv4/IPv6
                                   literal (brackets allowed: "[::1]"), which
                                   is connected to without DNS. "localhost" is
                                   ::1 and 127.0.0.1 without DNS (RFC 6761). */
    int port;                   /* the port, 1..65535, or 0 when service
                                   is given; anything else is refused
                                   (TIDE_EINVAL): an int, so that 70000 is
                                   an error rather than port 4464 */
    const char *service;        /* instead of port: a number ("443") or a name
                                   from the services database ("https"),
                                   looked up once at creation */
    struct evdns_base *dns;     /* borrowed resolver; NULL: the factory builds
                                   its own from the system configuration
                                   (resolv.conf), and a name the hosts file
                                   lists is connected to without DNS (the file
                                   is read once, at creation). A resolver of
                                   yours is asked for every name: libevent 2.1
                                   reads the hosts file only in
                                   evdns_getaddrinfo, which cannot tell a DNS
                                   timeout from a failure. */
    int family;                 /* AF_UNSPEC (preset): both; AF_INET or
                                   AF_INET6: that family only */
    int64_t connect_timeout;    /* from the start of a make until a socket is
                                   connected, DNS included. Preset 5 s;
                                   TIDE_FOREVER for none. */
    int64_t attempt_delay;      /* how long an attempt may run before the next
                                   address is tried beside it. Preset 250 ms
                                   (RFC 8305); TIDE_FOREVER: one at a time, the
                                   next only after a failure. */
    int64_t keepalive_idle;     /* TCP keepalive: idle time before the first
                                   probe (TCP_KEEPIDLE, whole seconds, rounded
                                   up). Preset: keepalive off. */
    int64_t keepalive_interval; /* between probes (TCP_KEEPINTVL); preset:
                                   the kernel's */
    int keepalive_count;        /* probes before the connection is dropped
                                   (TCP_KEEPCNT); preset: the kernel's */
    tide_idle_data_cb on_idle_data; /* what unexpected bytes on an idle
                                       connection mean; NULL (preset): the
                                       connection is lost */
    void *idle_data_arg;            /* borrowed; passed to on_idle_data */

    /* A Unix domain socket instead of host and port: its path (shorter
     * than sun_path, 108 bytes with the NUL). host, port, service, dns,
     * family and keepalive must then be unset (TIDE_EINVAL otherwise):
     * there is nothing to resolve, and TCP options do not apply. */
    const char *path;

    /* Session setup (see tide_setup_cb). */
    tide_setup_cb setup; /* optional */
    void *setup_arg;     /* borrowed; passed to setup and setup_abort */
    /* optional: the factory gave up on a setup in progress (the make was
     * cancelled or timed out, or the factory is being freed): stop and
     * forget the token; after this returns the token is dead, must not be
     * answered, and bev is freed by the factory. */
    void (*setup_abort)(struct tide_net_setup *setup, void *arg);
    int64_t setup_timeout; /* from the connection handed to setup to its
                              answer; preset 5 s; TIDE_FOREVER: none */
};

struct tide_tcp_factory;

/* Creates a TCP factory on base (borrowed; must outlive the factory).
 * Returns 0 with *out (free it with tide_tcp_factory_free); TIDE_EINVAL for
 * a NULL base, o or out, or a bad option (no host, no port or both a port
 * and a service, a port outside 1..65535, an unknown service, a negative
 * span, a keepalive span above 32767 s or a count above 127, a literal of
 * another family than `family`; a path with any of host, port, service,
 * dns, family or keepalive, an empty path or one too long for sun_path),
 * with *out NULL when out is not; TIDE_ENOMEM;
 * TIDE_EDNS when the factory had to build its own resolver and could not. */
TIDE_API TIDE_MUST_USE int
tide_tcp_factory_new(struct event_base *base, const struct tide_tcp_options *o,
                     struct tide_tcp_factory **out);

/* Fills *out with the factory's callbacks (make, destroy, cancel, alive,
 * reusable, watch; no check: that one is the protocol's) and arg = f, ready
 * for tide_evpool_new. A NULL f clears *out, which tide_evpool_new then
 * refuses (TIDE_EINVAL: no make); a NULL out is ignored. */
TIDE_API void tide_tcp_factory_bind(struct tide_tcp_factory *f,
                                    struct tide_factory *out);

/* Frees the factory. Makes still in progress are cancelled and answered
 * with TIDE_ECANCELLED. Every connection it made must already be destroyed
 * (free the pools first): one still alive is closed here, and its pool
 * must never touch it again. NULL is ignored. */
TIDE_API void tide_tcp_factory_free(struct tide_tcp_factory *f);

/* The last failed make: its code (0 when none failed), the detail into
 * *detail when not NULL, and a sentence for a person into buf (always
 * NUL-terminated when len > 0; cut short to fit). The same sentence went to
 * the pool as the failure's message. Makes that were cancelled do not
 * count. A NULL f: TIDE_EINVAL, with *detail cleared and buf empty. */
TIDE_API int tide_tcp_factory_last_error(const struct tide_tcp_factory *f,
                                         struct tide_net_detail *detail,
                                         char *buf, size_t len);

/* What a factory has done. */
struct tide_net_stats {
    uint64_t makes;     /* makes started */
    uint64_t made;      /* makes that produced a connection */
    uint64_t failed;    /* makes that failed (cancelled ones excluded) */
    uint64_t cancelled; /* makes the pool gave up on */
    uint64_t attempts;  /* TCP connection attempts (addresses tried) */
    uint64_t lost;      /* idle connections reported lost */
    uint64_t lost_data; /* ... of them because of unexpected bytes */
    uint64_t looks;     /* checks before lending or on release that asked
                           the socket (a peek, SSL_peek): on a connection
                           never lent, one whose read event had news or
                           whose reading was off, or after a stale loan;
                           none on a lend or release that nothing
                           stirred */
    uint64_t destroyed; /* connections closed */
    int64_t live;       /* connections made and not yet closed */
    int64_t pending;    /* makes in progress */
    /* TLS only */
    uint64_t resumed;           /* handshakes that resumed a session */
    uint64_t sessions_received; /* sessions and tickets the servers sent */
    int64_t sessions_cached;    /* sessions held for this upstream now */
};

/* The counters into *out; a NULL f gives all zeros, a NULL out is
 * ignored. */
TIDE_API void tide_tcp_factory_stats(const struct tide_tcp_factory *f,
                                     struct tide_net_stats *out);

/* ---- TLS ---------------------------------------------------------------- */

/* A cache of TLS sessions, keyed by upstream: host, port, SNI, ALPN list,
 * verification and SSL_CTX (a resumed handshake does not check the
 * certificate again, so a session never crosses to another name or trust
 * store). The context counts by its address: free a shared cache with the
 * contexts it served, not after a new context could take their place. Each
 * factory has its own cache unless you give several factories on one loop
 * the same one. TLS 1.2 sessions may be offered again
 * and again; TLS 1.3 tickets are taken out when offered (single use, RFC
 * 8446 C.4), newest first. Not thread-safe: one loop's thread only. */
struct tide_tls_sessions;

/* max: sessions held in all (0: preset 64); per upstream at most 8, the
 * oldest going first. Returns 0 with *out, TIDE_ENOMEM or TIDE_EINVAL (out
 * NULL). */
TIDE_API TIDE_MUST_USE int
tide_tls_sessions_new(size_t max, struct tide_tls_sessions **out);
/* Frees the cache and every session in it. Free it after the factories that
 * use it. NULL is ignored. */
TIDE_API void tide_tls_sessions_free(struct tide_tls_sessions *s);
/* Sessions held now, for every upstream (0 for NULL). */
TIDE_API size_t tide_tls_sessions_count(const struct tide_tls_sessions *s);

/* TLS on top of the TCP options. Zero fields take the preset; strings are
 * copied at creation. */
struct tide_tls_options {
    struct tide_tcp_options tcp; /* where and how to connect */

    /* The context. Either give your own, or let the factory build one from
     * the fields after it (then all of them must be zero when ctx is set:
     * TIDE_EINVAL otherwise). */
    SSL_CTX *ctx;          /* your client context: the factory takes a
                              reference (SSL_CTX_up_ref) and, unless
                              no_resumption, sets its session cache mode
                              to SSL_SESS_CACHE_CLIENT|NO_INTERNAL_STORE
                              and installs its new-session callback; do
                              not share it with code that sets either.
                              Several factories may share one. Your
                              protocol versions and trust store apply;
                              verification and names are set per
                              connection as below. */
    const char *ca_file;   /* trusted CAs, PEM (SSL_CTX_load_verify_
                              locations) */
    const char *ca_dir;    /* trusted CAs, a hashed directory; one that
                              is not there is refused at creation */
    const char *ca_pem;    /* trusted CAs, PEM text in memory */
                           /* none of the three: the system's CAs
                              (SSL_CTX_set_default_verify_paths) */
    const char *cert_file; /* client certificate chain, PEM */
    const char *key_file;  /* its private key, PEM; NULL: in cert_file */
    int min_version;       /* TLS1_2_VERSION (preset) or TLS1_3_VERSION;
                              older versions are refused */
    int max_version;       /* TLS1_2_VERSION or TLS1_3_VERSION; preset:
                              the newest OpenSSL knows */

    /* Per connection. */
    const char *sni;           /* the name sent as SNI; NULL (preset): the
                                  host, unless it is an IP literal (RFC 6066);
                                  over a Unix socket, verify_name unless it
                                  is an IP literal; "": none */
    const char *verify_name;   /* the name (or IP literal) the certificate
                                  must match; NULL (preset): the host. A
                                  name's final dot is dropped, as
                                  certificates spell names without it
                                  ("example.com." is example.com).
                                  Required over a Unix socket (tcp.path),
                                  unless insecure_skip_verify: a path is no
                                  name to check a certificate against */
    const char *const *alpn;   /* protocols to offer, most wanted first,
                                  NULL-terminated; NULL: no ALPN */
    bool alpn_required;        /* fail with TIDE_EALPN when the server picks
                                  none of them */
    int64_t handshake_timeout; /* from TCP connected to handshake done;
                                  preset 4 s; TIDE_FOREVER for none */
    bool no_resumption;        /* do not cache or offer sessions */
    struct tide_tls_sessions *sessions; /* borrowed shared cache; NULL: the
                                           factory's own */

    /* Upgrade in place (STARTTLS in SMTP, IMAP or XMPP; PostgreSQL's
     * SSLRequest): the protocol's plaintext exchange on the connected
     * socket, before the handshake. It has the setup's shape and token
     * (tide_setup_cb): bev is a plain bufferevent on the socket; answer
     * tide_net_setup_done once the server has said "go ahead" (SMTP's 220
     * to STARTTLS), and the factory then runs the TLS handshake on the same
     * socket, with the same verification, SNI, ALPN and resumption as a
     * direct connection, and after it tcp.setup over TLS (SMTP's second
     * EHLO, AUTH). Bytes left unread at done fail the make with
     * TIDE_EUPGRADE: nothing a server sends in plaintext may be taken as if
     * it came over TLS. Answer tide_net_setup_failed with
     * TIDE_EUPGRADE_UNOFFERED or TIDE_EUPGRADE_REFUSED when those apply
     * (kept, as any negative code), anything not negative becomes
     * TIDE_EUPGRADE. A make given up during the upgrade calls
     * upgrade_abort, as setup_abort during the setup. The upgrade counts
     * as the make's setup: keep upgrade_timeout + handshake_timeout +
     * tcp.setup_timeout under the pool's make_timeout. NULL (preset): TLS
     * from the first byte. */
    tide_setup_cb upgrade;
    void *upgrade_arg; /* borrowed; passed to upgrade and upgrade_abort */
    void (*upgrade_abort)(struct tide_net_setup *setup, void *arg);
    int64_t upgrade_timeout; /* from the connection handed to upgrade to
                                its answer; preset 5 s; TIDE_FOREVER:
                                none */

    /* DANGER: accept any certificate from anyone. The connection is
     * encrypted but not authenticated: whoever is on the path can read and
     * change everything. For tests against throwaway servers only. */
    bool insecure_skip_verify;
};

struct tide_tls_factory;

/* Creates a TLS factory on base (borrowed; must outlive the factory).
 * Returns 0 with *out; TIDE_EINVAL for a NULL base, o or out, or a bad
 * option (see the TCP ones, and: a version other than TLS 1.2 or 1.3, min
 * above max, context fields given with ctx, key_file without cert_file, an
 * empty ALPN list, an empty or over-long ALPN protocol, alpn_required without
 * alpn, an IP address as sni, an SNI (sni, or the name it is taken from)
 * longer than 255 bytes, an empty verify_name (it would check no
 * name), a verify_name given with insecure_skip_verify,
 * a negative handshake_timeout or upgrade_timeout, upgrade_arg,
 * upgrade_abort or upgrade_timeout without upgrade, a tcp.path without
 * verify_name or insecure_skip_verify), with *out NULL when out is not;
 * TIDE_ETLS_CONFIG when the context cannot be built (the OpenSSL error queue
 * says why, naming the option and the file: print it with
 * ERR_print_errors); TIDE_ENOMEM; TIDE_EDNS. */
TIDE_API TIDE_MUST_USE int
tide_tls_factory_new(struct event_base *base, const struct tide_tls_options *o,
                     struct tide_tls_factory **out);

/* Fills *out as tide_tcp_factory_bind does, for TLS connections (NULL
 * alike). */
TIDE_API void tide_tls_factory_bind(struct tide_tls_factory *f,
                                    struct tide_factory *out);

/* Frees the factory, as tide_tcp_factory_free. */
TIDE_API void tide_tls_factory_free(struct tide_tls_factory *f);

/* As tide_tcp_factory_last_error, for the TCP and TLS phases alike (NULL
 * alike). */
TIDE_API int tide_tls_factory_last_error(const struct tide_tls_factory *f,
                                         struct tide_net_detail *detail,
                                         char *buf, size_t len);

/* As tide_tcp_factory_stats, with the session counters (NULL alike). */
TIDE_API void tide_tls_factory_stats(const struct tide_tls_factory *f,
                                     struct tide_net_stats *out);

/* ---- connections ----------------------------------------------------------
 */

/* Whether a TLS connection's handshake resumed an earlier session (false
 * for a plain TCP bufferevent, and for NULL). */
TIDE_API bool tide_tls_resumed(struct bufferevent *bev);

/* The protocol the server chose by ALPN, into buf (NUL-terminated when
 * len > 0, cut short to fit; buf may be NULL to ask the length). Returns its
 * length (0: none chosen, not TLS, or a NULL bev), like snprintf: a result
 * >= len means it was cut. */
TIDE_API size_t tide_tls_alpn(struct bufferevent *bev, char *buf, size_t len);

/* Reads a bufferevent event you received on a pool connection (the `what`
 * of your event callback) into a code: TIDE_EPEER_CLOSED, TIDE_ECONN_BROKEN,
 * TIDE_ETLS, TIDE_EIO_TIMEOUT, or 0 when `what` is not a failure
 * (BEV_EVENT_CONNECTED). The detail goes to *detail (when not NULL) and a
 * sentence to buf. Call it from the event callback itself: errno and the
 * connection's OpenSSL errors are only there then, and are consumed. A
 * NULL bev: TIDE_EINVAL, with *detail cleared and buf empty. */
TIDE_API int tide_net_event_error(struct bufferevent *bev, short what,
                                  struct tide_net_detail *detail, char *buf,
                                  size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TIDEPOOL_TLS_H */
