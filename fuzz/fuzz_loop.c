/* The loop and socket plumbing of the proxy's fuzz targets (fuzz_loop.h). */
#include "fuzz_loop.h"
#include "fuzz_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

void fz_settle(struct event_base *base)
{
    int quiet = 0;
    for (int pass = 0; pass < 256 && quiet < 3; pass++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        quiet = event_base_get_num_events(base, EVENT_BASE_COUNT_ACTIVE) == 0
                    ? quiet + 1
                    : 0;
    }
}

void fz_read_all(int fd, char **p, size_t *len, size_t *cap, bool *eof)
{
    char buf[16384];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        if (*len < FZ_CAP)
            fz_grow(p, len, cap, buf, (size_t)n);
    if (n == 0 || (n < 0 && errno != EAGAIN))
        *eof = true;
}

void fz_write_all(int fd, const uint8_t *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

int fz_lowest_free_fd(void)
{
    int fd = dup(0);
    if (fd < 0)
        abort();
    close(fd);
    return fd;
}

int fz_client_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0)
        abort();
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

void fz_client_reset(int fd)
{
    setsockopt(fd, SOL_SOCKET, SO_LINGER,
               &(struct linger){.l_onoff = 1, .l_linger = 0},
               sizeof(struct linger));
    close(fd);
}
