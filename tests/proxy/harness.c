/* The proxy suite's harness (see harness.h). */
#include "harness.h"

#include "certs.h"
#include "connect.h"
#include "loop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/listener.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <tidepool/tls.h>
#include <time.h>
#include <unistd.h>

struct event_base *base;
struct px *proxy;
struct tide_group *group;

static unsigned char *files[3];
static const size_t file_sizes[3] = {0, 1024, 1024 * 1024};
static int fds_at_setup;

/* ---- files ---- */

const unsigned char *file_bytes(size_t size)
{
    for (int i = 0; i < 3; i++)
        if (file_sizes[i] == size)
            return files[i];
    return NULL;
}

static void make_files(void)
{
    /* a fixed pattern that no shift or truncation reproduces */
    for (int i = 0; i < 3; i++) {
        files[i] = malloc(file_sizes[i] + 1);
        uint32_t x = 2463534242u + (uint32_t)i;
        for (size_t k = 0; k < file_sizes[i]; k++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            files[i][k] = (unsigned char)x;
        }
    }
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* ---- ports ---- */

static int free_port(void)
{
    int port = tide_test_free_port();
    ck_assert_int_gt(port, 0);
    return port;
}

int client_connect(int port)
{
    int fd = tide_test_connect(port);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* ---- nginx ---- */

bool nginx_found(void)
{
    return access("/usr/sbin/nginx", X_OK) == 0;
}

/* ---- certificates ---- */

/* One CA and leaf for the process, made at the first TLS test. */
static struct pki pki;
static char *ca_pem;

static void pki_ready(void)
{
    if (ca_pem)
        return;
    ck_assert(pki_make(&pki));
    ca_pem = pki_pem(pki.ca);
    ck_assert_ptr_nonnull(ca_pem);
}

void nginx_start_tls(struct nginx *n, int port, const char *extra)
{
    pki_ready();
    if (!n->pem[0]) {
        char path[PATH_MAX];
        ck_assert(pki_write(pki.good, pki.key, path));
        ck_assert_int_lt(strlen(path), sizeof n->pem);
        snprintf(n->pem, sizeof n->pem, "%s", path);
    }
    n->tls = true;
    if (!n->status_port)
        n->status_port = free_port();
    nginx_start(n, port, extra);
}

/* nginx is up once its port takes a connection. */
static bool nginx_listening(void *arg)
{
    const struct nginx *n = arg;
    int fd = client_connect(n->port);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

void nginx_start(struct nginx *n, int port, const char *extra)
{
    const char *dir = n->child.dir;
    if (!dir[0]) {
        ck_assert(tide_test_child_mkdir(&n->child, "nginx"));
        /* nginx's worker runs as another user: it must read the files */
        chmod(dir, 0755);
        char p[128];
        const char *names[3] = {"f0", "f1k", "f1m"};
        for (int i = 0; i < 3; i++) {
            snprintf(p, sizeof p, "%s/%s", dir, names[i]);
            write_file(p, files[i], file_sizes[i]);
        }
    }
    n->port = port ? port : free_port();
    if (n->h2 && !n->status_port)
        n->status_port = free_port();
    char conf[4096], path[128], listen[512], status[256] = "";
    if (n->tls || n->h2) {
        /* stub_status in plain text beside the TLS or HTTP/2 server */
        snprintf(status, sizeof status,
                 " server {\n  listen 127.0.0.1:%d;\n"
                 "  location = /status { stub_status; }\n }\n",
                 n->status_port);
    }
    if (n->tls) {
        /* TLS 1.3 too: nginx 1.22's own default stops at 1.2 */
        snprintf(listen, sizeof listen,
                 "%d ssl%s;\n  ssl_certificate %s;\n  ssl_certificate_key %s;\n"
                 "  ssl_protocols TLSv1.2 TLSv1.3",
                 n->port, n->h2 ? " http2" : "", n->pem, n->pem);
    } else {
        snprintf(listen, sizeof listen, "%d%s", n->port, n->h2 ? " http2" : "");
    }
    snprintf(conf, sizeof conf,
             "worker_processes 1;\ndaemon off;\npid %s/nginx.pid;\n"
             "error_log %s/error.log warn;\n"
             "events { worker_connections 1024; }\n"
             "http {\n access_log off;\n"
             " client_body_temp_path %s/body; proxy_temp_path %s/proxy;\n"
             " fastcgi_temp_path %s/fcgi; uwsgi_temp_path %s/uwsgi;\n"
             " scgi_temp_path %s/scgi;\n keepalive_requests 1000000;\n %s\n"
             "%s server {\n  listen 127.0.0.1:%s;\n  root %s;\n"
             "  default_type application/octet-stream;\n"
             "  location = /status { stub_status; }\n }\n}\n",
             dir, dir, dir, dir, dir, dir, dir, extra ? extra : "", status,
             listen, dir);
    snprintf(path, sizeof path, "%s/nginx.conf", dir);
    write_file(path, conf, strlen(conf));
    char elog[128];
    snprintf(elog, sizeof elog, "%s/error.log", dir);
    const char *argv[] = {
        "/usr/sbin/nginx", "-p", dir, "-e", elog, "-c", path, NULL};
    ck_assert(tide_test_child_spawn(&n->child, argv));
    ck_assert_msg(tide_test_child_wait(&n->child, nginx_listening, n, 3000),
                  "nginx did not start on %d (see %s)", n->port, elog);
}

void nginx_stop(struct nginx *n)
{
    tide_test_child_stop(&n->child, SIGTERM, 5000);
}

void nginx_cleanup(struct nginx *n)
{
    if (n->pem[0]) {
        unlink(n->pem);
        n->pem[0] = '\0';
    }
    tide_test_child_dispose(&n->child); /* stopped, and its files gone */
}

/* ---- the client's response parser ---- */

struct parse {
    struct response *r;
    char field[64];
    size_t field_len;
    bool in_value;
    char *value_dst;
    size_t value_cap;
    size_t value_len;
    bool done;
    bool head; /* a HEAD response has no body whatever its length says */
};

static int c_field(http_parser *p, const char *at, size_t len)
{
    struct parse *ps = p->data;
    if (ps->in_value) {
        ps->field_len = 0;
        ps->in_value = false;
    }
    size_t n = len < sizeof ps->field - 1 - ps->field_len
                   ? len
                   : sizeof ps->field - 1 - ps->field_len;
    memcpy(ps->field + ps->field_len, at, n);
    ps->field_len += n;
    ps->field[ps->field_len] = '\0';
    return 0;
}

static int c_value(http_parser *p, const char *at, size_t len)
{
    struct parse *ps = p->data;
    struct response *r = ps->r;
    if (!ps->in_value) {
        ps->in_value = true;
        ps->value_len = 0;
        ps->value_dst = NULL;
        if (strcasecmp(ps->field, "retry-after") == 0) {
            ps->value_dst = r->retry_after;
            ps->value_cap = sizeof r->retry_after;
        } else if (strcasecmp(ps->field, "x-method") == 0) {
            ps->value_dst = r->x_method;
            ps->value_cap = sizeof r->x_method;
        } else if (strcasecmp(ps->field, "x-forwarded-for-seen") == 0) {
            ps->value_dst = r->x_xff;
            ps->value_cap = sizeof r->x_xff;
        } else if (strcasecmp(ps->field, "x-hop-seen") == 0) {
            ps->value_dst = r->x_hop;
            ps->value_cap = sizeof r->x_hop;
        } else if (strcasecmp(ps->field, "connection") == 0) {
            ps->value_dst = r->connection;
            ps->value_cap = sizeof r->connection;
        }
    }
    if (ps->value_dst) {
        size_t n = len < ps->value_cap - 1 - ps->value_len
                       ? len
                       : ps->value_cap - 1 - ps->value_len;
        memcpy(ps->value_dst + ps->value_len, at, n);
        ps->value_len += n;
        ps->value_dst[ps->value_len] = '\0';
    }
    return 0;
}

static int c_headers(http_parser *p)
{
    struct parse *ps = p->data;
    ps->r->status = p->status_code;
    ps->r->chunked = (p->flags & F_CHUNKED) != 0;
    ps->r->content_length =
        p->content_length == ULLONG_MAX ? -1 : (long)p->content_length;
    ps->r->keep_alive = http_should_keep_alive(p);
    return ps->head ? 1 : 0;
}

static int c_body(http_parser *p, const char *at, size_t len)
{
    struct parse *ps = p->data;
    struct response *r = ps->r;
    r->body = realloc(r->body, r->body_len + len + 1);
    memcpy(r->body + r->body_len, at, len);
    r->body_len += len;
    return 0;
}

static int c_done(http_parser *p)
{
    struct parse *ps = p->data;
    if (p->status_code >= 100 && p->status_code < 200)
        return 0;
    ps->done = true;
    ps->r->complete = true;
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings client_settings = {
    .on_header_field = c_field,
    .on_header_value = c_value,
    .on_headers_complete = c_headers,
    .on_body = c_body,
    .on_message_complete = c_done,
};

void response_dispose(struct response *r)
{
    free(r->body);
    memset(r, 0, sizeof *r);
}

bool send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

bool client_exchange(int fd, const void *req, size_t len, bool head_request,
                     struct response *out)
{
    memset(out, 0, sizeof *out);
    out->content_length = -1;
    if (!send_all(fd, req, len))
        return false;
    http_parser p;
    http_parser_init(&p, HTTP_RESPONSE);
    struct parse ps = {.r = out, .head = head_request};
    p.data = &ps;
    char buf[65536];
    while (!ps.done) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n < 0)
            return false;
        if (n == 0) {
            http_parser_execute(&p, &client_settings, NULL, 0);
            break;
        }
        size_t used = http_parser_execute(&p, &client_settings, buf, (size_t)n);
        (void)used;
        if (HTTP_PARSER_ERRNO(&p) != HPE_OK &&
            HTTP_PARSER_ERRNO(&p) != HPE_PAUSED)
            return false;
    }
    return out->complete;
}

bool client_request(int fd, const char *method, const char *path,
                    const void *body, size_t len, bool chunked,
                    struct response *out)
{
    size_t cap = len + 512;
    char *req = malloc(cap);
    int h;
    if (chunked)
        h = snprintf(req, cap,
                     "%s %s HTTP/1.1\r\nHost: test\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n",
                     method, path);
    else if (len > 0 || strcmp(method, "POST") == 0 ||
             strcmp(method, "PUT") == 0)
        h = snprintf(req, cap,
                     "%s %s HTTP/1.1\r\nHost: test\r\nContent-Length: %zu\r\n"
                     "\r\n",
                     method, path, len);
    else
        h = snprintf(req, cap, "%s %s HTTP/1.1\r\nHost: test\r\n\r\n", method,
                     path);
    size_t at = (size_t)h;
    if (chunked) {
        size_t part = len / 3 + 1;
        for (size_t off = 0; off < len; off += part) {
            size_t n = len - off < part ? len - off : part;
            at += (size_t)snprintf(req + at, cap - at, "%zx\r\n", n);
            memcpy(req + at, (const char *)body + off, n);
            at += n;
            memcpy(req + at, "\r\n", 2);
            at += 2;
        }
        memcpy(req + at, "0\r\n\r\n", 5);
        at += 5;
    } else if (len > 0) {
        memcpy(req + at, body, len);
        at += len;
    }
    bool ok = client_exchange(fd, req, at, strcmp(method, "HEAD") == 0, out);
    free(req);
    return ok;
}

static void raw_talk(void *arg)
{
    struct raw *r = arg;
    int fd = client_connect(r->port);
    if (fd < 0)
        return;
    send(fd, r->req, strlen(r->req), MSG_NOSIGNAL);
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, r->quiet_ms) <= 0)
            break;
        ssize_t n = recv(fd, r->got + r->len, sizeof r->got - 1 - r->len, 0);
        if (n <= 0) {
            r->closed = true;
            break;
        }
        r->len += (size_t)n;
    }
    r->got[r->len] = '\0';
    close(fd);
}

void talk(struct raw *r, int port, const char *req)
{
    memset(r, 0, sizeof *r);
    r->port = port;
    r->req = req;
    r->quiet_ms = 800;
    run_client(raw_talk, r, 5000);
}

int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void slow_talk(void *arg)
{
    struct slow *w = arg;
    int64_t t0 = now_ms();
    int fd = client_connect(w->port);
    if (fd < 0)
        return;
    for (int i = 0; w->pieces[i]; i++) {
        if (send(fd, w->pieces[i], strlen(w->pieces[i]), MSG_NOSIGNAL) < 0)
            break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, w->gap_ms) > 0)
            break; /* an answer (or the close) came before the rest */
    }
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 5000) <= 0)
            break;
        ssize_t n = recv(fd, w->got + w->len, sizeof w->got - 1 - w->len, 0);
        if (n <= 0) {
            w->closed = n == 0 || w->len > 0;
            break;
        }
        w->len += (size_t)n;
    }
    w->got[w->len] = '\0';
    w->took_ms = now_ms() - t0;
    close(fd);
}

long nginx_accepts(const struct nginx *n)
{
    int fd = client_connect(n->tls || n->h2 ? n->status_port : n->port);
    if (fd < 0)
        return -1;
    struct response r;
    const char *req = "GET /status HTTP/1.1\r\nHost: x\r\nConnection: close"
                      "\r\n\r\n";
    long accepts = -1;
    if (client_exchange(fd, req, strlen(req), false, &r) && r.body) {
        r.body[r.body_len] = '\0';
        const char *p = strstr((char *)r.body, "requests");
        if (p)
            accepts = strtol(p + strlen("requests"), NULL, 10);
    }
    response_dispose(&r);
    close(fd);
    return accepts;
}

/* ---- the loop and client threads ---- */

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

void run_ms(int ms)
{
    struct event *stop = evtimer_new(base, on_stop, base);
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    evtimer_add(stop, &tv);
    event_base_dispatch(base);
    event_free(stop);
}

struct job {
    void (*fn)(void *);
    void *arg;
    atomic_int done;
};

static void *job_main(void *arg)
{
    struct job *j = arg;
    j->fn(j->arg);
    atomic_store(&j->done, 1);
    return NULL;
}

void run_clients(void (*fn)(void *), void **args, int n, int ms)
{
    struct job *jobs = calloc((size_t)n, sizeof *jobs);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    for (int i = 0; i < n; i++) {
        jobs[i].fn = fn;
        jobs[i].arg = args[i];
        ck_assert_int_eq(pthread_create(&t[i], NULL, job_main, &jobs[i]), 0);
    }
    for (int waited = 0; waited < ms; waited += 2) {
        int done = 0;
        for (int i = 0; i < n; i++)
            done += atomic_load(&jobs[i].done);
        if (done == n)
            break;
        run_ms(2);
    }
    for (int i = 0; i < n; i++) {
        ck_assert_msg(atomic_load(&jobs[i].done), "a client did not finish");
        pthread_join(t[i], NULL);
    }
    free(jobs);
    free(t);
}

void run_client(void (*fn)(void *), void *arg, int ms)
{
    run_clients(fn, &arg, 1, ms);
}

int fds_open(void)
{
    return tide_test_open_fds();
}

/* ---- the in-process origin ---- */

struct oconn {
    struct bufferevent *bev;
    http_parser p;
    char url[256];
    char field[64];
    bool in_value;
    bool hop_seen;
    char xff[64];
    bool xff_value;
    struct evbuffer *body;
    bool drop_next;     /* close at the next request's first byte, unanswered */
    struct event later; /* trickle: the second half of a body */
};

static struct evconnlistener *origin;

static int o_url(http_parser *p, const char *at, size_t len)
{
    struct oconn *c = p->data;
    strncat(c->url, at,
            len < sizeof c->url - 1 - strlen(c->url)
                ? len
                : sizeof c->url - 1 - strlen(c->url));
    return 0;
}

static int o_begin(http_parser *p)
{
    struct oconn *c = p->data;
    c->url[0] = '\0';
    c->hop_seen = false;
    c->xff[0] = '\0';
    evbuffer_drain(c->body, evbuffer_get_length(c->body));
    return 0;
}

static int o_field(http_parser *p, const char *at, size_t len)
{
    struct oconn *c = p->data;
    if (c->in_value) {
        c->field[0] = '\0';
        c->in_value = false;
    }
    strncat(c->field, at,
            len < sizeof c->field - 1 - strlen(c->field)
                ? len
                : sizeof c->field - 1 - strlen(c->field));
    return 0;
}

static int o_value(http_parser *p, const char *at, size_t len)
{
    struct oconn *c = p->data;
    if (!c->in_value) {
        c->in_value = true;
        if (strcasecmp(c->field, "keep-alive") == 0 ||
            strcasecmp(c->field, "proxy-connection") == 0 ||
            strcasecmp(c->field, "x-hop") == 0 ||
            strcasecmp(c->field, "te") == 0)
            c->hop_seen = true;
        c->xff_value = strcasecmp(c->field, "x-forwarded-for") == 0;
    }
    if (c->xff_value)
        strncat(c->xff, at,
                len < sizeof c->xff - 1 - strlen(c->xff)
                    ? len
                    : sizeof c->xff - 1 - strlen(c->xff));
    return 0;
}

static int o_body(http_parser *p, const char *at, size_t len)
{
    struct oconn *c = p->data;
    evbuffer_add(c->body, at, len);
    return 0;
}

static int o_done(http_parser *p)
{
    struct oconn *c = p->data;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (strstr(c->url, "silent"))
        return 0;
    int status = 200;
    const char *s = strstr(c->url, "status=");
    if (s)
        status = atoi(s + 7);
    bool chunked = strstr(c->url, "chunked") != NULL;
    bool close_it = strstr(c->url, "close") != NULL;
    bool no_body = (status >= 100 && status < 200) || status == 204 ||
                   status == 304 || p->method == HTTP_HEAD;
    size_t len = evbuffer_get_length(c->body);
    evbuffer_add_printf(out,
                        "HTTP/1.1 %d X\r\nX-Method: %s\r\n"
                        "X-Forwarded-For-Seen: %s\r\nX-Hop-Seen: %d\r\n"
                        "Keep-Alive: timeout=5\r\n%s",
                        status, http_method_str((enum http_method)p->method),
                        c->xff, c->hop_seen,
                        close_it ? "Connection: close\r\n" : "");
    if (strstr(c->url, "trickle")) {
        /* promise 2 KiB, send one now and one in 200 ms */
        evbuffer_add_printf(out, "Content-Length: 2048\r\n\r\n");
        evbuffer_add(out, file_bytes(1024), 1024);
        struct timeval tv = {.tv_usec = 200000};
        evtimer_add(&c->later, &tv);
    } else if (strstr(c->url, "big")) {
        /* 8 MiB: more than the sockets between it and a client hold */
        evbuffer_add_printf(out, "Content-Length: %d\r\n\r\n", 8 << 20);
        for (int i = 0; i < 8; i++)
            evbuffer_add(out, file_bytes(1 << 20), 1 << 20);
    } else if (strstr(c->url, "stall")) {
        /* promise a megabyte, send a kilobyte, and hold */
        evbuffer_add_printf(out, "Content-Length: 1048576\r\n\r\n");
        evbuffer_add(out, file_bytes(1024), 1024);
    } else if (no_body) {
        evbuffer_add(out, "\r\n", 2);
    } else if (chunked) {
        evbuffer_add_printf(out, "Transfer-Encoding: chunked\r\n\r\n");
        size_t part = len / 4 + 1;
        const unsigned char *b = evbuffer_pullup(c->body, -1);
        for (size_t off = 0; off < len; off += part) {
            size_t n = len - off < part ? len - off : part;
            evbuffer_add_printf(out, "%zx\r\n", n);
            evbuffer_add(out, b + off, n);
            evbuffer_add(out, "\r\n", 2);
        }
        evbuffer_add(out, "0\r\n\r\n", 5);
    } else {
        evbuffer_add_printf(out, "Content-Length: %zu\r\n\r\n", len);
        evbuffer_add_buffer(out, c->body);
    }
    if (close_it)
        bufferevent_disable(c->bev, EV_READ);
    if (strstr(c->url, "dropnext"))
        c->drop_next = true;
    return 0;
}

static const http_parser_settings origin_settings = {
    .on_message_begin = o_begin,
    .on_url = o_url,
    .on_header_field = o_field,
    .on_header_value = o_value,
    .on_body = o_body,
    .on_message_complete = o_done,
};

static void oconn_free(struct oconn *c)
{
    event_del(&c->later);
    bufferevent_free(c->bev);
    evbuffer_free(c->body);
    free(c);
}

static void o_read(struct bufferevent *bev, void *arg)
{
    struct oconn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (c->drop_next) {
        /* a server closing a kept connection just as a request arrives */
        oconn_free(c);
        return;
    }
    size_t len = evbuffer_get_length(in);
    const char *d = (const char *)evbuffer_pullup(in, -1);
    size_t used = http_parser_execute(&c->p, &origin_settings, d, len);
    evbuffer_drain(in, len);
    if (used != len) {
        oconn_free(c);
        return;
    }
}

static void o_write(struct bufferevent *bev, void *arg)
{
    struct oconn *c = arg;
    /* a Connection: close answer ends the connection once written */
    if (!(bufferevent_get_enabled(bev) & EV_READ))
        oconn_free(c);
}

static void o_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what;
    oconn_free(arg);
}

static void o_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct oconn *c = arg;
    evbuffer_add(bufferevent_get_output(c->bev), file_bytes(1024), 1024);
}

static void o_accept(struct evconnlistener *l, evutil_socket_t fd,
                     struct sockaddr *sa, int salen, void *arg)
{
    (void)l;
    (void)sa;
    (void)salen;
    (void)arg;
    struct oconn *c = calloc(1, sizeof *c);
    c->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->body = evbuffer_new();
    http_parser_init(&c->p, HTTP_REQUEST);
    c->p.data = c;
    evtimer_assign(&c->later, base, o_later, c);
    bufferevent_setcb(c->bev, o_read, o_write, o_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

int origin_start(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    origin = evconnlistener_new_bind(base, o_accept, NULL,
                                     LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                     64, (struct sockaddr *)&a, sizeof a);
    ck_assert_ptr_nonnull(origin);
    socklen_t l = sizeof a;
    getsockname(evconnlistener_get_fd(origin), (struct sockaddr *)&a, &l);
    return ntohs(a.sin_port);
}

void origin_stop(void)
{
    if (origin)
        evconnlistener_free(origin);
    origin = NULL;
}

/* ---- the proxy ---- */

int64_t proxy_response_timeout;
struct tide_tls_factory *tls_factory;
static struct px_upstreams ups;

/* The tests' command line for the proxy: listening on `listen`, in front
 * of upstreams[0, n) with pools of `size`, their own timeouts, then
 * `extra` (NULL-terminated, may be NULL). Its words in argv (NULL-ended,
 * room for 64), some of them in `words`; the count returned. */
struct proxy_words {
    char sizes[16];
    char response[24];
};

static int proxy_command(const char **argv, struct proxy_words *words,
                         const char *listen, const char *const *upstreams,
                         int n, int size, const char *const *extra)
{
    int argc = 0;
    argv[argc++] = "proxy";
    argv[argc++] = "--listen";
    argv[argc++] = listen;
    for (int i = 0; i < n; i++) {
        argv[argc++] = "--upstream";
        argv[argc++] = upstreams[i];
    }
    snprintf(words->sizes, sizeof words->sizes, "%d", size);
    argv[argc++] = "--pool-size";
    argv[argc++] = words->sizes;
    argv[argc++] = "--acquire-timeout";
    argv[argc++] = "3000";
    argv[argc++] = "--connect-timeout";
    argv[argc++] = "2000";
    if (proxy_response_timeout) {
        snprintf(words->response, sizeof words->response, "%lld",
                 (long long)(proxy_response_timeout / TIDE_MS(1)));
        argv[argc++] = "--response-timeout";
        argv[argc++] = words->response;
    }
    for (int i = 0; extra && extra[i]; i++) {
        ck_assert_int_lt(argc, 63);
        argv[argc++] = extra[i];
    }
    argv[argc] = NULL;
    return argc;
}

/* The proxy as main.c builds it, from the tests' command line. */
static void open_proxy(const char *const *upstreams, int n, int size,
                       const char *const *extra)
{
    const char *argv[64];
    struct proxy_words words;
    int argc =
        proxy_command(argv, &words, "127.0.0.1:0", upstreams, n, size, extra);
    struct px_config cfg;
    px_config_init(&cfg);
    char err[512];
    ck_assert_msg(
        px_config_parse(&cfg, argc, (char *const *)argv, err, sizeof err) == 0,
        "%s", err);
    if (strncmp(upstreams[0], "tls://", 6) == 0 ||
        strncmp(upstreams[0], "h2://", 5) == 0) {
        pki_ready();
        cfg.ca_pem = ca_pem;
    }
    ck_assert_msg(px_upstreams_open(&ups, base, &cfg, err, sizeof err) == 0,
                  "%s", err);
    group = ups.group;
    tls_factory = ups.m[0].tls;
    struct px_options o;
    px_config_proxy_options(&cfg, &o);
    ck_assert_int_eq(px_new(base, group, &o, &proxy), 0);
}

void proxy_start_with(const int *ports, int n, int size,
                      const char *const *extra)
{
    ck_assert_int_le(n, 4);
    char names[4][32];
    const char *upstreams[4];
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "127.0.0.1:%d", ports[i]);
        upstreams[i] = names[i];
    }
    open_proxy(upstreams, n, size, extra);
}

void proxy_start(const int *ports, int n, int size)
{
    proxy_start_with(ports, n, size, NULL);
}

/* The program is up once its port takes a connection. */
static bool program_listening(void *arg)
{
    int fd = client_connect(*(const int *)arg);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

int proxy_program_start(struct tide_test_child *c, const char *prog,
                        int upstream, int size, const char *const *extra)
{
    ck_assert(tide_test_child_mkdir(c, "proxy"));
    char listen[32], up[32];
    int port = free_port();
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    snprintf(up, sizeof up, "127.0.0.1:%d", upstream);
    const char *upstreams[1] = {up};
    const char *argv[64];
    struct proxy_words words;
    proxy_command(argv, &words, listen, upstreams, 1, size, extra);
    argv[0] = prog;
    ck_assert(tide_test_child_spawn(c, argv));
    ck_assert_msg(tide_test_child_wait(c, program_listening, &port, 5000),
                  "%s did not listen on %d (see %s/child.log)", prog, port,
                  c->dir);
    return port;
}

void proxy_start_tls(int port, int size)
{
    char name[48];
    snprintf(name, sizeof name, "tls://127.0.0.1:%d", port);
    const char *upstreams[1] = {name};
    open_proxy(upstreams, 1, size, NULL);
}

void proxy_start_scheme(const char *scheme, int port, int size,
                        const char *const *extra)
{
    char name[64];
    snprintf(name, sizeof name, "%s://127.0.0.1:%d", scheme, port);
    const char *upstreams[1] = {name};
    open_proxy(upstreams, 1, size, extra);
}

int proxy_port(void)
{
    return px_port(proxy);
}

static bool closed_flag;

static void on_group_closed(struct tide_group *g, void *arg)
{
    (void)g;
    (void)arg;
    closed_flag = true;
}

void proxy_stop(void)
{
    if (proxy)
        px_free(proxy);
    proxy = NULL;
    if (group) {
        closed_flag = false;
        ck_assert_int_eq(tide_group_close(group, on_group_closed, NULL), 0);
        for (int i = 0; i < 3000 && !closed_flag; i++)
            run_ms(1);
        ck_assert_msg(closed_flag, "the group did not close");
    }
    px_upstreams_dispose(&ups);
    group = NULL;
    tls_factory = NULL;
}

void harness_setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (!files[0])
        make_files();
    fds_at_setup = fds_open();
    base = event_base_new();
    proxy_response_timeout = 0;
}

void harness_teardown(void)
{
    proxy_stop();
    origin_stop();
    /* the loop ends by itself: nothing is left pending */
    for (int i = 0; i < 100; i++)
        if (event_base_loop(base, EVLOOP_NONBLOCK) == 1)
            break;
    ck_assert_int_eq(event_base_loop(base, EVLOOP_NONBLOCK), 1);
    event_base_free(base);
    base = NULL;
    ck_assert_int_eq(fds_open(), fds_at_setup);
}
