/* libFuzzer target over demos/proxy's request head checks and body
 * framing: the real proxy (px_new on a real group and pool) on this
 * target's event_base, one client on a loopback connection the target
 * makes, and an upstream through a factory whose connections are
 * socketpairs with the target at the far end, acting as origin. The
 * client's bytes and the origin's are each cut into writes where the
 * fuzzer's bytes say (fuzz_cuts.h), and the two are interleaved: a
 * piece of the client's, then one of the origin's, written to the newest
 * upstream connection a request began on (dropped while there is none).
 * Then the origin shuts its connections, the client resets its own, and
 * the proxy, group and pool are freed, all within the one input.
 *
 * The input:
 *   bytes 0-1     the length L of the client's part (little-endian,
 *                 taken modulo what follows)
 *   next L bytes  the client's cuts and stream (fuzz_cuts.h)
 *   the rest      the origin's cuts and stream
 *
 * What a user relies on, asserted for every input:
 * - what reaches the origin parses (libhttp-parser) as HTTP/1.1
 *   requests, each head with CRLF line ends only, one Host, one
 *   X-Forwarded-For ending in the client's address, framed by one
 *   Content-Length or by chunked and never both, no hop-by-hop field, no
 *   Expect, and no trailer a proxy controls;
 * - each request forwarded is one the client sent, in order (the same
 *   one again only on a new connection: a retry): same method, target
 *   (origin-form), body and framing, and the same head fields byte for
 *   byte but for the hop-by-hop ones and those the proxy sets (Host,
 *   X-Forwarded-For, Expect, the framing);
 * - a request the proxy must refuse (HTTP/1.1 without Host, two Hosts,
 *   HTTP/1.0 with Transfer-Encoding, a Content-Length past max_body, a
 *   version other than 1.x)
 *   never reaches the origin;
 * - the client's bytes parse as responses (the last one may be cut by
 *   the close), each status of three digits, one final response a
 *   request at most, in order (a HEAD's without body);
 * - every upstream connection made is destroyed exactly once, and the
 *   proxy leaves no descriptor open; no crash, no sanitizer report. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <http_parser.h>

#include "fuzz_cuts.h"
#include "proxy.h"

#define MAX_BODY   4096 /* the proxy's --max-body here: 413 within reach */
#define MAX_CONNS  8
#define MAX_MSGS   32
#define MAX_FIELDS 128
#define CAP        (1u << 20) /* bytes kept of each side's output */

static struct event_base *base; /* one for the whole run */

/* ---- messages, as libhttp-parser reads them ---- */

struct field {
    size_t name, value; /* offsets in msg.text */
};

struct msg {
    unsigned method;
    unsigned short major, minor;
    int status;
    bool complete, chunked, head_done, bad_lines;
    size_t url; /* offset in text, or SIZE_MAX */
    struct field fields[MAX_FIELDS];
    size_t nfields;
    struct field trailers[MAX_FIELDS];
    size_t ntrailers;
    char *text;
    size_t text_len, text_cap;
    char *body;
    size_t body_len, body_cap;
    const char *head_at; /* where its head began in the parsed bytes */
    size_t conn;         /* the upstream connection it came on */
};

struct reading {
    struct msg msgs[MAX_MSGS];
    size_t n;
    bool overflow;
    bool last_was_value;
    const char *last_end; /* end of the last head byte seen */
    /* the last thing seen was an empty value, which the parser hands at
     * the start of the line after it: last_end is past its CRLF */
    bool last_empty;
    const char *input_end; /* of the bytes being parsed */
    /* for responses: the requests' methods, to know a HEAD's */
    const struct reading *requests;
    size_t finals;
    /* the answers to HEADs read with a body all the same: the proxy's
     * 400 to a head it could not read (a bare LF before the method...),
     * which it answers as a GET, and closes */
    uint64_t body_anyway;
    size_t skipped; /* the last answer read without body, plus one */
};

static void grow(char **p, size_t *len, size_t *cap, const char *at, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 64;
        while (c < *len + n + 1)
            c *= 2;
        *p = realloc(*p, c);
        if (!*p)
            abort();
        *cap = c;
    }
    memcpy(*p + *len, at, n);
    *len += n;
    (*p)[*len] = 0;
}

static struct msg *cur(http_parser *p)
{
    struct reading *r = p->data;
    return r->n ? &r->msgs[r->n - 1] : NULL;
}

/* Adds a string (NUL-terminated in text); its offset. */
static size_t text_add(struct msg *m, const char *at, size_t n)
{
    size_t off = m->text_len;
    grow(&m->text, &m->text_len, &m->text_cap, at, n);
    grow(&m->text, &m->text_len, &m->text_cap, "", 1);
    return off;
}

/* The last string added grows (a token the parser gave in pieces). */
static void text_more(struct msg *m, const char *at, size_t n)
{
    m->text_len--; /* back over its NUL */
    grow(&m->text, &m->text_len, &m->text_cap, at, n);
    grow(&m->text, &m->text_len, &m->text_cap, "", 1);
}

static int on_begin(http_parser *p)
{
    struct reading *r = p->data;
    if (r->n == MAX_MSGS) {
        r->overflow = true;
        return -1;
    }
    struct msg *m = &r->msgs[r->n++];
    memset(m, 0, sizeof *m);
    m->url = SIZE_MAX;
    r->last_was_value = true;
    r->last_end = NULL;
    r->last_empty = false;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    struct msg *m = cur(p);
    if (m->url == SIZE_MAX) {
        m->url = text_add(m, at, n);
        m->head_at = at;
    } else {
        text_more(m, at, n);
    }
    ((struct reading *)p->data)->last_end = at + n;
    ((struct reading *)p->data)->last_empty = false;
    return 0;
}

static int on_field(http_parser *p, const char *at, size_t n)
{
    struct reading *r = p->data;
    struct msg *m = cur(p);
    /* a response's fields are not checked, and have no limit at the
     * proxy: past MAX_FIELDS of them the parse stopped, and its bytes
     * were taken for unreadable */
    if (p->type == HTTP_RESPONSE)
        return 0;
    if (r->last_was_value) {
        struct field *f = m->head_done ? m->trailers : m->fields;
        size_t *nf = m->head_done ? &m->ntrailers : &m->nfields;
        if (*nf == MAX_FIELDS)
            return -1;
        f[*nf].name = text_add(m, at, n);
        f[*nf].value = text_add(m, "", 0);
        ++*nf;
    } else {
        /* the value's empty string is last: redo the pair */
        struct field *f = m->head_done ? &m->trailers[m->ntrailers - 1]
                                       : &m->fields[m->nfields - 1];
        m->text_len = f->value;
        text_more(m, at, n);
        f->value = text_add(m, "", 0);
    }
    r->last_was_value = false;
    if (!m->head_done) {
        r->last_end = at + n;
        r->last_empty = false;
    }
    return 0;
}

static int on_value(http_parser *p, const char *at, size_t n)
{
    struct reading *r = p->data;
    struct msg *m = cur(p);
    if (p->type == HTTP_RESPONSE)
        return 0; /* as on_field */
    text_more(m, at, n);
    r->last_was_value = true;
    if (!m->head_done) {
        r->last_end = at + n;
        r->last_empty = n == 0;
    }
    return 0;
}

static int on_headers_done(http_parser *p)
{
    struct reading *r = p->data;
    struct msg *m = cur(p);
    m->head_done = true;
    m->method = p->method;
    m->major = p->http_major;
    m->minor = p->http_minor;
    m->status = (int)p->status_code;
    m->chunked = (p->flags & F_CHUNKED) != 0;
    r->last_was_value = true;
    /* the head's bytes: only CRLF ends its lines, and it ends in one */
    if (p->type == HTTP_REQUEST && m->head_at && r->last_end) {
        for (const char *q = m->head_at; q < r->last_end; q++)
            if ((*q == '\n' && (q == m->head_at || q[-1] != '\r')) ||
                (*q == '\r' && q[1] != '\n'))
                m->bad_lines = true;
        /* past the last value, or the url's " HTTP/1.x" when no field (a
         * line without it is HTTP/0.9 to the parser, and its end is
         * anywhere: not read past the input) */
        const char *end = r->last_end + (m->nfields ? 0 : 9);
        size_t tail = r->last_empty ? 2 : 4; /* its own CRLF is behind */
        if (end + tail > r->input_end ||
            (!m->nfields && memcmp(r->last_end, " HTTP/", 6) != 0) ||
            memcmp(end, "\r\n\r\n", tail) != 0)
            m->bad_lines = true;
    }
    if (r->requests && p->type == HTTP_RESPONSE && m->status >= 200) {
        size_t i = r->finals++;
        /* a HEAD whose head the proxy could read (a bare CR or LF in it
         * is refused before the method counts: answered as a GET, and
         * the connection closed) */
        const struct msg *q = &r->requests->msgs[i];
        if (i < r->requests->n && q->method == HTTP_HEAD && !q->bad_lines &&
            !(i < 64 && (r->body_anyway >> i & 1))) {
            r->skipped = i + 1;
            return 1; /* no body */
        }
    }
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    struct msg *m = cur(p);
    grow(&m->body, &m->body_len, &m->body_cap, at, n);
    return 0;
}

static int on_complete(http_parser *p)
{
    cur(p)->complete = true;
    return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_begin,
    .on_url = on_url,
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_headers_complete = on_headers_done,
    .on_body = on_body,
    .on_message_complete = on_complete,
};

/* Reads s[0, len) as messages of `type` into r (appending); the parser's
 * error, HPE_OK when all of it read. */
static enum http_errno parse(struct reading *r, enum http_parser_type type,
                             const char *s, size_t len, bool eof)
{
    http_parser p;
    http_parser_init(&p, type);
    p.data = r;
    r->input_end = len ? s + len : s; /* s is NULL when nothing came */
    size_t done = http_parser_execute(&p, &settings, s, len);
    if (HTTP_PARSER_ERRNO(&p) == HPE_OK && done == len && eof)
        http_parser_execute(&p, &settings, NULL, 0);
    if (HTTP_PARSER_ERRNO(&p) == HPE_OK && done != len && !p.upgrade)
        return HPE_UNKNOWN;
    return HTTP_PARSER_ERRNO(&p);
}

static void reading_free(struct reading *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->msgs[i].text);
        free(r->msgs[i].body);
    }
}

/* Whether the k-th final answer in r is a 400 with Connection: close,
 * the proxy's refusal of a head. */
static bool ends_in_400(const struct reading *r, size_t k)
{
    size_t finals = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct msg *m = &r->msgs[i];
        if (m->status < 200)
            continue;
        if (finals++ == k)
            return m->status == 400;
    }
    return false;
}

static const char *fname(const struct msg *m, const struct field *f)
{
    return m->text + f->name;
}

static const char *fvalue(const struct msg *m, const struct field *f)
{
    return m->text + f->value;
}

static size_t count(const struct msg *m, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < m->nfields; i++)
        n += strcasecmp(fname(m, &m->fields[i]), name) == 0;
    return n;
}

static const char *get(const struct msg *m, const char *name)
{
    for (size_t i = 0; i < m->nfields; i++)
        if (strcasecmp(fname(m, &m->fields[i]), name) == 0)
            return fvalue(m, &m->fields[i]);
    return NULL;
}

/* Whether a Connection field of m names `name` (a comma-separated list
 * of tokens with optional whitespace round them). */
static bool named_by_connection(const struct msg *m, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < m->nfields; i++) {
        if (strcasecmp(fname(m, &m->fields[i]), "connection") != 0)
            continue;
        const char *v = fvalue(m, &m->fields[i]);
        while (*v) {
            while (*v == ' ' || *v == '\t' || *v == ',')
                v++;
            const char *t = v;
            while (*v && *v != ',')
                v++;
            const char *e = v;
            while (e > t && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
            if ((size_t)(e - t) == len && strncasecmp(t, name, len) == 0)
                return true;
        }
    }
    return false;
}

/* A field the proxy does not pass on as it came: hop-by-hop (RFC 9110
 * 7.6.1, and Proxy-*), named by Connection, or one it sets itself. */
static bool proxys_own(const struct msg *m, const char *name)
{
    static const char *const own[] = {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "transfer-encoding",
        "content-length",
        "host",
        "x-forwarded-for",
        "expect",
        "proxy",
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (strcasecmp(name, own[i]) == 0)
            return true;
    if (strncasecmp(name, "proxy-", 6) == 0)
        return true;
    return named_by_connection(m, name);
}

static bool absolute_form(const char *url)
{
    return url[0] != '/' && url[0] != '*' && strstr(url, "://") != NULL;
}

/* What the client sent that the proxy must refuse (RFC 9112 2.3, 3.2,
 * 6.1). */
static bool must_refuse(const struct msg *m)
{
    if (m->major != 1)
        return true;
    size_t hosts = count(m, "host");
    if (hosts > 1 || (hosts == 0 && m->minor >= 1))
        return true;
    if (m->minor == 0 && count(m, "transfer-encoding"))
        return true;
    const char *cl = get(m, "content-length");
    return cl && !m->chunked && strtoull(cl, NULL, 10) > MAX_BODY;
}

/* ---- what the origin got, against what the client sent ---- */

static void check_well_formed(const struct msg *f)
{
    if (f->bad_lines || f->major != 1 || f->minor != 1 || f->url == SIZE_MAX)
        abort();
    if (count(f, "host") != 1 || count(f, "x-forwarded-for") != 1 ||
        count(f, "expect") != 0)
        abort();
    size_t cl = count(f, "content-length"), te = count(f, "transfer-encoding");
    if (cl + te > 1)
        abort(); /* one framing, never both */
    if (te &&
        (strcmp(get(f, "transfer-encoding"), "chunked") != 0 || !f->chunked))
        abort();
    for (size_t i = 0; i < f->nfields; i++) {
        const char *n = fname(f, &f->fields[i]);
        if (strcasecmp(n, "content-length") != 0 &&
            strcasecmp(n, "transfer-encoding") != 0 && proxys_own(f, n) &&
            strcasecmp(n, "host") != 0 && strcasecmp(n, "x-forwarded-for") != 0)
            abort(); /* a hop-by-hop field went on */
    }
    /* never a field the proxy controls from a trailer */
    for (size_t i = 0; i < f->ntrailers; i++) {
        const char *n = f->text + f->trailers[i].name;
        if (strcasecmp(n, "host") == 0 || proxys_own(f, n))
            abort();
    }
    const char *xff = get(f, "x-forwarded-for");
    size_t xl = strlen(xff);
    if (xl < 9 || strcmp(xff + xl - 9, "127.0.0.1") != 0)
        abort();
}

/* Whether forwarded f is client request c as the proxy should pass it. */
static bool same_request(const struct msg *c, const struct msg *f)
{
    if (c->method != f->method || c->chunked != f->chunked)
        return false;
    const char *curl = c->text + c->url, *furl = f->text + f->url;
    if (!absolute_form(curl)) {
        if (strcmp(curl, furl) != 0)
            return false;
        const char *h = get(c, "host");
        if (h && strcmp(h, get(f, "host")) != 0)
            return false;
    }
    /* the client's X-Forwarded-For fields, joined, then its address */
    char want[4096];
    size_t w = 0;
    for (size_t i = 0; i < c->nfields; i++)
        if (strcasecmp(fname(c, &c->fields[i]), "x-forwarded-for") == 0)
            w += (size_t)snprintf(want + w,
                                  w < sizeof want ? sizeof want - w : 0, "%s, ",
                                  fvalue(c, &c->fields[i]));
    if (w < sizeof want)
        snprintf(want + w, sizeof want - w, "127.0.0.1");
    if (w < sizeof want && strcmp(want, get(f, "x-forwarded-for")) != 0)
        return false;
    size_t j = 0;
    for (size_t i = 0; i < c->nfields; i++) {
        const char *n = fname(c, &c->fields[i]);
        if (proxys_own(c, n))
            continue;
        while (j < f->nfields && proxys_own(f, fname(f, &f->fields[j])))
            j++;
        if (j == f->nfields || strcmp(n, fname(f, &f->fields[j])) != 0 ||
            strcmp(fvalue(c, &c->fields[i]), fvalue(f, &f->fields[j])) != 0)
            return false;
        j++;
    }
    while (j < f->nfields && proxys_own(f, fname(f, &f->fields[j])))
        j++;
    if (j != f->nfields)
        return false;
    /* the body: whole, or the part that went before the connection ended */
    if (f->body_len > c->body_len ||
        (f->complete && f->body_len != c->body_len))
        return false;
    if (f->body_len && memcmp(f->body, c->body, f->body_len) != 0)
        return false;
    /* the framing: chunked as it came (above), or the same length */
    const char *ccl = get(c, "content-length");
    const char *fcl = get(f, "content-length");
    if (!c->chunked &&
        ((ccl == NULL) != (fcl == NULL) ||
         (ccl && strtoull(ccl, NULL, 10) != strtoull(fcl, NULL, 10))))
        return false;
    return true;
}

/* ---- the origin's connections ---- */

struct conn {
    struct bufferevent *near; /* the proxy's end: the pool's resource */
    int far;                  /* the origin's end, this target's */
    char *got;                /* what reached the origin */
    size_t got_len, got_cap;
    bool destroyed;
};

struct origin {
    struct conn conns[MAX_CONNS];
    size_t made;
    size_t destroyed;
};

static void make(struct tide_evpool *pool, struct tide_make *token, void *arg)
{
    (void)pool;
    struct origin *o = arg;
    int sv[2];
    if (o->made == MAX_CONNS) {
        tide_evpool_unmade(token, TIDE_EMAKE, "the origin took enough");
        return;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                   sv) != 0)
        abort();
    struct bufferevent *b =
        bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE);
    if (!b)
        abort();
    bufferevent_enable(b, EV_READ | EV_WRITE);
    struct conn *c = &o->conns[o->made++];
    c->near = b;
    c->far = sv[1];
    tide_evpool_made(token, b);
}

static void destroy(void *resource, void *arg)
{
    struct origin *o = arg;
    for (size_t i = 0; i < o->made; i++)
        if (o->conns[i].near == resource) {
            if (o->conns[i].destroyed)
                abort(); /* twice */
            o->conns[i].destroyed = true;
            o->destroyed++;
            bufferevent_free(resource);
            return;
        }
    abort(); /* not one of ours */
}

/* What the proxy wrote to each connection so far, into its record. */
static void origin_read(struct origin *o)
{
    char buf[16384];
    for (size_t i = 0; i < o->made; i++) {
        struct conn *c = &o->conns[i];
        ssize_t n;
        while (c->far >= 0 && (n = read(c->far, buf, sizeof buf)) > 0)
            if (c->got_len < CAP)
                grow(&c->got, &c->got_len, &c->got_cap, buf, (size_t)n);
    }
}

/* The connection the origin answers on: the newest the proxy still has
 * that a request began on. */
static struct conn *origin_current(struct origin *o)
{
    for (size_t i = o->made; i-- > 0;)
        if (!o->conns[i].destroyed && o->conns[i].got_len > 0)
            return &o->conns[i];
    return NULL;
}

/* ---- the run ---- */

/* Runs what the loop has to do now, until three passes in a row find
 * nothing active after them (socket readiness shows on the next poll). */
static void settle(void)
{
    int quiet = 0;
    for (int pass = 0; pass < 256 && quiet < 3; pass++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        quiet = event_base_get_num_events(base, EVENT_BASE_COUNT_ACTIVE) == 0
                    ? quiet + 1
                    : 0;
    }
}

static void client_read(int fd, char **p, size_t *len, size_t *cap, bool *eof)
{
    char buf[16384];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        if (*len < CAP)
            grow(p, len, cap, buf, (size_t)n);
    if (n == 0 || (n < 0 && errno != EAGAIN))
        *eof = true;
}

static void write_all(int fd, const uint8_t *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            return; /* the other side is gone or full: the rest is lost */
        s += w;
        n -= (size_t)w;
    }
}

static int lowest_free_fd(void)
{
    int fd = dup(0);
    if (fd < 0)
        abort();
    close(fd);
    return fd;
}

static void run(const struct tide_fuzz_cuts *cl,
                const struct tide_fuzz_cuts *og)
{
    int fd_mark = lowest_free_fd();
    struct origin o = {0};
    struct tide_group *g;
    struct tide_group_upstream *up;
    struct tide_factory f = {.make = make, .destroy = destroy, .arg = &o};
    struct tide_evpool_options po = {.limits = TIDE_LIMITS(.size = 1),
                                     .seed = 1};
    if (tide_group_new(base, &(struct tide_group_options){.seed = 1}, &g) !=
            0 ||
        tide_group_add(g, "origin:80", &f, &po, &up) != 0)
        abort();
    struct px *px;
    struct px_options opt = {.listen_port = 0, .max_body = MAX_BODY};
    if (px_new(base, g, &opt, &px) != 0)
        abort();

    int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)px_port(px)),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(cfd, (struct sockaddr *)&sin, sizeof sin) != 0)
        abort();
    fcntl(cfd, F_SETFL, O_NONBLOCK);
    settle(); /* accepted */

    char *answer = NULL;
    size_t answer_len = 0, answer_cap = 0;
    bool client_eof = false;
    size_t cfed = 0, ofed = 0, cpiece = 0, opiece = 0;
    while (cpiece <= cl->n || opiece <= og->n) {
        if (cpiece <= cl->n) {
            size_t to = cpiece == cl->n ? cl->len : cl->at[cpiece];
            write_all(cfd, cl->stream + cfed, to - cfed);
            cfed = to;
            cpiece++;
            settle();
            origin_read(&o);
        }
        struct conn *c = origin_current(&o);
        if (opiece <= og->n && (c || cpiece > cl->n)) {
            size_t to = opiece == og->n ? og->len : og->at[opiece];
            if (c)
                write_all(c->far, og->stream + ofed, to - ofed);
            ofed = to;
            opiece++;
            settle();
            origin_read(&o);
        }
        client_read(cfd, &answer, &answer_len, &answer_cap, &client_eof);
    }
    /* the origin closes its connections: bodies until close end */
    for (size_t i = 0; i < o.made; i++) {
        shutdown(o.conns[i].far, SHUT_WR);
    }
    settle();
    origin_read(&o);
    client_read(cfd, &answer, &answer_len, &answer_cap, &client_eof);
    /* the client leaves, then the proxy stops. It leaves with a reset,
     * not a FIN: a FIN (or the proxy's close first) leaves a TIME_WAIT
     * on a loopback port for 60 s, a thousand an input second, and
     * within half a minute no port was left to bind (px_new failed, and
     * so did the listeners of anything else on the machine). The proxy
     * reads an end either way (client_gone); nothing it sends after it
     * is for the client, which has read all there was: what it got ends
     * there, as at a close. */
    setsockopt(cfd, SOL_SOCKET, SO_LINGER,
               &(struct linger){.l_onoff = 1, .l_linger = 0},
               sizeof(struct linger));
    close(cfd);
    client_eof = true;
    settle();
    origin_read(&o);
    px_free(px);
    tide_group_free(g);
    settle();
    origin_read(&o);
    if (o.destroyed != o.made)
        abort(); /* each connection made ends once */
    for (size_t i = 0; i < o.made; i++)
        close(o.conns[i].far);
    if (lowest_free_fd() != fd_mark)
        abort(); /* the proxy left a descriptor open */

    /* what the client sent, as a parser reads it */
    static struct reading sent, fwd, answers;
    memset(&sent, 0, sizeof sent);
    memset(&fwd, 0, sizeof fwd);
    memset(&answers, 0, sizeof answers);
    parse(&sent, HTTP_REQUEST, (const char *)cl->stream, cl->len, false);

    /* what the origin got, connection by connection */
    for (size_t i = 0; i < o.made; i++) {
        size_t before = fwd.n;
        enum http_errno e = parse(&fwd, HTTP_REQUEST, o.conns[i].got,
                                  o.conns[i].got_len, false);
        if (fwd.overflow)
            break;
        if (e != HPE_OK)
            abort(); /* not a well-formed request */
        for (size_t k = before; k < fwd.n; k++)
            fwd.msgs[k].conn = i;
    }
    size_t next = 0;
    bool any = false;
    for (size_t k = 0; k < fwd.n && !fwd.overflow; k++) {
        const struct msg *m = &fwd.msgs[k];
        if (!m->head_done)
            continue; /* a head cut off where the connection ended */
        check_well_formed(m);
        /* the same request again only on a new connection (a retry) */
        size_t j = any && m->conn != fwd.msgs[k - 1].conn ? next - 1 : next;
        while (j < sent.n && !same_request(&sent.msgs[j], m))
            j++;
        if (j == sent.n && !sent.overflow)
            abort(); /* a request the client never sent */
        if (j < sent.n && must_refuse(&sent.msgs[j]))
            abort(); /* a request the proxy must refuse went upstream */
        if (j < sent.n) {
            next = j + 1;
            any = true;
        }
    }

    /* what the client got: responses, one a request at most */
    answers.requests = &sent;
    enum http_errno e;
    for (;;) {
        e = parse(&answers, HTTP_RESPONSE, answer, answer_len, client_eof);
        size_t k = answers.skipped - 1;
        if (e == HPE_OK || answers.skipped == 0 || k >= 64 ||
            (answers.body_anyway >> k & 1) || !ends_in_400(&answers, k))
            break;
        uint64_t again = answers.body_anyway | (uint64_t)1 << k;
        reading_free(&answers);
        memset(&answers, 0, sizeof answers);
        answers.requests = &sent;
        answers.body_anyway = again;
    }
    /* a response cut short is told by the close (HPE_INVALID_EOF_STATE):
     * the proxy cannot mend an origin's, only never frame it whole */
    if (e != HPE_OK && e != HPE_INVALID_EOF_STATE && !answers.overflow)
        abort();
    if (answers.finals > sent.n + 1 && !sent.overflow)
        abort();
    for (size_t i = 0; i < answers.n; i++)
        if (answers.msgs[i].head_done && answers.msgs[i].status < 100)
            abort(); /* a status not of three digits was relayed */

    reading_free(&sent);
    reading_free(&fwd);
    reading_free(&answers);
    for (size_t i = 0; i < o.made; i++)
        free(o.conns[i].got);
    free(answer);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    signal(SIGPIPE, SIG_IGN);
    base = event_base_new();
    if (!base)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t rest = size - 2;
    size_t split =
        rest ? ((size_t)data[0] | (size_t)data[1] << 8) % (rest + 1) : 0;
    struct tide_fuzz_cuts cl, og;
    if (!tide_fuzz_cuts_read(&cl, data + 2, split) ||
        !tide_fuzz_cuts_read(&og, data + 2 + split, rest - split))
        return 0;
    run(&cl, &og);
    return 0;
}
