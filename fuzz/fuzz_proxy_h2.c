/* libFuzzer target over demos/proxy's HTTP/2 upstream (h2.c) against a
 * hostile origin: the real proxy (px_new on a real group and pool) on
 * this target's event_base, its upstream an h2c:// one built as the
 * proxy's startup builds it (px_upstream_add: the TCP factory with
 * HTTP/2's session setup, wrapped, its pool lending shared streams with
 * the proxy's own pool options), here on a Unix socket this target
 * listens on, acting as origin. One to four clients on loopback each send
 * one or two well-formed HTTP/1.1 requests (GET, HEAD, or POST with a
 * small body, or chunked with a trailer); the origin reads and throws away what
 * the proxy sends (its preface, SETTINGS, HEADERS, DATA...) and answers with
 * the fuzzer's bytes, cut into writes where the fuzzer says (fuzz_cuts.h), each
 * write to the newest connection it has. Then the origin closes its
 * connections, the clients reset theirs, and the proxy, group, factory
 * and upstream are freed, all within the one input.
 *
 * The input:
 *   byte 0        bits 0-1: the clients, one to four; bit 2: the origin
 *                 sends an empty SETTINGS of its own on each connection
 *                 first (the session then starts whatever the fuzzer's
 *                 bytes are); bit 3: the first client leaves (a
 *                 reset) after the first write of the origin's, its
 *                 stream's frames still to come
 *   next bytes    one a client: its request (client_request)
 *   the rest      the origin's cuts and stream
 *
 * FUZZ_PROXY_H2_SHOW set in the environment: what each client got is
 * shown on stderr (to read a crash's input).
 *
 * What a user relies on, asserted for every input:
 * - each client's bytes parse (libhttp-parser) as HTTP/1.1 responses (the
 *   last one may be cut by the close), each status of three digits and
 *   final (an origin's 1xx is not relayed), one a request at most, in
 *   order (a HEAD's without body);
 * - no pseudo-header, hop-by-hop or connection-specific field of the
 *   origin's reaches a client: a head's framing (Content-Length or
 *   chunked, never both, once) and Connection (close or keep-alive, once)
 *   are the proxy's own, and trailers carry none of them;
 * - every upstream connection made is destroyed exactly once, each one
 *   the origin accepted is closed by the proxy, and the proxy leaves no
 *   descriptor open; no crash, no sanitizer report. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>
#include <http_parser.h>

#include "config.h"
#include "fuzz_cuts.h"
#include "fuzz_http.h"
#include "fuzz_loop.h"
#include "h2.h"
#include "proxy.h"

#define MAX_CLIENTS 4
#define MAX_CONNS   8 /* the origin's connections kept; more are reset */

static struct event_base *base; /* one for the whole run */
static bool show; /* FUZZ_PROXY_H2_SHOW set: what each client got, shown */
static int listener = -1; /* the origin's Unix socket, for the run */
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

/* An HTTP/2 SETTINGS frame with no setting. */
static const uint8_t empty_settings[9] = {0, 0, 0, 4, 0, 0, 0, 0, 0};

/* ---- the origin ---- */

struct origin {
    int fds[MAX_CONNS];   /* its ends of the connections it accepted */
    bool gone[MAX_CONNS]; /* the proxy closed that one */
    size_t n;
    bool settings_first;
    uint64_t destroyed; /* connections the pool destroyed (count_destroy) */
    struct tide_factory tcp; /* the TCP factory's table, wrapped */
};

/* Takes the connections the proxy opened. */
static void origin_accept(struct origin *o)
{
    int fd;
    while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >=
           0) {
        if (o->n == MAX_CONNS) {
            close(fd); /* enough: the proxy reads an end */
            continue;
        }
        o->gone[o->n] = false;
        o->fds[o->n++] = fd;
        if (o->settings_first)
            fz_write_all(fd, empty_settings, sizeof empty_settings);
    }
}

/* Reads and throws away what the proxy sent; marks what it closed. */
static void origin_read(struct origin *o)
{
    char buf[16384];
    for (size_t i = 0; i < o->n; i++) {
        ssize_t n;
        while ((n = read(o->fds[i], buf, sizeof buf)) > 0)
            ;
        if (n == 0 || (n < 0 && errno != EAGAIN))
            o->gone[i] = true;
    }
}

/* The connection the origin answers on: the newest the proxy has not
 * closed; -1 when none. */
static int origin_current(const struct origin *o)
{
    for (size_t i = o->n; i-- > 0;)
        if (!o->gone[i])
            return o->fds[i];
    return -1;
}

/* Between the h2 wrapper and the TCP factory (which it calls for make,
 * cancel and destroy only): each destroy counted. */
static void count_make(struct tide_evpool *pool, struct tide_make *token,
                       void *arg)
{
    struct origin *o = arg;
    o->tcp.make(pool, token, o->tcp.arg);
}

static void count_cancel(struct tide_make *token, void *arg)
{
    struct origin *o = arg;
    o->tcp.cancel(token, o->tcp.arg);
}

static void count_destroy(void *resource, void *arg)
{
    struct origin *o = arg;
    o->destroyed++;
    o->tcp.destroy(resource, o->tcp.arg);
}

/* ---- the clients ---- */

/* A client of the proxy's (struct client is the proxy's own name). */
struct user {
    int fd;
    char req[256]; /* what it sends */
    size_t req_len;
    char *got; /* what it got */
    size_t got_len, got_cap;
    bool eof;
};

/* A client's requests from its byte b: bits 0-1 the method (GET, HEAD,
 * POST by length, POST chunked with a trailer after), bits 2-5 a POST's
 * body length, bit 6 a GET after it on the same connection, bit 7
 * Connection: close on the last one. */
static void client_request(struct user *c, uint8_t b)
{
    static const char *const methods[] = {"GET", "HEAD", "POST", "POST"};
    bool post = (b & 3) >= 2, chunked = (b & 3) == 3, second = b & 0x40,
         close_last = b & 0x80;
    size_t body = post ? (size_t)(b >> 2 & 15) : 0;
    char *p = c->req, *end = c->req + sizeof c->req;
    p += snprintf(p, (size_t)(end - p), "%s /r%u HTTP/1.1\r\nHost: origin\r\n",
                  methods[b & 3], (unsigned)b);
    if (chunked)
        p += snprintf(p, (size_t)(end - p), "Transfer-Encoding: chunked\r\n");
    else if (post)
        p += snprintf(p, (size_t)(end - p), "Content-Length: %zu\r\n", body);
    if (close_last && !second)
        p += snprintf(p, (size_t)(end - p), "Connection: close\r\n");
    p += snprintf(p, (size_t)(end - p), "\r\n");
    if (chunked && body)
        p += snprintf(p, (size_t)(end - p), "%zx\r\n", body);
    memset(p, 'b', body);
    p += body;
    if (chunked)
        p += snprintf(p, (size_t)(end - p), "%s0\r\nx-sum: %zu\r\n\r\n",
                      body ? "\r\n" : "", body);
    if (second)
        p += snprintf(p, (size_t)(end - p),
                      "GET /second HTTP/1.1\r\nHost: origin\r\n%s\r\n",
                      close_last ? "Connection: close\r\n" : "");
    c->req_len = (size_t)(p - c->req);
}

/* ---- what a client got ---- */

/* A field of the origin's that must never reach a client in a head: the
 * connection-specific ones (RFC 9113 8.2.2) and Proxy-*. Connection and
 * the framing fields may, as the proxy's own. */
static bool never_relayed(const char *name)
{
    static const char *const names[] = {
        "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "proxy"};
    if (name[0] == ':')
        return true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(name, names[i]) == 0)
            return true;
    return strncasecmp(name, "proxy-", 6) == 0;
}

static void check_fields(const struct msg *m)
{
    size_t conn = 0, te = 0, cl = 0;
    for (size_t i = 0; i < m->nfields; i++) {
        const char *n = fz_name(m, &m->fields[i]);
        const char *v = fz_value(m, &m->fields[i]);
        if (never_relayed(n))
            abort(); /* an origin's hop-by-hop or pseudo field relayed */
        if (strcasecmp(n, "connection") == 0) {
            conn++;
            if (strcmp(v, "close") != 0 && strcmp(v, "keep-alive") != 0)
                abort(); /* not the proxy's */
        } else if (strcasecmp(n, "transfer-encoding") == 0) {
            te++;
            if (strcmp(v, "chunked") != 0)
                abort();
        } else if (strcasecmp(n, "content-length") == 0) {
            cl++;
        }
    }
    if (conn > 1 || te > 1 || cl > 1 || (te && cl))
        abort(); /* framing or Connection not the proxy's alone */
    for (size_t i = 0; i < m->ntrailers; i++) {
        const char *n = fz_name(m, &m->trailers[i]);
        if (never_relayed(n) || strcasecmp(n, "connection") == 0 ||
            strcasecmp(n, "transfer-encoding") == 0 ||
            strcasecmp(n, "content-length") == 0)
            abort(); /* a trailer that is no trailer */
    }
}

static void check_client(const struct user *c)
{
    static struct reading sent, answers;
    memset(&sent, 0, sizeof sent);
    memset(&answers, 0, sizeof answers);
    if (fz_parse(&sent, HTTP_REQUEST, c->req, c->req_len, false) != HPE_OK)
        abort(); /* this target's own requests */
    answers.requests = &sent;
    answers.keep_response_fields = true;
    enum http_errno e =
        fz_parse(&answers, HTTP_RESPONSE, c->got, c->got_len, true);
    /* a response cut short is told by the close (HPE_INVALID_EOF_STATE):
     * the proxy cannot mend an origin's, only never frame it whole */
    if (e != HPE_OK && e != HPE_INVALID_EOF_STATE && !answers.overflow)
        abort(); /* not HTTP/1.1 responses */
    if (answers.finals > sent.n)
        abort(); /* more answers than requests */
    for (size_t i = 0; i < answers.n; i++) {
        const struct msg *m = &answers.msgs[i];
        if (!m->head_done)
            continue;
        if (m->status < 200 || m->status > 999)
            abort(); /* not three digits, or an interim relayed */
        check_fields(m);
    }
    fz_reading_free(&sent);
    fz_reading_free(&answers);
}

/* ---- the run ---- */

static void run(uint8_t flags, const uint8_t *reqs,
                const struct tide_fuzz_cuts *og)
{
    int fd_mark = fz_lowest_free_fd();
    struct origin o = {.settings_first = flags & 4};
    struct px_config cfg;
    px_config_init(&cfg); /* the proxy's presets */

    /* the upstream, as px_upstream_add makes an h2c:// one */
    struct px_h2_upstream *h2 = px_h2_upstream_new("origin", 80, false);
    struct tide_tcp_options t = {.path = sock_path};
    px_h2_upstream_setup(h2, &t);
    struct tide_tcp_factory *tcp;
    if (!h2 || tide_tcp_factory_new(base, &t, &tcp) != 0)
        abort();
    tide_tcp_factory_bind(tcp, &o.tcp);
    struct tide_factory f = {.make = count_make,
                             .cancel = count_cancel,
                             .destroy = count_destroy,
                             .arg = &o};
    px_h2_upstream_wrap(h2, &f, &f);
    struct tide_evpool_options po;
    px_config_pool_options(&cfg, &po);
    po.limits.streams = px_h2_streams_max();
    po.limits.sharing = TIDE_SHARING_PACK;
    po.seed = 1;
    struct tide_group *g;
    struct tide_group_upstream *up;
    if (tide_group_new(base, &(struct tide_group_options){.seed = 1}, &g) !=
            0 ||
        tide_group_add(g, "h2c://origin:80", &f, &po, &up) != 0)
        abort();
    px_h2_upstream_bind(h2, tide_group_upstream_pool(up));
    struct px_options opt;
    px_config_proxy_options(&cfg, &opt);
    opt.listen_host = "127.0.0.1";
    opt.listen_port = 0;
    struct px *px;
    if (px_new(base, g, &opt, &px) != 0)
        abort();

    size_t nclients = 1 + (flags & 3);
    struct user cs[MAX_CLIENTS] = {0};
    for (size_t i = 0; i < nclients; i++) {
        client_request(&cs[i], reqs[i]);
        cs[i].fd = fz_client_connect(px_port(px));
    }
    fz_settle(base); /* accepted */
    for (size_t i = 0; i < nclients; i++)
        fz_write_all(cs[i].fd, (const uint8_t *)cs[i].req, cs[i].req_len);
    fz_settle(base);
    origin_accept(&o);
    origin_read(&o);

    size_t fed = 0;
    for (size_t piece = 0; piece <= og->n; piece++) {
        size_t to = piece == og->n ? og->len : og->at[piece];
        int fd = origin_current(&o);
        if (fd >= 0)
            fz_write_all(fd, og->stream + fed, to - fed);
        fed = to;
        fz_settle(base);
        origin_accept(&o);
        origin_read(&o);
        for (size_t i = 0; i < nclients; i++)
            if (cs[i].fd >= 0)
                fz_read_all(cs[i].fd, &cs[i].got, &cs[i].got_len,
                            &cs[i].got_cap, &cs[i].eof);
        if (piece == 0 && (flags & 8)) {
            fz_client_reset(cs[0].fd); /* what it got ends here */
            cs[0].fd = -1;
        }
    }
    /* the origin closes its connections: what was streaming ends */
    for (size_t i = 0; i < o.n; i++)
        shutdown(o.fds[i], SHUT_WR);
    fz_settle(base);
    origin_accept(&o);
    origin_read(&o);
    for (size_t i = 0; i < nclients; i++) {
        if (cs[i].fd < 0)
            continue;
        fz_read_all(cs[i].fd, &cs[i].got, &cs[i].got_len, &cs[i].got_cap,
                    &cs[i].eof);
        fz_client_reset(cs[i].fd); /* what it got ends here, as at a close */
    }
    fz_settle(base);
    px_free(px);
    tide_group_free(g);
    fz_settle(base);
    origin_accept(&o);
    origin_read(&o);
    struct tide_net_stats st;
    tide_tcp_factory_stats(tcp, &st);
    if (st.live != 0 || st.destroyed != st.made || o.destroyed != st.made)
        abort(); /* each connection made ends once, through its pool */
    for (size_t i = 0; i < o.n; i++)
        if (!o.gone[i])
            abort(); /* the proxy left an origin's connection open */
    tide_tcp_factory_free(tcp);
    px_h2_upstream_free(h2);
    for (size_t i = 0; i < o.n; i++)
        close(o.fds[i]);
    if (fz_lowest_free_fd() != fd_mark)
        abort(); /* the proxy left a descriptor open */

    for (size_t i = 0; i < nclients; i++) {
        if (show)
            fprintf(stderr, "client %zu got:\n%.*s\n--\n", i,
                    (int)cs[i].got_len, cs[i].got ? cs[i].got : "");
        check_client(&cs[i]);
        free(cs[i].got);
    }
}

static void remove_socket(void)
{
    unlink(sock_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    signal(SIGPIPE, SIG_IGN);
    show = getenv("FUZZ_PROXY_H2_SHOW") != NULL;
    base = event_base_new();
    if (!base)
        abort();
    /* the origin's socket, one a process (libFuzzer's -jobs run several) */
    snprintf(sock_path, sizeof sock_path, "/tmp/tidepool-fuzz-h2-%ld.sock",
             (long)getpid());
    unlink(sock_path);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    memcpy(sun.sun_path, sock_path, strlen(sock_path) + 1);
    listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listener < 0 || bind(listener, (struct sockaddr *)&sun, sizeof sun) ||
        listen(listener, 64) != 0)
        abort();
    atexit(remove_socket);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t nclients = 1 + (data[0] & 3);
    if (size < 1 + nclients)
        return 0;
    struct tide_fuzz_cuts og;
    if (!tide_fuzz_cuts_read(&og, data + 1 + nclients, size - 1 - nclients))
        return 0;
    run(data[0], data + 1, &og);
    return 0;
}
