/* See target.h. */
#include "target.h"

#include <arpa/inet.h>
#include <string.h>
#include <strings.h>

static bool hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
           (c >= 'A' && c <= 'F');
}

/* RFC 3986's unreserved and sub-delims: what a reg-name is made of, with
 * %-escapes. */
static bool reg_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("-._~!$&'()*+,;=", c));
}

/* Whether h[0, len) is a reg-name (an IPv4 address is one too). */
static bool reg_name(const char *h, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (h[i] == '%') {
            if (len - i < 3 || !hex(h[i + 1]) || !hex(h[i + 2]))
                return false;
            i += 2;
        } else if (!reg_name_char(h[i])) {
            return false;
        }
    }
    return true;
}

/* Whether h[0, len) is the inside of an IP-literal's brackets: an IPv6
 * address, or IPvFuture ("v" hex "." then unreserved, sub-delims, ":"). */
static bool ip_literal(const char *h, size_t len)
{
    if (len > 0 && (h[0] == 'v' || h[0] == 'V')) {
        size_t i = 1;
        while (i < len && hex(h[i]))
            i++;
        if (i == 1 || i == len || h[i] != '.' || i + 1 == len)
            return false;
        for (i++; i < len; i++)
            if (!reg_name_char(h[i]) && h[i] != ':')
                return false;
        return true;
    }
    char addr[INET6_ADDRSTRLEN];
    unsigned char bin[16];
    if (len == 0 || len >= sizeof addr)
        return false;
    memcpy(addr, h, len);
    addr[len] = '\0';
    return inet_pton(AF_INET6, addr, bin) == 1;
}

bool px__host_valid(const char *v, size_t len)
{
    while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t'))
        len--;
    if (len == 0)
        return true;
    size_t host = len; /* where the host ends: a ":" and the port follow */
    if (v[0] == '[') {
        const char *close = memchr(v, ']', len);
        if (!close || !ip_literal(v + 1, (size_t)(close - v) - 1))
            return false;
        host = (size_t)(close - v) + 1;
        if (host < len && v[host] != ':')
            return false;
    } else {
        const char *colon = memchr(v, ':', len);
        if (colon)
            host = (size_t)(colon - v);
        if (host == 0 || !reg_name(v, host))
            return false;
    }
    for (size_t i = host + 1; i < len; i++)
        if (v[i] < '0' || v[i] > '9')
            return false;
    return true;
}

enum px_target_form px__target_split(const char *url, struct px_target *t)
{
    /* origin-form starts with "/", asterisk-form is "*"; libhttp-parser
     * lets through no other target than absolute-form but CONNECT's
     * authority-form, which is no concern here */
    const char *sep = strstr(url, "://");
    if (!sep || url[0] == '/' || url[0] == '*')
        return PX_TARGET_ORIGIN;
    size_t scheme = (size_t)(sep - url);
    if (!(scheme == 4 && strncasecmp(url, "http", 4) == 0) &&
        !(scheme == 5 && strncasecmp(url, "https", 5) == 0))
        return PX_TARGET_INVALID;
    const char *a = sep + 3;
    size_t alen = strcspn(a, "/?#");
    if (alen == 0 || memchr(a, '@', alen) || !px__host_valid(a, alen))
        return PX_TARGET_INVALID;
    t->authority = a;
    t->authority_len = alen;
    t->path = a + alen;
    return PX_TARGET_ABSOLUTE;
}
