/* libFuzzer target over the SMTP sender's reply reader
 * (demos/smtp/reply.c), as a session uses it: the server's bytes arrive
 * in reads, and after each read every whole reply is taken, until the
 * reader wants more or refuses the stream (the session is dropped then).
 *
 * The input is a stream and the points where it is cut into reads:
 *   byte 0        how many cuts (its low 4 bits: 0 to 15)
 *   2 bytes each  a cut (fuzz_cuts.h): at a line's end give or take a
 *                 few bytes, where readers go wrong, or anywhere
 *   the rest      the server's bytes
 *
 * What a user relies on, asserted for every input:
 * - the same replies are read whatever the cuts: each one's code, lines,
 *   text, extensions and the byte it ends at, and the same verdict at the
 *   end (still waiting, or refused), as when the stream comes in one read;
 *   with the input's cuts, and (streams up to 4 KiB) a byte a read;
 * - a reply is never accepted past the documented limits: in the bytes it
 *   was read from, every line is at most TIDE__SMTP_LINE bytes before its
 *   CRLF or LF, begins with the reply's code (200 to 599) followed by '-'
 *   on every line but the last, ' ' or nothing on the last, and there are
 *   at most TIDE__SMTP_LINES lines; its kept text ends within the buffer;
 * - no crash and no sanitizer report. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "fuzz_cuts.h"
#include "smtp_internal.h"

#define MAX_REPLIES  256
#define BYTEWISE_MAX 4096

struct seen {
    struct tide__smtp_reply reply;
    size_t end; /* the stream's offset just past it */
};

struct outcome {
    struct seen replies[MAX_REPLIES];
    size_t n;
    bool refused;
};

/* Feeds the stream in pieces ending at cuts[0..ncuts), then the rest,
 * taking every whole reply after each piece; cuts NULL and ncuts not 0:
 * one byte at a time. */
static void read_in_pieces(const uint8_t *s, size_t len, const size_t *cuts,
                           size_t ncuts, struct outcome *o)
{
    memset(o, 0, sizeof *o);
    struct evbuffer *in = evbuffer_new();
    if (!in)
        abort();
    struct tide__smtp_reply r;
    tide__smtp_reply_clear(&r);
    size_t fed = 0;
    for (size_t piece = 0; piece <= ncuts && !o->refused; piece++) {
        size_t to = piece == ncuts ? len : cuts ? cuts[piece] : piece + 1;
        if (evbuffer_add(in, s + fed, to - fed) != 0)
            abort();
        fed = to;
        int rc;
        while (o->n < MAX_REPLIES &&
               (rc = tide__smtp_reply_read(in, &r)) != 0) {
            if (rc < 0) {
                o->refused = true;
                break;
            }
            o->replies[o->n].reply = r;
            o->replies[o->n].end = fed - evbuffer_get_length(in);
            o->n++;
            tide__smtp_reply_clear(&r);
        }
    }
    evbuffer_free(in);
}

static bool same_reply(const struct seen *a, const struct seen *b)
{
    const struct tide__smtp_reply *x = &a->reply, *y = &b->reply;
    return a->end == b->end && x->code == y->code && x->lines == y->lines &&
           x->len == y->len && memcmp(x->text, y->text, x->len) == 0 &&
           x->starttls == y->starttls && x->auth_plain == y->auth_plain &&
           x->auth_login == y->auth_login;
}

static void same_outcome(const struct outcome *a, const struct outcome *b)
{
    if (a->n != b->n || a->refused != b->refused)
        abort();
    for (size_t i = 0; i < a->n; i++)
        if (!same_reply(&a->replies[i], &b->replies[i]))
            abort();
}

/* The limits, checked on the bytes [from, to) the reply was read from. */
static void check_limits(const uint8_t *s, size_t from, size_t to,
                         const struct tide__smtp_reply *r)
{
    if (r->len >= sizeof r->text || r->text[r->len] != '\0' ||
        strlen(r->text) != r->len)
        abort();
    int lines = 0;
    for (size_t at = from; at < to;) {
        const uint8_t *lf = memchr(s + at, '\n', to - at);
        if (!lf)
            abort(); /* a reply ends with its last line's end */
        size_t end = (size_t)(lf - s);
        size_t n = end - at;
        if (n > 0 && s[end - 1] == '\r')
            n--;
        const uint8_t *line = s + at;
        bool last = end + 1 == to;
        if (n > TIDE__SMTP_LINE || n < 3)
            abort();
        int code = 0;
        for (int i = 0; i < 3; i++) {
            if (line[i] < '0' || line[i] > '9')
                abort();
            code = code * 10 + (line[i] - '0');
        }
        if (code != r->code || code < 200 || code > 599)
            abort();
        if (last ? n > 3 && line[3] != ' ' : n == 3 || line[3] != '-')
            abort();
        lines++;
        at = end + 1;
    }
    if (lines != r->lines || lines > TIDE__SMTP_LINES)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tide_fuzz_cuts c;
    if (!tide_fuzz_cuts_read(&c, data, size))
        return 0;
    const uint8_t *s = c.stream;
    size_t len = c.len;

    static struct outcome whole, pieces; /* large: not on the stack */
    read_in_pieces(s, len, NULL, 0, &whole);
    size_t from = 0;
    for (size_t i = 0; i < whole.n; i++) {
        check_limits(s, from, whole.replies[i].end, &whole.replies[i].reply);
        from = whole.replies[i].end;
    }
    read_in_pieces(s, len, c.at, c.n, &pieces);
    same_outcome(&whole, &pieces);
    /* and every cut at once: a read a byte, through every state a reader
     * can be left in between reads (bounded: each read scans the line so
     * far) */
    if (len <= BYTEWISE_MAX && len > 0) {
        read_in_pieces(s, len, NULL, len - 1, &pieces);
        same_outcome(&whole, &pieces);
    }
    return 0;
}
