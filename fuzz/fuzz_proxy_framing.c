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
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <http_parser.h>

#include "fuzz_cuts.h"
#include "fuzz_http.h"
#include "fuzz_loop.h"
#include "proxy.h"

#define MAX_BODY  4096 /* the proxy's --max-body here: 413 within reach */
#define MAX_CONNS 8

static struct event_base *base; /* one for the whole run */

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

/* Whether a Connection field of m names `name` (a comma-separated list
 * of tokens with optional whitespace round them). */
static bool named_by_connection(const struct msg *m, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < m->nfields; i++) {
        if (strcasecmp(fz_name(m, &m->fields[i]), "connection") != 0)
            continue;
        const char *v = fz_value(m, &m->fields[i]);
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
    size_t hosts = fz_count(m, "host");
    if (hosts > 1 || (hosts == 0 && m->minor >= 1))
        return true;
    if (m->minor == 0 && fz_count(m, "transfer-encoding"))
        return true;
    const char *cl = fz_get(m, "content-length");
    return cl && !m->chunked && strtoull(cl, NULL, 10) > MAX_BODY;
}

/* ---- what the origin got, against what the client sent ---- */

static void check_well_formed(const struct msg *f)
{
    if (f->bad_lines || f->major != 1 || f->minor != 1 || f->url == SIZE_MAX)
        abort();
    if (fz_count(f, "host") != 1 || fz_count(f, "x-forwarded-for") != 1 ||
        fz_count(f, "expect") != 0)
        abort();
    size_t cl = fz_count(f, "content-length"),
           te = fz_count(f, "transfer-encoding");
    if (cl + te > 1)
        abort(); /* one framing, never both */
    if (te &&
        (strcmp(fz_get(f, "transfer-encoding"), "chunked") != 0 || !f->chunked))
        abort();
    for (size_t i = 0; i < f->nfields; i++) {
        const char *n = fz_name(f, &f->fields[i]);
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
    const char *xff = fz_get(f, "x-forwarded-for");
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
        const char *h = fz_get(c, "host");
        if (h && strcmp(h, fz_get(f, "host")) != 0)
            return false;
    }
    /* the client's X-Forwarded-For fields, joined, then its address */
    char want[4096];
    size_t w = 0;
    for (size_t i = 0; i < c->nfields; i++)
        if (strcasecmp(fz_name(c, &c->fields[i]), "x-forwarded-for") == 0)
            w += (size_t)snprintf(want + w,
                                  w < sizeof want ? sizeof want - w : 0, "%s, ",
                                  fz_value(c, &c->fields[i]));
    if (w < sizeof want)
        snprintf(want + w, sizeof want - w, "127.0.0.1");
    if (w < sizeof want && strcmp(want, fz_get(f, "x-forwarded-for")) != 0)
        return false;
    size_t j = 0;
    for (size_t i = 0; i < c->nfields; i++) {
        const char *n = fz_name(c, &c->fields[i]);
        if (proxys_own(c, n))
            continue;
        while (j < f->nfields && proxys_own(f, fz_name(f, &f->fields[j])))
            j++;
        if (j == f->nfields || strcmp(n, fz_name(f, &f->fields[j])) != 0 ||
            strcmp(fz_value(c, &c->fields[i]), fz_value(f, &f->fields[j])) != 0)
            return false;
        j++;
    }
    while (j < f->nfields && proxys_own(f, fz_name(f, &f->fields[j])))
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
    const char *ccl = fz_get(c, "content-length");
    const char *fcl = fz_get(f, "content-length");
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
            if (c->got_len < FZ_CAP)
                fz_grow(&c->got, &c->got_len, &c->got_cap, buf, (size_t)n);
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

static void run(const struct tide_fuzz_cuts *cl,
                const struct tide_fuzz_cuts *og)
{
    int fd_mark = fz_lowest_free_fd();
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

    int cfd = fz_client_connect(px_port(px));
    fz_settle(base); /* accepted */

    char *answer = NULL;
    size_t answer_len = 0, answer_cap = 0;
    bool client_eof = false;
    size_t cfed = 0, ofed = 0, cpiece = 0, opiece = 0;
    while (cpiece <= cl->n || opiece <= og->n) {
        if (cpiece <= cl->n) {
            size_t to = cpiece == cl->n ? cl->len : cl->at[cpiece];
            fz_write_all(cfd, cl->stream + cfed, to - cfed);
            cfed = to;
            cpiece++;
            fz_settle(base);
            origin_read(&o);
        }
        struct conn *c = origin_current(&o);
        if (opiece <= og->n && (c || cpiece > cl->n)) {
            size_t to = opiece == og->n ? og->len : og->at[opiece];
            if (c)
                fz_write_all(c->far, og->stream + ofed, to - ofed);
            ofed = to;
            opiece++;
            fz_settle(base);
            origin_read(&o);
        }
        fz_read_all(cfd, &answer, &answer_len, &answer_cap, &client_eof);
    }
    /* the origin closes its connections: bodies until close end */
    for (size_t i = 0; i < o.made; i++) {
        shutdown(o.conns[i].far, SHUT_WR);
    }
    fz_settle(base);
    origin_read(&o);
    fz_read_all(cfd, &answer, &answer_len, &answer_cap, &client_eof);
    /* the client leaves (with a reset: fz_client_reset), then the proxy
     * stops. Nothing the proxy sends after it is for the client, which
     * has read all there was: what it got ends there, as at a close. */
    fz_client_reset(cfd);
    client_eof = true;
    fz_settle(base);
    origin_read(&o);
    px_free(px);
    tide_group_free(g);
    fz_settle(base);
    origin_read(&o);
    if (o.destroyed != o.made)
        abort(); /* each connection made ends once */
    for (size_t i = 0; i < o.made; i++)
        close(o.conns[i].far);
    if (fz_lowest_free_fd() != fd_mark)
        abort(); /* the proxy left a descriptor open */

    /* what the client sent, as a parser reads it */
    static struct reading sent, fwd, answers;
    memset(&sent, 0, sizeof sent);
    memset(&fwd, 0, sizeof fwd);
    memset(&answers, 0, sizeof answers);
    fz_parse(&sent, HTTP_REQUEST, (const char *)cl->stream, cl->len, false);

    /* what the origin got, connection by connection */
    for (size_t i = 0; i < o.made; i++) {
        size_t before = fwd.n;
        enum http_errno e = fz_parse(&fwd, HTTP_REQUEST, o.conns[i].got,
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
        e = fz_parse(&answers, HTTP_RESPONSE, answer, answer_len, client_eof);
        size_t k = answers.skipped - 1;
        if (e == HPE_OK || answers.skipped == 0 || k >= 64 ||
            (answers.body_anyway >> k & 1) || !ends_in_400(&answers, k))
            break;
        uint64_t again = answers.body_anyway | (uint64_t)1 << k;
        fz_reading_free(&answers);
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

    fz_reading_free(&sent);
    fz_reading_free(&fwd);
    fz_reading_free(&answers);
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
