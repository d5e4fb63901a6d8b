/* Cuts of a fuzz input (see fuzz_cuts.h). */
#include "fuzz_cuts.h"

#include <stdlib.h>
#include <string.h>

/* Offset of the k-th '\n' of s (k counted round their number); -1 when
 * there is none. */
static long line_end(const uint8_t *s, size_t len, size_t k)
{
    size_t count = 0;
    for (size_t i = 0; i < len; i++)
        count += s[i] == '\n';
    if (count == 0)
        return -1;
    k %= count;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '\n' && k-- == 0)
            return (long)i;
    return -1;
}

static int ascending(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

bool tide_fuzz_cuts_read(struct tide_fuzz_cuts *c, const uint8_t *data,
                         size_t size)
{
    memset(c, 0, sizeof *c);
    if (size < 1)
        return false;
    size_t wanted = data[0] & 0x0f;
    size_t head = 1 + 2 * wanted;
    if (size < head)
        return false;
    c->stream = data + head;
    c->len = size - head;
    for (size_t i = 0; i < wanted; i++) {
        uint8_t a = data[1 + 2 * i], b = data[2 + 2 * i];
        long at;
        if (a & 0x80) {
            at = (long)(a & 0x7f) * 256 + b;
        } else {
            long end = line_end(c->stream, c->len, a);
            at = end < 0 ? -1 : end + (int8_t)b;
        }
        if (at > 0 && (size_t)at < c->len)
            c->at[c->n++] = (size_t)at;
    }
    qsort(c->at, c->n, sizeof c->at[0], ascending);
    size_t kept = 0;
    for (size_t i = 0; i < c->n; i++)
        if (kept == 0 || c->at[i] != c->at[kept - 1])
            c->at[kept++] = c->at[i];
    c->n = kept;
    return true;
}
