/* demos/proxy: the proxy's configuration, from its command line to its
 * group of pools. main.c and the tests build the proxy through the same
 * functions, so what the tests cover is what users run: the same defaults,
 * the same ward on every upstream.
 *
 * The default ward, on every upstream's pool:
 * - a STRIKES breaker, 5 failures in a row, 5 s cooldown. STRIKES, not the
 *   core's adaptive preset, because it opens deterministically and knows
 *   when it probes again, which is the Retry-After of a 503. Five in a row
 *   (any success resets the count) is a backend that is down, not one
 *   unlucky reset under load; 5 s lets a restarting backend come up without
 *   a probe every few milliseconds, and brings a healthy one back within
 *   seconds.
 * - a backoff on makes, 100 ms doubling to 2 s, spread by a fifth either
 *   way, so failed connects to an upstream that is down are spaced out
 *   (and proxies that lost it together do not retry together) before and
 *   between the breaker's probes.
 * Both can be tuned or turned off from the command line (usage text).
 */
#ifndef TIDEPOOL_DEMO_PROXY_CONFIG_H
#define TIDEPOOL_DEMO_PROXY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <tidepool/group.h>
#include <tidepool/tls.h>

#include "h2.h"
#include "proxy.h"

#define PX_MAX_UPSTREAMS 32

struct px_upstream_arg {
    bool tls;
    bool h2;        /* HTTP/2: h2c:// (prior knowledge), h2:// (TLS, ALPN h2) */
    char host[256]; /* an IP literal or a name the TCP factory resolves */
    int port;
};

/* Filled by px_config_init, then px_config_parse; fields may be set by a
 * program between the two or after. */
struct px_config {
    char listen_host[64]; /* an IPv4 literal */
    int listen_port;      /* 0: any free port */
    bool have_listen;     /* --listen was given (it is required) */
    struct px_upstream_arg ups[PX_MAX_UPSTREAMS];
    int n_ups;
    int64_t pool_size;        /* per upstream */
    int64_t cap;              /* across the group; 0: none */
    int64_t acquire_timeout;  /* ns */
    int64_t keep;             /* ns an idle upstream connection is kept */
    int64_t demand;           /* ns: the pool's demand window; 0: off */
    int64_t retire_pct;       /* with demand: % of the excess closed a
                                 period; 0: the pool's preset (50) */
    int64_t preconnect_pct;   /* % of live connections in use at which the
                                 next one is opened; 0: off */
    int64_t health_interval;  /* ns between checks of idle connections
                                 (h2: a PING); 0: the pool's preset */
    int64_t connect_timeout;  /* ns; 0: the TCP factory's preset */
    int64_t response_timeout; /* ns; 0: the proxy's preset */
    int64_t client_timeout;   /* ns; 0: the proxy's preset */
    size_t max_body;          /* bytes; 0: the proxy's preset */
    int64_t drain_timeout;    /* ns SIGTERM waits for exchanges in flight */
    int64_t slow_start;       /* ns of the group's slow start; 0: its
                                 preset (30 s) */
    bool retry_503;           /* px_options.retry_503 */
    const char *ca;           /* borrowed: argv or the caller's */
    const char *ca_pem;       /* PEM text (not from the command line) */
    bool insecure;
    bool breaker; /* the ward's breaker, with breaker_opts */
    struct tide_breaker_options breaker_opts;
    bool backoff; /* the ward's backoff, with backoff_opts */
    struct tide_backoff backoff_opts;
    const char *config_file; /* --config's FILE (borrowed: argv); NULL */
    char ca_file[1024];      /* --ca's value when it came from the file */
};

/* The defaults: no listen address or upstream yet, pools of 32, a 5 s
 * acquire timeout, 60 s keep, a 10 s drain, and the default ward above. */
void px_config_init(struct px_config *c);

/* Reads argv[1..argc) into c: first the file of --config FILE when there
 * is one (px_config_read), then the other options, which override the
 * file's (upstreams on the command line replace all of the file's), then
 * px_config_check. 0; 1 when --help was asked, 2 when --version
 * (tidepool's, from meson's project version); -1 with a sentence naming
 * the option and the value in err (NUL-terminated, cut to errlen), and the
 * file and its line for an error in the file. Numbers are read strictly
 * (all digits, in range), so a value that would overflow a span in ns is
 * refused rather than wrapped. */
int px_config_parse(struct px_config *c, int argc, char *const *argv, char *err,
                    size_t errlen);

/* The options of argv[1..argc) into c, as they come (--config and its
 * value skipped), without the checks of the whole: 0, 1 (--help), 2
 * (--version) or -1 with err as px_config_parse. Values are borrowed. */
int px_config_options(struct px_config *c, int argc, char *const *argv,
                      char *err, size_t errlen);

/* Whether option ("--listen") is followed by a value. */
bool px_config_takes_value(const char *option);

/* What must hold of the whole: a --listen, an upstream, a backoff base not
 * above its cap. 0 or -1 with err. */
int px_config_check(const struct px_config *c, char *err, size_t errlen);

/* Reads the configuration file at path into c (config_file.c): one option
 * a line, its name without the dashes and its value after a space
 * ("upstream 127.0.0.1:9001", "no-breaker"); blank lines and lines whose
 * first non-blank is '#' are skipped; help, version and config are not
 * options of a file. 0, or -1 with "PATH:LINE: " and the reason in err
 * (or why the file cannot be read). Values are copied into c where c keeps
 * them (ca into ca_file). */
int px_config_read(struct px_config *c, const char *path, char *err,
                   size_t errlen);

/* The usage text. */
void px_config_usage(FILE *f);

/* An upstream pool's options from c: limits, queue and the ward. The
 * ward's pointers point into c, which must outlive the call that uses them
 * (tide_group_add copies what it needs). */
void px_config_pool_options(const struct px_config *c,
                            struct tide_evpool_options *out);

/* The proxy's own options from c (the listen address points into c). */
void px_config_proxy_options(const struct px_config *c, struct px_options *out);

/* One upstream of the group: what it was made from, its record in the
 * group (borrowed: the group's) and the factory its pool makes
 * connections with (owned: freed after the pool). A slot is free when up
 * is NULL. */
struct px_member {
    struct px_upstream_arg arg;
    struct tide_group_upstream *up;
    struct tide_tcp_factory *tcp;
    struct tide_tls_factory *tls;
    struct px_h2_upstream *h2; /* an HTTP/2 upstream's sessions (owned) */
};

/* The group with one pool per upstream of c, and their factories. */
struct px_upstreams {
    struct event_base *base; /* borrowed */
    struct tide_group *group;
    struct px_member m[PX_MAX_UPSTREAMS];
    /* members removed from the group (reload.c), whose factories wait
     * there until no removed upstream is left draining: a factory must
     * outlive its pool, and the group frees a removed pool only once its
     * last loan came back. malloc'd: n_retired of retired_cap. */
    struct px_member *retired;
    size_t n_retired;
    size_t retired_cap;
};

/* Makes u's group on base (borrowed; must outlive it) with c's upstreams.
 * 0, or -1 with the reason in err; nothing is left to free either way
 * after a failure. */
int px_upstreams_open(struct px_upstreams *u, struct event_base *base,
                      const struct px_config *c, char *err, size_t errlen);

/* Adds upstream a to u's group with c's settings, as px_upstreams_open
 * does each of c's (its factory, TLS and ward), into *out (a free slot or
 * a caller's struct). 0, or -1 with the reason in err and nothing left to
 * free. The reload (reload.c) adds upstreams with it, so they are made
 * exactly as at startup. */
int px_upstream_add(struct px_upstreams *u, const struct px_config *c,
                    const struct px_upstream_arg *a, struct px_member *out,
                    char *err, size_t errlen);

/* The upstream's name, as the group, the stats and the messages say it
 * ("tls://host:443"), into buf (cut to n). */
void px_upstream_name(const struct px_upstream_arg *a, char *buf, size_t n);

/* Whether a and b name the same upstream, spoken to the same way. */
bool px_upstream_same(const struct px_upstream_arg *a,
                      const struct px_upstream_arg *b);

/* Frees m's factory, which its pool no longer uses (the group freed it),
 * and clears m. */
void px_member_dispose(struct px_member *m);

/* Frees the group (lent connections are destroyed) and then the factories,
 * retired ones included. u may have been closed first (tide_group_close). */
void px_upstreams_dispose(struct px_upstreams *u);

#endif
