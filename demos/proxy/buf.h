/* A growable run of bytes that one client keeps for its whole life: the
 * request and response texts, the bytes read from it and the bytes on
 * their way to it. Emptied between requests, never freed, so a warm client
 * costs no allocation per request (an evbuffer mallocs a chain on every
 * add to an empty buffer and frees it on the drain that empties it). */
#ifndef TIDEPOOL_DEMO_PROXY_BUF_H
#define TIDEPOOL_DEMO_PROXY_BUF_H

#include <stddef.h>
#include <string.h>

struct px_buf {
    char *p;
    size_t off; /* bytes before off are consumed */
    size_t len; /* bytes held, consumed ones included */
    size_t cap;
};

/* The bytes not yet consumed. A buffer never grown has no bytes at all:
 * NULL + 0 is undefined in C (clang's UBSan reports it). */
static inline const char *px_buf_data(const struct px_buf *b)
{
    return b->p ? b->p + b->off : b->p;
}

static inline size_t px_buf_size(const struct px_buf *b)
{
    return b->len - b->off;
}

/* Room for at least n more bytes at p + len: the consumed prefix is moved
 * out first. Out of memory ends the program (a demo). */
void px_buf_reserve(struct px_buf *b, size_t n);

/* Appends n bytes. Inline: a response's head is some seventy small adds
 * (each header's name and value kept, then written out with its ": " and
 * CRLF), and as calls they cost a tenth of the proxy's own instructions;
 * with room, an add is a copy. */
static inline void px_buf_add(struct px_buf *b, const void *data, size_t n)
{
    if (n == 0)
        return;
    if (b->cap - b->len < n)
        px_buf_reserve(b, n);
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static inline void px_buf_adds(struct px_buf *b, const char *s)
{
    px_buf_add(b, s, strlen(s));
}

void px_buf_printf(struct px_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Drops what was added since the buffer held `size` unconsumed bytes
 * (nothing may have been consumed since). */
static inline void px_buf_truncate(struct px_buf *b, size_t size)
{
    b->len = b->off + size;
}

/* Marks n more bytes consumed; all of them empties the buffer. */
void px_buf_consume(struct px_buf *b, size_t n);
void px_buf_clear(struct px_buf *b);
void px_buf_dispose(struct px_buf *b);

#endif
