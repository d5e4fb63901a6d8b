/* demos/proxy's parts and what they share (never installed; see proxy.h
 * for the proxy itself). The parts, one file each:
 *   proxy.c     the proxy: its listener, accepting, drain, free, stats
 *   client.c    a client connection: its socket read and written, its
 *               timer, what follows an exchange, its end
 *   request.c   the request from the client: parsed, answered here (the
 *               stats page) or its body passed on as it comes
 *   check.c     a request's head and any chunked body, checked before
 *               libhttp-parser reads them
 *   headers.c   a message's header fields: kept, looked up, hop-by-hop
 *               ones told apart, written out
 *   exchange.c  an exchange with an upstream: its connection got from the
 *               group, given back, the request sent again or answered 502
 *   http1.c     the HTTP/1.1 upstream exchange: the request written, the
 *               response read, checked and relayed to the client
 * An upstream exchange over another protocol (HTTP/2) goes in its own file
 * beside http1.c, reached through exchange.c.
 *
 * Cross-file calls are px__; everything else stays static in its file. */
#ifndef TIDEPOOL_DEMO_PROXY_INTERNAL_H
#define TIDEPOOL_DEMO_PROXY_INTERNAL_H

#include "buf.h"
#include "proxy.h"

#include <arpa/inet.h>
#include <event2/event_struct.h>
#include <event2/util.h>
#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bufferevent;

/* A header's name and value are offsets into the message's text (a
 * px_buf kept by the client), so a message costs no allocation. */
struct header {
    size_t name;
    size_t value; /* NO_VALUE until a value piece came */
};

#define NO_VALUE SIZE_MAX

/* A name a Connection header lists: a piece of its value. */
struct token {
    const char *p;
    size_t len;
};

struct headers {
    struct header *h;
    size_t n;
    size_t cap;
    bool in_value; /* the parser's last piece was a value */
    /* the message's strings, one after another, each NUL-terminated: the
     * URL or reason first, then names and values in order, so a piece
     * always continues the last string or starts the next */
    struct px_buf text;
    /* the names its Connection headers list, sorted (connection_names;
     * they point into text, so they hold while it is not added to) */
    struct token *tokens;
    size_t n_tokens;
    size_t tokens_cap;
};

/* A request line longer than this gets 414, a head longer than this 431:
 * nginx's own preset takes four buffers of 8 KiB, and a head that does
 * not fit the parser's 80 KiB would only get a 400 saying why not. */
#define URI_MAX  (8 * 1024)
#define HEAD_MAX (32 * 1024)
/* A request with more header fields than this gets 431, however short
 * they are: Apache's LimitRequestFields and Envoy's max_headers_count
 * have the same preset, and browsers send a few dozen at most. */
#define FIELDS_MAX 100
/* A number macro's digits as a string literal, for a message. */
#define DIGITS_OF(n) #n
#define DIGITS(n)    DIGITS_OF(n)

/* Where the check of a request's head stands: the offset reached in the
 * client's input (the head starts it), and the line it is in. */
struct head_scan {
    size_t at;
    size_t line;     /* bytes of the current line so far */
    bool begun;      /* the request line started (empty lines may lead) */
    bool fields;     /* past the request line */
    bool in_name;    /* in a field's name: before its colon */
    bool cr;         /* the last byte was a CR */
    bool done;       /* the head's end is in: at is its length */
    size_t fields_n; /* field lines begun */
};

/* libhttp-parser 2.9 (built without HTTP_PARSER_STRICT, as Debian's is)
 * takes any two bytes after a chunk's data for its CRLF, any byte after a
 * CR for the LF, and a bare LF inside a chunk extension or in the trailer
 * section; each is a boundary another parser draws elsewhere. So a
 * chunked body is checked here first (RFC 9112 7.1), both ways, and the
 * parser sees only what passed. */

/* A chunk's size line, extensions included, longer than this is refused */
#define CHUNK_LINE_MAX 4096

enum chunk_part {
    CK_SIZE,    /* the size's hex digits */
    CK_EXT,     /* extensions, up to the line's CR */
    CK_SIZE_LF, /* the LF after that CR */
    CK_DATA,
    CK_DATA_CR, /* the CRLF that must follow the data */
    CK_DATA_LF,
    CK_TRAILER, /* the trailer section, up to its empty line */
    CK_DONE,
};

struct chunk_scan {
    size_t at; /* the offset reached in the input (the body starts it) */
    size_t ok; /* bytes from the input's start fine to parse */
    enum chunk_part part;
    uint64_t size;  /* the chunk's size, then what is left of its data */
    uint64_t total; /* the data of every chunk so far */
    uint64_t max;   /* more data than this is refused (413) */
    size_t line;    /* bytes of the size line so far */
    /* the trailer section, checked as a head's fields are */
    struct head_scan trailer;
    const char *why; /* what was wrong, once refused */
};

/* Times one request goes to another upstream after a 503 at most
 * (failover.c): as HAProxy's `retries 2`; the group's retry budget bounds
 * the sum over requests. */
#define FAIL_OVERS_MAX 2

struct client;

struct px {
    struct event_base *base;
    struct tide_group *group;
    struct evconnlistener *listener;
    int port;
    int64_t acquire_timeout;
    struct timeval response_tv; /* px_options.response_timeout */
    struct timeval client_tv;   /* px_options.client_timeout */
    size_t max_body;
    bool retry_503;         /* px_options.retry_503 */
    struct client *clients; /* every open client, for px_free */
    struct px_stats stats;
    /* px_drain: no new client, each closed after its exchange, and
     * on_drained called from the loop (`drained`) once none is left */
    bool draining;
    struct event drained;
    px_drained_cb on_drained;
    void *drained_arg;
    struct event accept_resume; /* on_accept_error's pause ends */
};

enum client_state {
    C_READING = 0, /* parsing a request's head (or a body for nobody) */
    C_ACQUIRING,   /* the head is in; waiting for a connection */
    C_EXCHANGING,  /* sent upstream, its body as it comes; relaying the
                      response */
    C_FLUSHING,    /* the last response is queued; close once written */
    C_DEAD,        /* closed: freed from the loop by `reap` */
};

struct client {
    struct px *px;
    struct client *prev;
    struct client *next;
    /* The client's socket, read and written by the proxy itself rather
     * than through a bufferevent: a bufferevent asks the socket how much
     * is readable (an ioctl) before every read, and mallocs a buffer chain
     * on every add to an empty evbuffer. -1 once an orphan's client left. */
    evutil_socket_t fd;
    struct event rd;    /* EV_READ, persistent, for the client's life but
                           while paused */
    bool paused;        /* rd is off: `in` holds PIPELINED_MAX bytes sent
                           ahead of an exchange in flight */
    struct event wr;    /* EV_WRITE, persistent, added only while the socket
                           did not take all of `out` */
    bool gone;          /* a send found the client closed or reset: told
                           from rd's callback, never deep inside a parse */
    struct px_buf in;   /* read, not parsed yet */
    struct px_buf out;  /* on its way to the client */
    struct event reap;  /* frees the client from the loop, so no caller
                           deep in a parse finds it gone */
    struct event timer; /* while reading a request: client_tv for its head
                           from the start, for its body from the last read
                           (client_timer) */
    char peer[INET6_ADDRSTRLEN];
    enum client_state state;

    /* the request */
    http_parser req_parser;
    struct headers req_headers;
    /* the names the head's Connection headers list (connection_names),
     * read once when the head is in: the head, a retry's head and the
     * trailers all go by them */
    const struct headers *req_connection;
    size_t url;        /* in req_headers.text, or NO_VALUE */
    struct px_buf req; /* what goes upstream next: the head, then each
                          piece of the body (rq_body, body_flush) */
    /* the body as it went upstream, kept for a retry (body_flush) */
    struct px_buf retry_body;
    struct head_scan scan; /* of the request being read */
    /* of its body, when chunked */
    struct chunk_scan chunks;
    bool req_chunked;
    bool req_complete;
    bool req_keep_alive;
    bool req_begun;       /* a request's first byte was parsed, not its end */
    bool req_head_parsed; /* fields parsed from now on are trailers */
    bool req_too_big;
    const char *refused; /* why rq_headers_done refused the head */
    int refused_status;  /* ...with this status: 400, or 505 */
    bool retry_outgrown; /* the body outgrew RETRY_MAX: no retry */
    /* a chunked body's trailer fields, apart from the head */
    struct headers req_trailers;
    uint64_t req_length; /* its Content-Length, or ULLONG_MAX */
    /* the exchange ended before the body did: the rest is read for
     * nobody, then the next request */
    bool req_answered;
    bool expects_continue; /* the client waits for 100 Continue */
    bool continue_sent;
    unsigned method;
    unsigned short req_minor;

    /* the exchange */
    struct tide_group_acquire *acquiring;
    struct tide_group_upstream *up;
    struct bufferevent *ub; /* the lent upstream connection */
    /* A plain TCP upstream's response is read from its socket by the proxy
     * (raw), not through the bufferevent: no ioctl(FIONREAD) per read, no
     * buffer chain allocated and freed, no deferred callback one trip
     * through the loop later. The bufferevent still writes what the socket
     * did not take and reports write failures. TLS goes through it. */
    bool raw;
    struct event urd;  /* raw: EV_READ, persistent, response_tv of silence */
    struct px_buf uin; /* raw: read, not parsed yet */
    bool drained;      /* raw: the last read came short of its room (the
                          socket had no more) */
    http_parser resp_parser;
    struct chunk_scan resp_chunks; /* of a chunked response's body */
    bool resp_chunks_on;           /* ...being read */
    struct headers resp_headers;
    size_t reason;     /* in resp_headers.text, or NO_VALUE */
    bool any_byte;     /* a response byte came on this connection */
    bool head_sent;    /* the response head went to the client */
    bool chunked_out;  /* the body goes to the client chunked */
    bool close_client; /* close the client after this response */
    bool resp_done;
    bool upstream_reusable;
    bool awaiting; /* the request is whole upstream: its silence counts */
    bool retried;
    bool stale_retried;  /* sent again once after a stale connection */
    bool fail_over;      /* the response is a 503 to send elsewhere */
    unsigned fail_overs; /* times this request was (failover.c) */
    /* the upstreams that answered it 503, which its retries avoid */
    struct tide_group_upstream *failed_on[FAIL_OVERS_MAX];
    /* why rs_headers_done refused the response's head, or NULL */
    const char *resp_refused;
    bool resp_name_space; /* a space came in one of its field names */
    /* the client left while a small response was still coming: it is
     * read to its end for nobody (what is meant for the client is
     * dropped), so the connection goes back whole */
    bool orphan;

    /* an exchange on an HTTP/2 upstream (h2.c): a stream of c->ub */
    bool h2_exchange;
    struct h2conn *h2;    /* its connection while the stream is open */
    struct h2stream *h2s; /* the stream, as nghttp2 knows it */
    int32_t h2_stream;    /* its id */
    bool h2_open;         /* not closed by either side yet */
    bool h2_pull;         /* nghttp2 took body bytes: parse on */
    size_t h2_dbg_sent;
    bool h2_flushing;      /* px__h2_write: c->req is in h2_body */
    bool h2_trailers;      /* the header block now is the trailers */
    bool h2_no_body;       /* HEAD, 1xx, 204, 304 */
    unsigned h2_status;    /* :status */
    size_t h2_owed;        /* response bytes not yet taken by the client
                              (its window stays shut by them) */
    struct px_buf h2_body; /* the request body nghttp2 has yet to take */
    struct event h2_timer; /* response_tv of the stream's silence */
};

/* How a lent upstream connection ends an exchange. */
enum give {
    GIVE_RELEASE, /* the response is whole and the upstream keeps it */
    GIVE_RETIRE,  /* whole, but the upstream closes it (Connection: close,
                     HTTP/1.0, a body until close): the upstream served */
    GIVE_ABANDON, /* the client went away, or the proxy stopped reading:
                     nothing the upstream did */
    GIVE_DISCARD, /* the upstream failed: a connect or read error, a reset,
                     a bad, cut or late response */
    GIVE_STALE,   /* closed before any byte of the response came: the
                     upstream closed it a moment before (stale), unless it
                     was new; give_back says which */
};

/* What an orphaned exchange may still read to save its connection; a
 * bigger rest (or one of unknown length) is cheaper to reconnect. */
#define ORPHAN_MAX (64 * 1024)
/* What a client may send ahead while its exchange is in flight (pipelined
 * requests): past it the proxy stops reading it until the exchange ends,
 * and TCP holds the rest back, instead of the proxy's memory. Room for a
 * whole head at its largest, and more. */
#define PIPELINED_MAX (2 * HEAD_MAX)
/* A request's body queued for its upstream at most before no more of it
 * is parsed: the client's bytes then wait in `in`, which stops reading it
 * at PIPELINED_MAX (px__on_client_readable), and TCP holds the rest back. So
 * an upload costs a client's buffers, not its size, and a slow upstream
 * slows its client down. */
#define UPSTREAM_HIGH (64 * 1024)
/* The most of a request's body kept for a retry on another connection
 * (an idempotent request whose connection failed before any response
 * byte): past it the request is not sent again but answered 502. */
#define RETRY_MAX (64 * 1024)

/* headers.c */
void px__headers_clear(struct headers *hs);
void px__headers_dispose(struct headers *hs);
size_t px__text_start(struct headers *hs, const char *at, size_t len);
void px__text_continue(struct headers *hs, const char *at, size_t len);
const char *px__text_at(const struct headers *hs, size_t off);
void px__headers_field(struct headers *hs, const char *at, size_t len);
void px__headers_value(struct headers *hs, const char *at, size_t len);
const char *px__header_name(const struct headers *hs, size_t i);
const char *px__header_value(const struct headers *hs, size_t i);
const char *px__headers_get(const struct headers *hs, const char *name);
bool px__hop_by_hop(const struct headers *connection, const char *name);
const struct headers *px__connection_names(struct headers *hs);
bool px__headers_trim_names(struct headers *hs);
void px__add_header(struct px_buf *b, const char *name, const char *value);
void px__add_uint(struct px_buf *b, uint64_t v);
void px__add_hex(struct px_buf *b, uint64_t v);

/* A control character (RFC 5234 CTL), which no field holds but HTAB
 * (RFC 9110 5.5): libhttp-parser checks a value's bytes but its first. */
static inline bool px__is_control(char b)
{
    unsigned char u = (unsigned char)b;
    return u < 0x20 || u == 0x7f;
}

/* check.c */
int px__head_scan(struct head_scan *s, const char *p, size_t len);
void px__chunk_scan_init(struct chunk_scan *s, uint64_t max);
int px__chunk_scan(struct chunk_scan *s, const char *p, size_t len);
void px__chunk_scan_consumed(struct chunk_scan *s, size_t n);
const char *px__head_refusal(const struct client *c, const http_parser *p);

/* client.c */
struct px_buf *px__client_out(struct client *c);
size_t px__client_queued(struct client *c);
const char *px__client_url(const struct client *c);
void px__client_flush(struct client *c);
const char *px__connection_line(const struct client *c, bool close);
void px__client_write_error(struct client *c, int status, const char *reason,
                            const char *extra_header, const char *body);
void px__client_refuse(struct client *c, int status, const char *why);
void px__on_client_timeout(evutil_socket_t fd, short what, void *arg);
void px__client_next(struct client *c);
void px__client_pump(struct client *c);
void px__on_client_readable(evutil_socket_t fd, short what, void *arg);
void px__on_client_writable(evutil_socket_t fd, short what, void *arg);
void px__client_kill(struct client *c);
void px__on_reap(evutil_socket_t fd, short what, void *arg);
void px__client_free(struct client *c);

/* request.c */
bool px__client_parsing(const struct client *c);
bool px__request_has_body(const struct client *c);
void px__go_ahead(struct client *c);
void px__client_parse(struct client *c);
bool px__idempotent(unsigned method);

/* http1.c */
bool px__upstream_paused(struct client *c);
void px__upstream_pause(struct client *c);
void px__upstream_resume(struct client *c, const struct timeval *tv);
void px__trailers_out(struct client *c);
void px__upstream_write(struct client *c, const char *p, size_t n);
void px__upstream_await(struct client *c);
void px__send_upstream(struct client *c);

/* exchange.c */
bool px__give_back(struct client *c, enum give how);
void px__exchange_failed(struct client *c, const char *why);
/* The exchange goes again on another connection (a retry, counted), its
 * request's body sent on as it comes. */
void px__exchange_again(struct client *c);
/* The exchange failed for good: 502 with why as its body, or, half of the
 * response being out already, the client cut (counted as aborted). */
void px__exchange_refuse(struct client *c, const char *why);
void px__start_exchange(struct client *c);
/* The group's answer to the exchange's acquire (a retry's too). */
void px__on_acquired(struct tide_group *g, int status,
                     struct tide_group_upstream *u, void *resource,
                     const struct tide_why *why, void *arg);

/* failover.c */
/* Whether a 503 now in from c's upstream goes to another one: the proxy
 * is told so, the request can go again whole, the budget has room. */
bool px__fail_over_ok(const struct client *c);
/* The 503 from c's upstream (why says so) fails the exchange there: the
 * connection is discarded (a failure for its breaker) and the request
 * goes to another upstream as a retry of the group's, or, refused, is
 * answered 503 by the proxy. */
void px__exchange_elsewhere(struct client *c, const char *why);
/* The connection of c's stale retry was stale too (its upstream `up`,
 * compared, never read: the connection is given back): the request goes
 * to another upstream, as after a failure, or gets the 502 saying why. */
void px__exchange_stale_twice(struct client *c, struct tide_group_upstream *up,
                              const char *why);

/* h2.c */
struct h2conn;
struct h2stream;
struct h2conn *px__h2_conn_of(struct bufferevent *bev);
bool px__h2_is(struct bufferevent *bev);
void px__h2_send(struct client *c);
bool px__h2_give_back(struct client *c, enum give how);
void px__h2_write(struct client *c, const char *p, size_t n);
void px__h2_more(struct client *c);
bool px__h2_taking(const struct client *c);
void px__h2_caught_up(struct client *c);
bool px__h2_paused(const struct client *c);

#endif
