/* The proxy: client connections, one exchange at a time on each (pipelined
 * requests wait in the input until the response before them is done), an
 * upstream connection per exchange from the group, a request's body
 * streamed to it as it comes. See proxy.h. */
#include "proxy.h"
#include "buf.h"
#include "stats.h"
#include "target.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/listener.h>
#include <http_parser.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* ---- headers ---- */

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

static void headers_clear(struct headers *hs)
{
    hs->n = 0;
    hs->in_value = false;
    px_buf_clear(&hs->text);
}

static void headers_dispose(struct headers *hs)
{
    free(hs->h);
    free(hs->tokens);
    px_buf_dispose(&hs->text);
    *hs = (struct headers){0};
}

/* Starts a string in the text; returns its offset. */
static size_t text_start(struct headers *hs, const char *at, size_t len)
{
    size_t off = hs->text.len;
    px_buf_add(&hs->text, at, len);
    px_buf_add(&hs->text, "", 1);
    return off;
}

/* Continues the last string of the text. */
static void text_continue(struct headers *hs, const char *at, size_t len)
{
    hs->text.len--; /* its NUL */
    px_buf_add(&hs->text, at, len);
    px_buf_add(&hs->text, "", 1);
}

static const char *text_at(const struct headers *hs, size_t off)
{
    return off == NO_VALUE ? "" : hs->text.p + off;
}

/* The parser hands names and values in pieces: a name piece after a value
 * starts the next header. */
static void headers_field(struct headers *hs, const char *at, size_t len)
{
    if (hs->n == 0 || hs->in_value) {
        if (hs->n == hs->cap) {
            hs->cap = hs->cap ? 2 * hs->cap : 16;
            hs->h = realloc(hs->h, hs->cap * sizeof *hs->h);
            if (!hs->h)
                abort(); /* a demo: out of memory ends it */
        }
        hs->h[hs->n++] =
            (struct header){.name = text_start(hs, at, len), .value = NO_VALUE};
        hs->in_value = false;
        return;
    }
    text_continue(hs, at, len);
}

static void headers_value(struct headers *hs, const char *at, size_t len)
{
    if (hs->n == 0)
        return;
    struct header *h = &hs->h[hs->n - 1];
    if (h->value == NO_VALUE)
        h->value = text_start(hs, at, len);
    else
        text_continue(hs, at, len);
    hs->in_value = true;
}

static const char *header_name(const struct headers *hs, size_t i)
{
    return hs->text.p + hs->h[i].name;
}

static const char *header_value(const struct headers *hs, size_t i)
{
    return text_at(hs, hs->h[i].value);
}

static const char *headers_get(const struct headers *hs, const char *name)
{
    for (size_t i = 0; i < hs->n; i++)
        if (strcasecmp(header_name(hs, i), name) == 0)
            return header_value(hs, i);
    return NULL;
}

/* Tokens in the order they are looked up in: by length, then by their
 * bytes regardless of case. */
static int token_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    if (alen != blen)
        return alen < blen ? -1 : 1;
    return strncasecmp(a, b, alen);
}

static int token_sort(const void *x, const void *y)
{
    const struct token *a = x, *b = y;
    return token_cmp(a->p, a->len, b->p, b->len);
}

/* Whether any of the message's Connection headers (there may be several,
 * each a list) names `name`: a binary search of what connection_names
 * sorted, so n fields cost n log t for t names listed, not n times the
 * lists (each field was looked for in every list: with one naming a
 * field, a response of 4,000 fields cost 43 ms, now 0.2 ms). */
static bool named_by_connection(const struct headers *hs, const char *name)
{
    size_t len = strlen(name);
    size_t lo = 0, hi = hs->n_tokens;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = token_cmp(name, len, hs->tokens[mid].p, hs->tokens[mid].len);
        if (c == 0)
            return true;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return false;
}

/* RFC 9110 7.6.1: these apply to one connection only, and so do the
 * headers the message's Connection headers name (`connection`: the
 * message's headers when they name any, looked up once per message).
 * Framing is the proxy's own. */
static bool hop_by_hop(const struct headers *connection, const char *name)
{
    static const struct {
        const char *name;
        size_t len;
    } hop[] = {
        {"connection", 10}, {"keep-alive", 10},     {"proxy-connection", 16},
        {"te", 2},          {"trailer", 7},         {"transfer-encoding", 17},
        {"upgrade", 7},     {"content-length", 14},
    };
    /* lengths first: most names differ from all of these in length, and
     * the comparisons were a fiftieth of the proxy's time */
    size_t len = strlen(name);
    for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
        if (hop[i].len == len && strcasecmp(name, hop[i].name) == 0)
            return true;
    /* Proxy-Connection, Proxy-Authorization... are for this hop; and a
     * bare "Proxy" header would become HTTP_PROXY to a CGI upstream
     * (httpoxy), which it would take for its own outgoing proxy */
    if (len >= 5 && strncasecmp(name, "proxy", 5) == 0 &&
        (len == 5 || name[5] == '-'))
        return true;
    return connection && named_by_connection(connection, name);
}

/* Adds a token to hs's list. */
static void token_add(struct headers *hs, const char *p, size_t len)
{
    if (hs->n_tokens == hs->tokens_cap) {
        hs->tokens_cap = hs->tokens_cap ? 2 * hs->tokens_cap : 8;
        hs->tokens = realloc(hs->tokens, hs->tokens_cap * sizeof *hs->tokens);
        if (!hs->tokens)
            abort(); /* a demo: out of memory ends it */
    }
    hs->tokens[hs->n_tokens++] = (struct token){.p = p, .len = len};
}

/* The message's headers, with the names its Connection headers list
 * gathered and sorted for named_by_connection, when they name any
 * beyond the fixed list; else NULL, as for "keep-alive" alone (what
 * nginx sends on every response), so no header name is looked up. */
static const struct headers *connection_names(struct headers *hs)
{
    hs->n_tokens = 0;
    bool beyond = false;
    for (size_t i = 0; i < hs->n; i++) {
        if (strcasecmp(header_name(hs, i), "connection") != 0)
            continue;
        for (const char *p = header_value(hs, i); *p;) {
            while (*p == ' ' || *p == '\t' || *p == ',')
                p++;
            const char *e = p;
            while (*e && *e != ',')
                e++;
            const char *t = e;
            while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
                t--;
            if (t > p) {
                token_add(hs, p, (size_t)(t - p));
                beyond = beyond ||
                         token_cmp(p, (size_t)(t - p), "keep-alive", 10) != 0;
            }
            p = e;
        }
    }
    if (!beyond)
        return NULL;
    qsort(hs->tokens, hs->n_tokens, sizeof *hs->tokens, token_sort);
    return hs;
}

/* RFC 9112 5.1: no whitespace goes between a field's name and its colon,
 * and a proxy removes any from a response before passing it on.
 * libhttp-parser (built without HTTP_PARSER_STRICT, as Debian's is) takes
 * spaces into a name, and frames by "Content-Length " or
 * "Transfer-Encoding " all the same, while the name as written is none of
 * the hop-by-hop ones: it went to the client beside the proxy's own
 * framing (a 204 carried a length; an HTTP/1.0 client, read until the
 * close, was told chunked). Cuts each name's trailing spaces (a NUL over
 * the first: the rest of the string is dead text); false when a space is
 * left inside one, or nothing but spaces was there (" : v", read after a
 * bare CR), which is no field name (a token) at all. */
static bool headers_trim_names(struct headers *hs)
{
    for (size_t i = 0; i < hs->n; i++) {
        char *name = hs->text.p + hs->h[i].name;
        size_t len = strlen(name);
        while (len > 0 && name[len - 1] == ' ')
            len--;
        name[len] = '\0';
        if (len == 0 || memchr(name, ' ', len))
            return false;
    }
    return true;
}

/* Appends "name: value\r\n". */
static void add_header(struct px_buf *b, const char *name, const char *value)
{
    px_buf_adds(b, name);
    px_buf_add(b, ": ", 2);
    px_buf_adds(b, value);
    px_buf_add(b, "\r\n", 2);
}

/* ---- the request's head, checked before it is parsed ---- */

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
static const char too_many_fields[] =
    "more than " DIGITS(FIELDS_MAX) " header fields in the request";

/* Where the check of a request's head stands: the offset reached in the
 * client's input (the head starts it), and the line it is in. */
struct head_scan {
    size_t at;
    size_t line;  /* bytes of the current line so far */
    bool begun;   /* the request line started (empty lines may lead) */
    bool fields;  /* past the request line */
    bool in_name; /* in a field's name: before its colon */
    bool cr;      /* the last byte was a CR */
    bool done;    /* the head's end is in: at is its length */
    size_t fields_n; /* field lines begun */
};

/* Checks the head at the start of p[0, len), on from where the last call
 * stopped, for what libhttp-parser lets through but another parser may
 * read another way, so that nothing ambiguous goes upstream: a bare LF or
 * CR as a line's end (RFC 9112 2.2), a line folded onto the one before it
 * (obs-fold, 5.2), space between a field's name and its colon (5.1: a
 * name "Transfer-Encoding " that one reader ignores and another takes for
 * the framing). Returns 0 until the head's end is in, 1 once it is (its
 * bytes are fine to parse), or the status that refuses the request. */
static int head_scan(struct head_scan *s, const char *p, size_t len)
{
    for (; s->at < len; s->at++) {
        char b = p[s->at];
        if (s->at >= HEAD_MAX)
            return s->fields ? 431 : 414;
        if (s->cr && b != '\n')
            return 400;
        if (b == '\r') {
            s->cr = true;
            continue;
        }
        if (b == '\n') {
            if (!s->cr)
                return 400;
            s->cr = false;
            if (s->line == 0 && s->begun) {
                s->at++;
                s->done = true;
                return 1;
            }
            s->fields = s->begun;
            s->in_name = s->fields;
            s->line = 0;
            continue;
        }
        if (s->fields && s->line == 0 && (b == ' ' || b == '\t'))
            return 400;
        if (s->fields && s->line == 0 && ++s->fields_n > FIELDS_MAX)
            return 431;
        if (s->in_name && b == ':')
            s->in_name = false;
        else if (s->in_name && (b == ' ' || b == '\t'))
            return 400;
        s->begun = true;
        if (++s->line > URI_MAX && !s->fields)
            return 414;
    }
    return 0;
}

/* ---- a chunked body, checked before it is parsed ---- */

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

static void chunk_scan_init(struct chunk_scan *s, uint64_t max)
{
    *s = (struct chunk_scan){
        .max = max,
        .trailer = {.begun = true, .fields = true, .in_name = true}};
}

static int chunk_refuse(struct chunk_scan *s, int status, const char *why)
{
    s->why = why;
    return status;
}

static int hex_digit(char b)
{
    if (b >= '0' && b <= '9')
        return b - '0';
    if (b >= 'a' && b <= 'f')
        return b - 'a' + 10;
    if (b >= 'A' && b <= 'F')
        return b - 'A' + 10;
    return -1;
}

/* Checks the chunked body at the start of p[0, len), on from where the
 * last call stopped: each chunk's size in hex, its extensions (no CR, LF or
 * other control byte), the CRLF ending its line, exactly `size` bytes of
 * data and the CRLF after them; then the trailer section as head_scan
 * checks a head's fields. Returns 0 until the body's end is in, 1 once it
 * is (at is its length), or the status refusing it (400; 413 past max;
 * 431 for a trailer section past HEAD_MAX), with why set. s->ok says how
 * much of p the parser may see: a trailer section only once it is whole. */
static int chunk_scan(struct chunk_scan *s, const char *p, size_t len)
{
    while (s->at < len && s->part != CK_DONE) {
        if (s->part == CK_DATA) {
            size_t n = len - s->at < s->size ? len - s->at : (size_t)s->size;
            s->at += n;
            s->size -= n;
            if (s->size == 0)
                s->part = CK_DATA_CR;
            continue;
        }
        if (s->part == CK_TRAILER) {
            size_t start = s->at - s->trailer.at;
            int v = head_scan(&s->trailer, p + start, len - start);
            s->at = start + s->trailer.at;
            if (v > 1)
                return chunk_refuse(
                    s, v,
                    v == 400 ? "a bare CR or LF, a folded line or space "
                               "before a colon in the trailer section"
                             : "the trailer section is too long");
            if (v == 1)
                s->part = CK_DONE;
            continue;
        }
        char b = p[s->at++];
        switch (s->part) {
        case CK_SIZE: {
            int d = hex_digit(b);
            if (d >= 0 && s->size > (UINT64_MAX >> 4))
                return chunk_refuse(s, 400, "a chunk size too large");
            if (d >= 0)
                s->size = s->size * 16 + (uint64_t)d;
            else if (s->line > 0 && (b == ';' || b == ' ' || b == '\t'))
                s->part = CK_EXT;
            else if (s->line > 0 && b == '\r')
                s->part = CK_SIZE_LF;
            else
                return chunk_refuse(s, 400, "a chunk size that is not hex");
            break;
        }
        case CK_EXT:
            if (b == '\r')
                s->part = CK_SIZE_LF;
            else if (((unsigned char)b < 0x20 && b != '\t') || b == 0x7f)
                return chunk_refuse(s, 400,
                                    "a bare LF or a control byte in a "
                                    "chunk's line");
            break;
        case CK_SIZE_LF:
            if (b != '\n')
                return chunk_refuse(s, 400, "a bare CR in a chunk's line");
            if (s->size > s->max - s->total)
                return chunk_refuse(s, 413,
                                    "the request's body is larger than the "
                                    "proxy takes");
            s->total += s->size;
            s->part = s->size ? CK_DATA : CK_TRAILER;
            s->line = 0;
            continue;
        case CK_DATA_CR:
            if (b != '\r')
                return chunk_refuse(s, 400, "chunk data not followed by CRLF");
            s->part = CK_DATA_LF;
            continue;
        case CK_DATA_LF:
            if (b != '\n')
                return chunk_refuse(s, 400, "chunk data not followed by CRLF");
            s->part = CK_SIZE;
            continue;
        default:
            break;
        }
        if (++s->line > CHUNK_LINE_MAX)
            return chunk_refuse(s, 400, "a chunk's line is too long");
    }
    s->ok = s->part == CK_TRAILER ? s->at - s->trailer.at : s->at;
    return s->part == CK_DONE;
}

/* The parser consumed n bytes from the input's start. */
static void chunk_scan_consumed(struct chunk_scan *s, size_t n)
{
    s->at -= n;
    s->ok -= n;
}

/* ---- the proxy and its clients ---- */

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
    bool stale_retried; /* sent again once after a stale connection */
    /* why rs_headers_done refused the response's head, or NULL */
    const char *resp_refused;
    bool resp_name_space; /* a space came in one of its field names */
    /* the client left while a small response was still coming: it is
     * read to its end for nobody (what is meant for the client is
     * dropped), so the connection goes back whole */
    bool orphan;
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
 * at PIPELINED_MAX (on_client_readable), and TCP holds the rest back. So
 * an upload costs a client's buffers, not its size, and a slow upstream
 * slows its client down. */
#define UPSTREAM_HIGH (64 * 1024)
/* The most of a request's body kept for a retry on another connection
 * (an idempotent request whose connection failed before any response
 * byte): past it the request is not sent again but answered 502. */
#define RETRY_MAX (64 * 1024)

/* Where bytes for the client go (dropped by client_flush once it left). */
static struct px_buf *client_out(struct client *c)
{
    return &c->out;
}

/* Bytes on their way to the client. */
static size_t client_queued(struct client *c)
{
    return px_buf_size(&c->out);
}

static const char *client_url(const struct client *c)
{
    return c->url == NO_VALUE ? NULL : c->req_headers.text.p + c->url;
}

/* The upstream's reading, stopped while a slow client catches up. */
static bool upstream_paused(struct client *c)
{
    return c->raw ? !event_pending(&c->urd, EV_READ, NULL)
                  : !(bufferevent_get_enabled(c->ub) & EV_READ);
}

static void upstream_pause(struct client *c)
{
    if (upstream_paused(c))
        return;
    c->px->stats.paused++;
    if (c->raw)
        event_del(&c->urd);
    else
        bufferevent_disable(c->ub, EV_READ);
}

/* Reading again, with tv as the upstream's allowed silence. */
static void upstream_resume(struct client *c, const struct timeval *tv)
{
    if (c->raw) {
        event_add(&c->urd, tv);
        return;
    }
    bufferevent_set_timeouts(c->ub, tv, NULL);
    bufferevent_enable(c->ub, EV_READ);
}

/* A send failed: the client closed or reset. What that means depends on
 * the exchange (client_gone), decided from rd's callback. */
static void client_lost(struct client *c)
{
    px_buf_clear(&c->out);
    c->gone = true;
    event_active(&c->rd, EV_READ, 0);
}

/* Writes what the socket takes, at once (one send, and no write event to
 * add and remove when it takes all, the usual case); the rest waits for
 * the write event. Once the client took everything, an upstream whose
 * reading was paused for it resumes. */
static void client_send(struct client *c)
{
    while (px_buf_size(&c->out) > 0) {
        ssize_t n = send(c->fd, px_buf_data(&c->out), px_buf_size(&c->out),
                         MSG_NOSIGNAL);
        if (n > 0) {
            px_buf_consume(&c->out, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!event_pending(&c->wr, EV_WRITE, NULL))
                event_add(&c->wr, NULL);
            return;
        }
        client_lost(c);
        break;
    }
    if (event_pending(&c->wr, EV_WRITE, NULL))
        event_del(&c->wr);
    if (c->state == C_EXCHANGING && c->ub && upstream_paused(c))
        upstream_resume(c, &c->px->response_tv); /* the client caught up */
}

/* Sends what was gathered, unless the write event already waits to. */
static void client_flush(struct client *c)
{
    if (c->orphan || c->fd < 0 || c->gone) {
        px_buf_clear(&c->out);
        return;
    }
    if (px_buf_size(&c->out) == 0 || event_pending(&c->wr, EV_WRITE, NULL))
        return;
    client_send(c);
}

static void client_free(struct client *c);
static void client_kill(struct client *c);
static bool client_orphan(struct client *c);
static void client_next(struct client *c);
static void start_exchange(struct client *c);
static bool give_back(struct client *c, enum give how);

/* The Connection header of an answer to the client: close when the
 * connection ends after it; keep-alive to an HTTP/1.0 client that keeps
 * it, as such a connection persists only when each answer says so (RFC
 * 9112 9.3); none otherwise, as HTTP/1.1's default is to keep it. */
static const char *connection_line(const struct client *c, bool close)
{
    if (close)
        return "Connection: close\r\n";
    if (c->req_parser.http_major == 1 && c->req_minor == 0)
        return "Connection: keep-alive\r\n";
    return "";
}

static void client_write_error(struct client *c, int status, const char *reason,
                               const char *extra_header, const char *body)
{
    struct px_buf *out = client_out(c);
    /* a client holding its body back for a go-ahead it never got will not
     * send it: the answer ends the connection */
    if (c->expects_continue && !c->continue_sent && !c->req_complete)
        c->req_keep_alive = false;
    px_buf_printf(out,
                  "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
                  "Content-Length: %zu\r\n%s%s\r\n",
                  status, reason, strlen(body) + 1,
                  extra_header ? extra_header : "",
                  connection_line(c, !c->req_keep_alive));
    /* an answer to HEAD ends at its head (RFC 9110 9.3.2): a client reads
     * no body after it, and would take this one for the next response */
    if (c->method != HTTP_HEAD)
        px_buf_printf(out, "%s\n", body);
}

/* Refuses the request being read with status (400, 408, 413, 414, 431,
 * 505) and why, and closes the client once that is written: what is left
 * of the request cannot be told from what would follow it. An exchange
 * its body was going to is abandoned (half a request in it, through no
 * fault of the upstream); a client that has (part of) its answer already
 * gets no other, the close says it. */
static void client_refuse(struct client *c, int status, const char *why)
{
    bool cut = c->state == C_EXCHANGING && c->head_sent;
    if (cut)
        c->px->stats.aborted++;
    give_back(c, GIVE_ABANDON);
    c->req_keep_alive = false;
    if (!cut && !c->req_answered)
        client_write_error(c, status,
                           status == 408   ? "Request Timeout"
                           : status == 413 ? "Content Too Large"
                           : status == 414 ? "URI Too Long"
                           : status == 431 ? "Request Header Fields Too Large"
                           : status == 505 ? "HTTP Version Not Supported"
                                           : "Bad Request",
                           NULL, why);
    c->state = C_FLUSHING;
}

/* ---- the request, from the client ---- */

static int rq_begin(http_parser *p)
{
    struct client *c = p->data;
    headers_clear(&c->req_headers);
    headers_clear(&c->req_trailers);
    c->url = NO_VALUE;
    c->req_complete = false;
    c->req_too_big = false;
    c->refused = NULL;
    c->req_begun = true;
    c->req_head_parsed = false;
    c->continue_sent = false;
    /* answered before its head is in: as a GET, with a body */
    c->method = HTTP_GET;
    return 0;
}

static int rq_url(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    if (c->url == NO_VALUE)
        c->url = text_start(&c->req_headers, at, len);
    else
        text_continue(&c->req_headers, at, len); /* the last string */
    return 0;
}

/* A chunked body's trailer fields (RFC 9112 7.1.2) are kept apart,
 * never merged into the head: the parser hands them over as it does the
 * head's, and a trailer named Host went upstream as a second Host. They
 * go upstream as trailers (trailers_out). */
static struct headers *rq_fields(struct client *c)
{
    return c->req_head_parsed ? &c->req_trailers : &c->req_headers;
}

static int rq_field(http_parser *p, const char *at, size_t len)
{
    headers_field(rq_fields(p->data), at, len);
    return 0;
}

static int rq_value(http_parser *p, const char *at, size_t len)
{
    headers_value(rq_fields(p->data), at, len);
    return 0;
}

/* Why a parsed head is refused with 400 before anything goes upstream,
 * for what libhttp-parser lets through; NULL when it is not. */
static const char *head_refusal(const struct client *c, const http_parser *p)
{
    const struct headers *hs = &c->req_headers;
    bool http10 = p->http_major == 1 && p->http_minor == 0;
    /* faulty framing (RFC 9112 6.1), whatever it names and whatever
     * Content-Length says, as nginx has it too */
    if (http10 && headers_get(hs, "transfer-encoding"))
        return "Transfer-Encoding in an HTTP/1.0 request";
    /* RFC 9112 3.2: which host is meant must not be in doubt, as the
     * upstream (or a cache in front of it) may route or key by it */
    size_t hosts = 0;
    const char *host = NULL;
    for (size_t i = 0; i < hs->n; i++)
        if (strcasecmp(header_name(hs, i), "host") == 0) {
            hosts++;
            host = header_value(hs, i);
        }
    if (hosts > 1)
        return "more than one Host header";
    if (!host && !http10)
        return "no Host header (HTTP/1.1 requires one)";
    if (host && !px__host_valid(host, strlen(host)))
        return "the Host header is not a host and an optional port";
    struct px_target t;
    const char *url = client_url(c);
    if (url && px__target_split(url, &t) == PX_TARGET_INVALID)
        return "the target is not an http or https URI with a valid host "
               "and no userinfo";
    return NULL;
}

static int rq_headers_done(http_parser *p)
{
    struct client *c = p->data;
    c->method = p->method; /* its 400 too is framed for it */
    c->refused_status = 400;
    /* RFC 9112 2.3: this connection speaks HTTP/1.x. libhttp-parser
     * takes "HTTP/2.0" or "HTTP/0.9" (and, built without
     * HTTP_PARSER_STRICT, "HVTQ/2.0"), and the request went upstream as
     * an HTTP/1.1 one, where an HTTP/1.0 one with Transfer-Encoding is
     * refused: 505 for the version (RFC 9110 15.6.6; nginx's answer too) */
    if (p->http_major != 1) {
        c->refused = "the request's HTTP version is not 1.x";
        c->refused_status = 505;
        return -1;
    }
    c->refused = head_refusal(c, p);
    if (c->refused)
        return -1; /* the parser stops: client_parse answers 400 */
    c->req_connection = connection_names(&c->req_headers);
    c->req_minor = p->http_minor;
    /* a draining proxy closes each client after the exchange it is in */
    c->req_keep_alive = http_should_keep_alive(p) && !c->px->draining;
    c->req_chunked = (p->flags & F_CHUNKED) != 0;
    c->req_length = c->req_chunked ? ULLONG_MAX : p->content_length;
    c->req_head_parsed = true;
    /* its framing is checked before the parser reads on, and its size as
     * it grows: 413 once the chunks announce more than max_body */
    if (c->req_chunked)
        chunk_scan_init(&c->chunks, c->px->max_body);
    /* a length past max_body is refused as soon as the head is in
     * (request_head), with no go-ahead: the client need not send it */
    c->req_too_big =
        c->req_length != ULLONG_MAX && c->req_length > c->px->max_body;
    /* the go-ahead is the proxy's to give (go_ahead), once it is ready
     * for the body; Expect itself does not go upstream */
    const char *expect = headers_get(&c->req_headers, "expect");
    c->expects_continue =
        expect && strcasecmp(expect, "100-continue") == 0 && p->http_minor >= 1;
    /* the head is in: what becomes of the body is decided before the
     * parser reads on (request_head) */
    http_parser_pause(p, 1);
    return 0;
}

static void add_hex(struct px_buf *b, uint64_t v);

/* A piece of the body: on its way upstream (body_flush) when it goes
 * there, chunked again when it came chunked (its extensions dropped);
 * else read for nobody (the proxy answers the request, or did). */
static int rq_body(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    if (c->state != C_EXCHANGING || !c->ub)
        return 0;
    struct px_buf *r = &c->req;
    if (c->req_chunked) {
        add_hex(r, len);
        px_buf_add(r, "\r\n", 2);
    }
    px_buf_add(r, at, len);
    if (c->req_chunked)
        px_buf_add(r, "\r\n", 2);
    return 0;
}

static void trailers_out(struct client *c);
static void upstream_await(struct client *c);

static int rq_complete(http_parser *p)
{
    struct client *c = p->data;
    c->req_complete = true;
    c->req_begun = false;
    if (c->state == C_EXCHANGING && c->ub) {
        if (c->req_chunked)
            trailers_out(c);
        upstream_await(c); /* the whole request is with it */
    }
    /* one exchange at a time: what follows waits in the input */
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings request_settings = {
    .on_message_begin = rq_begin,
    .on_url = rq_url,
    .on_header_field = rq_field,
    .on_header_value = rq_value,
    .on_headers_complete = rq_headers_done,
    .on_body = rq_body,
    .on_message_complete = rq_complete,
};

/* Appends the Host an absolute-form target names. */
static void add_authority(struct px_buf *b, const struct px_target *t)
{
    px_buf_add(b, "Host: ", 6);
    px_buf_add(b, t->authority, t->authority_len);
    px_buf_add(b, "\r\n", 2);
}

/* Appends v in decimal (printf is a tenth of the proxy's own time). */
static void add_uint(struct px_buf *b, uint64_t v)
{
    char d[20];
    size_t n = 0;
    do {
        d[sizeof d - ++n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    px_buf_add(b, d + sizeof d - n, n);
}

static void add_hex(struct px_buf *b, uint64_t v)
{
    char d[16];
    size_t n = 0;
    do {
        d[sizeof d - ++n] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    px_buf_add(b, d + sizeof d - n, n);
}

/* The request's head as it goes upstream to c->up, framed as the client
 * framed its body (a length, or chunked: it streams). Built once the
 * upstream is known, as an HTTP/1.0 request may have no Host and HTTP/1.1
 * requires one: the upstream's own is given then. A target in absolute-form
 * goes in origin-form, its authority as the Host in place of the one that
 * came (RFC 9112 3.2.2). On a retry, what went of the body before follows
 * it. */
static void build_request(struct client *c)
{
    struct px_buf *r = &c->req;
    const struct headers *hs = &c->req_headers;
    const char *url = client_url(c);
    struct px_target t;
    bool absolute = url && px__target_split(url, &t) == PX_TARGET_ABSOLUTE;
    px_buf_clear(r);
    px_buf_adds(r, http_method_str((enum http_method)c->method));
    px_buf_add(r, " ", 1);
    if (absolute && t.path[0] != '/')
        px_buf_add(r, "/", 1);
    px_buf_adds(r, absolute ? t.path : url ? url : "/");
    px_buf_add(r, " HTTP/1.1\r\n", 11);
    const struct headers *connection = c->req_connection;
    size_t xff_at = 0, xff_n = 0; /* the client's X-Forwarded-For lines */
    bool host = false;
    for (size_t i = 0; i < hs->n; i++) {
        const char *name = header_name(hs, i);
        /* Host and X-Forwarded-For are the proxy's to set, whatever the
         * client's Connection lists: Host is the authority of the target
         * (RFC 9112 3.2), a field for every recipient, which RFC 9110
         * 7.6.1 forbids as a connection option; "Connection: host" had
         * the upstream's name sent instead, another target than the
         * client's. The client's X-Forwarded-For chain goes on before
         * its address, as when no Connection names it. */
        if (!host && strcasecmp(name, "host") == 0) {
            host = true;
            if (absolute)
                add_authority(r, &t);
            else
                add_header(r, name, header_value(hs, i));
            continue;
        }
        if (strcasecmp(name, "x-forwarded-for") == 0) {
            if (xff_n++ == 0)
                xff_at = i;
            continue;
        }
        if (hop_by_hop(connection, name))
            continue;
        if (strcasecmp(name, "expect") == 0)
            continue; /* answered by the proxy */
        add_header(r, name, header_value(hs, i));
    }
    if (!host && absolute) {
        add_authority(r, &t);
    } else if (!host && c->up) {
        const char *name = tide_group_upstream_name(c->up);
        add_header(r, "Host",
                   strncmp(name, "tls://", 6) == 0 ? name + 6 : name);
    }
    /* every line of the client's chain, in order, as one list (RFC 9110
     * 5.3): the last line alone went on, the addresses before it lost */
    px_buf_add(r, "X-Forwarded-For: ", 17);
    for (size_t i = xff_at; xff_n > 0; i++)
        if (i == xff_at ||
            strcasecmp(header_name(hs, i), "x-forwarded-for") == 0) {
            px_buf_adds(r, header_value(hs, i));
            px_buf_add(r, ", ", 2);
            xff_n--;
        }
    px_buf_adds(r, c->peer);
    px_buf_add(r, "\r\n", 2);
    if (c->req_chunked) {
        px_buf_add(r, "Transfer-Encoding: chunked\r\n", 28);
    } else if (c->req_length != ULLONG_MAX) {
        px_buf_add(r, "Content-Length: ", 16);
        add_uint(r, c->req_length);
        px_buf_add(r, "\r\n", 2);
    }
    px_buf_add(r, "\r\n", 2);
    px_buf_add(r, px_buf_data(&c->retry_body), px_buf_size(&c->retry_body));
}

/* The last chunk, and the trailer fields the client sent, as trailers
 * (RFC 9112 7.1.2), but for those a proxy controls, which never come from
 * a trailer: Host, the framing (Content-Length, Transfer-Encoding), the
 * hop-by-hop ones and those the head's Connection names, Expect and
 * X-Forwarded-For. Nothing else in them is new to the upstream: a client
 * may send any other field in its head. */
static void trailers_out(struct client *c)
{
    const struct headers *ts = &c->req_trailers;
    const struct headers *connection = c->req_connection;
    px_buf_add(&c->req, "0\r\n", 3);
    for (size_t i = 0; i < ts->n; i++) {
        const char *name = header_name(ts, i);
        if (!hop_by_hop(connection, name) && strcasecmp(name, "host") != 0 &&
            strcasecmp(name, "expect") != 0 &&
            strcasecmp(name, "x-forwarded-for") != 0)
            add_header(&c->req, name, header_value(ts, i));
    }
    px_buf_add(&c->req, "\r\n", 2);
}

enum { STATS_NONE, STATS_JSON, STATS_PROMETHEUS };

/* Whether url is the stats page, /_tidepool/stats with a query or none,
 * and in which format (format=prometheus among the query's parameters);
 * any other path, /_tidepool/statsx included, goes upstream. */
static int stats_page(const char *url)
{
    static const char path[] = "/_tidepool/stats";
    size_t n = sizeof path - 1;
    struct px_target t;
    if (url && px__target_split(url, &t) == PX_TARGET_ABSOLUTE)
        url = t.path;
    if (!url || strncmp(url, path, n) != 0 || (url[n] && url[n] != '?'))
        return STATS_NONE;
    for (const char *q = url[n] ? url + n + 1 : NULL; q;) {
        const char *e = strchr(q, '&');
        size_t len = e ? (size_t)(e - q) : strlen(q);
        if (len == 17 && strncmp(q, "format=prometheus", 17) == 0)
            return STATS_PROMETHEUS;
        q = e ? e + 1 : NULL;
    }
    return STATS_JSON;
}

/* A request the proxy answered itself (the stats page, or its refusal):
 * the client's next request may follow, or the answer is flushed and the
 * connection closed. Returns false for the close. */
static bool answered_here(struct client *c)
{
    c->px->stats.responses++;
    if (!c->req_keep_alive) {
        c->state = C_FLUSHING;
        return false;
    }
    c->req_complete = false;
    return true;
}

static void upstream_write(struct client *c, const char *p, size_t n);
static bool idempotent(unsigned method);

/* The body that went into c->req, on to the upstream, and kept for a
 * retry while there may be one: an idempotent request not retried yet, no
 * response byte yet, and no more than RETRY_MAX of it (past that the
 * request will not be sent again, and what was kept is let go). */
static void body_flush(struct client *c)
{
    size_t n = px_buf_size(&c->req);
    if (n == 0)
        return;
    upstream_write(c, px_buf_data(&c->req), n);
    if (!c->retry_outgrown && !(c->retried && c->stale_retried) &&
        !c->any_byte && idempotent(c->method)) {
        if (px_buf_size(&c->retry_body) + n <= RETRY_MAX) {
            px_buf_add(&c->retry_body, px_buf_data(&c->req), n);
        } else {
            c->retry_outgrown = true;
            px_buf_dispose(&c->retry_body);
        }
    }
    px_buf_clear(&c->req);
}

/* Whether what the client sent can be parsed now: while a request is read
 * here (its head, or a body for nobody), and while its body goes to an
 * upstream that takes it (less than UPSTREAM_HIGH queued); not while a
 * connection is being got, nor once the request is whole and its exchange
 * goes on (what follows waits its turn). */
static bool client_parsing(const struct client *c)
{
    if (c->state == C_READING)
        return true;
    return c->state == C_EXCHANGING && !c->req_complete && c->ub &&
           evbuffer_get_length(bufferevent_get_output(c->ub)) < UPSTREAM_HIGH;
}

static bool request_has_body(const struct client *c)
{
    return c->req_chunked || (c->req_length != ULLONG_MAX && c->req_length);
}

/* The proxy is ready for the body: a client that waits for a go-ahead gets
 * it, once. Not before: a request refused or answered first never has its
 * body sent (RFC 9110 10.1.1). */
static void go_ahead(struct client *c)
{
    if (c->expects_continue && !c->continue_sent && !c->req_complete &&
        request_has_body(c)) {
        px_buf_add(client_out(c), "HTTP/1.1 100 Continue\r\n\r\n", 25);
        c->continue_sent = true;
    }
}

/* The request's head is in (the parser stopped there). A length past the
 * limit gets 413 at once, a chunked body malformed in what came with the
 * head 400 before anything goes upstream; a request for the stats page is
 * answered here once its body was read for nobody; any other goes
 * upstream now, and its body after it as it comes. */
static void request_head(struct client *c)
{
    c->px->stats.requests++;
    if (c->req_too_big) {
        char why[96];
        snprintf(why, sizeof why,
                 "the request's body is larger than the proxy takes "
                 "(%zu bytes)",
                 c->px->max_body);
        client_refuse(c, 413, why);
        return;
    }
    if (c->req_chunked) {
        int v =
            chunk_scan(&c->chunks, px_buf_data(&c->in), px_buf_size(&c->in));
        if (v > 1) {
            client_refuse(c, v, c->chunks.why);
            return;
        }
    }
    if (stats_page(client_url(c))) {
        go_ahead(c);
        return;
    }
    c->retried = false;
    c->stale_retried = false;
    c->retry_outgrown = false;
    px_buf_clear(&c->retry_body);
    start_exchange(c);
}

/* Parses what the client sent, as far as the request's state lets it
 * (client_parsing): its head, checked whole first (head_scan); then its
 * body, a chunked one only as far as its framing is checked (chunk_scan),
 * going upstream a bounded piece at a time; then, once the request is
 * whole and answered, the next one. */
static void client_parse(struct client *c)
{
    struct px_buf *in = &c->in;
    while (px_buf_size(in) > 0 && client_parsing(c)) {
        /* the parser sees a head only once it is checked whole */
        size_t feed = px_buf_size(in);
        bool head_checked = c->scan.done;
        if (!head_checked) {
            int v = head_scan(&c->scan, px_buf_data(in), feed);
            if (v > 1) {
                client_refuse(c, v,
                              v == 400   ? "a bare CR or LF, a folded line or "
                                           "space before a colon in the head"
                              : v == 414 ? "the request line is too long"
                              : c->scan.fields_n > FIELDS_MAX
                                  ? too_many_fields
                                  : "the request's head is too long");
                return;
            }
            if (v == 0)
                return; /* more to come */
            feed = c->scan.at;
        } else if (c->req_chunked) {
            /* and a chunked body only as far as its framing is checked */
            int v = chunk_scan(&c->chunks, px_buf_data(in), feed);
            if (v > 1) {
                client_refuse(c, v, c->chunks.why);
                return;
            }
            feed = c->chunks.ok;
        }
        if (c->state == C_EXCHANGING && feed > UPSTREAM_HIGH)
            feed = UPSTREAM_HIGH;
        if (feed == 0)
            return; /* more to come */
        size_t used = http_parser_execute(&c->req_parser, &request_settings,
                                          px_buf_data(in), feed);
        if (!head_checked && used < feed &&
            HTTP_PARSER_ERRNO(&c->req_parser) == HPE_PAUSED) {
            /* stopped in rq_headers_done, at the head's last LF, which it
             * reads again to finish the head: its own checks after the
             * callback (a Transfer-Encoding not ending in chunked), and
             * no byte of the body */
            http_parser_pause(&c->req_parser, 0);
            used += http_parser_execute(&c->req_parser, &request_settings,
                                        px_buf_data(in) + used, feed - used);
        }
        enum http_errno err = HTTP_PARSER_ERRNO(&c->req_parser);
        px_buf_consume(in, used);
        if (c->req_complete) {
            c->scan = (struct head_scan){0}; /* the next request's */
            event_del(&c->timer);            /* and its own deadline */
        } else if (!head_checked)
            c->scan.at -= used;
        else if (c->req_chunked)
            chunk_scan_consumed(&c->chunks, used);
        if (err == HPE_PAUSED) {
            http_parser_pause(&c->req_parser, 0);
            err = HPE_OK;
        }
        if (err != HPE_OK) {
            client_refuse(c, c->refused ? c->refused_status : 400,
                          c->refused ? c->refused
                                     : http_errno_description(err));
            return;
        }
        /* the whole head went in, yet libhttp-parser did not end it: it
         * reads "GET /x H" as an HTTP/0.9 line and waits. The request
         * went upstream built from nothing (no method, no length). */
        if (!head_checked && !c->req_head_parsed) {
            client_refuse(c, 400, "the request line is not an HTTP/1.x one "
                                  "(method, target and version)");
            return;
        }
        body_flush(c);
        if (!head_checked)
            request_head(c);
        if (!c->req_complete)
            continue;
        if (c->state != C_READING)
            return; /* whole upstream (or refused); what follows waits */
        if (c->req_answered) {
            /* its answer went before its end: on to the next */
            c->req_answered = false;
            c->req_complete = false;
            continue;
        }
        int page_kind = stats_page(client_url(c));
        if (page_kind && c->method != HTTP_GET && c->method != HTTP_HEAD) {
            client_write_error(c, 405, "Method Not Allowed",
                               "Allow: GET, HEAD\r\n",
                               "the stats page answers GET and HEAD");
            if (!answered_here(c))
                return;
            continue;
        }
        if (page_kind) {
            struct evbuffer *page = evbuffer_new();
            if (!page)
                abort();
            px__stats_page(c->px->group, &c->px->stats, page,
                           page_kind == STATS_PROMETHEUS,
                           connection_line(c, !c->req_keep_alive),
                           c->method == HTTP_HEAD);
            size_t n = evbuffer_get_length(page);
            px_buf_add(client_out(c), evbuffer_pullup(page, -1), n);
            evbuffer_free(page);
            if (!answered_here(c))
                return;
            continue;
        }
    }
}

/* ---- the response, from the upstream ---- */

static int rs_begin(http_parser *p)
{
    struct client *c = p->data;
    headers_clear(&c->resp_headers);
    c->reason = NO_VALUE;
    c->resp_refused = NULL;
    c->resp_name_space = false;
    return 0;
}

static int rs_status(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    if (c->reason == NO_VALUE)
        c->reason = text_start(&c->resp_headers, at, len);
    else
        text_continue(&c->resp_headers, at, len); /* the last string */
    return 0;
}

static int rs_field(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    headers_field(&c->resp_headers, at, len);
    if (memchr(at, ' ', len))
        c->resp_name_space = true; /* rs_headers_done sees to it */
    return 0;
}

static int rs_value(http_parser *p, const char *at, size_t len)
{
    headers_value(&((struct client *)p->data)->resp_headers, at, len);
    return 0;
}

static bool no_body_status(unsigned s)
{
    return (s >= 100 && s < 200) || s == 204 || s == 304;
}

static int rs_headers_done(http_parser *p)
{
    struct client *c = p->data;
    unsigned status = p->status_code;
    /* libhttp-parser takes "20" for a status; RFC 9110 15 has three
     * digits, and a client reading a relayed "20" loses count of the
     * final answers (a status below 200 is not one) */
    if (status < 100) {
        c->resp_refused = "a status code of fewer than three digits";
        return -1;
    }
    if (c->resp_name_space && !headers_trim_names(&c->resp_headers)) {
        c->resp_refused = "a response header field's name with a space "
                          "inside it, or of spaces only";
        return -1;
    }
    bool head = c->method == HTTP_HEAD;
    bool no_body = head || no_body_status(status);
    bool has_length =
        p->content_length != ULLONG_MAX && !(p->flags & F_CHUNKED);
    const struct headers *hs = &c->resp_headers;
    /* an HTTP/1.0 client cannot read an interim response (RFC 9110 15.2):
     * it gets the final one alone */
    if (status >= 100 && status < 200 && c->req_minor == 0 &&
        c->req_parser.http_major == 1)
        return 1;
    struct px_buf *out = client_out(c);
    px_buf_add(out, "HTTP/1.1 ", 9);
    add_uint(out, status);
    px_buf_add(out, " ", 1);
    px_buf_adds(out, text_at(hs, c->reason));
    px_buf_add(out, "\r\n", 2);
    const struct headers *connection = connection_names(&c->resp_headers);
    for (size_t i = 0; i < hs->n; i++) {
        const char *name = header_name(hs, i);
        if (!hop_by_hop(connection, name))
            add_header(out, name, header_value(hs, i));
    }
    /* a body read until close, or from an HTTP/1.0 upstream without
     * keep-alive, ends the upstream connection */
    c->upstream_reusable = http_should_keep_alive(p);
    if (c->orphan && !no_body && !(status >= 100 && status < 200) &&
        (!has_length || p->content_length > ORPHAN_MAX))
        return -1; /* not worth reading for nobody: discard */
    if (status >= 100 && status < 200) {
        px_buf_add(out, "\r\n", 2);
        return 1;
    }
    c->chunked_out = false;
    if (no_body) {
        /* HEAD and 304 describe the body they would have had */
        const char *cl = headers_get(hs, "content-length");
        if (cl && status != 204)
            add_header(out, "Content-Length", cl);
    } else if (has_length) {
        px_buf_add(out, "Content-Length: ", 16);
        add_uint(out, p->content_length);
        px_buf_add(out, "\r\n", 2);
    } else if (c->req_minor >= 1 || c->req_parser.http_major > 1) {
        px_buf_add(out, "Transfer-Encoding: chunked\r\n", 28);
        c->chunked_out = true;
    } else {
        c->close_client = true; /* an HTTP/1.0 client: until close */
    }
    if (!c->req_keep_alive)
        c->close_client = true;
    px_buf_adds(out, connection_line(c, c->close_client));
    px_buf_add(out, "\r\n", 2);
    c->head_sent = true;
    /* 1: the parser expects no body. libhttp-parser reads one by a
     * Content-Length whatever the status, but 1xx, 204 and 304 (as any
     * answer to HEAD) end at their head (RFC 9112 6.3): a 304's length is
     * the body it describes, and reading it would wait for bytes that are
     * the next response's, or never come */
    return no_body ? 1 : 0;
}

/* Response bytes queued for a slow client at most before the upstream is
 * no longer read: a client that reads slowly holds one connection, not the
 * whole response in memory. Reading resumes once the client took it. */
#define OUTPUT_HIGH (256 * 1024)

static int rs_body(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    struct px_buf *out = client_out(c);
    if (client_queued(c) + len > OUTPUT_HIGH && c->ub && !c->orphan)
        upstream_pause(c);
    if (c->chunked_out) {
        add_hex(out, len);
        px_buf_add(out, "\r\n", 2);
        px_buf_add(out, at, len);
        px_buf_add(out, "\r\n", 2);
    } else {
        px_buf_add(out, at, len);
    }
    return 0;
}

static int rs_complete(http_parser *p)
{
    struct client *c = p->data;
    c->resp_chunks_on = false; /* a message's, not the next one's */
    if (p->status_code >= 100 && p->status_code < 200 && p->status_code != 101)
        return 0; /* an interim response: the real one follows */
    if (c->chunked_out)
        px_buf_add(client_out(c), "0\r\n\r\n", 5);
    c->resp_done = true;
    http_parser_pause(p, 1);
    return 0;
}

/* The head is in and answered (rs_headers_done): a chunked body that
 * follows is checked before the parser reads it (chunk_scan), so the
 * parser stops here. */
static int rs_head(http_parser *p)
{
    struct client *c = p->data;
    int rc = rs_headers_done(p);
    if (rc == 0 && (p->flags & F_CHUNKED)) {
        chunk_scan_init(&c->resp_chunks, UINT64_MAX);
        c->resp_chunks_on = true;
        http_parser_pause(p, 1);
    }
    return rc;
}

static const http_parser_settings response_settings = {
    .on_message_begin = rs_begin,
    .on_status = rs_status,
    .on_header_field = rs_field,
    .on_header_value = rs_value,
    .on_headers_complete = rs_head,
    .on_body = rs_body,
    .on_message_complete = rs_complete,
};

/* ---- the exchange ---- */

/* The upstream connection leaves the exchange: back to its pool when the
 * response is whole and the upstream keeps it, else destroyed, telling the
 * pool whose doing the end was, since its breaker and backoff judge the
 * upstream by it. */
static bool give_back(struct client *c, enum give how)
{
    bool keep = how == GIVE_RELEASE;
    bool stale = false;
    if (!c->ub)
        return false;
    bufferevent_setcb(c->ub, NULL, NULL, NULL, NULL);
    bufferevent_set_timeouts(c->ub, NULL, NULL);
    if (c->raw) {
        /* back as lent: the bufferevent reading, its event added before
         * ours is removed, so the descriptor's read interest never leaves
         * epoll (no epoll_ctl either way). Reading on tells the factory
         * nothing was left in the socket (<tidepool/tls.h>): so only when
         * the last read came short of its room; after a full one there
         * may be more, and reading stays off for the factory to look. */
        if (keep && c->drained &&
            !(bufferevent_get_enabled(c->ub) & EV_READ))
            bufferevent_enable(c->ub, EV_READ);
        event_del(&c->urd);
        px_buf_clear(&c->uin);
        c->raw = false;
    }
    switch (how) {
    case GIVE_RELEASE:
        (void)tide_group_release(c->px->group, c->up, c->ub);
        break;
    case GIVE_RETIRE:
        c->px->stats.retired++;
        (void)tide_group_retire(c->px->group, c->up, c->ub);
        break;
    case GIVE_ABANDON:
        c->px->stats.abandoned++;
        (void)tide_group_abandon(c->px->group, c->up, c->ub);
        break;
    case GIVE_DISCARD:
        c->px->stats.discarded++;
        (void)tide_group_discard(c->px->group, c->up, c->ub);
        break;
    case GIVE_STALE:
        stale = tide_group_stale(c->px->group, c->up, c->ub) == TIDE_STALE;
        if (stale)
            c->px->stats.stale++;
        else
            c->px->stats.discarded++;
        break;
    }
    c->ub = NULL;
    c->up = NULL;
    return stale;
}

static bool idempotent(unsigned method)
{
    return method == HTTP_GET || method == HTTP_HEAD || method == HTTP_PUT ||
           method == HTTP_DELETE || method == HTTP_OPTIONS ||
           method == HTTP_TRACE;
}

static void client_pump(struct client *c);

static void exchange_failed(struct client *c, const char *why)
{
    if (c->orphan) {
        /* read for nobody, but it failed */
        (void)give_back(c, c->any_byte ? GIVE_DISCARD : GIVE_STALE);
        client_kill(c);
        return;
    }
    /* No byte of the response came: on a connection that served before,
     * the upstream had closed it a moment before (stale, no failure of
     * its own), and an idempotent request goes again at once, once, as
     * it does once after a failure */
    bool stale = give_back(c, c->any_byte ? GIVE_DISCARD : GIVE_STALE);
    bool again = !c->any_byte && idempotent(c->method) &&
                 !(stale ? c->stale_retried : c->retried);
    if (again && !c->retry_outgrown) {
        if (stale)
            c->stale_retried = true;
        else
            c->retried = true;
        c->px->stats.retries++;
        start_exchange(c);
        client_pump(c); /* the rest of its body, as it comes */
        return;
    }
    if (c->head_sent) {
        /* half a response is out: only closing tells the client */
        c->px->stats.aborted++;
        client_kill(c);
        return;
    }
    c->px->stats.errors_502++;
    char body[512];
    if (again)
        snprintf(body, sizeof body,
                 "%s (not sent again: its body was past the %d KiB kept for "
                 "a retry)",
                 why, RETRY_MAX / 1024);
    else
        snprintf(body, sizeof body, "%s", why);
    client_write_error(c, 502, "Bad Gateway", NULL, body);
    client_next(c);
}

/* Parses what the upstream sent, a chunked body only as far as its
 * framing is checked. A bad response fails the exchange (exchange_failed:
 * the connection discarded); what this call queued of it for the client
 * is taken back when none of the response had been sent yet, so the
 * client gets a 502 rather than half an answer. */
static void upstream_parse(struct client *c)
{
    struct evbuffer *in = c->raw ? NULL : bufferevent_get_input(c->ub);
    size_t len = c->raw ? px_buf_size(&c->uin) : evbuffer_get_length(in);
    if (len == 0)
        return;
    c->any_byte = true;
    const char *data = c->raw ? px_buf_data(&c->uin)
                              : (const char *)evbuffer_pullup(in, (ssize_t)len);
    bool head_was_sent = c->head_sent;
    size_t queued = px_buf_size(&c->out);
    size_t used = 0;
    enum http_errno err = HPE_OK;
    const char *bad = NULL; /* the chunked framing's fault */
    while (used < len && !c->resp_done) {
        size_t feed = len - used;
        bool scanned = c->resp_chunks_on;
        if (scanned) {
            int v = chunk_scan(&c->resp_chunks, data + used, feed);
            if (v > 1) {
                bad = c->resp_chunks.why;
                break;
            }
            feed = c->resp_chunks.ok;
        }
        size_t n =
            feed ? http_parser_execute(&c->resp_parser, &response_settings,
                                       data + used, feed)
                 : 0;
        used += n;
        if (scanned)
            chunk_scan_consumed(&c->resp_chunks, n);
        err = HTTP_PARSER_ERRNO(&c->resp_parser);
        if (err == HPE_PAUSED) {
            err = HPE_OK;
            if (!c->resp_done) {
                /* stopped in rs_head, at the head's last LF, which it
                 * reads again: that byte, then the body's check */
                http_parser_pause(&c->resp_parser, 0);
                used += http_parser_execute(&c->resp_parser, &response_settings,
                                            data + used, 1);
            }
            continue;
        }
        if (err != HPE_OK || n == 0)
            break; /* a fault, or more to come */
    }
    if (c->raw)
        px_buf_consume(&c->uin, used);
    else
        evbuffer_drain(in, used);
    if (c->orphan)
        px_buf_clear(&c->out); /* for nobody */
    if (err != HPE_OK || bad) {
        if (c->orphan && err == HPE_CB_headers_complete) {
            client_kill(c); /* rs_headers_done: not worth reading */
            return;
        }
        if (!head_was_sent && !c->orphan) {
            px_buf_truncate(&c->out, queued);
            c->head_sent = false;
        }
        char why[160];
        if (bad)
            snprintf(why, sizeof why, "a malformed chunked response: %s", bad);
        exchange_failed(c, bad               ? why
                           : c->resp_refused ? c->resp_refused
                                             : http_errno_description(err));
        return;
    }
    if (!c->resp_done)
        return;
    /* bytes after the response to our one request: the upstream's fault.
     * A response that came before the whole request went (a 403 to an
     * upload) served, but the rest of the request would go ahead of the
     * next one: retired, not released (which would be refused, a failure
     * to the breaker); the rest of its body is read for nobody */
    bool unsent = !c->req_complete ||
                  evbuffer_get_length(bufferevent_get_output(c->ub)) > 0;
    give_back(c, len != used                       ? GIVE_DISCARD
                 : c->upstream_reusable && !unsent ? GIVE_RELEASE
                                                   : GIVE_RETIRE);
    c->px->stats.responses++;
    client_next(c);
}

static void on_upstream_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct client *c = arg;
    upstream_parse(c);
    if (c->state != C_DEAD)
        client_flush(c);
}

static void upstream_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct client *c = arg;
    if (what & BEV_EVENT_TIMEOUT) {
        if (c->orphan) {
            client_kill(c); /* the second the proxy gave it ran out */
            return;
        }
        give_back(c, GIVE_DISCARD);
        if (c->head_sent) {
            c->px->stats.aborted++;
            client_kill(c);
            return;
        }
        c->px->stats.errors_504++;
        client_write_error(c, 504, "Gateway Timeout", NULL,
                           "the upstream did not answer in time");
        client_next(c);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        upstream_parse(c);
        if (c->state != C_EXCHANGING || !c->ub)
            return; /* finished (or failed) on the bytes before the close */
        /* EOF ends a body read until close; a reset or a read error cuts
         * it, and the client must see it cut, not ended */
        if (!(what & BEV_EVENT_ERROR))
            http_parser_execute(&c->resp_parser, &response_settings, NULL, 0);
        if (c->resp_done) {
            give_back(c, GIVE_RETIRE); /* a body until close: served */
            c->px->stats.responses++;
            client_next(c);
            return;
        }
        exchange_failed(c, "the upstream closed the connection");
    }
}

static void on_upstream_event(struct bufferevent *bev, short what, void *arg)
{
    struct client *c = arg;
    upstream_event(bev, what, c);
    if (c->state != C_DEAD)
        client_flush(c);
}

/* A raw upstream's socket is readable, or was silent for response_tv. */
static void on_upstream_readable(evutil_socket_t fd, short what, void *arg)
{
    struct client *c = arg;
    if (what & EV_TIMEOUT) {
        upstream_event(c->ub, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, c);
    } else {
        /* as much as there is room for: level-triggered, the loop comes
         * back for the rest */
        px_buf_reserve(&c->uin, 16384);
        size_t room = c->uin.cap - c->uin.len;
        ssize_t n = recv(fd, c->uin.p + c->uin.len, room, 0);
        c->drained = n >= 0 && (size_t)n < room;
        if (n < 0 &&
            (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (n > 0) {
            c->uin.len += (size_t)n;
            upstream_parse(c);
        } else {
            upstream_event(c->ub,
                           BEV_EVENT_READING |
                               (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR),
                           c);
        }
    }
    if (c->state != C_DEAD)
        client_flush(c);
}

/* Writes to the upstream: straight to its socket when nothing is queued
 * before it on plain TCP, as the client's answers are; a TLS bufferevent's
 * socket carries records, so it writes through it, and the bufferevent
 * writes what the socket did not take (and finds a failure doing so). */
static void upstream_write(struct client *c, const char *p, size_t n)
{
    size_t sent = 0;
    if (!bufferevent_openssl_get_ssl(c->ub) &&
        evbuffer_get_length(bufferevent_get_output(c->ub)) == 0) {
        ssize_t k = send(bufferevent_getfd(c->ub), p, n, MSG_NOSIGNAL);
        sent = k > 0 ? (size_t)k : 0;
    }
    if (sent < n)
        bufferevent_write(c->ub, p + sent, n - sent);
}

/* The whole request is with the upstream: its silence counts from now
 * (response_tv). While the body was still coming from the client the
 * upstream had nothing to answer; a write timeout bounded one that stopped
 * taking it. */
static void upstream_await(struct client *c)
{
    if (c->awaiting)
        return;
    c->awaiting = true;
    if (upstream_paused(c))
        return; /* upstream_resume sets it */
    if (c->raw)
        event_add(&c->urd, &c->px->response_tv);
    else
        bufferevent_set_timeouts(c->ub, &c->px->response_tv,
                                 &c->px->response_tv);
}

/* The upstream took what was queued for it: more of the body may go. */
static void on_upstream_written(struct bufferevent *bev, void *arg)
{
    (void)bev;
    client_pump(arg);
}

static void send_upstream(struct client *c)
{
    build_request(c);
    http_parser_init(&c->resp_parser, HTTP_RESPONSE);
    c->resp_parser.data = c;
    c->any_byte = false;
    c->head_sent = false;
    c->resp_done = false;
    c->chunked_out = false;
    c->resp_chunks_on = false;
    /* Only when not enabled already (a connection is lent enabled):
     * libevent adds the write event on every enable, whatever is queued,
     * so each request would cost two epoll_ctl and a wake-up to find
     * nothing to write. */
    short both = EV_READ | EV_WRITE;
    if ((bufferevent_get_enabled(c->ub) & both) != both)
        bufferevent_enable(c->ub, both);
    c->drained = false;
    c->raw = !bufferevent_openssl_get_ssl(c->ub) &&
             evbuffer_get_length(bufferevent_get_input(c->ub)) == 0;
    /* a body to come: the upstream's silence counts once it is all there
     * (upstream_await), its taking it meanwhile, and each time it took
     * what was queued more goes (on_upstream_written) */
    bool whole = c->req_complete || !request_has_body(c);
    c->awaiting = whole;
    const struct timeval *silence = whole ? &c->px->response_tv : NULL;
    bufferevent_data_cb written = whole ? NULL : on_upstream_written;
    if (c->raw) {
        /* ours added before the bufferevent's read event is removed: the
         * descriptor's read interest stays in epoll, no epoll_ctl */
        event_assign(&c->urd, c->px->base, bufferevent_getfd(c->ub),
                     EV_READ | EV_PERSIST, on_upstream_readable, c);
        event_add(&c->urd, silence);
        bufferevent_disable(c->ub, EV_READ);
        bufferevent_setcb(c->ub, NULL, written, on_upstream_event, c);
        if (!whole)
            bufferevent_set_timeouts(c->ub, NULL, &c->px->response_tv);
    } else {
        bufferevent_setcb(c->ub, on_upstream_read, written, on_upstream_event,
                          c);
        bufferevent_set_timeouts(c->ub, silence,
                                 whole ? NULL : &c->px->response_tv);
    }
    go_ahead(c);
    /* one write for the head (and on a retry what went of the body) */
    upstream_write(c, px_buf_data(&c->req), px_buf_size(&c->req));
    px_buf_clear(&c->req);
}

static void acquired(struct tide_group *g, int status,
                     struct tide_group_upstream *u, void *resource,
                     const struct tide_why *why, void *arg)
{
    (void)g;
    struct client *c = arg;
    c->acquiring = NULL;
    if (status == 0) {
        c->up = u;
        c->ub = resource;
        c->state = C_EXCHANGING;
        send_upstream(c);
        return;
    }
    char body[512];
    if (status == TIDE_ETIMEDOUT) {
        c->px->stats.errors_504++;
        client_write_error(c, 504, "Gateway Timeout", NULL,
                           "no upstream connection within the timeout");
    } else if (status == TIDE_EUNAVAILABLE) {
        c->px->stats.errors_503++;
        int64_t secs = (why->retry_after + 999999999) / 1000000000;
        char retry[64];
        snprintf(retry, sizeof retry, "Retry-After: %" PRId64 "\r\n",
                 secs > 0 ? secs : 1);
        snprintf(body, sizeof body, "upstream unavailable: %s", why->message);
        client_write_error(c, 503, "Service Unavailable", retry, body);
    } else {
        c->px->stats.errors_502++;
        snprintf(body, sizeof body, "cannot connect to %s: %s",
                 u ? tide_group_upstream_name(u) : "the upstream",
                 why->message);
        client_write_error(c, 502, "Bad Gateway", NULL, body);
    }
    client_next(c);
}

static void on_acquired(struct tide_group *g, int status,
                        struct tide_group_upstream *u, void *resource,
                        const struct tide_why *why, void *arg)
{
    struct client *c = arg;
    acquired(g, status, u, resource, why, c);
    if (c->state != C_DEAD)
        client_pump(c); /* its body, as it comes */
}

static void start_exchange(struct client *c)
{
    /* an idle connection at once saves the trips through the loop */
    struct tide_group_upstream *u;
    void *resource;
    if (tide_group_try_acquire(c->px->group, &u, &resource) == 0) {
        c->up = u;
        c->ub = resource;
        c->state = C_EXCHANGING;
        send_upstream(c);
        return;
    }
    c->state = C_ACQUIRING;
    int rc = tide_group_acquire(c->px->group, c->px->acquire_timeout,
                                on_acquired, c, &c->acquiring);
    if (rc) {
        c->px->stats.errors_503++;
        client_write_error(c, 503, "Service Unavailable", "Retry-After: 1\r\n",
                           tide_strerror(rc));
        client_next(c);
    }
}

/* The client's timer as its state wants it: while a request is read, a
 * deadline for the head from the moment the proxy is ready for it (bytes
 * do not push it back, so a head sent a byte at a time is bounded), then
 * for the body the allowed pause since the last read, also while the body
 * goes upstream; off otherwise, and while the upstream is not taking the
 * body (the wait is not the client's). Called after every read and every
 * change of state. */
static void client_timer(struct client *c)
{
    bool reading = c->state == C_READING ||
                   (c->state == C_EXCHANGING && client_parsing(c));
    if (!reading || c->orphan)
        event_del(&c->timer);
    else if (c->scan.done || !event_pending(&c->timer, EV_TIMEOUT, NULL))
        event_add(&c->timer, &c->px->client_tv);
}

static void client_finish(struct client *c);

/* A request did not come in time: 408 when one was begun, else (a client
 * idle between requests) a close. */
static void on_client_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct client *c = arg;
    if (c->state != C_READING && c->state != C_EXCHANGING)
        return;
    if (c->state == C_READING && !c->scan.begun && !c->req_begun) {
        client_kill(c);
        return;
    }
    client_refuse(c, 408, "the request did not come in time");
    client_finish(c);
}

/* Closes the client once its output is written. */
static void client_finish(struct client *c)
{
    if (c->orphan) {
        client_kill(c);
        return;
    }
    c->state = C_FLUSHING;
    event_del(&c->rd);
    client_flush(c);
    if (client_queued(c) == 0 || c->gone)
        client_kill(c);
}

/* The response is out (or queued): the next request, or the end. */
static void client_next(struct client *c)
{
    if (c->orphan || !c->req_keep_alive || c->close_client) {
        client_finish(c);
        return;
    }
    c->state = C_READING;
    /* the next request is answered as a GET until its head is parsed
     * (rq_begin): a 400 or 408 to a head that never parses went without
     * the body its Content-Length promised when the one before was a
     * HEAD, and the client read on into whatever came next */
    c->method = HTTP_GET;
    /* a body the exchange ended before: the rest is read for nobody */
    c->req_answered = !c->req_complete;
    c->req_complete = false;
    if (c->paused && event_add(&c->rd, NULL) == 0)
        c->paused = false;
    client_parse(c);
    if (c->state == C_FLUSHING)
        client_finish(c);
    if (c->state != C_DEAD)
        client_timer(c);
}

/* Reading the client again once what it sent ahead is used below
 * PIPELINED_MAX: the upstream took more of its body. */
static void client_resume(struct client *c)
{
    if (c->paused && (c->state == C_READING || c->state == C_EXCHANGING) &&
        px_buf_size(&c->in) < PIPELINED_MAX && event_add(&c->rd, NULL) == 0)
        c->paused = false;
}

/* Parses what the client sent as far as it can go now, then closes the
 * client if that refused it, or sets its timer, sends what is queued for
 * it and reads it again if it had stopped. */
static void client_pump(struct client *c)
{
    client_parse(c);
    if (c->state == C_FLUSHING)
        client_finish(c);
    if (c->state == C_DEAD)
        return;
    client_timer(c);
    client_flush(c);
    client_resume(c);
}

/* ---- client connections ---- */

/* The client closed, reset or failed. */
static void client_gone(struct client *c)
{
    if (c->state == C_EXCHANGING && c->ub) {
        c->px->stats.aborted++;
        if (client_orphan(c))
            return;
    }
    client_kill(c);
}

static void on_client_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct client *c = arg;
    if (c->gone) {
        client_gone(c);
        return;
    }
    /* pipelined requests behind an exchange, or a body its upstream is
     * not taking yet */
    if (c->state != C_READING && px_buf_size(&c->in) >= PIPELINED_MAX) {
        event_del(&c->rd); /* until client_resume or client_next; a send
                              failing still wakes it (client_lost) */
        c->paused = true;
        return;
    }
    /* one read a wake-up, as much as there is room for: level-triggered,
     * the loop comes back for the rest */
    px_buf_reserve(&c->in, 4096);
    ssize_t n = recv(fd, c->in.p + c->in.len, c->in.cap - c->in.len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        client_gone(c);
        return;
    }
    c->in.len += (size_t)n;
    client_pump(c);
}

static void on_client_writable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct client *c = arg;
    client_send(c);
    if (c->state == C_FLUSHING && (client_queued(c) == 0 || c->gone))
        client_kill(c);
}

/* Closes the client's socket: an orphan reads on for nobody. */
static void client_close(struct client *c)
{
    event_del(&c->rd);
    event_del(&c->wr);
    if (c->fd >= 0)
        evutil_closesocket(c->fd);
    c->fd = -1;
}

/* The client left mid-exchange: when no response byte came yet, or what
 * is left of a body by length is small, the response is read to its end
 * for nobody (within a second) and the connection released whole, rather
 * than reconnecting (a load generator stopping drops every exchange in
 * flight). Returns false when it is not worth it. */
static bool client_orphan(struct client *c)
{
    if (!c->req_complete)
        return false; /* the upstream waits for a body that will not come */
    bool small =
        !c->head_sent || (c->resp_parser.content_length != ULLONG_MAX &&
                          !(c->resp_parser.flags & F_CHUNKED) &&
                          c->resp_parser.content_length <= ORPHAN_MAX);
    if (!small)
        return false;
    c->orphan = true;
    c->px->stats.orphans++;
    client_close(c);
    px_buf_clear(&c->out);
    struct timeval second = {.tv_sec = 1};
    upstream_resume(c, &second);
    return true;
}

/* Ends the client now (its upstream connection, if any, is abandoned:
 * half a response may be in it, and the upstream did nothing wrong; a
 * caller that saw the upstream fail discarded it first) and frees it from
 * the loop. */
static void client_kill(struct client *c)
{
    if (c->state == C_DEAD)
        return;
    c->state = C_DEAD;
    if (c->acquiring)
        tide_group_cancel(c->acquiring, false);
    c->acquiring = NULL;
    give_back(c, GIVE_ABANDON);
    event_del(&c->rd);
    event_del(&c->wr);
    event_del(&c->timer);
    event_active(&c->reap, EV_TIMEOUT, 0);
}

static void on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    client_free(arg);
}

static void client_free(struct client *c)
{
    if (c->acquiring)
        tide_group_cancel(c->acquiring, false);
    /* a response cut short leaves bytes in the upstream connection; the
     * proxy is going away, not the upstream failing */
    give_back(c, GIVE_ABANDON);
    if (c->prev)
        c->prev->next = c->next;
    else
        c->px->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->px->stats.clients--;
    if (c->px->draining && !c->px->clients)
        event_active(&c->px->drained, EV_TIMEOUT, 0);
    event_del(&c->reap);
    event_del(&c->timer);
    client_close(c);
    px_buf_dispose(&c->in);
    px_buf_dispose(&c->out);
    px_buf_dispose(&c->req);
    px_buf_dispose(&c->retry_body);
    px_buf_dispose(&c->uin);
    headers_dispose(&c->req_headers);
    headers_dispose(&c->req_trailers);
    headers_dispose(&c->resp_headers);
    free(c);
}

/* The listener hands sockets over non-blocking and close-on-exec. */
static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg)
{
    (void)l;
    (void)salen;
    struct px *px = arg;
    struct client *c = calloc(1, sizeof *c);
    if (!c) {
        evutil_closesocket(fd);
        return;
    }
    c->px = px;
    c->fd = fd;
    c->url = NO_VALUE;
    c->reason = NO_VALUE;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, c->peer,
                  sizeof c->peer);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, c->peer,
                  sizeof c->peer);
    http_parser_init(&c->req_parser, HTTP_REQUEST);
    c->req_parser.data = c;
    event_assign(&c->rd, px->base, fd, EV_READ | EV_PERSIST, on_client_readable,
                 c);
    event_assign(&c->wr, px->base, fd, EV_WRITE | EV_PERSIST,
                 on_client_writable, c);
    event_assign(&c->reap, px->base, -1, 0, on_reap, c);
    event_assign(&c->timer, px->base, -1, 0, on_client_timeout, c);
    if (event_add(&c->rd, NULL) != 0 ||
        event_add(&c->timer, &px->client_tv) != 0) {
        event_del(&c->rd);
        evutil_closesocket(fd);
        free(c);
        return;
    }
    c->next = px->clients;
    if (px->clients)
        px->clients->prev = c;
    px->clients = c;
    px->stats.clients++;
}

/* How long accepting stops after accept() failed. At the descriptor limit
 * (EMFILE, ENFILE), the connection it could not take stays in the
 * backlog, so the listener is readable again at once and each try fails
 * again: the proxy spun at 100% CPU until a descriptor freed, starving
 * the clients it has. nginx stops for its accept_mutex_delay (500 ms), a
 * span chosen for passing its accept lock between workers; a tenth of a
 * second costs ten failed accepts a second while the limit lasts, and
 * keeps a client waiting in the backlog at most that long after a
 * descriptor frees. */
#define ACCEPT_PAUSE_MS 100

/* accept() failed otherwise than for a connection aborted or a signal
 * (those libevent retries itself): for want of descriptors, or of memory
 * (ENOBUFS, ENOMEM), which a retry at once does not mend either. */
static void on_accept_error(struct evconnlistener *l, void *arg)
{
    struct px *px = arg;
    px->stats.accept_pauses++;
    evconnlistener_disable(l);
    struct timeval pause = {.tv_usec = ACCEPT_PAUSE_MS * 1000};
    event_add(&px->accept_resume, &pause);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct px *px = arg;
    if (px->listener)
        evconnlistener_enable(px->listener);
}

static void on_drained(evutil_socket_t fd, short what, void *arg);

/* A span of ns as libevent takes it, worked out once for every use. */
static struct timeval timeval_of(int64_t ns)
{
    return (struct timeval){.tv_sec = (time_t)(ns / TIDE_SEC(1)),
                            .tv_usec = (suseconds_t)(ns % TIDE_SEC(1) / 1000)};
}

int px_new(struct event_base *base, struct tide_group *group,
           const struct px_options *o, struct px **out)
{
    struct px_options opt = o ? *o : (struct px_options){0};
    struct px *px = calloc(1, sizeof *px);
    if (!px)
        return -1;
    px->base = base;
    px->group = group;
    px->acquire_timeout =
        opt.acquire_timeout ? opt.acquire_timeout : TIDE_SEC(5);
    px->response_tv =
        timeval_of(opt.response_timeout ? opt.response_timeout : TIDE_SEC(30));
    px->max_body = opt.max_body ? opt.max_body : (size_t)64 << 20;
    px->client_tv =
        timeval_of(opt.client_timeout ? opt.client_timeout : TIDE_SEC(60));
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)opt.listen_port)};
    if (inet_pton(AF_INET, opt.listen_host ? opt.listen_host : "127.0.0.1",
                  &sin.sin_addr) != 1) {
        free(px);
        errno = EINVAL; /* not an IPv4 literal */
        return -1;
    }
    px->listener = evconnlistener_new_bind(
        base, on_accept, px, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
        (struct sockaddr *)&sin, sizeof sin);
    if (!px->listener) {
        int e = errno; /* bind's or listen's, for the caller */
        free(px);
        errno = e;
        return -1;
    }
    struct sockaddr_in bound;
    socklen_t bl = sizeof bound;
    getsockname(evconnlistener_get_fd(px->listener), (struct sockaddr *)&bound,
                &bl);
    px->port = ntohs(bound.sin_port);
    event_assign(&px->drained, base, -1, 0, on_drained, px);
    event_assign(&px->accept_resume, base, -1, 0, on_accept_resume, px);
    evconnlistener_set_error_cb(px->listener, on_accept_error);
    *out = px;
    return 0;
}

int px_port(const struct px *p)
{
    return p->port;
}

static void on_drained(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct px *p = arg;
    if (p->on_drained && !p->clients)
        p->on_drained(p, p->drained_arg);
}

void px_drain(struct px *p, px_drained_cb done, void *arg)
{
    p->on_drained = done;
    p->drained_arg = arg;
    if (!p->draining) {
        p->draining = true;
        /* the port is let go at once: a restarted proxy can take it */
        evconnlistener_free(p->listener);
        p->listener = NULL;
        event_del(&p->accept_resume);
        for (struct client *c = p->clients, *next; c; c = next) {
            next = c->next;
            c->req_keep_alive = false; /* closed after this exchange */
            /* between requests: nothing in flight to wait for */
            if (c->state == C_READING && !c->req_begun &&
                px_buf_size(&c->in) == 0)
                client_kill(c);
        }
    }
    if (!p->clients)
        event_active(&p->drained, EV_TIMEOUT, 0);
}

void px_free(struct px *p)
{
    if (!p)
        return;
    p->draining = false; /* no drained callback from here */
    while (p->clients)
        client_free(p->clients);
    event_del(&p->drained);
    event_del(&p->accept_resume);
    if (p->listener)
        evconnlistener_free(p->listener);
    free(p);
}

void px_stats(const struct px *p, struct px_stats *out)
{
    *out = p->stats;
}
