/* HTTP/1.1 messages as libhttp-parser reads them, for the libFuzzer
 * targets over demos/proxy (fuzz_proxy_framing, fuzz_proxy_h2): each
 * message's head fields, trailers and body kept, to be checked against
 * what was sent. A reading owns its messages' text and bodies
 * (fz_reading_free). */
#ifndef TIDEPOOL_FUZZ_HTTP_H
#define TIDEPOOL_FUZZ_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <http_parser.h>

#define MAX_MSGS   32
#define MAX_FIELDS 128

struct field {
    size_t name, value; /* offsets in msg.text */
};

struct msg {
    unsigned method;
    unsigned short major, minor;
    int status;
    bool complete, chunked, head_done, bad_lines;
    size_t url; /* offset in text, or SIZE_MAX */
    struct field fields[MAX_FIELDS];
    size_t nfields;
    struct field trailers[MAX_FIELDS];
    size_t ntrailers;
    char *text;
    size_t text_len, text_cap;
    char *body;
    size_t body_len, body_cap;
    const char *head_at; /* where its head began in the parsed bytes */
    size_t conn;         /* the upstream connection it came on */
    bool fields_cut;     /* a response's fields past MAX_FIELDS not kept */
};

struct reading {
    struct msg msgs[MAX_MSGS];
    size_t n;
    bool overflow;
    bool last_was_value;
    const char *last_end; /* end of the last head byte seen */
    /* the last thing seen was an empty value, which the parser hands at
     * the start of the line after it: last_end is past its CRLF */
    bool last_empty;
    const char *input_end; /* of the bytes being parsed */
    /* for responses: the requests' methods, to know a HEAD's */
    const struct reading *requests;
    size_t finals;
    /* the answers to HEADs read with a body all the same: the proxy's
     * 400 to a head it could not read (a bare LF before the method...),
     * which it answers as a GET, and closes */
    uint64_t body_anyway;
    size_t skipped; /* the last answer read without body, plus one */
    /* responses' fields kept too (the first MAX_FIELDS of a head or of
     * its trailers; msg.fields_cut says more came) */
    bool keep_response_fields;
    bool skip_field; /* the field being read is past MAX_FIELDS */
};

/* Appends at[0, n) to the buffer *p (NUL-terminated), growing it. */
void fz_grow(char **p, size_t *len, size_t *cap, const char *at, size_t n);

/* Reads s[0, len) as messages of `type` into r (appending); the parser's
 * error, HPE_OK when all of it read. With eof, the end of s is the close
 * of the connection. */
enum http_errno fz_parse(struct reading *r, enum http_parser_type type,
                         const char *s, size_t len, bool eof);

void fz_reading_free(struct reading *r);

/* A field's name and value (NUL-terminated, in m's text). */
const char *fz_name(const struct msg *m, const struct field *f);
const char *fz_value(const struct msg *m, const struct field *f);

/* How many head fields of m are called name (any case); the first one's
 * value, or NULL. */
size_t fz_count(const struct msg *m, const char *name);
const char *fz_get(const struct msg *m, const char *name);

#endif
