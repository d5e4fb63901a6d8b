/* See buf.h. */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void px_buf_reserve(struct px_buf *b, size_t n)
{
    if (b->cap - b->len >= n)
        return;
    if (b->off > 0) {
        memmove(b->p, b->p + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (b->cap - b->len >= n)
            return;
    }
    size_t cap = b->cap ? b->cap : 1024;
    while (cap - b->len < n)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        abort(); /* a demo: out of memory ends it */
    b->p = p;
    b->cap = cap;
}

void px_buf_printf(struct px_buf *b, const char *fmt, ...)
{
    char line[256]; /* most fit: formatted once */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    if ((size_t)n < sizeof line) {
        px_buf_add(b, line, (size_t)n);
        return;
    }
    px_buf_reserve(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void px_buf_consume(struct px_buf *b, size_t n)
{
    b->off += n;
    if (b->off >= b->len)
        b->off = b->len = 0;
}

void px_buf_clear(struct px_buf *b)
{
    b->off = b->len = 0;
}

void px_buf_dispose(struct px_buf *b)
{
    free(b->p);
    *b = (struct px_buf){0};
}
