/* The proxy's configuration (see config.h). */
#include "config.h"

#include "../number.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void px_config_init(struct px_config *c)
{
    *c = (struct px_config){
        .pool_size = 32,
        .acquire_timeout = TIDE_SEC(5),
        .keep = TIDE_SEC(60),
        .drain_timeout = TIDE_SEC(10),
        .breaker = true,
        .breaker_opts = {.policy = TIDE_BREAKER_STRIKES,
                         .strikes = 5,
                         .cooldown = TIDE_SEC(5)},
        .backoff = true,
        .backoff_opts = {.base = TIDE_MS(100),
                         .factor = 2,
                         .cap = TIDE_SEC(2),
                         .jitter = TIDE_JITTER_SPREAD,
                         .spread = 0.2},
    };
}

void px_config_usage(FILE *f)
{
    fprintf(f,
            "usage: proxy --listen IP:PORT --upstream [SCHEME://]HOST:PORT "
            "[--upstream ...]\n"
            "  --listen IP:PORT        where clients connect: an IPv4 literal "
            "(required)\n"
            "  --upstream [SCHEME://]HOST:PORT\n"
            "                          an upstream (up to %d); HOST is an IP "
            "literal\n"
            "                          ([::1] for IPv6) or a name; SCHEME: "
            "none or\n"
            "                          http (HTTP/1.1), tls (HTTP/1.1 over "
            "TLS), h2c\n"
            "                          (HTTP/2, prior knowledge), h2 (HTTP/2 "
            "over TLS,\n"
            "                          ALPN h2)\n"
            "  --pool-size N           connections per upstream (32)\n"
            "  --cap N                 loans across all upstreams (0: none)\n"
            "  --acquire-timeout MS    wait for a connection, then 504 "
            "(5000)\n"
            "  --connect-timeout MS    one connect, DNS included (5000)\n"
            "  --response-timeout MS   upstream silence, then 504 (30000)\n"
            "  --client-timeout MS     a request's head must come within, "
            "a body\n"
            "                          pause no longer, then 408 (60000)\n"
            "  --max-body SIZE         a request body's limit, past it 413: "
            "bytes, or\n"
            "                          with k, m or g after them (64m)\n"
            "  --keep S                idle upstream connections kept; below "
            "the\n"
            "                          upstream's keep-alive timeout (60)\n"
            "  --demand MS             keep the idle connections the peak "
            "of the last MS\n"
            "                          of load needs, close the rest "
            "gradually (0: off)\n"
            "  --retire PCT            with --demand: the most of the "
            "excess closed each\n"
            "                          eighth of the window (50)\n"
            "  --preconnect PCT        open the next connection when PCT "
            "%% of the live\n"
            "                          ones are in use (0: off)\n"
            "  --health-interval MS    checks of idle h2c:// and h2:// "
            "connections: a PING\n"
            "                          answered within 5 s, else closed "
            "(30000)\n"
            "  --drain-timeout MS      on SIGTERM, exchanges in flight "
            "finish within (10000)\n"
            "  --ca FILE               CAs trusted for tls:// and h2:// "
            "upstreams\n"
            "  --insecure              do not verify tls:// and h2:// "
            "upstreams\n"
            "  --breaker-strikes N     failures in a row that open an "
            "upstream's breaker (5)\n"
            "  --breaker-cooldown MS   open breaker's wait before a probe; "
            "Retry-After (5000)\n"
            "  --no-breaker            no breaker: a dead upstream is tried "
            "by every request\n"
            "  --backoff-base MS       first wait after a failed connect "
            "(100), doubling\n"
            "  --backoff-cap MS        to at most (2000), jittered by a "
            "fifth\n"
            "  --no-backoff            no wait between failed connects\n"
            "  --slow-start MS         an upstream back after an outage, "
            "or added, ramps\n"
            "                          its share from 10%% over (30000)\n"
            "  --retry-503             an idempotent request answered 503 "
            "goes to another\n"
            "                          upstream, twice at most, within the "
            "retry budget\n"
            "  --config FILE           options from FILE, one a line: "
            "'pool-size 16',\n"
            "                          '#' comments; the command line "
            "overrides it;\n"
            "                          SIGHUP reads it again\n"
            "  --version               the version (tidepool's)\n"
            "  --help                  this text\n",
            PX_MAX_UPSTREAMS);
}

static int fail(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

/* "HOST:PORT" into host and port; the port from min_port. NULL, or what is
 * wrong with it. */
static const char *host_port(const char *s, char *host, size_t hlen,
                             int min_port, int *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon)
        return "expected HOST:PORT";
    size_t len = (size_t)(colon - s);
    if (len == 0)
        return "no host before the ':'";
    if (len >= hlen)
        return "the host is too long";
    if (s[0] != '[' && memchr(s, ':', len))
        return "an IPv6 address goes in brackets, as [::1]:80";
    if (s[0] == '[' && s[len - 1] != ']')
        return "an IPv6 address goes in brackets, as [::1]:80";
    long long p;
    if (!colon[1])
        return "no port after the ':'";
    if (!tide_demo_whole_number(colon + 1, min_port, 65535, &p))
        return min_port ? "the port must be a number from 1 to 65535"
                        : "the port must be a number from 0 to 65535";
    memcpy(host, s, len);
    host[len] = '\0';
    *port = (int)p;
    return NULL;
}

/* "--max-body": a whole number of bytes, or of KiB, MiB or GiB with a k,
 * m or g after it (either case), from 1 byte to 1024g; false when v is
 * not one. */
static bool size_value(const char *v, size_t *out)
{
    static const long long max = 1LL << 40;
    char digits[32];
    size_t n = strlen(v);
    if (n == 0 || n >= sizeof digits)
        return false;
    memcpy(digits, v, n + 1);
    long long unit = 1;
    const char *units = "kKmMgG";
    const char *u = strchr(units, digits[n - 1]);
    if (u && *u) {
        unit = 1LL << (10 * (1 + (u - units) / 2));
        digits[n - 1] = '\0';
    }
    long long x;
    if (!tide_demo_whole_number(digits, 1, max / unit, &x))
        return false;
    *out = (size_t)(x * unit);
    return true;
}

/* Whether host can name an upstream: an IPv4 literal, an IPv6 literal in
 * brackets, or a DNS name (dot-separated labels of 1 to 63 letters,
 * digits, '-' or '_', 253 bytes at most, a final dot allowed) whose last
 * label is not all digits: "999.1.1.1" is a mistyped address, not a
 * name. NULL, or what is wrong with it. Anything else would go to the
 * resolver at the first request (a query the DNS could only refuse), and
 * the mistake would show as a 502, long after startup. */
static const char *host_wrong(const char *host)
{
    char ip[INET6_ADDRSTRLEN];
    unsigned char addr[sizeof(struct in6_addr)];
    size_t n = strlen(host);
    if (host[0] == '[') {
        if (n < 2 || host[n - 1] != ']' || n - 2 >= sizeof ip)
            return "not an IPv6 address in brackets";
        memcpy(ip, host + 1, n - 2);
        ip[n - 2] = '\0';
        return inet_pton(AF_INET6, ip, addr) == 1
                   ? NULL
                   : "not an IPv6 address in brackets";
    }
    if (inet_pton(AF_INET, host, addr) == 1)
        return NULL;
    if (n > 0 && host[n - 1] == '.')
        n--;
    if (n == 0 || n > 253)
        return "not a host name (at most 253 bytes)";
    size_t label = 0;
    bool digits = true;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || host[i] == '.') {
            if (label == 0 || label > 63)
                return "not a host name (each part between dots has 1 to 63 "
                       "characters)";
            if (i < n) {
                label = 0;
                digits = true;
            }
            continue;
        }
        unsigned char c = (unsigned char)host[i];
        if (!isalnum(c) && c != '-' && c != '_')
            return "not a host name (letters, digits, '-' and '_' between "
                   "dots)";
        digits = digits && isdigit(c);
        label++;
    }
    return digits ? "not an IPv4 address, nor a host name (its last part is "
                    "all digits)"
                  : NULL;
}

/* The numeric options: their name, range, unit (ns per unit, 0 for a
 * count) and where they go. */
struct num_opt {
    const char *name;
    long long min;
    long long max;
    int64_t unit;
    size_t off;
    bool is_int;
};

#define OFF(f) offsetof(struct px_config, f)

static const struct num_opt num_opts[] = {
    {"--pool-size", 1, 100000, 0, OFF(pool_size), false},
    {"--cap", 0, 10000000, 0, OFF(cap), false},
    {"--acquire-timeout", 1, 3600000, TIDE_MS(1), OFF(acquire_timeout), false},
    {"--connect-timeout", 1, 3600000, TIDE_MS(1), OFF(connect_timeout), false},
    {"--response-timeout", 1, 3600000, TIDE_MS(1), OFF(response_timeout),
     false},
    {"--keep", 1, 86400, TIDE_SEC(1), OFF(keep), false},
    {"--demand", 0, 86400000, TIDE_MS(1), OFF(demand), false},
    {"--retire", 1, 100, 0, OFF(retire_pct), false},
    {"--preconnect", 0, 100, 0, OFF(preconnect_pct), false},
    {"--health-interval", 1, 3600000, TIDE_MS(1), OFF(health_interval), false},
    {"--client-timeout", 1, 3600000, TIDE_MS(1), OFF(client_timeout), false},
    {"--drain-timeout", 0, 3600000, TIDE_MS(1), OFF(drain_timeout), false},
    {"--slow-start", 1, 3600000, TIDE_MS(1), OFF(slow_start), false},
    {"--breaker-strikes", 1, 1000, 0, OFF(breaker_opts.strikes), true},
    {"--breaker-cooldown", 1, 3600000, TIDE_MS(1), OFF(breaker_opts.cooldown),
     false},
    {"--backoff-base", 1, 600000, TIDE_MS(1), OFF(backoff_opts.base), false},
    {"--backoff-cap", 1, 3600000, TIDE_MS(1), OFF(backoff_opts.cap), false},
};

static int set_number(struct px_config *c, const struct num_opt *o,
                      const char *v, char *err, size_t errlen)
{
    long long x;
    if (!tide_demo_whole_number(v, o->min, o->max, &x))
        return fail(err, errlen,
                    "%s: '%s' is not a whole number from %lld to %lld%s",
                    o->name, v, o->min, o->max,
                    o->unit == TIDE_MS(1)    ? " (ms)"
                    : o->unit == TIDE_SEC(1) ? " (s)"
                                             : "");
    char *field = (char *)c + o->off;
    if (o->is_int) {
        int i = (int)x;
        memcpy(field, &i, sizeof i);
    } else {
        /* the ranges keep x times the unit far below INT64_MAX */
        int64_t n = o->unit ? (int64_t)x * o->unit : (int64_t)x;
        memcpy(field, &n, sizeof n);
    }
    return 0;
}

bool px_config_takes_value(const char *option)
{
    for (size_t k = 0; k < sizeof num_opts / sizeof num_opts[0]; k++)
        if (strcmp(option, num_opts[k].name) == 0)
            return true;
    return strcmp(option, "--listen") == 0 ||
           strcmp(option, "--upstream") == 0 || strcmp(option, "--ca") == 0 ||
           strcmp(option, "--max-body") == 0 || strcmp(option, "--config") == 0;
}

/* Reads an upstream's scheme into u (TLS, HTTP/2); returns what follows
 * it, or NULL for a scheme the proxy does not speak. */
static const char *upstream_scheme(const char *v, struct px_upstream_arg *u)
{
    static const struct {
        const char *scheme;
        bool tls, h2;
    } schemes[] = {
        {"http://", false, false},
        {"tls://", true, false},
        {"h2c://", false, true},
        {"h2://", true, true},
    };
    u->tls = u->h2 = false;
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t n = strlen(schemes[i].scheme);
        if (strncmp(v, schemes[i].scheme, n) == 0) {
            u->tls = schemes[i].tls;
            u->h2 = schemes[i].h2;
            return v + n;
        }
    }
    return strstr(v, "://") ? NULL : v;
}

int px_config_options(struct px_config *c, int argc, char *const *argv,
                      char *err, size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return 1;
        if (strcmp(a, "--version") == 0)
            return 2;
        if (strcmp(a, "--config") == 0) { /* read first, by px_config_parse */
            i++;
            continue;
        }
        if (strcmp(a, "--insecure") == 0) {
            c->insecure = true;
            continue;
        }
        if (strcmp(a, "--no-breaker") == 0) {
            c->breaker = false;
            continue;
        }
        if (strcmp(a, "--no-backoff") == 0) {
            c->backoff = false;
            continue;
        }
        if (strcmp(a, "--retry-503") == 0) {
            c->retry_503 = true;
            continue;
        }
        const struct num_opt *num = NULL;
        for (size_t k = 0; k < sizeof num_opts / sizeof num_opts[0]; k++)
            if (strcmp(a, num_opts[k].name) == 0)
                num = &num_opts[k];
        bool takes_value =
            num || strcmp(a, "--listen") == 0 || strcmp(a, "--upstream") == 0 ||
            strcmp(a, "--ca") == 0 || strcmp(a, "--max-body") == 0;
        if (!takes_value)
            return fail(err, errlen, "unknown option '%s'", a);
        if (i + 1 >= argc)
            return fail(err, errlen, "%s needs a value", a);
        const char *v = argv[++i];
        if (num) {
            if (set_number(c, num, v, err, errlen))
                return -1;
        } else if (strcmp(a, "--max-body") == 0) {
            if (!size_value(v, &c->max_body))
                return fail(err, errlen,
                            "--max-body: '%s' is not a size: a whole number "
                            "of bytes from 1, or of k, m or g (KiB, MiB, "
                            "GiB) up to 1024g",
                            v);
        } else if (strcmp(a, "--listen") == 0) {
            const char *why = host_port(
                v, c->listen_host, sizeof c->listen_host, 0, &c->listen_port);
            if (why)
                return fail(err, errlen, "--listen: '%s': %s", v, why);
            struct in_addr ip;
            if (inet_pton(AF_INET, c->listen_host, &ip) != 1)
                return fail(err, errlen,
                            "--listen: '%s': the host must be an IPv4 "
                            "literal such as 127.0.0.1 (names are not "
                            "resolved)",
                            v);
            c->have_listen = true;
        } else if (strcmp(a, "--upstream") == 0) {
            if (c->n_ups == PX_MAX_UPSTREAMS)
                return fail(err, errlen,
                            "--upstream: '%s': %d upstreams at "
                            "most",
                            v, PX_MAX_UPSTREAMS);
            struct px_upstream_arg *u = &c->ups[c->n_ups];
            const char *rest = upstream_scheme(v, u);
            const char *why =
                rest ? host_port(rest, u->host, sizeof u->host, 1, &u->port)
                     : "the scheme is none of http://, tls://, h2c://, h2://";
            if (!why && (why = host_wrong(u->host)))
                return fail(err, errlen, "--upstream: '%s': '%s' is %s", v,
                            u->host, why);
            if (why)
                return fail(err, errlen, "--upstream: '%s': %s", v, why);
            c->n_ups++;
        } else {
            c->ca = v;
        }
    }
    return 0;
}

/* The one --config FILE of argv (borrowed), NULL when none; -1 with the
 * reason when it is given twice or without a file. */
static int config_file_arg(int argc, char *const *argv, const char **file,
                           char *err, size_t errlen)
{
    *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") != 0) {
            i += px_config_takes_value(argv[i]); /* a value is no option */
            continue;
        }
        if (i + 1 >= argc)
            return fail(err, errlen, "--config needs a value");
        if (*file)
            return fail(err, errlen, "--config given twice ('%s', '%s')", *file,
                        argv[i + 1]);
        *file = argv[++i];
    }
    return 0;
}

static bool has_upstream(int argc, char *const *argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--upstream") == 0)
            return true;
        i += px_config_takes_value(argv[i]);
    }
    return false;
}

int px_config_parse(struct px_config *c, int argc, char *const *argv, char *err,
                    size_t errlen)
{
    const char *file;
    if (config_file_arg(argc, argv, &file, err, errlen))
        return -1;
    for (int i = 1; i < argc; i++) /* --help and --version read no file */
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ||
            strcmp(argv[i], "--version") == 0)
            return px_config_options(c, argc, argv, err, errlen);
    if (file) {
        if (px_config_read(c, file, err, errlen))
            return -1;
        c->config_file = file;
        /* upstreams on the command line replace the file's, as any other
         * option given on both does */
        if (has_upstream(argc, argv))
            c->n_ups = 0;
    }
    int rc = px_config_options(c, argc, argv, err, errlen);
    return rc ? rc : px_config_check(c, err, errlen);
}

int px_config_check(const struct px_config *c, char *err, size_t errlen)
{
    if (!c->have_listen)
        return fail(err, errlen,
                    "no --listen given (say where clients connect, as "
                    "--listen 127.0.0.1:8080)");
    if (c->n_ups == 0)
        return fail(err, errlen, "no --upstream given");
    if (c->backoff && c->backoff_opts.base > c->backoff_opts.cap)
        return fail(err, errlen,
                    "--backoff-base %lld ms is above --backoff-cap %lld ms",
                    (long long)(c->backoff_opts.base / TIDE_MS(1)),
                    (long long)(c->backoff_opts.cap / TIDE_MS(1)));
    return 0;
}

/* What --no-backoff puts in the ward: makes held for 1 ns after a failed
 * one. A ward without a backoff would not do: the pool then holds makes
 * with its preset (100 ms doubling to 1 s), and the option would not mean
 * what it says. While connects fail they still go one at a time (the
 * pool's probe), each at once. */
static const struct tide_backoff no_wait = {
    .base = 1, .cap = 1, .jitter = TIDE_JITTER_RIGID};

void px_config_pool_options(const struct px_config *c,
                            struct tide_evpool_options *out)
{
    /* every connection may stay idle: a pool that closes what it cannot
     * keep reconnects under load */
    *out = (struct tide_evpool_options){
        .limits = TIDE_LIMITS(.size = c->pool_size, .idle = c->pool_size,
                              .keep = c->keep, .demand = c->demand,
                              .retire = (double)c->retire_pct / 100.0,
                              .preconnect = (double)c->preconnect_pct / 100.0),
        .ward = {.breaker = c->breaker ? &c->breaker_opts : NULL,
                 .backoff = c->backoff ? &c->backoff_opts : &no_wait},
        .queue_max = 65536,
        .health_interval = c->health_interval,
    };
}

void px_config_proxy_options(const struct px_config *c, struct px_options *out)
{
    *out = (struct px_options){.listen_host = c->listen_host,
                               .listen_port = c->listen_port,
                               .acquire_timeout = c->acquire_timeout,
                               .response_timeout = c->response_timeout,
                               .client_timeout = c->client_timeout,
                               .max_body = c->max_body,
                               .retry_503 = c->retry_503};
}

void px_upstream_name(const struct px_upstream_arg *a, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s:%d",
             a->h2    ? (a->tls ? "h2://" : "h2c://")
             : a->tls ? "tls://"
                      : "",
             a->host, a->port);
}

bool px_upstream_same(const struct px_upstream_arg *a,
                      const struct px_upstream_arg *b)
{
    return a->tls == b->tls && a->h2 == b->h2 && a->port == b->port &&
           strcmp(a->host, b->host) == 0;
}

int px_upstream_add(struct px_upstreams *u, const struct px_config *c,
                    const struct px_upstream_arg *a, struct px_member *out,
                    char *err, size_t errlen)
{
    *out = (struct px_member){.arg = *a};
    char name[300];
    px_upstream_name(a, name, sizeof name);
    struct tide_factory f;
    struct tide_tcp_options t = {.host = a->host,
                                 .port = a->port,
                                 .connect_timeout = c->connect_timeout};
    if (a->h2) {
        out->h2 = px_h2_upstream_new(a->host, a->port, a->tls);
        if (!out->h2)
            return fail(err, errlen, "upstream %s: out of memory", name);
        px_h2_upstream_setup(out->h2, &t);
    }
    /* HTTP/2 over TLS is chosen by ALPN, and nothing else will do: a
     * server that does not pick h2 fails the connect (TIDE_EALPN), named
     * in the 502 of every request it would have served */
    static const char *const h2_alpn[] = {"h2", NULL};
    int rc;
    if (a->tls) {
        struct tide_tls_options o = {.tcp = t,
                                     .ca_file = c->ca,
                                     .ca_pem = c->ca_pem,
                                     .insecure_skip_verify = c->insecure,
                                     .alpn = a->h2 ? h2_alpn : NULL,
                                     .alpn_required = a->h2};
        rc = tide_tls_factory_new(u->base, &o, &out->tls);
        if (!rc)
            tide_tls_factory_bind(out->tls, &f);
    } else {
        rc = tide_tcp_factory_new(u->base, &t, &out->tcp);
        if (!rc)
            tide_tcp_factory_bind(out->tcp, &f);
    }
    if (rc) {
        fail(err, errlen, "upstream %s: %s%s%s", name, tide_strerror(rc),
             a->tls && c->ca ? " (--ca " : "", a->tls && c->ca ? c->ca : "");
        if (a->tls && c->ca)
            strncat(err, ")", errlen - strlen(err) - 1);
        px_member_dispose(out);
        return -1;
    }
    struct tide_evpool_options po;
    px_config_pool_options(c, &po);
    if (a->h2) {
        /* streams shared on as few connections as will carry them */
        px_h2_upstream_wrap(out->h2, &f, &f);
        po.limits.streams = px_h2_streams_max();
        po.limits.sharing = TIDE_SHARING_PACK;
    }
    rc = tide_group_add(u->group, name, &f, &po, &out->up);
    if (rc) {
        fail(err, errlen, "upstream %s: %s", name, tide_strerror(rc));
        px_member_dispose(out);
        return -1;
    }
    if (a->h2)
        px_h2_upstream_bind(out->h2, tide_group_upstream_pool(out->up));
    return 0;
}

int px_upstreams_open(struct px_upstreams *u, struct event_base *base,
                      const struct px_config *c, char *err, size_t errlen)
{
    *u = (struct px_upstreams){.base = base};
    int rc = tide_group_new(base,
                            &(struct tide_group_options){
                                .cap = c->cap, .slow_start = c->slow_start},
                            &u->group);
    if (rc)
        return fail(err, errlen, "cannot make the group: %s",
                    tide_strerror(rc));
    for (int i = 0; i < c->n_ups; i++) {
        if (px_upstream_add(u, c, &c->ups[i], &u->m[i], err, errlen)) {
            px_upstreams_dispose(u);
            return -1;
        }
    }
    return 0;
}

void px_member_dispose(struct px_member *m)
{
    tide_tcp_factory_free(m->tcp);
    tide_tls_factory_free(m->tls);
    px_h2_upstream_free(m->h2);
    *m = (struct px_member){0};
}

void px_upstreams_dispose(struct px_upstreams *u)
{
    tide_group_free(u->group);
    for (int i = 0; i < PX_MAX_UPSTREAMS; i++)
        px_member_dispose(&u->m[i]);
    for (size_t i = 0; i < u->n_retired; i++)
        px_member_dispose(&u->retired[i]);
    free(u->retired);
    *u = (struct px_upstreams){0};
}
