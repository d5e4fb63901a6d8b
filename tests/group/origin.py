#!/usr/bin/env python3
"""A scripted HTTP/1.1 origin for the group's tests and bench, on
127.0.0.1:PORT (asyncio, keep-alive), whose behaviour a test changes while
it runs, which nginx cannot be told to do (slow down, answer 503):

  GET /_ctl?delay_ms=D&status=S   from now on every request waits D ms and
                                  is answered S (either may be left out);
                                  answered at once with the settings
  GET /_count                     the requests served (other than these two)
  anything else                   after the delay: status S, body
                                  "PORT PATH\\n", so a client can check the
                                  response is its own

  origin.py PORT [DELAY_MS]

PORT 0 takes a free port of the kernel's choosing (tests run beside others:
a port picked at random may be taken). Killed (SIGTERM) it stops at once;
started again on the same port it comes back empty-handed (a restart).
Prints "ready PORT" once it listens."""
import asyncio
import signal
import sys
from urllib.parse import parse_qs, urlsplit

PORT = int(sys.argv[1])
state = {"delay": float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.0,
         "status": 200, "count": 0}
REASONS = {200: "OK", 500: "Internal Server Error", 502: "Bad Gateway",
           503: "Service Unavailable", 504: "Gateway Timeout"}


def reply(status, body):
    head = (f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}\r\n"
            f"Content-Length: {len(body)}\r\nContent-Type: text/plain\r\n"
            f"\r\n")
    return head.encode() + body


async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = line.split(" ")
            target = parts[1] if len(parts) > 1 else "/"
            length = 0
            for h in head.split(b"\r\n")[1:]:
                if h.lower().startswith(b"content-length:"):
                    length = int(h.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            url = urlsplit(target)
            if url.path == "/_ctl":
                q = parse_qs(url.query)
                if "delay_ms" in q:
                    state["delay"] = float(q["delay_ms"][0]) / 1000
                if "status" in q:
                    state["status"] = int(q["status"][0])
                writer.write(reply(200, f"delay_ms={state['delay'] * 1000:g} "
                                        f"status={state['status']}\n".encode()))
            elif url.path == "/_count":
                writer.write(reply(200, f"{state['count']}\n".encode()))
            else:
                state["count"] += 1
                if state["delay"] > 0:
                    await asyncio.sleep(state["delay"])
                writer.write(reply(state["status"],
                                   f"{PORT} {target}\n".encode()))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def main():
    global PORT
    server = await asyncio.start_server(serve, "127.0.0.1", PORT,
                                        reuse_address=True, backlog=1024)
    PORT = server.sockets[0].getsockname()[1]
    loop = asyncio.get_running_loop()
    stop = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, stop.set_result, None)
    print("ready", PORT, flush=True)
    async with server:
        await stop


asyncio.run(main())
