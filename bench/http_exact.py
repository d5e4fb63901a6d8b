#!/usr/bin/env python3
"""Sends exactly COUNT HTTP/1.1 GETs over CONNS kept connections, one in
flight on each (as wrk does), and stops: the fixed request count that
bench/proxy_bench.sh traces a proxy over (a timed run under strace would
measure strace).

    http_exact.py HOST PORT PATH CONNS COUNT DIR

In steps, so that a tracer can be attached to the server in between, over
nothing but the COUNT requests: it opens CONNS connections and sends one
request on each (the server's accepts and first reads fall before), writes
DIR/ready and waits for DIR/go; sends the COUNT requests, writes DIR/done
and waits for DIR/end before it closes (so the closes fall after). Every
wait gives up after 120 s. Exit 0 when every answer was a whole 200 framed
by Content-Length, 1 otherwise, with the reason on stderr.
"""
import os
import selectors
import socket
import sys
import time

WAIT_S = 120


def fail(why):
    sys.stderr.write("http_exact: %s\n" % why)
    sys.exit(1)


def wait_for(path):
    deadline = time.monotonic() + WAIT_S
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            fail("%s did not appear within %d s" % (path, WAIT_S))
        time.sleep(0.01)


def mark(path, text=""):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


class Conn:
    """One kept connection: a request out, its answer read whole."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def answered(self):
        """True once the answer in buf is whole; the bytes past it, if
        any, are an error (nothing was pipelined)."""
        head_end = self.buf.find(b"\r\n\r\n")
        if head_end < 0:
            return False
        head = self.buf[:head_end].decode("latin-1").split("\r\n")
        status = head[0].split(" ")
        if len(status) < 2 or status[1] != "200":
            fail("answer %r" % head[0])
        length = None
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
            elif name.strip().lower() == "transfer-encoding":
                fail("answer not framed by Content-Length: %r" % line)
        if length is None:
            fail("answer without Content-Length")
        whole = head_end + 4 + length
        if len(self.buf) < whole:
            return False
        if len(self.buf) > whole:
            fail("%d bytes past the answer" % (len(self.buf) - whole))
        self.buf = b""
        return True


def run(conns, request, count):
    """COUNT requests, one in flight on each connection, until all are
    answered."""
    sel = selectors.DefaultSelector()
    sent = 0
    for c in conns[:count]:
        c.sock.sendall(request)
        sent += 1
        sel.register(c.sock, selectors.EVENT_READ, c)
    done = 0
    deadline = time.monotonic() + WAIT_S
    while done < count:
        if time.monotonic() > deadline:
            fail("%d of %d answers within %d s" % (done, count, WAIT_S))
        for key, _ in sel.select(timeout=1.0):
            c = key.data
            data = c.sock.recv(65536)
            if not data:
                fail("the server closed a connection after %d answers" % done)
            c.buf += data
            if not c.answered():
                continue
            done += 1
            if sent < count:
                c.sock.sendall(request)
                sent += 1
            else:
                sel.unregister(c.sock)
    sel.close()


def main():
    if len(sys.argv) != 7:
        sys.stderr.write(__doc__)
        sys.exit(2)
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    nconns, count, dir_ = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    request = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
               (path, host, port)).encode()
    conns = []
    for _ in range(nconns):
        s = socket.create_connection((host, port), timeout=WAIT_S)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conns.append(Conn(s))
    run(conns, request, nconns)
    for c in conns:
        c.sock.setblocking(False)
    mark(os.path.join(dir_, "ready"))
    wait_for(os.path.join(dir_, "go"))
    t0 = time.monotonic()
    run(conns, request, count)
    mark(os.path.join(dir_, "done"), "%.3f\n" % (time.monotonic() - t0))
    wait_for(os.path.join(dir_, "end"))
    for c in conns:
        c.sock.close()


if __name__ == "__main__":
    main()
