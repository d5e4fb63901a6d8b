#!/usr/bin/env python3
"""The group against real origins on 127.0.0.1: four scripted HTTP origins
(origin.py) and route_client driving a group over tidepool's TCP factory,
closed loop, every response checked to be its own client's. While it
runs, the test makes one origin ten times slower, kills one and starts it
again, and turns half of them to 503 for a while; the figures are
asserted with margins (bench/group_bench.sh measures them exactly).

  test_origins.py ROUTE_CLIENT ORIGIN_PY

Prints TAP; exits 1 on a failure."""
import os
import signal
import subprocess
import sys
import threading
import time

CLIENT, ORIGIN = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.dirname(os.path.abspath(ORIGIN)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from origins import Origins  # noqa: E402 (found beside origin.py)

ORIGINS = Origins(ORIGIN)
PORTS, procs = ORIGINS.ports, ORIGINS.procs
start, stop, ctl = ORIGINS.start, ORIGINS.stop, ORIGINS.ctl
results = []


def run(seconds, actions, extra=()):
    """route_client for `seconds`, with actions [(at_s, fn)] done while it
    runs; returns its figures and ticks."""
    args = [CLIENT, "--clients", "8", "--seconds", str(seconds), *extra]
    for p in PORTS:
        args += ["--upstream", f"127.0.0.1:{p}"]
    c = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    for at, fn in actions:
        time.sleep(max(0.0, at - (time.monotonic() - t0)))
        fn()
    out, _ = c.communicate(timeout=seconds + 30)
    assert c.returncode == 0, out
    fig, ticks = {}, []
    for line in out.splitlines():
        w = line.split()
        if w[0] == "tick":
            ticks.append([int(x.split(":")[1]) for x in w[2:]])
        elif w[0] == "share":
            fig[f"share{PORTS.index(int(w[1]))}"] = float(w[2])
        elif w[0] != "first_error":
            fig[w[0]] = float(w[1])
    return fig, ticks


def share(ticks, k, first, last):
    mine = sum(t[k] for t in ticks[first:last])
    all_ = sum(sum(t) for t in ticks[first:last])
    return mine / all_ if all_ else 0.0


def check(name, ok, detail):
    results.append((name, ok, detail))
    print(f"{'ok' if ok else 'not ok'} {len(results)} - {name}: {detail}",
          flush=True)


def slow_origin():
    fig, ticks = run(8, [(2, lambda: ctl(0, delay_ms=100))])
    late = share(ticks, 0, 4, 8)
    check("one origin 10x slower mid-run gets few requests, no error",
          fig["errors"] == 0 and fig["wrong"] == 0 and late <= 0.10,
          f"its share in seconds 4-8 {late:.3%} (<= 10%; fair 25%), errors "
          f"{fig['errors']:.0f}, wrong {fig['wrong']:.0f}, "
          f"requests {fig['requests']:.0f}")
    ctl(0, delay_ms=10)


def killed_origin():
    actions = [(2, lambda: stop(0)), (4, lambda: start(0))]
    fig, ticks = run(14, actions, ("--slow-start", "5000"))
    down = share(ticks, 0, 3, 4)
    first = share(ticks, 0, 5, 6)
    last = share(ticks, 0, 11, 14)
    check("one origin killed and brought back: no error, its share ramps",
          fig["errors"] == 0 and fig["wrong"] == 0 and down == 0 and
          first < last and 0.10 <= last <= 0.40,
          f"share while down {down:.1%}, first second back {first:.1%}, "
          f"seconds 11-14 {last:.1%} (fair 25%), errors "
          f"{fig['errors']:.0f}, wrong {fig['wrong']:.0f}, retries spent "
          f"{fig['retries_spent']:.0f}")


def brownout():
    actions = [(2, lambda: (ctl(0, status=503), ctl(1, status=503))),
               (5, lambda: (ctl(0, status=200), ctl(1, status=200)))]
    fig, ticks = run(8, actions)
    ratio = fig["attempts"] / fig["requests"]
    check("half the origins answering 503 for a while: retries within the "
          "budget, few errors",
          fig["wrong"] == 0 and ratio <= 1.25 and
          fig["errors"] <= 0.02 * fig["requests"],
          f"attempts / requests {ratio:.3f} (<= 1.25), errors "
          f"{fig['errors']:.0f} of {fig['requests']:.0f} (<= 2%), retries "
          f"spent {fig['retries_spent']:.0f}, refused "
          f"{fig['retries_refused']:.0f}")


def main():
    print("1..3", flush=True)
    try:
        for k in range(4):
            start(k)
        slow_origin()
        killed_origin()
        brownout()
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(5)
    return 0 if all(ok for _, ok, _ in results) and len(results) == 3 else 1


sys.exit(main())
