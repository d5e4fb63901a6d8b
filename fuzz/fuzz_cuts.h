/* Where the libFuzzer targets over protocol readers (fuzz_smtp_reply,
 * fuzz_redis_reply, fuzz_proxy_framing, fuzz_proxy_h2) cut a byte stream into
 * reads: chosen by the fuzzer's own bytes, and mostly near the ends of lines,
 * where a reader that keeps half a line, or half of a CRLF, between reads
 * goes wrong. */
#ifndef TIDEPOOL_FUZZ_CUTS_H
#define TIDEPOOL_FUZZ_CUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIDE_FUZZ_MAX_CUTS 15

struct tide_fuzz_cuts {
    size_t at[TIDE_FUZZ_MAX_CUTS]; /* ascending, each 0 < at < len: a read
                                      ends before the byte at[i] */
    size_t n;
    const uint8_t *stream; /* borrowed from the input */
    size_t len;
};

/* Reads an input: the low 4 bits of byte 0 say how many cuts follow, two
 * bytes (a, b) each, and the rest is the stream. With a's top bit set the
 * cut is at offset (a & 0x7f) * 256 + b; otherwise at the stream's line
 * end number a (its a-th '\n', counted round their number) moved by b
 * read as a signed byte, -128 to 127. A cut outside the stream, or where
 * another one is, is not made. False when the input is too short for the
 * cuts it announces. */
bool tide_fuzz_cuts_read(struct tide_fuzz_cuts *c, const uint8_t *data,
                         size_t size);

#endif
