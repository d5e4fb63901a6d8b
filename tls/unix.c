/* A Unix domain socket upstream: a path instead of a host and a port.
 *
 * The path becomes the factory's one fixed address, so a make runs the same
 * dial as TCP (no DNS: a fixed address is never resolved), with the same
 * connect_timeout, errors, idle watch and checks; the socket itself differs
 * only in sock.c (no TCP options) and in a full backlog (dial.c). The path
 * is kept as the host, which is what messages name. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "net_internal.h"

int tide__net_unix_init(struct tide_tcp_factory *f,
                        const struct tide_tcp_options *o)
{
    /* nothing to resolve and no TCP below: options that say otherwise are
     * a mistake, not something to ignore */
    if (o->host || o->port || o->service || o->dns || o->family != AF_UNSPEC ||
        o->keepalive_idle || o->keepalive_interval || o->keepalive_count)
        return TIDE_EINVAL;
    struct tide__net_addr *a = &f->fixed[0];
    size_t n = strlen(o->path);
    /* the NUL must fit too: a path filling sun_path exactly is accepted by
     * Linux but not portable, and an abstract name (a leading NUL) cannot
     * be spelled in a C string */
    if (n == 0 || n >= sizeof a->u.un.sun_path)
        return TIDE_EINVAL;
    memset(a, 0, sizeof *a);
    a->u.un.sun_family = AF_UNIX;
    memcpy(a->u.un.sun_path, o->path, n + 1);
    a->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    f->n_fixed = 1;
    f->unix_path = true;
    f->host = strdup(o->path);
    return f->host ? 0 : TIDE_ENOMEM;
}
