/* The proxy suite's harness: a real nginx started per test on 127.0.0.1
 * with a config the test writes (its own prefix, pid file and temp paths;
 * stopped by its pid), an in-process origin for what nginx cannot be told
 * to do, the proxy itself on the test's loop, and blocking HTTP clients in
 * threads while the loop runs. */
#ifndef TIDEPOOL_TEST_PROXY_HARNESS_H
#define TIDEPOOL_TEST_PROXY_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "child.h"
#include "config.h"
#include "proxy.h"
#include "runner.h"

struct event_base;

extern struct event_base *base;

/* ---- nginx ---- */

struct nginx {
    struct tide_test_child child; /* its process and its directory */
    int port;
    /* TLS (nginx_start_tls): the port speaks only TLS, with a certificate
     * for 127.0.0.1 by the harness's CA in `pem`; stub_status is served in
     * plain text on status_port */
    bool tls;
    int status_port;
    char pem[128];
    /* HTTP/2 (set before nginx_start or nginx_start_tls): the port speaks
     * h2c by prior knowledge, or h2 over TLS (ALPN); stub_status is on
     * status_port as for TLS */
    bool h2;
};

/* Whether nginx is installed; the binary exits 77 (SKIP) without it. */
bool nginx_found(void);
/* Starts nginx on port (0: a free one) serving files under its dir, with
 * `extra` inside the http block (keepalive_timeout...). Waits until it
 * accepts. Files: /f0 (0 B), /f1k (1 KiB), /f1m (1 MiB), /status. */
void nginx_start(struct nginx *n, int port, const char *extra);
/* The same, the port speaking TLS (nginx's ssl module; nginx-light has
 * it) with a certificate made at run time. */
void nginx_start_tls(struct nginx *n, int port, const char *extra);
void nginx_stop(struct nginx *n);
/* Stops it (if running) and removes its directory. */
void nginx_cleanup(struct nginx *n);
/* stub_status accepts (direct, one connection of its own). */
long nginx_accepts(const struct nginx *n);
/* The bytes of one of its files. */
const unsigned char *file_bytes(size_t size);

/* ---- the in-process origin ---- */

/* Echoes a request's body back. Query words: chunked (answer chunked),
 * close (Connection: close), status=N (answer N, no body when 1xx, 204,
 * 304), dropnext (answer, then close the connection unanswered when the
 * next request on it arrives), stall (promise 1 MiB, send 1 KiB, hold),
 * trickle (promise 2 KiB, send 1 KiB now and 1 KiB 200 ms later),
 * silent (read the request, never answer), big (8 MiB: /f1m's bytes
 * eight times).
 * Headers X-Method, X-Forwarded-For-Seen and
 * X-Hop-Seen (1 when a hop-by-hop header reached it) report what it got. */
int origin_start(void);
void origin_stop(void);

/* ---- the proxy ---- */

/* The proxy as main.c builds it (config.c: its defaults, the default ward
 * on every upstream) on TCP upstreams 127.0.0.1:port, pools of `size`, an
 * acquire timeout of 3 s and a connect timeout of 2 s. */
void proxy_start(const int *ports, int n, int size);
/* The same with more command-line words after those (NULL-terminated),
 * such as "--breaker-cooldown", "300". */
void proxy_start_with(const int *ports, int n, int size,
                      const char *const *extra);
/* The proxy's response_timeout for the next proxy_start (0: its preset);
 * set back to 0 by harness_setup. */
extern int64_t proxy_response_timeout;
/* One TLS upstream, tls://127.0.0.1:port, trusting the harness's CA and
 * checking the certificate's IP address, a pool of `size`. */
void proxy_start_tls(int port, int size);
/* One upstream scheme://127.0.0.1:port (h2c, h2: HTTP/2; tls, h2 trust
 * the harness's CA), a pool of `size`, more words as proxy_start_with's. */
void proxy_start_scheme(const char *scheme, int port, int size,
                        const char *const *extra);
/* The TLS factory of proxy_start_tls, for its stats; NULL otherwise. */
extern struct tide_tls_factory *tls_factory;
void proxy_stop(void);
/* demos/proxy as a user runs it: prog (built beside the tests) as a child
 * in c (its directory made here, its output in child.log there) on a free
 * port, in front of 127.0.0.1:upstream with a pool of `size` and the rest
 * of the command line as proxy_start_with's. Waits until it takes
 * connections; its port. tide_test_child_dispose(c) stops it. */
int proxy_program_start(struct tide_test_child *c, const char *prog,
                        int upstream, int size, const char *const *extra);
extern struct px *proxy;
extern struct tide_group *group;
int proxy_port(void);

/* ---- clients ---- */

struct response {
    int status;
    bool keep_alive;
    long content_length; /* -1 when absent */
    bool chunked;
    char retry_after[32];
    char x_method[16];
    char x_xff[64];
    char x_hop[8];
    char connection[32];
    unsigned char *body; /* malloc'd */
    size_t body_len;
    bool complete; /* the message ended (not a cut connection) */
};

void response_dispose(struct response *r);

/* Connects to 127.0.0.1:port (blocking). */
int client_connect(int port);
/* Sends raw bytes and reads one response (for HEAD, head_request). */
bool client_exchange(int fd, const void *req, size_t len, bool head_request,
                     struct response *out);
/* A request with a body by Content-Length (chunked: in 3 chunks). */
bool client_request(int fd, const char *method, const char *path,
                    const void *body, size_t len, bool chunked,
                    struct response *out);

/* A raw exchange: sends req and reads what comes back until the proxy
 * closes or is quiet for `quiet_ms`; `closed` says which. */
struct raw {
    int port;
    const char *req;
    int quiet_ms;
    char got[16384];
    size_t len;
    bool closed;
};

/* One raw exchange with the proxy on port, quiet after 800 ms, run in a
 * thread while the loop runs (5 s at most). */
void talk(struct raw *r, int port, const char *req);

/* Sends pieces of a request `gap_ms` apart, then reads until the proxy
 * closes (or 5 s pass). */
struct slow {
    int port;
    const char *pieces[48];
    int gap_ms;
    char got[4096];
    size_t len;
    bool closed;
    int64_t took_ms;
};

/* The run_client job for a struct slow. */
void slow_talk(void *arg);

/* Sends all of buf[0, len) (blocking); false when a send fails. */
bool send_all(int fd, const void *buf, size_t len);

/* A monotonic clock in ms. */
int64_t now_ms(void);

/* Runs fn(arg) in a thread while the loop runs; returns when it ends (or
 * fails the test after ms). */
void run_client(void (*fn)(void *), void *arg, int ms);
/* Several at once. */
void run_clients(void (*fn)(void *), void **args, int n, int ms);
/* Runs the loop for ms. */
void run_ms(int ms);

/* Open file descriptors of this process. */
int fds_open(void);

void harness_setup(void);
void harness_teardown(void);

#endif
