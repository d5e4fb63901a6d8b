/* A row as text, formatted by hand: printf's float formatting (and, in
 * wasm, printf itself, which pulls in WASI imports) is left out, so the
 * native and wasm builds print the same bytes. */
#include <string.h>

#include "engine.h"

struct out {
    char *buf;
    size_t n;
};

static void put(struct out *o, const char *s, size_t len)
{
    if (o->n + len >= WEB_ROW_TEXT)
        len = WEB_ROW_TEXT - 1 - o->n;
    memcpy(o->buf + o->n, s, len);
    o->n += len;
    o->buf[o->n] = '\0';
}

/* v right-aligned in `width` columns, with one decimal after `decimals`
 * digits when decimals is 1 (v is then in tenths). */
static void put_int(struct out *o, int64_t v, int width, int decimals)
{
    char digits[24];
    int n = 0;
    bool negative = v < 0;
    uint64_t u = negative ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
        if (decimals && n == 1) {
            digits[n++] = '.';
            if (u == 0)
                digits[n++] = '0';
        }
    } while (u);
    if (negative)
        digits[n++] = '-';
    for (int pad = width - n; pad > 0; pad--)
        put(o, " ", 1);
    for (int i = n - 1; i >= 0; i--)
        put(o, &digits[i], 1);
}

/* s left-aligned in `width` columns. */
static void put_left(struct out *o, const char *s, int width)
{
    size_t len = strlen(s);
    put(o, s, len);
    for (int pad = width - (int)len; pad > 0; pad--)
        put(o, " ", 1);
}

static const char *const phase_names[] = {"calm", "burst", "drain", "outage",
                                          "recovery"};

static const char *state_name(enum tide_breaker_state b)
{
    switch (b) {
    case TIDE_BREAKER_ACTIVE:
        return "ACTIVE";
    case TIDE_BREAKER_INACTIVE:
        return "INACTIVE";
    case TIDE_BREAKER_RECOVERING:
        return "RECOVERING";
    }
    return "?";
}

const char *web_row_heads(void)
{
    return "  t phase    lent idle wait made failed timeout qfull shed served "
           "p99ms refused breaker";
}

size_t web_row_text(const struct web_row *r, char *buf)
{
    struct out o = {buf, 0};
    buf[0] = '\0';
    put_int(&o, r->second, 3, 0);
    put(&o, " ", 1);
    put_left(&o, phase_names[r->phase], 8);
    const int64_t cols[] = {r->lent,       r->idle,          r->waiting,
                            r->made,       r->make_failures, r->timeouts,
                            r->queue_full, r->shed,          r->served};
    const int widths[] = {4, 4, 4, 4, 6, 7, 5, 4, 6};
    for (int i = 0; i < 9; i++) {
        put(&o, " ", 1);
        put_int(&o, cols[i], widths[i], 0);
    }
    /* ms with one decimal, rounded half up from ns */
    put(&o, " ", 1);
    put_int(&o, (r->p99 + 50000) / 100000, 5, 1);
    /* per mille as a percentage with one decimal, then the sign */
    put(&o, " ", 1);
    put_int(&o, r->refusal_pm, 6, 1);
    put(&o, "% ", 2);
    /* the last three states the breaker went through, as demos/sim */
    int first = r->n_trail > 3 ? r->n_trail - 3 : 0;
    for (int i = first; i < r->n_trail; i++) {
        if (i > first)
            put(&o, ">", 1);
        put_left(&o, state_name(r->trail[i]), 0);
    }
    return o.n;
}
