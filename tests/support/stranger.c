/* A server of another protocol in a thread (see stranger.h): one poll loop
 * over the listener, the connections and a wake-up pipe. */
#include "stranger.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void answer(struct tide_test_stranger *s, int i)
{
    /* small, into an empty socket buffer: written whole at once */
    if (s->len > 0)
        (void)!send(s->conns[i], s->bytes, s->len, MSG_NOSIGNAL);
    s->answered[i] = true;
    if (s->hangs_up) {
        close(s->conns[i]);
        s->conns[i] = -1;
    }
}

static void take(struct tide_test_stranger *s)
{
    int fd = accept4(s->listener, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    for (int i = 0; i < TIDE_TEST_STRANGER_CONNS; i++)
        if (s->conns[i] < 0) {
            s->conns[i] = fd;
            s->answered[i] = false;
            s->accepted++;
            if (s->speaks_first)
                answer(s, i);
            return;
        }
    close(fd); /* full: a reset, as a server at its limit would */
}

/* Bytes from connection i: the cue to answer, then dropped. */
static void hear(struct tide_test_stranger *s, int i)
{
    char buf[4096];
    ssize_t n = recv(s->conns[i], buf, sizeof buf, 0);
    if (n <= 0) {
        close(s->conns[i]);
        s->conns[i] = -1;
        return;
    }
    if (!s->answered[i])
        answer(s, i); /* may close it */
}

static void *run(void *arg)
{
    struct tide_test_stranger *s = arg;
    for (;;) {
        struct pollfd p[2 + TIDE_TEST_STRANGER_CONNS];
        int at[2 + TIDE_TEST_STRANGER_CONNS];
        int n = 0;
        p[n++] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
        p[n++] = (struct pollfd){.fd = s->listener, .events = POLLIN};
        for (int i = 0; i < TIDE_TEST_STRANGER_CONNS; i++)
            if (s->conns[i] >= 0) {
                at[n] = i;
                p[n++] = (struct pollfd){.fd = s->conns[i], .events = POLLIN};
            }
        if (poll(p, (nfds_t)n, -1) < 0)
            continue;
        if (p[0].revents)
            return NULL;
        if (p[1].revents)
            take(s);
        for (int k = 2; k < n; k++)
            if (p[k].revents)
                hear(s, at[k]);
    }
}

bool tide_test_stranger_start(struct tide_test_stranger *s, const char *bytes,
                              size_t len, bool speaks_first, bool hangs_up)
{
    memset(s, 0, sizeof *s);
    s->bytes = bytes;
    s->len = len;
    s->speaks_first = speaks_first;
    s->hangs_up = hangs_up;
    for (int i = 0; i < TIDE_TEST_STRANGER_CONNS; i++)
        s->conns[i] = -1;
    s->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (s->listener < 0 ||
        bind(s->listener, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(s->listener, 64) != 0 ||
        getsockname(s->listener, (struct sockaddr *)&a, &alen) != 0 ||
        pipe2(s->wake, O_CLOEXEC) != 0) {
        if (s->listener >= 0)
            close(s->listener);
        return false;
    }
    s->port = ntohs(a.sin_port);
    if (pthread_create(&s->thread, NULL, run, s) != 0) {
        close(s->listener);
        close(s->wake[0]);
        close(s->wake[1]);
        return false;
    }
    return true;
}

void tide_test_stranger_stop(struct tide_test_stranger *s)
{
    (void)!write(s->wake[1], "x", 1);
    pthread_join(s->thread, NULL);
    for (int i = 0; i < TIDE_TEST_STRANGER_CONNS; i++)
        if (s->conns[i] >= 0)
            close(s->conns[i]);
    close(s->listener);
    close(s->wake[0]);
    close(s->wake[1]);
}

int tide_test_refusing_port(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}
