/* The frozen core compiled as one translation unit under renamed names
 * (rename.h), and the calls of oracle.h over it. Nothing here decides
 * anything: each call converts its arguments and answers and passes them
 * through. */
#include "rename.h"

#include "core/backoff.c"
#include "core/breaker.c"
#include "core/bucket.c"
#include "core/itemmap.c"
#include "core/limits.c"
#include "core/pool.c"
#include "core/shedder.c"

#include "oracle.h"
#include "wards.h"

static struct tide_pool *frozen(const struct oracle_pool *p)
{
    return (struct tide_pool *)p;
}

static struct oracle_taken taken(struct tide_taken t)
{
    struct oracle_taken o = {.answer = (int)t.answer, .guard = (int)t.guard};
    if (t.answer == TIDE_LATER)
        o.span = t.span;
    else
        o.item = t.item;
    return o;
}

int oracle_pool_new(const struct oracle_limits *limits, unsigned guards,
                    int64_t now, struct oracle_pool **out)
{
    struct tide_limits l = {
        .size = limits->size,
        .idle = limits->idle,
        .keep = limits->keep,
        .life = limits->life,
        .spread = limits->spread,
    };
    struct oracle_ward_options o;
    struct tide_ward w = oracle_ward(guards, &o);
    struct tide_pool *p = NULL;
    int rc = tide_pool_new(&l, &w, now, &p);
    *out = (struct oracle_pool *)p;
    return rc;
}

void oracle_pool_free(struct oracle_pool *p)
{
    tide_pool_free(frozen(p));
}

struct oracle_taken oracle_pool_take(struct oracle_pool *p, int64_t now,
                                     double roll)
{
    return taken(tide_pool_take(frozen(p), now, roll));
}

struct oracle_taken oracle_pool_take_idle(struct oracle_pool *p, int64_t now)
{
    return taken(tide_pool_take_idle(frozen(p), now));
}

struct oracle_taken oracle_pool_grow(struct oracle_pool *p, int64_t now,
                                     double roll)
{
    return taken(tide_pool_grow(frozen(p), now, roll));
}

int oracle_pool_made(struct oracle_pool *p, void *item, int64_t now)
{
    return tide_pool_made(frozen(p), item, now);
}

int oracle_pool_made_untried(struct oracle_pool *p, void *item, int64_t now)
{
    return tide_pool_made_untried(frozen(p), item, now);
}

void oracle_pool_tried(struct oracle_pool *p, int64_t now, double roll, bool ok)
{
    tide_pool_tried(frozen(p), now, roll, ok);
}

void oracle_pool_report(struct oracle_pool *p, int64_t now, bool ok)
{
    tide_pool_report(frozen(p), now, ok);
}

int oracle_pool_unmade(struct oracle_pool *p, int64_t now, double roll)
{
    return tide_pool_unmade(frozen(p), now, roll);
}

int oracle_pool_give(struct oracle_pool *p, void *item, int64_t now)
{
    return tide_pool_give(frozen(p), item, now);
}

uint32_t oracle_pool_slot(const struct oracle_pool *p, const void *item)
{
    return tide_pool_slot(frozen(p), item);
}

int oracle_pool_give_at(struct oracle_pool *p, uint32_t slot, void *item,
                        int64_t now)
{
    return tide_pool_give_at(frozen(p), slot, item, now);
}

int oracle_pool_drop(struct oracle_pool *p, void *item, int64_t now)
{
    return tide_pool_drop(frozen(p), item, now);
}

int oracle_pool_hold(struct oracle_pool *p, void *item)
{
    return tide_pool_hold(frozen(p), item);
}

size_t oracle_pool_evict(struct oracle_pool *p, int64_t now, void **out,
                         size_t n)
{
    return tide_pool_evict(frozen(p), now, out, n);
}

size_t oracle_pool_close(struct oracle_pool *p, void **out, size_t n)
{
    return tide_pool_close(frozen(p), out, n);
}

void oracle_pool_overload(struct oracle_pool *p, int64_t now, int64_t lag)
{
    tide_pool_overload(frozen(p), now, lag);
}

int64_t oracle_pool_live(const struct oracle_pool *p)
{
    return tide_pool_live(frozen(p));
}

int64_t oracle_pool_idle(const struct oracle_pool *p)
{
    return tide_pool_idle(frozen(p));
}

int64_t oracle_pool_busy(const struct oracle_pool *p)
{
    return tide_pool_busy(frozen(p));
}

bool oracle_pool_must_wait(const struct oracle_pool *p)
{
    return tide_pool_must_wait(frozen(p));
}

double oracle_pool_refusal(struct oracle_pool *p, int64_t now)
{
    return tide_pool_refusal(frozen(p), now);
}

void oracle_pool_guards(struct oracle_pool *p, int64_t now,
                        struct oracle_guards *out)
{
    struct tide_pool_guards g;
    tide_pool_guards(frozen(p), now, &g);
    *out = (struct oracle_guards){
        .bucket_tokens = g.bucket_tokens,
        .backoff_hold = g.backoff_hold,
        .backoff_failures = g.backoff_failures,
        .backoff_probing = g.backoff_probing,
        .shedder_ceiling = g.shedder_ceiling,
    };
}

int oracle_pool_breaker_state(struct oracle_pool *p)
{
    struct tide_breaker *b = tide_pool_breaker(frozen(p));
    return b ? (int)tide_breaker_state(b) : -1;
}
