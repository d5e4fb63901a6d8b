/* demos/proxy: the allocator one HTTP/2 connection's nghttp2 session is
 * given (h2_mem.c), for h2.c.
 *
 * nghttp2 takes and gives back a dozen small blocks for every stream (each
 * response field's value, the request's fields, the HEADERS item, the
 * stream itself). From glibc they came back slower than they went: with
 * 200 streams in flight the thread cache's few blocks a size overflow, and
 * a free goes to the arena's bins (a fifth of the proxy's user time was
 * malloc and free at wrk -c200). Here the blocks a session gave back wait
 * on its own free lists, by size class, for its next ones.
 */
#ifndef TIDEPOOL_DEMO_PROXY_H2_MEM_H
#define TIDEPOOL_DEMO_PROXY_H2_MEM_H

#include <nghttp2/nghttp2.h>
#include <stddef.h>

/* size classes of 64 << i bytes, header included */
#define PX_H2_MEM_CLASSES 6

/* One session's free blocks; the storage is the caller's (in the
 * connection), and must stay put while the session lives. */
struct px_h2_mem {
    void *free[PX_H2_MEM_CLASSES];
    unsigned n[PX_H2_MEM_CLASSES];
};

/* Empties m and fills out with the allocator to give
 * nghttp2_session_client_new3 (which copies it); out refers to m. */
void px_h2_mem_init(struct px_h2_mem *m, nghttp2_mem *out);

/* Frees the blocks m keeps, after the session was deleted. */
void px_h2_mem_dispose(struct px_h2_mem *m);

#endif
