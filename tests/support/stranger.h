/* A server of another protocol, in a thread of the test, for a client
 * pointed at the wrong port: it listens on 127.0.0.1 at a port the kernel
 * picks and gives every connection the same bytes, either at once (a
 * server that speaks first: garbage, another protocol's greeting) or once
 * the client has said something (an HTTP server answering 400), and then
 * hangs up, or keeps the connection open, reading and dropping whatever
 * comes, until the client closes or the stranger is stopped. A client
 * that waits for the server to speak first gets nothing from the second
 * kind: an HTTP server is silent to an SMTP client. No bytes, at once,
 * then hanging up: a server that accepts and closes. */
#ifndef TIDEPOOL_TEST_STRANGER_H
#define TIDEPOOL_TEST_STRANGER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define TIDE_TEST_STRANGER_CONNS 64

struct tide_test_stranger {
    int port;
    const char *bytes; /* borrowed; must outlive the stranger */
    size_t len;
    bool speaks_first;
    bool hangs_up;
    int listener;
    int wake[2]; /* stop: a byte on wake[1] */
    int conns[TIDE_TEST_STRANGER_CONNS];
    bool answered[TIDE_TEST_STRANGER_CONNS];
    int accepted; /* connections taken (read after stop) */
    pthread_t thread;
};

/* Starts one: len bytes of `bytes`, at once when speaks_first, else after
 * the client's first bytes, then a close when hangs_up. False when it
 * cannot listen or start. */
bool tide_test_stranger_start(struct tide_test_stranger *s, const char *bytes,
                              size_t len, bool speaks_first, bool hangs_up);
/* Stops the thread and closes every descriptor it opened. */
void tide_test_stranger_stop(struct tide_test_stranger *s);

/* A port on 127.0.0.1 that refuses connections: bound and not listening,
 * so that no other program takes it while the test runs. Its descriptor
 * (the caller closes it), -1 when it cannot be made. */
int tide_test_refusing_port(int *port);

/* What an HTTP server says to a request it cannot read. */
#define TIDE_TEST_HTTP_400                                                     \
    "HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\n"                  \
    "Content-Length: 11\r\nConnection: close\r\n\r\nBad Request"

#endif
