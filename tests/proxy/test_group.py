#!/usr/bin/env python3
"""The proxy's group routing around trouble, through the program: four
scripted HTTP origins on 127.0.0.1 (tests/group/origin.py) started here,
the proxy in front of them (--slow-start, --retry-503, a 1 s breaker
cooldown), and tests/group/route_client driving it closed-loop, every
response checked to be its own client's (GET /c<client>/<seq>, echoed in
the body). While it runs the test makes one origin ten times slower,
kills one and starts it again, and turns half of them to 503 for a
while. Each origin counts what it served, read every second, so the
shares are the origins' own. The figures are asserted with margins
(bench/group_bench.sh measures them exactly, beside nginx and HAProxy).

  test_group.py PROXY ROUTE_CLIENT ORIGIN_PY

Prints TAP; exits 1 on a failure."""
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

PROXY, CLIENT, ORIGIN = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.dirname(os.path.abspath(ORIGIN)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from origins import Origins  # noqa: E402 (found beside origin.py)

ORIGINS = Origins(ORIGIN)
PORTS, procs = ORIGINS.ports, ORIGINS.procs
start, stop, ctl = ORIGINS.start, ORIGINS.stop, ORIGINS.ctl
results = []
CLIENTS = 8


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}",
                                timeout=5) as r:
        return r.read().decode()


def count(k):
    """What origin k served since it (last) started; None while down."""
    try:
        return int(get(PORTS[k], "/_count"))
    except OSError:
        return None


def start_proxy():
    args = [PROXY, "--listen", "127.0.0.1:0", "--slow-start", "4000",
            "--retry-503", "--breaker-cooldown", "1000"]
    for p in PORTS:
        args += ["--upstream", f"127.0.0.1:{p}"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline().split()
    assert line[:2] == ["listening", "on"], line
    return p, int(line[2].rsplit(":", 1)[1])


class Sampler(threading.Thread):
    """Each origin's requests served in each second of a run: the counts
    read every second, a restart (a count that went back) counted from
    zero."""

    def __init__(self):
        super().__init__(daemon=True)
        self.done = threading.Event()
        self.seconds = []

    def run(self):
        last = [count(k) or 0 for k in range(4)]
        t = time.monotonic()
        while not self.done.is_set():
            t += 1.0
            self.done.wait(max(0.0, t - time.monotonic()))
            now = [count(k) for k in range(4)]
            row = []
            for k in range(4):
                if now[k] is None:
                    row.append(0)
                    now[k] = 0
                else:
                    row.append(now[k] - last[k] if now[k] >= last[k]
                               else now[k])
            self.seconds.append(row)
            last = now


def run(port, seconds, actions):
    """route_client through the proxy for `seconds`, with actions
    [(at_s, fn)] done while it runs; returns its figures and each
    second's requests per origin."""
    c = subprocess.Popen([CLIENT, "--via", "--upstream", f"127.0.0.1:{port}",
                          "--clients", str(CLIENTS), "--seconds",
                          str(seconds)], stdout=subprocess.PIPE, text=True)
    sampler = Sampler()
    sampler.start()
    t0 = time.monotonic()
    for at, fn in actions:
        time.sleep(max(0.0, at - (time.monotonic() - t0)))
        fn()
    out, _ = c.communicate(timeout=seconds + 30)
    time.sleep(0.3)
    sampler.done.set()
    sampler.join()
    assert c.returncode == 0, out
    fig = {}
    for line in out.splitlines():
        w = line.split()
        if w[0] != "first_error":
            fig[w[0]] = float(w[1])
    return fig, sampler.seconds


def share(secs, k, first, last):
    mine = sum(s[k] for s in secs[first:last])
    all_ = sum(sum(s) for s in secs[first:last])
    return mine / all_ if all_ else 0.0


def check(name, ok, detail):
    results.append((name, ok, detail))
    print(f"{'ok' if ok else 'not ok'} {len(results)} - {name}: {detail}",
          flush=True)


def slow_origin(port):
    fig, secs = run(port, 8, [(2, lambda: ctl(0, delay_ms=100))])
    late = share(secs, 0, 4, 8)
    check("one origin 10x slower mid-run gets few requests, no error",
          fig["errors"] == 0 and fig["wrong"] == 0 and late <= 0.08,
          f"its share in seconds 4-8 {late:.2%} (<= 8%; fair 25%), errors "
          f"{fig['errors']:.0f}, wrong {fig['wrong']:.0f}, "
          f"requests {fig['requests']:.0f}, p99 {fig['p99_ms']:.1f} ms")
    ctl(0, delay_ms=10)


def killed_origin(port):
    # down from 2 s to 3 s; back, its breaker (or its connects' backoff)
    # lets it through within a few seconds, whenever the failures of its
    # connects fell, and its share ramps over the 4 s slow start from
    # then: the ramp is looked at from the first second it served again
    fig, secs = run(port, 14, [(2, lambda: stop(0)), (3, lambda: start(0))])
    by_second = [share(secs, 0, s, s + 1) for s in range(14)]
    down = share(secs, 0, 2, 3)
    back = next((s for s in range(3, 14) if by_second[s] > 0.01), 14)
    ramp = by_second[back:back + 3]
    after = share(secs, 0, back + 4, 14)
    check("one origin killed and brought back: no error, its share ramps "
          "with no spike above its fair share",
          fig["errors"] == 0 and fig["wrong"] == 0 and down <= 0.02 and
          back <= 8 and ramp[0] <= 0.18 and max(ramp) <= 0.30 and
          0.10 <= after <= 0.40,
          f"share while down {down:.1%}, back in second {back} (<= 8), "
          f"its first seconds back {' '.join(f'{b:.0%}' for b in ramp)} "
          f"(first <= 18%, each <= 30%), after the ramp {after:.1%} (fair "
          f"25%), errors {fig['errors']:.0f}, wrong {fig['wrong']:.0f}")


def brownout(port):
    before = sum(count(k) for k in range(4))
    actions = [(2, lambda: (ctl(0, status=503), ctl(1, status=503))),
               (5, lambda: (ctl(0, status=200), ctl(1, status=200)))]
    fig, _ = run(port, 8, actions)
    attempts = sum(count(k) for k in range(4)) - before
    ratio = attempts / fig["requests"]
    check("half the origins answering 503 for a while: retries within the "
          "budget, few errors",
          fig["wrong"] == 0 and ratio <= 1.25 and
          fig["errors"] <= 0.02 * fig["requests"],
          f"origin attempts / client requests {ratio:.3f} (<= 1.25), "
          f"errors {fig['errors']:.0f} of {fig['requests']:.0f} (<= 2%)")


def main():
    print("1..3", flush=True)
    proxy = None
    try:
        for k in range(4):
            start(k)
        proxy, port = start_proxy()
        # connections made and averages taken before the figures count
        run(port, 1, [])
        slow_origin(port)
        killed_origin(port)
        brownout(port)
    finally:
        if proxy and proxy.poll() is None:
            proxy.send_signal(signal.SIGTERM)
            proxy.wait(15)
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(5)
    return 0 if all(ok for _, ok, _ in results) and len(results) == 3 else 1


sys.exit(main())
