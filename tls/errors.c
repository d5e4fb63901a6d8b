/* Failures: the detail kept behind each code, the sentence for a person,
 * the classification of errno values, and the public getters. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>

#include "net_internal.h"

void tide__net_fail_set(struct tide__net_fail *f, int code, const char *fmt,
                        ...)
{
    f->d.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->text, sizeof f->text, fmt, ap);
    va_end(ap);
}

int tide__net_errno_code(int err, int *rank)
{
    switch (err) {
    case ECONNREFUSED:
        *rank = 4;
        return TIDE_EREFUSED;
    case ENOENT: /* a Unix socket's path: no such file */
        *rank = 4;
        return TIDE_ENOSOCKET;
    case ETIMEDOUT:
        *rank = 2;
        return TIDE_ECONNECT_TIMEOUT;
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ENETDOWN:
    case EHOSTDOWN:
    case EADDRNOTAVAIL: /* no local address of the family (no IPv6) */
    case EAFNOSUPPORT:
        /* least telling: one family missing says little about the host */
        *rank = 1;
        return TIDE_EUNREACHABLE;
    default:
        *rank = 3;
        return TIDE_ECONNECT;
    }
}

int tide__net_fail_get(const struct tide__net_fail *f,
                       struct tide_net_detail *detail, char *buf, size_t len)
{
    if (detail)
        *detail = f->d;
    if (buf && len > 0)
        snprintf(buf, len, "%s", f->d.code ? f->text : "");
    return f->d.code;
}

unsigned long tide__net_ssl_error(struct bufferevent *bev)
{
    unsigned long first = 0;
    unsigned long e;
    /* libevent keeps at most three, newest popped first: the last real one
     * popped is the oldest, the root cause */
    while ((e = bufferevent_get_openssl_error(bev)) != 0)
        if (ERR_GET_LIB(e) != 0)
            first = e;
    return first;
}

void tide__net_addr_text(const struct tide__net_addr *a, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN];
    if (a->u.sa.sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &a->u.in6.sin6_addr, ip, sizeof ip);
        snprintf(buf, len, "[%s]:%u", ip, (unsigned)ntohs(a->u.in6.sin6_port));
    } else if (a->u.sa.sa_family == AF_INET) {
        inet_ntop(AF_INET, &a->u.in.sin_addr, ip, sizeof ip);
        snprintf(buf, len, "%s:%u", ip, (unsigned)ntohs(a->u.in.sin_port));
    } else if (a->u.sa.sa_family == AF_UNIX) {
        snprintf(buf, len, "unix:%s", a->u.un.sun_path);
    } else {
        snprintf(buf, len, "(no address)");
    }
}

/* What the getters hand out when asked about nothing: an empty detail and
 * sentence, so a caller that prints them without checking reads no garbage. */
static int fail_einval(struct tide_net_detail *detail, char *buf, size_t len)
{
    struct tide__net_fail none;
    memset(&none, 0, sizeof none);
    (void)tide__net_fail_get(&none, detail, buf, len);
    return TIDE_EINVAL;
}

int tide_tcp_factory_last_error(const struct tide_tcp_factory *f,
                                struct tide_net_detail *detail, char *buf,
                                size_t len)
{
    if (!f)
        return fail_einval(detail, buf, len);
    return tide__net_fail_get(&f->last, detail, buf, len);
}

/* An error event on an established connection, read into a code. */
int tide_net_event_error(struct bufferevent *bev, short what,
                         struct tide_net_detail *detail, char *buf, size_t len)
{
    if (!bev)
        return fail_einval(detail, buf, len);
    struct tide__net_fail f;
    memset(&f, 0, sizeof f);
    int err = EVUTIL_SOCKET_ERROR();
    bool tls = bufferevent_openssl_get_ssl(bev) != NULL;
    unsigned long e = tls ? tide__net_ssl_error(bev) : 0;
    const char *dir = (what & BEV_EVENT_WRITING) ? "write" : "read";
    char ssl_text[160] = "";
    if (e)
        ERR_error_string_n(e, ssl_text, sizeof ssl_text);

    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))) {
        /* CONNECTED, or nothing: not a failure */
    } else if (what & BEV_EVENT_TIMEOUT) {
        tide__net_fail_set(&f, TIDE_EIO_TIMEOUT,
                           "a %s on the connection timed out", dir);
    } else if (what & BEV_EVENT_EOF) {
        tide__net_fail_set(&f, TIDE_EPEER_CLOSED,
                           "the peer closed the connection");
    } else if (e && ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        /* OpenSSL 3 reports a close without close_notify this way */
        f.d.ssl_error = e;
        tide__net_fail_set(
            &f, TIDE_EPEER_CLOSED,
            "the peer closed the connection without close_notify "
            "(%s)",
            ssl_text);
    } else if (e) {
        f.d.ssl_error = e;
        tide__net_fail_set(&f, TIDE_ETLS, "TLS error on %s: %s", dir, ssl_text);
    } else {
        f.d.sys_errno = err;
        tide__net_fail_set(&f, TIDE_ECONN_BROKEN,
                           "connection broken on %s: %s "
                           "(errno %d)",
                           dir, err ? strerror(err) : "unknown error", err);
    }
    return tide__net_fail_get(&f, detail, buf, len);
}
