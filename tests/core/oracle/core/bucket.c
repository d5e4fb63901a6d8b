/* Token bucket: `rate` tokens a second up to `burst`, one per request. */
#include <stdlib.h>

#include "core_internal.h"

struct tide_bucket_options tide__bucket_resolve(struct tide_bucket_options o)
{
    if (o.rate == 0.0)
        o.rate = 10.0;
    if (o.burst == 0.0) /* one second's worth, and at least one token */
        o.burst = o.rate > 1.0 ? o.rate : 1.0;
    return o;
}

int tide__bucket_check(const struct tide_bucket_options *o)
{
    if (!(o->rate > 0.0 && o->rate < 1e18) ||
        !(o->burst >= 1.0 && o->burst < 1e18))
        return TIDE_EBUCKET;
    return 0;
}

void tide__bucket_init(struct tide_bucket *b,
                       const struct tide_bucket_options *o, int64_t now)
{
    b->rate = o->rate / 1e9;
    b->burst = o->burst;
    b->tokens = o->burst;
    b->stamp = now;
    b->full_from = now;
    b->ns_per_token = 1e9 / o->rate;
    b->token_ns = tide__bucket_full_from(b, 0, 1.0);
}

/* Rounded up, and one ns more for the rounding of the level's arithmetic:
 * the shortcut must not find a bucket full before the arithmetic would. */
int64_t tide__bucket_full_from(const struct tide_bucket *b, int64_t at,
                               double deficit)
{
    double wait = deficit * b->ns_per_token;
    if (!(wait < 0x1p62)) /* a rate so slow the wait has no int64_t */
        return TIDE_FOREVER;
    int64_t ns = (int64_t)wait;
    return tide__later(at, ns + 1 + ((double)ns < wait));
}

int tide_bucket_new(const struct tide_bucket_options *o, int64_t now,
                    struct tide_bucket **out)
{
    if (!out)
        return TIDE_EINVAL;
    *out = NULL;
    struct tide_bucket_options r =
        tide__bucket_resolve(o ? *o : (struct tide_bucket_options){0});
    int rc = tide__bucket_check(&r);
    if (rc)
        return rc;
    struct tide_bucket *b = malloc(sizeof *b);
    if (!b)
        return TIDE_ENOMEM;
    tide__bucket_init(b, &r, now);
    *out = b;
    return 0;
}

void tide_bucket_free(struct tide_bucket *b)
{
    free(b);
}

bool tide_bucket_take(struct tide_bucket *b, int64_t now)
{
    if (!b)
        return false;
    tide__bucket_refill(b, now);
    if (b->tokens < 1.0)
        return false;
    tide__bucket_spend(b, now, b->tokens);
    return true;
}

int64_t tide_bucket_next(struct tide_bucket *b, int64_t now)
{
    if (!b)
        return 0;
    tide__bucket_refill(b, now);
    if (b->tokens >= 1.0)
        return 0;
    double wait = (1.0 - b->tokens) / b->rate;
    if (wait >= 0x1p63) /* a rate so slow the wait has no int64_t */
        return TIDE_FOREVER;
    int64_t ns = (int64_t)wait;
    return (double)ns < wait ? ns + 1 : ns; /* round up: never too early */
}

double tide_bucket_tokens(struct tide_bucket *b, int64_t now)
{
    if (!b)
        return 0.0;
    tide__bucket_refill(b, now);
    return b->tokens;
}
