/* The proxy suite's scripted origin: blocking sockets in threads of this
 * process, a reply picked by the request's path from a table the test
 * gives, for what nginx cannot be told to do (reset mid-body, answer 1xx
 * or before the body, close on the first try, hold a body unread). Each
 * connection is served in a thread of its own; requests on it are read
 * whole (by length or chunked, through libhttp-parser) before the next. */
#ifndef TIDEPOOL_TEST_PROXY_SCRIPT_H
#define TIDEPOOL_TEST_PROXY_SCRIPT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* What the origin does around its reply. */
enum after {
    KEEP,
    RESET,
    /* the reply goes before the body is read, which is then read and
     * dropped (as nginx does) before the next request */
    EARLY,
    HOLD, /* nothing more for a second and a half, then the close */
    /* the reply up to its first '\f', then the rest 200 ms later */
    SPLIT,
    /* the body left unread for a second and a half, then read */
    STALL_BODY,
    /* the first request with this path since the start is read whole
     * and its connection closed unanswered; later ones as KEEP */
    DROP_FIRST,
};

struct script {
    const char *path; /* the request's path, exactly */
    /* NULL: a 200 whose body is "bytes=N sum=X", the length of the body
     * read and its script_sum in 8 hex digits */
    const char *reply;
    enum after after;
};

/* The sum of n more bytes at p onto sum (FNV-1a; 2166136261 to start), for
 * a test to check a body the origin read against what it sent. */
uint32_t script_sum(uint32_t sum, const void *p, size_t n);

/* Starts the origin on a free port of 127.0.0.1 (returned), answering a
 * request whose path is in scripts[0, n) (borrowed: must outlive the
 * origin) as it says, and any other with a 200 of body "default". */
int script_origin_start(const struct script *scripts, size_t n);
/* Stops accepting and waits (5 s at most) for the connections in service
 * to end: stop the proxy first, which closes its side of them. Nothing
 * when it is not running. */
void script_origin_stop(void);

/* The origin on scripts[0, n) and the proxy (harness.h) of one upstream
 * connection in front of it, with the command line's extra words `args`
 * (NULL: none). */
void proxy_on_scripts(const struct script *scripts, size_t n,
                      const char *const *args);
/* The teardown of a test that used them: the proxy first, then the origin
 * it holds connections to, then the harness. */
void script_teardown(void);

/* Connections accepted since the start. */
extern atomic_int origin_accepts;
/* The last request the origin read, its head and then its body's bytes
 * as they came (chunk framing and trailers included), cut at its size and
 * NUL-terminated; read it under seen_lock. */
extern char origin_seen[8192];
extern pthread_mutex_t seen_lock;

#endif
