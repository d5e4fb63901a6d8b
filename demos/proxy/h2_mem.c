/* The allocator of one HTTP/2 connection's nghttp2 session: blocks of up
 * to 2 KiB by size class (64 << i bytes, a 16-byte header saying which)
 * kept on the connection's free lists once given back, at most
 * keep_max a class, so the session's next stream takes them again; larger
 * ones straight from malloc. See h2_mem.h for why. */
#include "h2_mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Blocks kept a class: a class holds what the streams in flight took of
 * it at their peak (a few for each of up to 256 streams). Under
 * AddressSanitizer none: a block on a free list is memory ASan takes for
 * live, and a use of one after nghttp2 freed it would go unreported. */
#if defined(__SANITIZE_ADDRESS__)
#define KEEP_NONE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KEEP_NONE 1
#endif
#endif
#ifdef KEEP_NONE
static const size_t keep_max = 0;
#else
static const size_t keep_max = 1024;
#endif
/* the class of a block malloc gave for a size above the largest class */
#define LARGE PX_H2_MEM_CLASSES

/* Before each block's bytes: 16 bytes, so they keep malloc's alignment.
 * A free block's header links it into its list. */
union head {
    struct {
        size_t cls;  /* 0 .. PX_H2_MEM_CLASSES - 1, or LARGE */
        size_t size; /* LARGE: the bytes asked for */
    } in_use;
    union head *next;
    max_align_t align;
};

static size_t class_bytes(size_t cls)
{
    return (size_t)64 << cls;
}

static void *mem_malloc(size_t size, void *user)
{
    struct px_h2_mem *m = user;
    size_t cls = 0;
    while (cls < PX_H2_MEM_CLASSES &&
           size > class_bytes(cls) - sizeof(union head))
        cls++;
    union head *h;
    if (cls == LARGE) {
        if (size > SIZE_MAX - sizeof *h)
            return NULL;
        h = malloc(sizeof *h + size);
        if (!h)
            return NULL;
        h->in_use.size = size;
    } else if (m->free[cls]) {
        h = m->free[cls];
        m->free[cls] = h->next;
        m->n[cls]--;
    } else {
        h = malloc(class_bytes(cls));
        if (!h)
            return NULL;
    }
    h->in_use.cls = cls;
    return h + 1;
}

static void mem_free(void *ptr, void *user)
{
    struct px_h2_mem *m = user;
    if (!ptr)
        return;
    union head *h = (union head *)ptr - 1;
    size_t cls = h->in_use.cls;
    if (cls == LARGE || m->n[cls] + 1 > keep_max) {
        free(h);
        return;
    }
    h->next = m->free[cls];
    m->free[cls] = h;
    m->n[cls]++;
}

static void *mem_calloc(size_t n, size_t size, void *user)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = mem_malloc(n * size, user);
    if (p)
        memset(p, 0, n * size);
    return p;
}

static void *mem_realloc(void *ptr, size_t size, void *user)
{
    if (!ptr)
        return mem_malloc(size, user);
    union head *h = (union head *)ptr - 1;
    size_t cls = h->in_use.cls;
    size_t have =
        cls == LARGE ? h->in_use.size : class_bytes(cls) - sizeof(union head);
    if (size <= have && cls != LARGE)
        return ptr; /* room enough in its class */
    void *p = mem_malloc(size, user);
    if (!p)
        return NULL;
    memcpy(p, ptr, have < size ? have : size);
    mem_free(ptr, user);
    return p;
}

void px_h2_mem_init(struct px_h2_mem *m, nghttp2_mem *out)
{
    *m = (struct px_h2_mem){0};
    *out = (nghttp2_mem){.mem_user_data = m,
                         .malloc = mem_malloc,
                         .free = mem_free,
                         .calloc = mem_calloc,
                         .realloc = mem_realloc};
}

void px_h2_mem_dispose(struct px_h2_mem *m)
{
    for (size_t cls = 0; cls < PX_H2_MEM_CLASSES; cls++)
        while (m->free[cls]) {
            union head *h = m->free[cls];
            m->free[cls] = h->next;
            free(h);
        }
    *m = (struct px_h2_mem){0};
}
