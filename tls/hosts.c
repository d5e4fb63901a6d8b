/* The hosts file, for a factory that builds its own resolver from the
 * system configuration: a name listed there is connected to without DNS, as
 * the C library's resolver would ("files" before "dns"). libevent 2.1 reads
 * the hosts file only inside evdns_getaddrinfo, which the factory does not
 * use (it cannot tell a DNS timeout from a failure), so the file is read
 * here, once, at creation: the same moment evdns_base_new reads resolv.conf
 * and the hosts file, so the loop is never blocked by it. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>

#include "net_internal.h"

/* name equals host, ignoring case and one trailing dot on either */
static bool same_name(const char *name, const char *host)
{
    size_t a = strlen(name), b = strlen(host);
    if (a > 0 && name[a - 1] == '.')
        a--;
    if (b > 0 && host[b - 1] == '.')
        b--;
    return a == b && a > 0 && strncasecmp(name, host, a) == 0;
}

static bool parse_addr(const char *text, uint16_t port,
                       struct tide__net_addr *a)
{
    memset(a, 0, sizeof *a);
    if (inet_pton(AF_INET6, text, &a->u.in6.sin6_addr) == 1) {
        a->u.in6.sin6_family = AF_INET6;
        a->u.in6.sin6_port = htons(port);
        a->len = sizeof a->u.in6;
        return true;
    }
    if (inet_pton(AF_INET, text, &a->u.in.sin_addr) == 1) {
        a->u.in.sin_family = AF_INET;
        a->u.in.sin_port = htons(port);
        a->len = sizeof a->u.in;
        return true;
    }
    return false; /* with a %scope, or not an address */
}

int tide__net_hosts_lookup(const char *path, const char *host, uint16_t port,
                           int family, struct tide__net_addr *out, int max)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    int n = 0;
    char line[1024];
    while (n < max && fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *save = NULL;
        char *addr = strtok_r(line, " \t\r\n", &save);
        struct tide__net_addr a;
        if (!addr || !parse_addr(addr, port, &a))
            continue;
        if (family != AF_UNSPEC && a.u.sa.sa_family != family)
            continue;
        for (char *name; (name = strtok_r(NULL, " \t\r\n", &save)) != NULL;) {
            if (same_name(name, host)) {
                out[n++] = a;
                break;
            }
        }
    }
    fclose(f);
    return n;
}
