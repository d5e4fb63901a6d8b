"""Four scripted origins (origin.py) for the tests that drive a group
through them (tests/group/test_origins.py, tests/proxy/test_group.py):
started, stopped and told what to do by index. Each origin's port is the
kernel's choice at its first start (a port picked at random may be
another test's), kept for its restarts."""
import signal
import subprocess
import sys
import urllib.request


class Origins:
    def __init__(self, script, n=4):
        self.script = script
        self.ports = [0] * n
        self.procs = {}

    def start(self, k, delay_ms=10):
        p = subprocess.Popen(
            [sys.executable, self.script, str(self.ports[k]), str(delay_ms)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = p.stdout.readline().split()
        assert len(line) == 2 and line[0] == b"ready", line
        self.ports[k] = int(line[1])
        self.procs[k] = p

    def stop(self, k):
        self.procs[k].send_signal(signal.SIGTERM)
        self.procs[k].wait(5)

    def ctl(self, k, **kw):
        q = "&".join(f"{a}={b}" for a, b in kw.items())
        urllib.request.urlopen(f"http://127.0.0.1:{self.ports[k]}/_ctl?{q}",
                               timeout=5).read()
