/* A message's header fields as the proxy keeps them: names and values as
 * offsets into one text per message (no allocation per field), looked up
 * by name, the hop-by-hop ones told apart (RFC 9110 7.6.1, and those a
 * Connection header names), and written out as "name: value" lines. */
#include "proxy_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void px__headers_clear(struct headers *hs)
{
    hs->n = 0;
    hs->in_value = false;
    px_buf_clear(&hs->text);
}

void px__headers_dispose(struct headers *hs)
{
    free(hs->h);
    free(hs->tokens);
    px_buf_dispose(&hs->text);
    *hs = (struct headers){0};
}

/* Starts a string in the text; returns its offset. */
size_t px__text_start(struct headers *hs, const char *at, size_t len)
{
    size_t off = hs->text.len;
    px_buf_add(&hs->text, at, len);
    px_buf_add(&hs->text, "", 1);
    return off;
}

/* Continues the last string of the text. */
void px__text_continue(struct headers *hs, const char *at, size_t len)
{
    hs->text.len--; /* its NUL */
    px_buf_add(&hs->text, at, len);
    px_buf_add(&hs->text, "", 1);
}

const char *px__text_at(const struct headers *hs, size_t off)
{
    return off == NO_VALUE ? "" : hs->text.p + off;
}

/* The parser hands names and values in pieces: a name piece after a value
 * starts the next header. */
void px__headers_field(struct headers *hs, const char *at, size_t len)
{
    if (hs->n == 0 || hs->in_value) {
        if (hs->n == hs->cap) {
            hs->cap = hs->cap ? 2 * hs->cap : 16;
            hs->h = realloc(hs->h, hs->cap * sizeof *hs->h);
            if (!hs->h)
                abort(); /* a demo: out of memory ends it */
        }
        hs->h[hs->n++] = (struct header){.name = px__text_start(hs, at, len),
                                         .value = NO_VALUE,
                                         .name_len = len};
        hs->in_value = false;
        return;
    }
    px__text_continue(hs, at, len);
    hs->h[hs->n - 1].name_len += len;
}

void px__headers_value(struct headers *hs, const char *at, size_t len)
{
    if (hs->n == 0)
        return;
    struct header *h = &hs->h[hs->n - 1];
    if (h->value == NO_VALUE)
        h->value = px__text_start(hs, at, len);
    else
        px__text_continue(hs, at, len);
    h->value_len += len;
    hs->in_value = true;
}

const char *px__header_name(const struct headers *hs, size_t i)
{
    return hs->text.p + hs->h[i].name;
}

const char *px__header_value(const struct headers *hs, size_t i)
{
    return px__text_at(hs, hs->h[i].value);
}

const char *px__headers_get(const struct headers *hs, const char *name)
{
    for (size_t i = 0; i < hs->n; i++)
        if (strcasecmp(px__header_name(hs, i), name) == 0)
            return px__header_value(hs, i);
    return NULL;
}

/* Tokens in the order they are looked up in: by length, then by their
 * bytes regardless of case. */
static int token_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    if (alen != blen)
        return alen < blen ? -1 : 1;
    return strncasecmp(a, b, alen);
}

static int token_sort(const void *x, const void *y)
{
    const struct token *a = x, *b = y;
    return token_cmp(a->p, a->len, b->p, b->len);
}

/* Whether any of the message's Connection headers (there may be several,
 * each a list) names `name`: a binary search of what connection_names
 * sorted, so n fields cost n log t for t names listed, not n times the
 * lists (each field was looked for in every list: with one naming a
 * field, a response of 4,000 fields cost 43 ms, now 0.2 ms). */
static bool named_by_connection(const struct headers *hs, const char *name,
                                size_t len)
{
    size_t lo = 0, hi = hs->n_tokens;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = token_cmp(name, len, hs->tokens[mid].p, hs->tokens[mid].len);
        if (c == 0)
            return true;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return false;
}

/* RFC 9110 7.6.1: these apply to one connection only, and so do the
 * headers the message's Connection headers name (`connection`: the
 * message's headers when they name any, looked up once per message).
 * Framing is the proxy's own. */
bool px__hop_by_hop(const struct headers *connection, const char *name)
{
    return px__hop_by_hop_n(connection, name, strlen(name));
}

/* px__hop_by_hop of a name whose length is known (len). */
bool px__hop_by_hop_n(const struct headers *connection, const char *name,
                      size_t len)
{
    static const struct {
        const char *name;
        size_t len;
    } hop[] = {
        {"connection", 10}, {"keep-alive", 10},     {"proxy-connection", 16},
        {"te", 2},          {"trailer", 7},         {"transfer-encoding", 17},
        {"upgrade", 7},     {"content-length", 14},
    };
    /* lengths first: most names differ from all of these in length, and
     * the comparisons were a fiftieth of the proxy's time */
    char first = (char)(name[0] | 0x20); /* a letter's lower case */
    for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
        if (hop[i].len == len && hop[i].name[0] == first &&
            strcasecmp(name, hop[i].name) == 0)
            return true;
    /* Proxy-Connection, Proxy-Authorization... are for this hop; and a
     * bare "Proxy" header would become HTTP_PROXY to a CGI upstream
     * (httpoxy), which it would take for its own outgoing proxy */
    if (len >= 5 && first == 'p' && strncasecmp(name, "proxy", 5) == 0 &&
        (len == 5 || name[5] == '-'))
        return true;
    return connection && named_by_connection(connection, name, len);
}

/* Adds a token to hs's list. */
static void token_add(struct headers *hs, const char *p, size_t len)
{
    if (hs->n_tokens == hs->tokens_cap) {
        hs->tokens_cap = hs->tokens_cap ? 2 * hs->tokens_cap : 8;
        hs->tokens = realloc(hs->tokens, hs->tokens_cap * sizeof *hs->tokens);
        if (!hs->tokens)
            abort(); /* a demo: out of memory ends it */
    }
    hs->tokens[hs->n_tokens++] = (struct token){.p = p, .len = len};
}

/* The message's headers, with the names its Connection headers list
 * gathered and sorted for named_by_connection, when they name any
 * beyond the fixed list; else NULL, as for "keep-alive" alone (what
 * nginx sends on every response), so no header name is looked up. */
const struct headers *px__connection_names(struct headers *hs)
{
    hs->n_tokens = 0;
    bool beyond = false;
    for (size_t i = 0; i < hs->n; i++) {
        if (hs->h[i].name_len != 10 ||
            strcasecmp(px__header_name(hs, i), "connection") != 0)
            continue;
        for (const char *p = px__header_value(hs, i); *p;) {
            while (*p == ' ' || *p == '\t' || *p == ',')
                p++;
            const char *e = p;
            while (*e && *e != ',')
                e++;
            const char *t = e;
            while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
                t--;
            if (t > p) {
                token_add(hs, p, (size_t)(t - p));
                beyond = beyond ||
                         token_cmp(p, (size_t)(t - p), "keep-alive", 10) != 0;
            }
            p = e;
        }
    }
    if (!beyond)
        return NULL;
    qsort(hs->tokens, hs->n_tokens, sizeof *hs->tokens, token_sort);
    return hs;
}

/* RFC 9112 5.1: no whitespace goes between a field's name and its colon,
 * and a proxy removes any from a response before passing it on.
 * libhttp-parser (built without HTTP_PARSER_STRICT, as Debian's is) takes
 * spaces into a name, and frames by "Content-Length " or
 * "Transfer-Encoding " all the same, while the name as written is none of
 * the hop-by-hop ones: it went to the client beside the proxy's own
 * framing (a 204 carried a length; an HTTP/1.0 client, read until the
 * close, was told chunked). Cuts each name's trailing spaces (a NUL over
 * the first: the rest of the string is dead text); false when a space is
 * left inside one, or nothing but spaces was there (" : v", read after a
 * bare CR), which is no field name (a token) at all. */
bool px__headers_trim_names(struct headers *hs)
{
    for (size_t i = 0; i < hs->n; i++) {
        char *name = hs->text.p + hs->h[i].name;
        size_t len = strlen(name);
        while (len > 0 && name[len - 1] == ' ')
            len--;
        name[len] = '\0';
        hs->h[i].name_len = len;
        if (len == 0 || memchr(name, ' ', len))
            return false;
    }
    return true;
}

/* Appends "name: value\r\n". */
void px__add_header(struct px_buf *b, const char *name, const char *value)
{
    px_buf_adds(b, name);
    px_buf_add(b, ": ", 2);
    px_buf_adds(b, value);
    px_buf_add(b, "\r\n", 2);
}

/* Appends field i of hs as "name: value\r\n", by the lengths kept (a
 * field holds no NUL: the checks before the parser refuse one). */
void px__add_field(struct px_buf *b, const struct headers *hs, size_t i)
{
    const struct header *h = &hs->h[i];
    size_t n = h->name_len + 2 + h->value_len + 2;
    if (b->cap - b->len < n)
        px_buf_reserve(b, n);
    char *w = b->p + b->len;
    memcpy(w, hs->text.p + h->name, h->name_len);
    w += h->name_len;
    *w++ = ':';
    *w++ = ' ';
    if (h->value_len)
        memcpy(w, hs->text.p + h->value, h->value_len);
    w += h->value_len;
    *w++ = '\r';
    *w++ = '\n';
    b->len += n;
}

/* Appends v in decimal (printf is a tenth of the proxy's own time). */
void px__add_uint(struct px_buf *b, uint64_t v)
{
    char d[20];
    size_t n = 0;
    do {
        d[sizeof d - ++n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    px_buf_add(b, d + sizeof d - n, n);
}

void px__add_hex(struct px_buf *b, uint64_t v)
{
    char d[16];
    size_t n = 0;
    do {
        d[sizeof d - ++n] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    px_buf_add(b, d + sizeof d - n, n);
}
