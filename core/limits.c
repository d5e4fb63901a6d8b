/* Limits: the seed's presets, their validation, comparison and printed
 * form. */
#include <float.h>

#include "core_internal.h"

struct tide_limits tide_limits_resolve(struct tide_limits l)
{
    if (l.size == 0)
        l.size = 10;
    /* Idle follows size, so a pool that grew under load keeps what it made
     * rather than closing it on release and opening it again on the next
     * burst: with a fixed 10, a pool of 16 under 50 callers churned through
     * a thousand connections where 16 would do. */
    if (l.idle == 0)
        l.idle = l.size;
    if (l.keep == 0)
        l.keep = TIDE_MIN(30);
    if (l.life == 0)
        l.life = TIDE_FOREVER;
    if (l.streams == 0)
        l.streams = 1;
    /* half the excess a period, as HAProxy closes idle connections */
    if (l.retire == 0.0)
        l.retire = 0.5;
    return l;
}

int tide_limits_check(const struct tide_limits *l)
{
    if (!l)
        return TIDE_EINVAL;
    if (l->size < 0 || l->idle < 0 || l->keep < 0 || l->life < 0 ||
        l->demand < 0)
        return TIDE_ELIMITS;
    if (!(l->spread >= 0.0 && l->spread <= 1.0))
        return TIDE_ELIMITS;
    if (!(l->retire >= 0.0 && l->retire <= 1.0) ||
        !(l->preconnect >= 0.0 && l->preconnect <= 1.0))
        return TIDE_ELIMITS;
    if (l->streams < 0 || l->streams > TIDE_STREAMS_MAX)
        return TIDE_ELIMITS;
    if (l->sharing != TIDE_SHARING_PACK && l->sharing != TIDE_SHARING_SPREAD)
        return TIDE_ELIMITS;
    return 0;
}

static struct tide_limits resolved_or_presets(const struct tide_limits *l)
{
    return tide_limits_resolve(l ? *l : (struct tide_limits){0});
}

bool tide_limits_equal(const struct tide_limits *a, const struct tide_limits *b)
{
    struct tide_limits x = resolved_or_presets(a);
    struct tide_limits y = resolved_or_presets(b);
    return x.size == y.size && x.idle == y.idle && x.keep == y.keep &&
           x.life == y.life && x.spread == y.spread && x.streams == y.streams &&
           x.sharing == y.sharing && x.demand == y.demand &&
           x.retire == y.retire && x.preconnect == y.preconnect;
}

bool tide_limits_not_equal(const struct tide_limits *a,
                           const struct tide_limits *b)
{
    return !tide_limits_equal(a, b);
}

/* ---- the printed form ----
 *
 * Written without printf: the core is built for WebAssembly as it is, and a
 * printf there would bring in the whole of its formatting for one line. */

/* A text being written into buf[len], counted past its end as snprintf
 * counts. */
struct text {
    char *buf;
    size_t len;
    size_t at;
};

static void put_char(struct text *t, char c)
{
    if (t->at + 1 < t->len)
        t->buf[t->at] = c;
    t->at++;
}

static void put_str(struct text *t, const char *s)
{
    while (*s)
        put_char(t, *s++);
}

/* At least `width` digits, zeros in front. */
static void put_digits(struct text *t, uint64_t v, int width)
{
    char digits[20];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    while (n < width)
        digits[n++] = '0';
    while (n > 0)
        put_char(t, digits[--n]);
}

/* The magnitude of v, INT64_MIN's included. */
static uint64_t magnitude(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

static void put_int(struct text *t, int64_t v)
{
    if (v < 0)
        put_char(t, '-');
    put_digits(t, magnitude(v), 1);
}

static void put_count(struct text *t, const char *name, int64_t v)
{
    put_str(t, name);
    if (v == TIDE_UNLIMITED)
        put_str(t, "unlimited");
    else
        put_int(t, v);
}

/* A span in the largest unit it is a whole number of, so the text reads
 * as a person would write it and is still exact. */
static void put_span(struct text *t, const char *name, int64_t ns)
{
    static const struct {
        uint64_t ns;
        const char *unit;
    } units[] = {
        {UINT64_C(3600000000000), "h"}, {UINT64_C(60000000000), "min"},
        {UINT64_C(1000000000), "s"},    {UINT64_C(1000000), "ms"},
        {UINT64_C(1000), "us"},         {1, "ns"},
    };
    put_str(t, name);
    if (ns == TIDE_FOREVER) {
        put_str(t, "forever");
        return;
    }
    uint64_t m = magnitude(ns);
    size_t u = 0;
    while (m != 0 && m % units[u].ns != 0)
        u++;
    if (m == 0)
        u = 2; /* 0s */
    if (ns < 0)
        put_char(t, '-');
    put_digits(t, m / units[u].ns, 1);
    put_str(t, units[u].unit);
}

/* A share to nine decimals, trailing zeros cut. Valid limits hold it to
 * [0, 1]; what an invalid one holds is printed recognisably. */
static void put_share(struct text *t, const char *name, double v)
{
    put_str(t, name);
    if (v != v) {
        put_str(t, "nan");
        return;
    }
    if (v < 0) {
        put_char(t, '-');
        v = -v;
    }
    if (v >= 1e9) {
        put_str(t, v > DBL_MAX ? "inf" : ">=1e9");
        return;
    }
    uint64_t nano = (uint64_t)(v * 1e9 + 0.5);
    uint64_t whole = nano / 1000000000;
    uint64_t fraction = nano % 1000000000;
    put_digits(t, whole, 1);
    if (fraction == 0)
        return;
    int width = 9;
    while (fraction % 10 == 0) {
        fraction /= 10;
        width--;
    }
    put_char(t, '.');
    put_digits(t, fraction, width);
}

static void put_sharing(struct text *t, enum tide_sharing s)
{
    put_str(t, " sharing=");
    if (s == TIDE_SHARING_PACK)
        put_str(t, "pack");
    else if (s == TIDE_SHARING_SPREAD)
        put_str(t, "spread");
    else
        put_int(t, (int64_t)s);
}

int tide_limits_format(const struct tide_limits *limits, char *buf, size_t len)
{
    if (!limits || (!buf && len > 0))
        return TIDE_EINVAL;
    struct tide_limits l = tide_limits_resolve(*limits);
    struct text t = {buf, len, 0};
    put_count(&t, "size=", l.size);
    put_count(&t, " idle=", l.idle);
    put_span(&t, " keep=", l.keep);
    put_span(&t, " life=", l.life);
    put_share(&t, " spread=", l.spread);
    put_count(&t, " streams=", l.streams);
    put_sharing(&t, l.sharing);
    /* off by preset, and then not printed: the text stays what it was */
    if (l.demand != 0 && l.demand != TIDE_FOREVER) {
        put_span(&t, " demand=", l.demand);
        put_share(&t, " retire=", l.retire);
    }
    if (l.preconnect != 0.0)
        put_share(&t, " preconnect=", l.preconnect);
    if (len > 0)
        buf[t.at < len ? t.at : len - 1] = '\0';
    return (int)t.at;
}
