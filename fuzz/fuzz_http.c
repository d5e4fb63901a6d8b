/* HTTP/1.1 messages as libhttp-parser reads them (fuzz_http.h). */
#include "fuzz_http.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void fz_grow(char **p, size_t *len, size_t *cap, const char *at, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 64;
        while (c < *len + n + 1)
            c *= 2;
        *p = realloc(*p, c);
        if (!*p)
            abort();
        *cap = c;
    }
    memcpy(*p + *len, at, n);
    *len += n;
    (*p)[*len] = 0;
}

static struct msg *cur(http_parser *p)
{
    struct reading *r = p->data;
    return r->n ? &r->msgs[r->n - 1] : NULL;
}

/* Adds a string (NUL-terminated in text); its offset. */
static size_t text_add(struct msg *m, const char *at, size_t n)
{
    size_t off = m->text_len;
    fz_grow(&m->text, &m->text_len, &m->text_cap, at, n);
    fz_grow(&m->text, &m->text_len, &m->text_cap, "", 1);
    return off;
}

/* The last string added grows (a token the parser gave in pieces). */
static void text_more(struct msg *m, const char *at, size_t n)
{
    m->text_len--; /* back over its NUL */
    fz_grow(&m->text, &m->text_len, &m->text_cap, at, n);
    fz_grow(&m->text, &m->text_len, &m->text_cap, "", 1);
}

static int on_begin(http_parser *p)
{
    struct reading *r = p->data;
    if (r->n == MAX_MSGS) {
        r->overflow = true;
        return -1;
    }
    struct msg *m = &r->msgs[r->n++];
    memset(m, 0, sizeof *m);
    m->url = SIZE_MAX;
    r->last_was_value = true;
    r->last_end = NULL;
    r->last_empty = false;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    struct msg *m = cur(p);
    if (m->url == SIZE_MAX) {
        m->url = text_add(m, at, n);
        m->head_at = at;
    } else {
        text_more(m, at, n);
    }
    ((struct reading *)p->data)->last_end = at + n;
    ((struct reading *)p->data)->last_empty = false;
    return 0;
}

static int on_field(http_parser *p, const char *at, size_t n)
{
    struct reading *r = p->data;
    struct msg *m = cur(p);
    /* a response's fields have no limit at the proxy: past MAX_FIELDS
     * of them they are not kept (a request's past it stop the parse, and
     * its bytes are taken for unreadable); unless asked for, none is */
    if (p->type == HTTP_RESPONSE && !r->keep_response_fields)
        return 0;
    if (r->last_was_value) {
        struct field *f = m->head_done ? m->trailers : m->fields;
        size_t *nf = m->head_done ? &m->ntrailers : &m->nfields;
        r->skip_field = false;
        if (*nf == MAX_FIELDS && p->type == HTTP_RESPONSE) {
            m->fields_cut = r->skip_field = true;
            r->last_was_value = false;
            return 0;
        }
        if (*nf == MAX_FIELDS)
            return -1;
        f[*nf].name = text_add(m, at, n);
        f[*nf].value = text_add(m, "", 0);
        ++*nf;
    } else if (!r->skip_field) {
        /* the value's empty string is last: redo the pair */
        struct field *f = m->head_done ? &m->trailers[m->ntrailers - 1]
                                       : &m->fields[m->nfields - 1];
        m->text_len = f->value;
        text_more(m, at, n);
        f->value = text_add(m, "", 0);
    }
    r->last_was_value = false;
    if (!m->head_done) {
        r->last_end = at + n;
        r->last_empty = false;
    }
    return 0;
}

static int on_value(http_parser *p, const char *at, size_t n)
{
    struct reading *r = p->data;
    struct msg *m = cur(p);
    if (p->type == HTTP_RESPONSE && !r->keep_response_fields)
        return 0; /* as on_field */
    if (!r->skip_field)
        text_more(m, at, n);
    r->last_was_value = true;
    if (!m->head_done) {
        r->last_end = at + n;
        r->last_empty = n == 0;
    }
    return 0;
}

static int on_headers_done(http_parser *p)
{
    struct reading *r = p->data;
    struct msg *m = cur(p);
    m->head_done = true;
    m->method = p->method;
    m->major = p->http_major;
    m->minor = p->http_minor;
    m->status = (int)p->status_code;
    m->chunked = (p->flags & F_CHUNKED) != 0;
    r->last_was_value = true;
    /* the head's bytes: only CRLF ends its lines, and it ends in one */
    if (p->type == HTTP_REQUEST && m->head_at && r->last_end) {
        for (const char *q = m->head_at; q < r->last_end; q++)
            if ((*q == '\n' && (q == m->head_at || q[-1] != '\r')) ||
                (*q == '\r' && q[1] != '\n'))
                m->bad_lines = true;
        /* past the last value, or the url's " HTTP/1.x" when no field (a
         * line without it is HTTP/0.9 to the parser, and its end is
         * anywhere: not read past the input) */
        const char *end = r->last_end + (m->nfields ? 0 : 9);
        size_t tail = r->last_empty ? 2 : 4; /* its own CRLF is behind */
        if (end + tail > r->input_end ||
            (!m->nfields && memcmp(r->last_end, " HTTP/", 6) != 0) ||
            memcmp(end, "\r\n\r\n", tail) != 0)
            m->bad_lines = true;
    }
    if (r->requests && p->type == HTTP_RESPONSE && m->status >= 200) {
        size_t i = r->finals++;
        /* a HEAD whose head the proxy could read (a bare CR or LF in it
         * is refused before the method counts: answered as a GET, and
         * the connection closed) */
        const struct msg *q = &r->requests->msgs[i];
        if (i < r->requests->n && q->method == HTTP_HEAD && !q->bad_lines &&
            !(i < 64 && (r->body_anyway >> i & 1))) {
            r->skipped = i + 1;
            return 1; /* no body */
        }
    }
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    struct msg *m = cur(p);
    fz_grow(&m->body, &m->body_len, &m->body_cap, at, n);
    return 0;
}

static int on_complete(http_parser *p)
{
    cur(p)->complete = true;
    return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_begin,
    .on_url = on_url,
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_headers_complete = on_headers_done,
    .on_body = on_body,
    .on_message_complete = on_complete,
};

/* Reads s[0, len) as messages of `type` into r (appending); the parser's
 * error, HPE_OK when all of it read. */
enum http_errno fz_parse(struct reading *r, enum http_parser_type type,
                         const char *s, size_t len, bool eof)
{
    http_parser p;
    http_parser_init(&p, type);
    p.data = r;
    r->input_end = len ? s + len : s; /* s is NULL when nothing came */
    size_t done = http_parser_execute(&p, &settings, s, len);
    if (HTTP_PARSER_ERRNO(&p) == HPE_OK && done == len && eof)
        http_parser_execute(&p, &settings, NULL, 0);
    if (HTTP_PARSER_ERRNO(&p) == HPE_OK && done != len && !p.upgrade)
        return HPE_UNKNOWN;
    return HTTP_PARSER_ERRNO(&p);
}

void fz_reading_free(struct reading *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->msgs[i].text);
        free(r->msgs[i].body);
    }
}

const char *fz_name(const struct msg *m, const struct field *f)
{
    return m->text + f->name;
}

const char *fz_value(const struct msg *m, const struct field *f)
{
    return m->text + f->value;
}

size_t fz_count(const struct msg *m, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < m->nfields; i++)
        n += strcasecmp(fz_name(m, &m->fields[i]), name) == 0;
    return n;
}

const char *fz_get(const struct msg *m, const char *name)
{
    for (size_t i = 0; i < m->nfields; i++)
        if (strcasecmp(fz_name(m, &m->fields[i]), name) == 0)
            return fz_value(m, &m->fields[i]);
    return NULL;
}
