/* The configuration read again while the proxy runs (see reload.h).
 *
 * A reload is all or nothing: the new configuration is parsed and checked
 * whole, then the new upstreams are made (the step that can still fail),
 * and only then are the old ones removed and the configuration in use
 * replaced. Adding before removing also means the group never has no
 * upstream: an acquire there fails at once (TIDE_ECLOSED), and requests
 * waiting at a removed upstream's pool move on to the new ones. */
#include "reload.h"

#include <event2/event.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct px_reload {
    struct px_config *cfg;    /* borrowed: the configuration in use */
    struct px_upstreams *ups; /* borrowed */
    int argc;
    char *const *argv;     /* borrowed: the program's */
    FILE *log;             /* borrowed */
    struct event *reap;    /* frees retired factories once nothing drains */
    struct px_config next; /* the configuration being read (10 KiB: here,
                              not on the stack) */
};

/* ---- the settings and what a reload does with them ---- */

enum apply {
    POOLS,      /* new pools: every upstream made again with it */
    TLS_POOLS,  /* the same, for tls:// upstreams only */
    NEXT_DRAIN, /* main.c reads it at SIGTERM */
    FIXED,      /* cannot change while the proxy runs: the old value stays */
};

struct setting {
    const char *name; /* the option's, as the file says it */
    size_t off;
    size_t size;
    enum apply apply;
    const char *why; /* FIXED: why it stays */
};

#define FIELD(f)                                                               \
    offsetof(struct px_config, f), sizeof(((struct px_config *)0)->f)

static const char read_at_start[] = "the proxy reads it when it starts";

/* Every option but listen, upstream and ca (compared apart) and config. */
static const struct setting settings[] = {
    {"pool-size", FIELD(pool_size), POOLS, NULL},
    {"keep", FIELD(keep), POOLS, NULL},
    {"demand", FIELD(demand), POOLS, NULL},
    {"retire", FIELD(retire_pct), POOLS, NULL},
    {"preconnect", FIELD(preconnect_pct), POOLS, NULL},
    {"health-interval", FIELD(health_interval), POOLS, NULL},
    {"connect-timeout", FIELD(connect_timeout), POOLS, NULL},
    {"no-breaker", FIELD(breaker), POOLS, NULL},
    {"breaker-strikes", FIELD(breaker_opts.strikes), POOLS, NULL},
    {"breaker-cooldown", FIELD(breaker_opts.cooldown), POOLS, NULL},
    {"no-backoff", FIELD(backoff), POOLS, NULL},
    {"backoff-base", FIELD(backoff_opts.base), POOLS, NULL},
    {"backoff-cap", FIELD(backoff_opts.cap), POOLS, NULL},
    {"insecure", FIELD(insecure), TLS_POOLS, NULL},
    {"drain-timeout", FIELD(drain_timeout), NEXT_DRAIN, NULL},
    {"cap", FIELD(cap), FIXED, "the group's, set when it is made"},
    {"slow-start", FIELD(slow_start), FIXED,
     "the group's, set when it is made"},
    {"retry-503", FIELD(retry_503), FIXED, read_at_start},
    {"acquire-timeout", FIELD(acquire_timeout), FIXED, read_at_start},
    {"response-timeout", FIELD(response_timeout), FIXED, read_at_start},
    {"client-timeout", FIELD(client_timeout), FIXED, read_at_start},
    {"max-body", FIELD(max_body), FIXED, read_at_start},
};

/* ---- the log line ---- */

enum list { ADDED, REMOVED, CHANGED, IGNORED, LISTS };

static const char *const list_names[LISTS] = {"added", "removed", "changed",
                                              "ignored"};

/* The line's lists, each built in memory (open_memstream) as the reload
 * goes, then written out whole, in this order, as one line however many
 * upstreams it names. A list that could not be opened (out of memory)
 * makes the line say so rather than say less. */
struct line {
    FILE *f[LISTS];
    char *text[LISTS];
    size_t len[LISTS];
    bool failed;
};

static void line_open(struct line *l)
{
    *l = (struct line){0};
    for (int i = 0; i < LISTS; i++)
        l->failed =
            !(l->f[i] = open_memstream(&l->text[i], &l->len[i])) || l->failed;
}

static void item(struct line *l, enum list list, const char *fmt, ...)
{
    FILE *f = l->f[list];
    if (!f)
        return;
    if (ftell(f) > 0)
        fputs(", ", f);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
}

/* Closes the lists; writes the line when r is not NULL, in one write
 * (stderr has no buffer), so a reader never sees half of it. */
static void line_end(struct line *l, struct px_reload *r)
{
    for (int i = 0; i < LISTS; i++)
        if (l->f[i] && fclose(l->f[i]) != 0)
            l->failed = true;
    char *text = NULL;
    size_t len = 0;
    FILE *f = r ? open_memstream(&text, &len) : NULL;
    if (f) {
        fprintf(f, "proxy: reload of %s: ", r->cfg->config_file);
        bool said = false;
        for (int i = 0; i < LISTS && !l->failed; i++) {
            if (l->len[i] == 0)
                continue;
            fprintf(f, "%s%s %s", said ? "; " : "", list_names[i], l->text[i]);
            said = true;
        }
        fputs(l->failed ? "applied (out of memory for saying what)\n"
              : said    ? "\n"
                        : "no change\n",
              f);
    }
    if (f && fclose(f) == 0)
        fputs(text, r->log);
    else if (r)
        fprintf(r->log, "proxy: reload of %s: applied\n", r->cfg->config_file);
    if (r)
        fflush(r->log);
    free(text);
    for (int i = 0; i < LISTS; i++)
        free(l->text[i]);
    *l = (struct line){0};
}

static void refused(struct px_reload *r, const char *why)
{
    fprintf(r->log,
            "proxy: reload of %s refused, the configuration in use is kept: "
            "%s\n",
            r->cfg->config_file, why);
    fflush(r->log);
}

/* ---- retired factories ---- */

/* Removes m's upstream from the group and moves m to the retired ones
 * (room was reserved), its slot cleared. */
static void retire(struct px_upstreams *u, struct px_member *m)
{
    /* the first remove of a member: it cannot answer TIDE_ECLOSED */
    (void)tide_group_remove(u->group, m->up);
    m->up = NULL; /* the group's record may go at any time now */
    u->retired[u->n_retired++] = *m;
    *m = (struct px_member){0};
}

static bool reserve_retired(struct px_upstreams *u, size_t more)
{
    if (u->n_retired + more <= u->retired_cap)
        return true;
    size_t cap = u->n_retired + more + PX_MAX_UPSTREAMS;
    struct px_member *p = realloc(u->retired, cap * sizeof *p);
    if (!p)
        return false;
    u->retired = p;
    u->retired_cap = cap;
    return true;
}

/* Frees the retired factories when no removed upstream is draining (their
 * pools freed, so none is used), else looks again in a while. The group
 * says only how many drain, not which: a factory may wait for another
 * upstream's loans too, for as long as an exchange lasts. */
static void reap(struct px_reload *r)
{
    struct px_upstreams *u = r->ups;
    if (u->n_retired == 0)
        return;
    struct tide_group_stats st;
    tide_group_stats(u->group, &st);
    if (st.draining > 0) {
        struct timeval again = {.tv_usec = 200000};
        evtimer_add(r->reap, &again);
        return;
    }
    for (size_t i = 0; i < u->n_retired; i++)
        px_member_dispose(&u->retired[i]);
    u->n_retired = 0;
}

static void on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    reap(arg);
}

/* ---- the reload ---- */

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

static void say_upstream(struct line *l, enum list list,
                         const struct px_upstream_arg *a)
{
    char name[300];
    px_upstream_name(a, name, sizeof name);
    item(l, list, "%s", name);
}

/* Compares the settings of old and next, notes them in l, puts the old
 * value back into next where it cannot change, and says whether new pools
 * are needed: *pools for every upstream, *tls_pools for tls:// ones. */
static void compare(const struct px_config *old, struct px_config *next,
                    struct line *l, bool *pools, bool *tls_pools)
{
    *pools = *tls_pools = false;
    if (strcmp(old->listen_host, next->listen_host) != 0 ||
        old->listen_port != next->listen_port) {
        item(l, IGNORED, "listen %s:%d (the listening socket stays on %s:%d)",
             next->listen_host, next->listen_port, old->listen_host,
             old->listen_port);
        memcpy(next->listen_host, old->listen_host, sizeof next->listen_host);
        next->listen_port = old->listen_port;
    }
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        const struct setting *s = &settings[i];
        const char *a = (const char *)old + s->off;
        char *b = (char *)next + s->off;
        if (memcmp(a, b, s->size) == 0)
            continue;
        if (s->apply == FIXED) {
            item(l, IGNORED, "%s (%s)", s->name, s->why);
            memcpy(b, a, s->size);
            continue;
        }
        item(l, CHANGED, "%s", s->name);
        *pools = *pools || s->apply == POOLS;
        *tls_pools = *tls_pools || s->apply == TLS_POOLS;
    }
    if (strcmp(or_empty(old->ca), or_empty(next->ca)) != 0) {
        item(l, CHANGED, "ca");
        *tls_pools = true;
    }
    *tls_pools = *tls_pools || *pools;
}

/* next into the configuration in use; its ca may point into its own
 * ca_file, which moves with it. */
static void commit(struct px_config *cfg, const struct px_config *next)
{
    bool own_ca = next->ca == next->ca_file;
    *cfg = *next;
    if (own_ca)
        cfg->ca = cfg->ca_file;
}

void px_reload_run(struct px_reload *r)
{
    struct px_config *old = r->cfg;
    struct px_upstreams *u = r->ups;
    if (!old->config_file) {
        fprintf(r->log, "proxy: reload: no --config FILE was given, there is "
                        "nothing to read again\n");
        fflush(r->log);
        return;
    }
    struct px_config *next = &r->next;
    px_config_init(next);
    char err[1024];
    /* 1 and 2 (--help, --version) ended the program at startup */
    if (px_config_parse(next, r->argc, r->argv, err, sizeof err) != 0) {
        refused(r, err);
        return;
    }
    next->ca_pem = old->ca_pem; /* the program's, not an option */

    struct line l;
    line_open(&l);
    bool pools, tls_pools;
    compare(old, next, &l, &pools, &tls_pools);

    /* the upstreams kept: each of next's matched to one member at most
     * (the same upstream may be listed twice), unless its pool is made
     * again for new settings */
    bool kept[PX_MAX_UPSTREAMS] = {0}, matched[PX_MAX_UPSTREAMS] = {0};
    size_t removing = 0, adding = 0;
    for (int j = 0; j < next->n_ups; j++) {
        const struct px_upstream_arg *a = &next->ups[j];
        if (a->tls ? tls_pools : pools)
            continue;
        for (int i = 0; i < PX_MAX_UPSTREAMS && !matched[j]; i++)
            if (u->m[i].up && !kept[i] && px_upstream_same(&u->m[i].arg, a))
                kept[i] = matched[j] = true;
    }
    for (int i = 0; i < PX_MAX_UPSTREAMS; i++)
        removing += u->m[i].up && !kept[i];
    for (int j = 0; j < next->n_ups; j++)
        adding += !matched[j];
    if (!reserve_retired(u, removing + adding)) {
        line_end(&l, NULL);
        refused(r, "out of memory");
        return;
    }

    /* the new ones first: the only step that can fail */
    struct px_member added[PX_MAX_UPSTREAMS];
    size_t n_added = 0;
    for (int j = 0; j < next->n_ups; j++) {
        if (matched[j])
            continue;
        if (px_upstream_add(u, next, &next->ups[j], &added[n_added], err,
                            sizeof err) != 0) {
            while (n_added > 0) /* they lent nothing yet */
                retire(u, &added[--n_added]);
            reap(r);
            line_end(&l, NULL);
            refused(r, err);
            return;
        }
        say_upstream(&l, ADDED, &next->ups[j]);
        n_added++;
    }
    for (int i = 0; i < PX_MAX_UPSTREAMS; i++) {
        if (!u->m[i].up || kept[i])
            continue;
        say_upstream(&l, REMOVED, &u->m[i].arg);
        retire(u, &u->m[i]);
    }
    for (int i = 0; i < PX_MAX_UPSTREAMS && n_added > 0; i++)
        if (!u->m[i].up)
            u->m[i] = added[--n_added];
    commit(old, next);
    line_end(&l, r);
    reap(r);
}

int px_reload_new(struct px_config *cfg, struct px_upstreams *ups, int argc,
                  char *const *argv, FILE *log, struct px_reload **out)
{
    *out = NULL;
    struct px_reload *r = calloc(1, sizeof *r);
    if (!r)
        return -1;
    *r = (struct px_reload){
        .cfg = cfg, .ups = ups, .argc = argc, .argv = argv, .log = log};
    r->reap = evtimer_new(ups->base, on_reap, r);
    if (!r->reap) {
        free(r);
        return -1;
    }
    *out = r;
    return 0;
}

void px_reload_free(struct px_reload *r)
{
    if (!r)
        return;
    event_free(r->reap);
    free(r);
}
