#!/usr/bin/env python3
"""Writes the seed corpus of fuzz/fuzz_proxy_h2.c into
fuzz/corpus/fuzz_proxy_h2/: valid HTTP/2 server sequences (and a few an
origin should not send) as that target reads its input: a flags byte, a
byte per client (its request), then the origin's cuts (fuzz_cuts.h: here
always at offsets, one after each step, so the proxy has sent what a step
answers before it comes) and its stream. Run it from anywhere; it
rewrites the files it names and leaves others alone."""
import os
import struct

DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, \
    CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, ACK, END_HEADERS = 1, 1, 4
NO_ERROR, INTERNAL_ERROR, REFUSED_STREAM = 0, 2, 7
MAX_CONCURRENT_STREAMS = 3

# the request bytes of the target's clients (client_request)
GET, HEAD, POST5, CHUNKED5, GET_THEN_GET = \
    0x00, 0x01, 0x02 | 5 << 2, 0x03 | 5 << 2, 0x40


def frame(ftype, flags, stream, payload=b""):
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, ftype, flags,
                       stream) + payload


def lit(name, value):
    """An HPACK literal without indexing, new name (RFC 7541 6.2.2)."""
    assert len(name) < 127 and len(value) < 127
    return bytes([0, len(name)]) + name + bytes([len(value)]) + value


# A dynamic table size update to 0 (RFC 7541 6.3): the proxy's
# SETTINGS_HEADER_TABLE_SIZE is 0, and once its SETTINGS are acked the
# first header block must begin with one (4.2), or nghttp2 takes the
# block for a compression error and the seed goes no further; every
# block begins with one here, which a block may.
SIZE0 = b"\x20"


def status(code):
    """:status: 200 as static index 8 (0x88), others as a literal with
    the indexed name :status; after the size update."""
    if code == 200:
        return SIZE0 + b"\x88"
    value = code.encode() if isinstance(code, str) else str(code).encode()
    return SIZE0 + b"\x08" + bytes([len(value)]) + value


def settings(*pairs):
    return frame(SETTINGS, 0, 0,
                 b"".join(struct.pack(">HI", k, v) for k, v in pairs))


SETTINGS_ACK = frame(SETTINGS, ACK, 0)
HELLO = settings() + SETTINGS_ACK


def response(stream, body=b"hello", code=200, extra=b""):
    block = status(code) + extra
    if body is None:
        return frame(HEADERS, END_HEADERS | END_STREAM, stream, block)
    return (frame(HEADERS, END_HEADERS, stream, block) +
            frame(DATA, END_STREAM, stream, body))


def goaway(last, code=NO_ERROR):
    return frame(GOAWAY, 0, 0, struct.pack(">II", last, code))


def rst(stream, code):
    return frame(RST_STREAM, 0, stream, struct.pack(">I", code))


def seed(clients, steps, settings_first=False, first_leaves=False):
    """One input: the clients' request bytes, then each step of the
    origin's stream a write of its own."""
    assert 1 <= len(clients) <= 4 and len(steps) <= 15
    flags = (len(clients) - 1) | (4 if settings_first else 0) | \
        (8 if first_leaves else 0)
    stream = b"".join(steps)
    cuts, at = [], 0
    for s in steps[:-1]:
        at += len(s)
        assert at < 0x8000
        cuts.append(bytes([0x80 | at >> 8, at & 0xFF]))
    return (bytes([flags]) + bytes(clients) + bytes([len(cuts)]) +
            b"".join(cuts) + stream)


SEEDS = {
    "get": seed([GET], [HELLO, response(1)]),
    "get_settings_first": seed([GET], [SETTINGS_ACK, response(1)],
                               settings_first=True),
    "head_no_body": seed([HEAD], [HELLO, response(1, body=None)]),
    "four_clients": seed(
        [GET, HEAD, POST5, GET_THEN_GET],
        [HELLO, response(1), response(3, body=None), response(5),
         response(7), response(9)]),
    "post_window_update": seed(
        [POST5], [HELLO, frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1000)),
                  frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 1000)),
                  response(1)]),
    "post_chunked_with_trailer": seed([CHUNKED5], [HELLO, response(1)]),
    # the first client leaves before its response; the second's comes
    "a_client_leaves": seed([GET, GET], [
        HELLO, frame(HEADERS, END_HEADERS, 1, status(200)),
        frame(DATA, 0, 1, b"late") + response(3),
        frame(DATA, END_STREAM, 1, b"later")], first_leaves=True),
    "goaway_before_any": seed([GET], [HELLO, goaway(0), HELLO, response(1)]),
    "goaway_after_one": seed([GET, GET], [HELLO, response(1), goaway(1),
                                          HELLO, response(1)]),
    "goaway_error": seed([GET], [HELLO, goaway(0, INTERNAL_ERROR)]),
    "rst_refused": seed([GET], [HELLO, rst(1, REFUSED_STREAM), response(3)]),
    "rst_internal": seed([POST5], [HELLO, rst(1, INTERNAL_ERROR)]),
    "rst_after_response": seed([GET], [HELLO, response(1) +
                                       rst(1, NO_ERROR)]),
    "continue_then_200": seed([POST5], [
        HELLO,
        frame(HEADERS, END_HEADERS, 1, status(100)),
        response(1)]),
    "trailers": seed([GET], [
        HELLO,
        frame(HEADERS, END_HEADERS, 1, status(200) + lit(b"trailer", b"x-t")),
        frame(DATA, 0, 1, b"body"),
        frame(HEADERS, END_HEADERS | END_STREAM, 1,
              SIZE0 + lit(b"x-t", b"done"))]),
    "continuation": seed([GET], [
        HELLO,
        frame(HEADERS, 0, 1, status(200)) +
        frame(CONTINUATION, END_HEADERS, 1, lit(b"x-a", b"b")),
        frame(DATA, END_STREAM, 1, b"ok")]),
    "ping_and_limit": seed([GET, GET, GET], [
        settings((MAX_CONCURRENT_STREAMS, 1)) + SETTINGS_ACK,
        frame(PING, 0, 0, b"12345678"),
        response(1), response(3), response(5)]),
    "content_length_and_204": seed([GET, GET], [
        HELLO,
        response(1, extra=lit(b"content-length", b"5")),
        response(3, body=None, code=204)]),
    "hop_by_hop_fields": seed([GET, GET], [
        HELLO,
        response(1, extra=lit(b"connection", b"close") +
                 lit(b"keep-alive", b"1")),
        response(3, extra=lit(b"proxy-x", b"1") + lit(b"x-ok", b"1"))]),
    # three digits nghttp2 lets through that are no HTTP/1.1 status
    "status_099": seed([GET], [HELLO, response(1, body=None, code="099")]),
    "garbage": seed([GET], [HELLO, b"HTTP/1.1 200 OK\r\n\r\n"]),
}

if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "fuzz_proxy_h2")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
