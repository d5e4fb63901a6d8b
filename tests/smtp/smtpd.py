"""The smtp tests' server: Debian's aiosmtpd with a handler of ours that
records every accepted message, so a test can check that each arrived
exactly once, to the right recipients, with its body intact.

Run by the tests (tests/smtp/server.c) as
  /usr/bin/python3 -u smtpd.py --port N --record FILE [options]
and stopped by its pid. The record file gets one line per event, flushed
at once (a kill loses nothing written before it):
  READY                      listening
  CONN                       a session opened (before its greeting)
  GONE                       a session closed
  MSG <id> <rcpts> <hex>     a message accepted: its X-Test-Id header (or
                             "-"), the recipients joined by ",", and the
                             content as the server received it, in hex
  AUTH <ok|bad> <user>       an AUTH attempt
  DROP                       a session closed at MAIL FROM (--drop-mail)
Exit code 98 when the port is taken (the test picks another).
"""
import argparse
import asyncio
import errno
import ssl
import sys

from aiosmtpd.smtp import SMTP, AuthResult


class Recorder:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def line(self, text):
        self.f.write(text + "\n")
        self.f.flush()


class Handler:
    def __init__(self, rec, refuse, delay, drop_mail, drop_421):
        self.rec = rec
        self.refuse = set(refuse)
        self.delay = delay
        self.drop_mail = drop_mail
        self.drop_421 = drop_421

    async def handle_MAIL(self, server, session, envelope, address, options):
        # the drop_mail-th MAIL FROM of a session closes it instead of an
        # answer (or with a 421): a session that dies between messages
        n = getattr(server, "_tide_mails", 0) + 1
        server._tide_mails = n
        if n == self.drop_mail:
            self.rec.line("DROP")
            if self.drop_421:
                server.transport.write(b"421 4.3.0 Closing this session\r\n")
            server.transport.close()
            return "421 4.3.0 closed"
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, options):
        if address in self.refuse:
            return "550 5.1.1 <%s>: no such user here" % address
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        content = envelope.original_content or b""
        msg_id = "-"
        for line in content.split(b"\r\n"):
            if line.lower().startswith(b"x-test-id:"):
                msg_id = line.split(b":", 1)[1].strip().decode() or "-"
                break
            if line == b"":
                break
        if self.delay:
            await asyncio.sleep(self.delay)
        self.rec.line("MSG %s %s %s" % (msg_id, ",".join(envelope.rcpt_tos),
                                        content.hex() or "-"))
        return "250 2.0.0 Message accepted"


class Session(SMTP):
    recorder = None

    # STARTTLS calls connection_made again on the same protocol, for the
    # TLS transport: one session, counted once
    def connection_made(self, transport):
        if not getattr(self, "_counted", False):
            self._counted = True
            self.recorder.line("CONN")
        super().connection_made(transport)

    def connection_lost(self, exc):
        if not getattr(self, "_gone", False):
            self._gone = True
            self.recorder.line("GONE")
        super().connection_lost(exc)


class Greet421(asyncio.Protocol):
    """A server at its limit: greets 421 and closes."""
    recorder = None

    def connection_made(self, transport):
        self.recorder.line("CONN")
        transport.write(b"421 4.3.2 Too busy, come back later\r\n")
        transport.close()

    def connection_lost(self, exc):
        self.recorder.line("GONE")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--record", required=True)
    ap.add_argument("--tlscert")
    ap.add_argument("--tlskey")
    ap.add_argument("--require-starttls", action="store_true")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--auth", help="user:password; AUTH then required")
    ap.add_argument("--refuse", action="append", default=[],
                    help="a recipient answered 550")
    ap.add_argument("--greet421", action="store_true")
    ap.add_argument("--delay", type=float, default=0,
                    help="seconds before the verdict on each message")
    ap.add_argument("--drop-mail", type=int, default=0,
                    help="close a session at its Nth MAIL FROM")
    ap.add_argument("--drop-421", action="store_true",
                    help="... with a 421 first")
    a = ap.parse_args()

    rec = Recorder(a.record)
    Session.recorder = rec
    Greet421.recorder = rec
    ctx = None
    if a.tlscert:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(a.tlscert, a.tlskey)

    def authenticator(server, session, envelope, mechanism, auth_data):
        user = auth_data.login.decode()
        ok = a.auth is not None and \
            "%s:%s" % (user, auth_data.password.decode()) == a.auth
        rec.line("AUTH %s %s" % ("ok" if ok else "bad", user))
        # handled=False: aiosmtpd answers 535 itself
        return AuthResult(success=ok, handled=False)

    handler = Handler(rec, a.refuse, a.delay, a.drop_mail, a.drop_421)

    def factory():
        if a.greet421:
            return Greet421()
        return Session(handler, tls_context=ctx,
                       require_starttls=a.require_starttls,
                       timeout=a.timeout,
                       authenticator=authenticator,
                       auth_required=a.auth is not None,
                       auth_require_tls=True)

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        server = loop.run_until_complete(
            loop.create_server(factory, host="127.0.0.1", port=a.port))
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            sys.exit(98)
        raise
    rec.line("READY")
    try:
        loop.run_forever()
    finally:
        server.close()


if __name__ == "__main__":
    main()
