/* A TLS client over a pool: each request's response read to its last byte,
 * so the connection goes back to the pool and carries the next request.
 * The README prints everything below this comment but the first include,
 * main() too (its regions "tls" and "tls-main", which examples/check-readme
 * holds it to): main talks to a server you name, with a CA file you name,
 * so it also runs where there is no network.
 *
 * It makes N requests (20 unless told) one after another, prints each
 * status line, and checks that one connection carried them all. Exit 0 when
 * every response was read whole over one connection, 1 otherwise.
 *
 * Usage: tls_client HOST PORT [CA-FILE [N]]   (CA-FILE "-": the system's)
 * Build: cc tls_client.c $(pkg-config --cflags --libs tidepool libevent_core)
 */
#include <string.h> /* strcmp in main; the README has it from tls.h */

/* README excerpt "tls" begins */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>
#include <tidepool/tls.h>

struct exchange {
    struct tide_evpool *pool;
    /* 0 while running, 1 when done, else a TIDE_E code, or -1 for a
     * response this example cannot read to its end */
    int status;
    char head[128];   /* the status line */
    bool in_body;     /* the headers are read */
    long long length; /* Content-Length; -1 while none was seen */
    long long got;    /* body bytes read */
    char body[512];   /* the body's first bytes */
};

/* Content-Length's value: digits, blanks around them; -1 otherwise. */
static long long content_length(const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    if (*v < '0' || *v > '9')
        return -1;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    while (*end == ' ' || *end == '\t')
        end++;
    return errno == 0 && *end == '\0' ? n : -1;
}

/* The response is read to its last byte before the connection goes back:
 * the headers line by line, then Content-Length bytes of body. Until then,
 * wait for more. */
static void on_reply(struct bufferevent *bev, void *arg)
{
    struct exchange *x = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    char *line;
    while (!x->in_body &&
           (line = evbuffer_readln(in, NULL, EVBUFFER_EOL_CRLF_STRICT))) {
        if (!x->head[0])
            snprintf(x->head, sizeof x->head, "%s", line);
        else if (!line[0])
            x->in_body = true; /* the blank line */
        else if (evutil_ascii_strncasecmp(line, "content-length:", 15) == 0)
            x->length = content_length(line + 15);
        free(line);
    }
    if (!x->in_body && evbuffer_get_length(in) < 8192)
        return; /* the headers go on */
    if (!x->in_body || x->length < 0) {
        /* a header line past 8 KiB, or no Content-Length (chunked, or
         * ended by close): where the response ends is not known here, so
         * the connection cannot be reused; given up for the example's own
         * reason, not the server's fault: abandoned, no outcome */
        fprintf(stderr, "%s: length unknown, abandoned\n", x->head);
        tide_evpool_abandon(x->pool, bev);
        x->status = -1;
        return;
    }
    while (x->got < x->length && evbuffer_get_length(in) > 0) {
        size_t n = evbuffer_get_length(in);
        if ((long long)n > x->length - x->got)
            n = (size_t)(x->length - x->got);
        size_t room = x->got < (long long)sizeof x->body - 1
                          ? sizeof x->body - 1 - (size_t)x->got
                          : 0;
        size_t kept = n < room ? n : room;
        evbuffer_remove(in, x->body + x->got, kept);
        evbuffer_drain(in, n - kept); /* read past what is kept */
        x->got += (long long)n;
    }
    if (x->got < x->length)
        return; /* the body goes on */
    /* complete, nothing left unread: back to the pool, where it is watched
     * until the next caller is handed it */
    tide_evpool_release(x->pool, bev);
    x->status = 1;
}

/* A broken connection (reset, closed, timed out) is discarded, never
 * given back: the pool closes it and makes a new one when needed. */
static void on_error(struct bufferevent *bev, short what, void *arg)
{
    struct exchange *x = arg;
    char why[256];
    x->status = tide_net_event_error(bev, what, NULL, why, sizeof why);
    fprintf(stderr, "exchange failed: %s\n", why);
    tide_evpool_discard(x->pool, bev);
}

static void on_connection(struct tide_evpool *pool, int status, void *resource,
                          const struct tide_why *why, void *arg)
{
    (void)pool;
    struct exchange *x = arg;
    if (status != 0) { /* DNS, refused, untrusted, timed out...: why */
        fprintf(stderr, "no connection: %s\n", why->message);
        x->status = status;
        return;
    }
    /* connected, handshaken and verified; no callbacks of anyone else's */
    struct bufferevent *bev = resource;
    static const char request[] = "GET / HTTP/1.1\r\n"
                                  "Host: example.com\r\n\r\n";
    struct timeval limit = {5, 0};
    bufferevent_setcb(bev, on_reply, NULL, on_error, x);
    bufferevent_set_timeouts(bev, &limit, &limit);
    /* one write: one TLS record */
    bufferevent_write(bev, request, sizeof request - 1);
}

/* A TLS factory and a pool of its connections; 0 or why not (a TIDE_E
 * code: a port out of range, a CA that is not PEM...). */
static int open_pool(struct event_base *base, const struct tide_tls_options *o,
                     struct tide_tls_factory **factory,
                     struct tide_evpool **pool)
{
    int rc = tide_tls_factory_new(base, o, factory);
    if (rc != 0)
        return rc;
    struct tide_factory table;
    tide_tls_factory_bind(*factory, &table);
    struct tide_evpool_options po = {.limits = TIDE_LIMITS(.size = 8)};
    if ((rc = tide_evpool_new(base, &table, &po, pool)) != 0)
        tide_tls_factory_free(*factory);
    return rc;
}

/* One request over a pooled connection, the loop run until it is
 * answered; returns 1 with the response in *x, else why not. */
static int fetch(struct event_base *base, struct tide_evpool *pool,
                 struct exchange *x)
{
    *x = (struct exchange){.pool = pool, .length = -1};
    int rc = tide_evpool_acquire(pool, TIDE_SEC(5), on_connection, x, NULL);
    if (rc != 0)
        return rc;
    while (x->status == 0) /* bounded: 5 s to connect, 5 s to answer */
        event_base_loop(base, EVLOOP_ONCE);
    return x->status;
}
/* README excerpt "tls" ends */

/* README excerpt "tls-main" begins */
/* A whole file, NUL-terminated; NULL when it cannot be read. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *text = NULL;
    size_t n = 0;
    for (;;) {
        char *more = realloc(text, n + 4097);
        if (!more) {
            free(text);
            fclose(f);
            return NULL;
        }
        text = more;
        size_t got = fread(text + n, 1, 4096, f);
        n += got;
        if (got < 4096)
            break;
    }
    fclose(f);
    text[n] = '\0';
    return text;
}

/* v as a whole number in [1, max], or 0 when it is not one (strtol alone
 * takes "443x" as 443 and "abc" as 0). */
static long whole(const char *v, long max)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    bool ok = v[0] >= '0' && v[0] <= '9' && *end == '\0' && errno == 0;
    return ok && n >= 1 && n <= max ? n : 0;
}

int main(int argc, char **argv)
{
    long port = argc >= 3 ? whole(argv[2], 65535) : 0;
    long n = argc == 5 ? whole(argv[4], 1000000) : 20;
    if (argc < 3 || argc > 5 || !port || !n) {
        fprintf(stderr, "usage: %s HOST PORT [CA-FILE [N]]\n", argv[0]);
        return 2;
    }
    char *ca = NULL; /* PEM text; NULL: the system's CAs */
    if (argc >= 4 && strcmp(argv[3], "-") != 0 && !(ca = slurp(argv[3]))) {
        fprintf(stderr, "cannot read %s\n", argv[3]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* a write to a closed peer is an error */
    struct event_base *base = event_base_new();
    struct tide_tls_options o = {
        .tcp = {.host = argv[1], .port = (int)port},
        .ca_pem = ca,
        .alpn = (const char *[]){"http/1.1", NULL},
    };
    struct tide_tls_factory *factory;
    struct tide_evpool *pool;
    int rc = base ? open_pool(base, &o, &factory, &pool) : TIDE_ENOMEM;
    if (rc != 0) {
        fprintf(stderr, "cannot open a pool for %s:%s: %s\n", argv[1], argv[2],
                tide_strerror(rc));
        if (base)
            event_base_free(base);
        free(ca);
        return 1;
    }
    struct exchange x;
    int status = 1;
    for (long i = 0; i < n && status == 1; i++)
        if ((status = fetch(base, pool, &x)) == 1)
            printf("%s, %lld bytes\n", x.head, x.got);
    struct tide_net_stats st;
    tide_tls_factory_stats(factory, &st);
    printf("%ld requests, connections made: %llu\n", n,
           (unsigned long long)st.made);
    tide_evpool_free(pool);
    tide_tls_factory_free(factory);
    event_base_loop(base, EVLOOP_NONBLOCK); /* sockets finish closing */
    event_base_free(base);
    free(ca);
    bool passed = status == 1 && st.made == 1;
    printf("%s\n", passed ? "passed" : "FAILED");
    return passed ? 0 : 1;
}
/* README excerpt "tls-main" ends */
