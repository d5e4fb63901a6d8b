/* One TCP socket: made non-blocking and close-on-exec in the same call (a
 * fork elsewhere in the program must not inherit pool sockets: the peer would
 * never see them close), with TCP_NODELAY (requests are written whole, and
 * Nagle would hold the last segment back) and the factory's keepalive. A
 * Unix domain socket gets none of the TCP options: setting them fails
 * there. */
#include <errno.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_internal.h"

static int set_int(evutil_socket_t fd, int level, int name, int value)
{
    return setsockopt(fd, level, name, &value, sizeof value);
}

/* ns to whole seconds, rounded up; the range was checked at creation */
static int seconds(int64_t ns)
{
    return (int)((ns + TIDE_SEC(1) - 1) / TIDE_SEC(1));
}

static int configure(const struct tide_tcp_factory *f, evutil_socket_t fd)
{
    if (set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1) != 0)
        return -1;
    if (f->keepalive_idle == 0)
        return 0;
    if (set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1) != 0 ||
        set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, seconds(f->keepalive_idle)) != 0)
        return -1;
    if (f->keepalive_interval > 0 &&
        set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL,
                seconds(f->keepalive_interval)) != 0)
        return -1;
    if (f->keepalive_count > 0 &&
        set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, f->keepalive_count) != 0)
        return -1;
    return 0;
}

evutil_socket_t tide__net_sock_connect(const struct tide_tcp_factory *f,
                                       const struct tide__net_addr *a)
{
    bool tcp = a->u.sa.sa_family != AF_UNIX;
    evutil_socket_t fd =
        socket(a->u.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
               tcp ? IPPROTO_TCP : 0);
    if (fd < 0)
        return -1;
    if ((tcp && configure(f, fd) != 0) ||
        (connect(fd, &a->u.sa, a->len) != 0 && errno != EINPROGRESS &&
         errno != EINTR)) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

int tide__net_sock_error(evutil_socket_t fd)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        return errno;
    return err;
}

int tide__net_sock_peek(evutil_socket_t fd, int *err)
{
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    *err = 0;
    if (n > 0)
        return 1;
    if (n == 0)
        return -1; /* FIN */
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return 0;
    *err = errno;
    return -1;
}
