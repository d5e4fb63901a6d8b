/* The proxy suite's scripted origin (see script.h). */
#include "script.h"

#include "harness.h"
#include "runner.h"

#include <arpa/inet.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

atomic_int origin_accepts;
char origin_seen[8192];
pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

static int origin_fd = -1;
static pthread_t origin_thread;
static atomic_int origin_stopping;
static atomic_int origin_serving; /* connections whose thread still runs */
static const struct script *origin_scripts;
static size_t origin_nscripts;
static size_t seen_len;

static const char *default_reply =
    "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\ndefault";

/* origin_seen from the head of a request on. */
static void seen_start(const char *head, size_t len)
{
    pthread_mutex_lock(&seen_lock);
    seen_len = len < sizeof origin_seen ? len : 0;
    memcpy(origin_seen, head, seen_len);
    origin_seen[seen_len] = '\0';
    pthread_mutex_unlock(&seen_lock);
}

/* More of its body's bytes, as far as they fit. */
static void seen_add(const char *bytes, size_t len)
{
    pthread_mutex_lock(&seen_lock);
    size_t room = sizeof origin_seen - 1 - seen_len;
    size_t n = len < room ? len : room;
    memcpy(origin_seen + seen_len, bytes, n);
    seen_len += n;
    origin_seen[seen_len] = '\0';
    pthread_mutex_unlock(&seen_lock);
}

/* The script for the request whose head is buf[0, head), or NULL. */
static const struct script *script_for(const char *buf, size_t head)
{
    const char *path = memchr(buf, ' ', head);
    size_t at = path ? (size_t)(path - buf) + 1 : head;
    for (size_t i = 0; i < origin_nscripts; i++) {
        size_t pl = strlen(origin_scripts[i].path);
        if (head > at + pl &&
            memcmp(buf + at, origin_scripts[i].path, pl) == 0 &&
            buf[at + pl] == ' ')
            return &origin_scripts[i];
    }
    return NULL;
}

uint32_t script_sum(uint32_t sum, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        sum = (sum ^ b[i]) * 16777619u;
    return sum;
}

/* One request through the parser: its body's length and sum, and done
 * once its end is read. */
struct request {
    size_t body;
    uint32_t sum;
    bool done;
};

static int on_body(http_parser *p, const char *at, size_t len)
{
    struct request *r = p->data;
    r->body += len;
    r->sum = script_sum(r->sum, at, len);
    return 0;
}

static int on_complete(http_parser *p)
{
    struct request *r = p->data;
    r->done = true;
    http_parser_pause(p, 1); /* what follows is the next request */
    return 0;
}

static const http_parser_settings request_settings = {
    .on_body = on_body,
    .on_message_complete = on_complete,
};

/* Whether a DROP_FIRST script is asked for the first time since the
 * start. */
static atomic_int asked[64];

static bool first_time(const struct script *s)
{
    size_t i = (size_t)(s - origin_scripts);
    return i < sizeof asked / sizeof asked[0] &&
           atomic_exchange(&asked[i], 1) == 0;
}

static void sleep_ms(long ms)
{
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000};
    nanosleep(&t, NULL);
}

/* Serves one connection: a reply for each request, until the client
 * closes or a script resets. */
static void serve(int fd)
{
    char buf[16384];
    size_t have = 0;
    http_parser p;
    http_parser_init(&p, HTTP_REQUEST);
    for (;;) {
        char *end = NULL;
        while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
            if (have == sizeof buf)
                return;
            ssize_t n = recv(fd, buf + have, sizeof buf - have, 0);
            if (n <= 0)
                return;
            have += (size_t)n;
        }
        size_t head = (size_t)(end - buf) + 4;
        seen_start(buf, head);
        const struct script *s = script_for(buf, head);
        if (s && s->after == EARLY &&
            send(fd, s->reply, strlen(s->reply), MSG_NOSIGNAL) < 0)
            return;
        if (s && s->after == STALL_BODY)
            sleep_ms(1500);
        /* the head through the parser, then the body as it comes: after
         * the reply for EARLY, before it for the others */
        struct request r = {.sum = 2166136261u};
        p.data = &r;
        size_t at = 0, skip = head; /* the head is in origin_seen already */
        while (!r.done) {
            if (at == have) {
                ssize_t n = recv(fd, buf, sizeof buf, 0);
                if (n <= 0)
                    return;
                have = (size_t)n;
                at = 0;
            }
            size_t used =
                http_parser_execute(&p, &request_settings, buf + at, have - at);
            size_t fresh = used > skip ? used - skip : 0;
            seen_add(buf + at + used - fresh, fresh);
            skip = skip > used ? skip - used : 0;
            at += used;
            if (HTTP_PARSER_ERRNO(&p) == HPE_PAUSED)
                http_parser_pause(&p, 0);
            else if (HTTP_PARSER_ERRNO(&p) != HPE_OK)
                return;
        }
        memmove(buf, buf + at, have - at);
        have -= at;
        if (s && s->after == DROP_FIRST && first_time(s))
            return;
        char counted[128];
        if (s && !s->reply)
            snprintf(counted, sizeof counted,
                     "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
                     "bytes=%zu sum=%08x",
                     snprintf(NULL, 0, "bytes=%zu sum=%08x", r.body, r.sum),
                     r.body, r.sum);
        const char *reply = !s ? default_reply : s->reply ? s->reply : counted;
        size_t first = strcspn(reply, s && s->after == SPLIT ? "\f" : "");
        if (!(s && s->after == EARLY) &&
            send(fd, reply, first, MSG_NOSIGNAL) < 0)
            return;
        if (reply[first]) { /* SPLIT */
            sleep_ms(200);
            const char *rest = reply + first + 1;
            if (send(fd, rest, strlen(rest), MSG_NOSIGNAL) < 0)
                return;
        }
        if (s && s->after == HOLD) {
            sleep_ms(1500);
            return;
        }
        if (s && s->after == RESET) {
            /* a pause, so the bytes before the reset are read first */
            sleep_ms(100);
            struct linger lg = {.l_onoff = 1, .l_linger = 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            return;
        }
    }
}

static void *connection_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    serve(fd);
    close(fd);
    atomic_fetch_sub(&origin_serving, 1);
    return NULL;
}

static void *origin_main(void *arg)
{
    (void)arg;
    pthread_attr_t detached;
    pthread_attr_init(&detached);
    pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
    while (!atomic_load(&origin_stopping)) {
        struct pollfd p = {.fd = origin_fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int fd = accept(origin_fd, NULL, NULL);
        if (fd < 0)
            continue;
        atomic_fetch_add(&origin_accepts, 1);
        atomic_fetch_add(&origin_serving, 1);
        pthread_t t;
        if (pthread_create(&t, &detached, connection_main,
                           (void *)(intptr_t)fd) != 0) {
            close(fd);
            atomic_fetch_sub(&origin_serving, 1);
        }
    }
    pthread_attr_destroy(&detached);
    return NULL;
}

int script_origin_start(const struct script *scripts, size_t n)
{
    origin_scripts = scripts;
    origin_nscripts = n;
    origin_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(origin_fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(origin_fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(origin_fd, 64), 0);
    socklen_t l = sizeof a;
    getsockname(origin_fd, (struct sockaddr *)&a, &l);
    atomic_store(&origin_accepts, 0);
    atomic_store(&origin_stopping, 0);
    atomic_store(&origin_serving, 0);
    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++)
        atomic_store(&asked[i], 0);
    ck_assert_int_eq(pthread_create(&origin_thread, NULL, origin_main, NULL),
                     0);
    return ntohs(a.sin_port);
}

void script_origin_stop(void)
{
    if (origin_fd < 0)
        return;
    atomic_store(&origin_stopping, 1);
    pthread_join(origin_thread, NULL);
    close(origin_fd);
    origin_fd = -1;
    for (int i = 0; i < 500 && atomic_load(&origin_serving) > 0; i++)
        sleep_ms(10);
    ck_assert_msg(atomic_load(&origin_serving) == 0,
                  "%d origin connections still served",
                  atomic_load(&origin_serving));
}

void proxy_on_scripts(const struct script *scripts, size_t n,
                      const char *const *args)
{
    int port = script_origin_start(scripts, n);
    proxy_start_with(&port, 1, 1, args);
}

void script_teardown(void)
{
    proxy_stop();
    script_origin_stop();
    harness_teardown();
}
