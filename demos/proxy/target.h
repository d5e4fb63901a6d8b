/* A request's target and its Host (RFC 9112 3.2, RFC 9110 7.2): whether
 * they are valid, and, for a target in absolute-form, the authority and
 * the origin-form the upstream gets in their place. Pure functions over
 * the parsed strings: no allocation, nothing kept. */
#ifndef TIDEPOOL_DEMO_PROXY_TARGET_H
#define TIDEPOOL_DEMO_PROXY_TARGET_H

#include <stdbool.h>
#include <stddef.h>

/* Whether v[0, len) is a Host field value: uri-host [":" port], the host
 * an IP-literal in brackets or a reg-name (letters, digits, "-._~",
 * "!$&'()*+,;=" and %-escapes), the port digits; trailing spaces and tabs
 * are the field's, not the value's. Empty is valid: a target without an
 * authority is sent with an empty Host (RFC 9112 3.2); a port after an
 * empty host is not, as no "http" URI has an empty host (RFC 9110
 * 4.2.1). Userinfo ("user@host") is no part of a Host. */
bool px__host_valid(const char *v, size_t len);

/* An absolute-form target ("http://host:port/path?query") split into the
 * authority, which replaces the request's Host, and the rest, sent as the
 * origin-form: RFC 9112 3.2.2 has a proxy ignore the Host it got for the
 * target's authority, and an origin server expects the origin-form.
 * Both point into the target. `path` is what follows the authority: ""
 * or "?query" when the path is empty (the upstream gets "/" before it),
 * else it starts with "/". */
struct px_target {
    const char *authority;
    size_t authority_len;
    const char *path;
};

enum px_target_form {
    PX_TARGET_ORIGIN,   /* "/path", "*" or another not absolute: as is */
    PX_TARGET_ABSOLUTE, /* split into *t */
    PX_TARGET_INVALID,  /* absolute-form the proxy refuses: a scheme not
                           http or https, userinfo (RFC 9110 4.2.4: an
                           error, as it is how a phishing link hides the
                           real host), an empty or invalid host */
};

/* Which form url (NUL-terminated, as libhttp-parser took it) is in;
 * splits an absolute one into *t. */
enum px_target_form px__target_split(const char *url, struct px_target *t);

#endif
