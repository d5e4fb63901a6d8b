/* What libhttp-parser lets through but another parser may read another
 * way, checked before it parses: a request's head (line ends, folded
 * lines, space before a colon, its size and field count), a chunked body
 * both ways (RFC 9112 7.1), and a parsed head's framing, Host and target
 * (head_refusal). */
#include "proxy_internal.h"
#include "target.h"

#include <string.h>
#include <strings.h>

/* Checks the head at the start of p[0, len), on from where the last call
 * stopped, for what libhttp-parser lets through but another parser may
 * read another way, so that nothing ambiguous goes upstream: a bare LF or
 * CR as a line's end (RFC 9112 2.2), a line folded onto the one before it
 * (obs-fold, 5.2), space between a field's name and its colon (5.1: a
 * name "Transfer-Encoding " that one reader ignores and another takes for
 * the framing), a control character in a field (5.5: libhttp-parser
 * checks a value's bytes but its first, and a "\x1e" that began one
 * line stood inside the one X-Forwarded-For made of it, a request the
 * upstream's parser refused). Returns 0 until the head's end is in, 1
 * once it is (its bytes are fine to parse), or the status that refuses
 * the request. */
/* A byte in a field's value (or the request line) that head_scan only
 * counts: printable (a space too), or past ASCII. */
static inline bool value_plain(unsigned char u)
{
    return u >= 0x20 && u != 0x7f;
}

/* ...and in a field's name, where a space or the colon is news. */
static inline bool name_plain(unsigned char u)
{
    return u > 0x20 && u != 0x7f && u != ':';
}

int px__head_scan(struct head_scan *sp, const char *p, size_t len)
{
    /* a copy in registers: through the pointer every store to the state
     * could be a store into p (char aliases anything), and each byte
     * cost some thirty instructions reloading it */
    struct head_scan s = *sp;
    int v = 0;
    for (; s.at < len; s.at++) {
        if (s.line > 0 && !s.cr && s.at < HEAD_MAX) {
            /* within a line, the run of bytes that need no look but the
             * count (printable, or past ASCII; a name's colon and a space
             * in a name end it), at some five instructions a byte, where
             * each went through every test below; stopping short of
             * HEAD_MAX and of a request line's URI_MAX, which the tests
             * below refuse */
            size_t end = len < HEAD_MAX ? len : HEAD_MAX;
            if (!s.fields && end - s.at > URI_MAX - s.line)
                end = s.at + (URI_MAX - s.line);
            size_t i = s.at;
            if (s.in_name)
                while (i < end && name_plain((unsigned char)p[i]))
                    i++;
            else
                while (i < end && value_plain((unsigned char)p[i]))
                    i++;
            s.line += i - s.at;
            s.at = i;
            if (s.at == len)
                break;
        }
        char b = p[s.at];
        if (s.at >= HEAD_MAX) {
            v = s.fields ? 431 : 414;
            break;
        }
        if (s.cr && b != '\n') {
            v = 400;
            break;
        }
        if (b == '\r') {
            s.cr = true;
            continue;
        }
        if (b == '\n') {
            if (!s.cr) {
                v = 400;
                break;
            }
            s.cr = false;
            if (s.line == 0 && s.begun) {
                s.at++;
                s.done = true;
                v = 1;
                break;
            }
            s.fields = s.begun;
            s.in_name = s.fields;
            s.line = 0;
            continue;
        }
        if (s.fields && s.line == 0 && (b == ' ' || b == '\t')) {
            v = 400;
            break;
        }
        if (s.fields && b != '\t' && px__is_control(b)) {
            v = 400;
            break;
        }
        if (s.fields && s.line == 0 && ++s.fields_n > FIELDS_MAX) {
            v = 431;
            break;
        }
        if (s.in_name && b == ':') {
            s.in_name = false;
        } else if (s.in_name && (b == ' ' || b == '\t')) {
            v = 400;
            break;
        }
        s.begun = true;
        if (++s.line > URI_MAX && !s.fields) {
            v = 414;
            break;
        }
    }
    *sp = s;
    return v;
}

void px__chunk_scan_init(struct chunk_scan *s, uint64_t max)
{
    *s = (struct chunk_scan){
        .max = max,
        .trailer = {.begun = true, .fields = true, .in_name = true}};
}

static int chunk_refuse(struct chunk_scan *s, int status, const char *why)
{
    s->why = why;
    return status;
}

static int hex_digit(char b)
{
    if (b >= '0' && b <= '9')
        return b - '0';
    if (b >= 'a' && b <= 'f')
        return b - 'a' + 10;
    if (b >= 'A' && b <= 'F')
        return b - 'A' + 10;
    return -1;
}

/* Checks the chunked body at the start of p[0, len), on from where the
 * last call stopped: each chunk's size in hex, its extensions (no CR, LF or
 * other control byte), the CRLF ending its line, exactly `size` bytes of
 * data and the CRLF after them; then the trailer section as head_scan
 * checks a head's fields. Returns 0 until the body's end is in, 1 once it
 * is (at is its length), or the status refusing it (400; 413 past max;
 * 431 for a trailer section past HEAD_MAX), with why set. s->ok says how
 * much of p the parser may see: a trailer section only once it is whole. */
int px__chunk_scan(struct chunk_scan *s, const char *p, size_t len)
{
    while (s->at < len && s->part != CK_DONE) {
        if (s->part == CK_DATA) {
            size_t n = len - s->at < s->size ? len - s->at : (size_t)s->size;
            s->at += n;
            s->size -= n;
            if (s->size == 0)
                s->part = CK_DATA_CR;
            continue;
        }
        if (s->part == CK_TRAILER) {
            size_t start = s->at - s->trailer.at;
            int v = px__head_scan(&s->trailer, p + start, len - start);
            s->at = start + s->trailer.at;
            if (v > 1)
                return chunk_refuse(
                    s, v,
                    v == 400 ? "a bare CR or LF, a folded line or space "
                               "before a colon in the trailer section"
                             : "the trailer section is too long");
            if (v == 1)
                s->part = CK_DONE;
            continue;
        }
        char b = p[s->at++];
        switch (s->part) {
        case CK_SIZE: {
            int d = hex_digit(b);
            if (d >= 0 && s->size > (UINT64_MAX >> 4))
                return chunk_refuse(s, 400, "a chunk size too large");
            if (d >= 0)
                s->size = s->size * 16 + (uint64_t)d;
            else if (s->line > 0 && (b == ';' || b == ' ' || b == '\t'))
                s->part = CK_EXT;
            else if (s->line > 0 && b == '\r')
                s->part = CK_SIZE_LF;
            else
                return chunk_refuse(s, 400, "a chunk size that is not hex");
            break;
        }
        case CK_EXT:
            if (b == '\r')
                s->part = CK_SIZE_LF;
            else if (((unsigned char)b < 0x20 && b != '\t') || b == 0x7f)
                return chunk_refuse(s, 400,
                                    "a bare LF or a control byte in a "
                                    "chunk's line");
            break;
        case CK_SIZE_LF:
            if (b != '\n')
                return chunk_refuse(s, 400, "a bare CR in a chunk's line");
            if (s->size > s->max - s->total)
                return chunk_refuse(s, 413,
                                    "the request's body is larger than the "
                                    "proxy takes");
            s->total += s->size;
            s->part = s->size ? CK_DATA : CK_TRAILER;
            s->line = 0;
            continue;
        case CK_DATA_CR:
            if (b != '\r')
                return chunk_refuse(s, 400, "chunk data not followed by CRLF");
            s->part = CK_DATA_LF;
            continue;
        case CK_DATA_LF:
            if (b != '\n')
                return chunk_refuse(s, 400, "chunk data not followed by CRLF");
            s->part = CK_SIZE;
            continue;
        default:
            break;
        }
        if (++s->line > CHUNK_LINE_MAX)
            return chunk_refuse(s, 400, "a chunk's line is too long");
    }
    s->ok = s->part == CK_TRAILER ? s->at - s->trailer.at : s->at;
    return s->part == CK_DONE;
}

/* The parser consumed n bytes from the input's start. */
void px__chunk_scan_consumed(struct chunk_scan *s, size_t n)
{
    s->at -= n;
    s->ok -= n;
}

/* Why a parsed head is refused with 400 before anything goes upstream,
 * for what libhttp-parser lets through; NULL when it is not. */
const char *px__head_refusal(const struct client *c, const http_parser *p)
{
    const struct headers *hs = &c->req_headers;
    bool http10 = p->http_major == 1 && p->http_minor == 0;
    /* faulty framing (RFC 9112 6.1), whatever it names and whatever
     * Content-Length says, as nginx has it too */
    if (http10 && px__headers_get(hs, "transfer-encoding"))
        return "Transfer-Encoding in an HTTP/1.0 request";
    /* RFC 9112 3.2: which host is meant must not be in doubt, as the
     * upstream (or a cache in front of it) may route or key by it */
    size_t hosts = 0;
    const char *host = NULL;
    for (size_t i = 0; i < hs->n; i++)
        if (strcasecmp(px__header_name(hs, i), "host") == 0) {
            hosts++;
            host = px__header_value(hs, i);
        }
    if (hosts > 1)
        return "more than one Host header";
    if (!host && !http10)
        return "no Host header (HTTP/1.1 requires one)";
    if (host && !px__host_valid(host, strlen(host)))
        return "the Host header is not a host and an optional port";
    struct px_target t;
    const char *url = px__client_url(c);
    if (url && px__target_split(url, &t) == PX_TARGET_INVALID)
        return "the target is not an http or https URI with a valid host "
               "and no userinfo";
    return NULL;
}
