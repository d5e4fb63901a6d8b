#!/usr/bin/env python3
"""Syscalls a request, from strace's and perf's counts, for the benches.

    syscalls.py strace OUT N TRACE [N2 TRACE2]
    syscalls.py perf OUT N PERF_CSV [N2 PERF_CSV2]
    syscalls.py table TITLE LABEL=STRACE_OUT[+STRACE_OUT...][,PERF_OUT] ...
    syscalls.py perfstat PERF_CSV (-p PID | -- COMMAND...)
    syscalls.py perfworks

`strace` reads a trace written by `strace -f -o TRACE` (default decoding,
so that flags are named) and writes to OUT each syscall's count divided by
N, the requests the trace covers. A recvfrom with MSG_PEEK is counted
apart as well (`recvfrom.peek`), and so are the peeks that found nothing
(`recvfrom.peek.empty`: EAGAIN) and the ioctl(FIONREAD)s (`ioctl.FIONREAD`).
With a second trace over N2 requests of the same run made longer, the
counts are (TRACE2 - TRACE) / (N2 - N): what a program does once (start,
connect, warm up, exit) falls out and what each request costs stays.

`perf` does the same for the output of `perf stat -x,` over the events
PERF_EVENTS below, in that order: all syscalls, the recvfroms with
MSG_PEEK, the ioctls with FIONREAD.

`perfstat` runs `perf stat -x,` over PERF_EVENTS into PERF_CSV, in this
process (its pid is perf's: SIGINT ends an attached count).

`perfworks` exits 0 when perf can count PERF_EVENTS here (it needs
linux-perf, the syscall tracepoints and the right to read them: root),
1 otherwise.

`table` prints one row a LABEL: every syscall, the peeks and FIONREADs
apart, of the median of the strace passes given, the range of their
totals, and the perf figures when given.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

MSG_PEEK = 0x2
FIONREAD = 0x541B
PERF_EVENTS = [
    ("total", "raw_syscalls:sys_enter", None),
    ("recvfrom.peek", "syscalls:sys_enter_recvfrom", "flags & %d" % MSG_PEEK),
    ("ioctl.FIONREAD", "syscalls:sys_enter_ioctl", "cmd == %d" % FIONREAD),
]

# "PID name(args) = ret", "PID name(args <unfinished ...>",
# "PID <... name resumed>args) = ret"; the PID is there with -f
CALL = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+([a-z_0-9]+)\((.*)$")
RESUMED = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+<\.\.\. ([a-z_0-9]+) resumed>(.*)$")


def fail(why):
    sys.stderr.write("syscalls.py: %s\n" % why)
    sys.exit(1)


def classify_peek(counts, rest):
    """A peek's result: EAGAIN is a peek that found nothing."""
    if re.search(r"= -1 EAGAIN", rest):
        counts["recvfrom.peek.empty"] += 1


def strace_counts(path):
    counts = Counter()
    peeking = {}  # pid -> an unfinished peek waiting for its result
    with open(path, errors="replace") as f:
        for line in f:
            m = RESUMED.match(line)
            if m:
                pid, name, rest = m.groups()
                if peeking.pop(pid, None) and name == "recvfrom":
                    classify_peek(counts, rest)
                continue
            m = CALL.match(line)
            if not m:
                continue  # +++ exited, --- signals, strace's own notes
            pid, name, rest = m.groups()
            counts[name] += 1
            counts["total"] += 1
            if name == "recvfrom" and "MSG_PEEK" in rest:
                counts["recvfrom.peek"] += 1
                if "<unfinished" in rest:
                    peeking[pid] = True
                else:
                    classify_peek(counts, rest)
            elif name == "ioctl" and "FIONREAD" in rest:
                counts["ioctl.FIONREAD"] += 1
    if counts["total"] == 0:
        fail("%s holds no syscalls" % path)
    return counts


def perf_counts(path):
    values = []
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            field = line.split(",")[0]
            if not field.isdigit():
                fail("%s: perf counted nothing: %s" % (path, line.strip()))
            values.append(int(field))
    if len(values) != len(PERF_EVENTS):
        fail("%s: %d counts for %d events" % (path, len(values), len(PERF_EVENTS)))
    return Counter({k: v for (k, _, _), v in zip(PERF_EVENTS, values)})


def per_request(read, args):
    if len(args) not in (2, 4):
        fail("N FILE [N2 FILE2]")
    n, first = int(args[0]), read(args[1])
    if len(args) == 2:
        if n <= 0:
            fail("no requests")
        return {k: v / n for k, v in first.items()}
    n2, second = int(args[2]), read(args[3])
    if n2 <= n:
        fail("the second run must have more requests (%d, %d)" % (n, n2))
    keys = set(first) | set(second)
    return {k: (second[k] - first[k]) / (n2 - n) for k in keys}


# the columns, in this order when there; others by name after them
ORDER = ["total", "recvfrom", "recvfrom.peek", "recvfrom.peek.empty",
         "sendto", "read", "write", "readv", "writev", "epoll_wait",
         "epoll_ctl", "ioctl", "ioctl.FIONREAD"]
HEADS = {"total": "all", "recvfrom.peek": "peek",
         "recvfrom.peek.empty": "empty", "ioctl.FIONREAD": "FIONREAD"}
SHOWN = 0.02  # syscalls that never reach this a request go into "other"


def load(path):
    with open(path) as f:
        return json.load(f)


def median_pass(passes):
    """The pass whose total is the median (the lower middle of an even
    count): its breakdown adds up, as a mean of passes' would not."""
    ordered = sorted(passes, key=lambda p: p.get("total", 0))
    return ordered[(len(ordered) - 1) // 2]


def table(title, rows):
    """Prints ROWS, (label, [strace figures of each pass], perf figures or
    None) each: the median pass's total, the range of the passes' totals
    and perf's figures first, then the median pass by syscall."""
    shown = [(label, median_pass(passes), passes, pf) for label, passes, pf in rows]
    keys = [k for k in ORDER[1:] if any(st.get(k, 0) >= SHOWN for _, st, _, _ in shown)]
    keys += sorted({k for _, st, _, _ in shown for k, v in st.items()
                    if k not in ORDER and v >= SHOWN and "." not in k})
    plain = [k for k in keys if "." not in k]
    width = max(len(label) for label, _, _, _ in shown)
    several = any(len(passes) > 1 for _, _, passes, _ in shown)
    have_perf = any(pf for _, _, _, pf in shown)
    heads = [HEADS.get(k, k) for k in keys] + ["other"]
    line = "%-*s %6s" % (width, "", "all")
    if several:
        line += " %11s" % "range"
    if have_perf:
        line += " | perf: %5s %5s %8s" % ("all", "peek", "FIONREAD")
    line += " | " + " ".join("%*s" % (max(len(h), 5), h) for h in heads)
    print(title)
    print(line)
    for label, st, passes, pf in shown:
        total = st.get("total", 0)
        out = "%-*s %6.2f" % (width, label, total)
        if several:
            totals = [p.get("total", 0) for p in passes]
            out += " %11s" % ("%.2f-%.2f" % (min(totals), max(totals)))
        if have_perf:
            if pf:
                out += " |       %5.2f %5.2f %8.2f" % (
                    pf.get("total", 0), pf.get("recvfrom.peek", 0),
                    pf.get("ioctl.FIONREAD", 0))
            else:
                out += " |       %5s %5s %8s" % ("-", "-", "-")
        other = total - sum(st.get(k, 0) for k in plain)
        # a difference of two runs may leave -0.0001 where nothing was
        cells = [max(st.get(k, 0), 0) for k in keys] + [max(other, 0)]
        out += " | " + " ".join("%*.2f" % (max(len(h), 5), v) for h, v in zip(heads, cells))
        print(out)


# each mode with the fewest arguments it takes after its name
MODES = {"strace": 3, "perf": 3, "perfworks": 0, "table": 2, "perfstat": 2}


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in MODES or len(sys.argv) - 2 < MODES[mode]:
        sys.stderr.write(__doc__)
        sys.exit(2)
    if mode in ("strace", "perf"):
        read = strace_counts if mode == "strace" else perf_counts
        figures = per_request(read, sys.argv[3:])
        with open(sys.argv[2], "w") as f:
            json.dump(figures, f)
    elif mode == "perfworks":
        with tempfile.TemporaryDirectory() as d:
            csv = os.path.join(d, "probe.csv")
            argv = [sys.executable, os.path.abspath(__file__), "perfstat", csv, "--", "true"]
            ran = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if ran.returncode != 0 or not os.path.exists(csv):
                sys.exit(1)
            perf_counts(csv)  # exits 1 when perf counted nothing
    elif mode == "table":
        rows = []
        for arg in sys.argv[3:]:
            label, _, files = arg.partition("=")
            names = files.split(",")
            rows.append((label, [load(n) for n in names[0].split("+")],
                         load(names[1]) if len(names) > 1 and names[1] else None))
        table(sys.argv[2], rows)
    elif mode == "perfstat":
        # becomes perf stat over PERF_EVENTS (same pid: SIGINT ends it)
        argv = ["perf", "stat", "-x,", "-o", sys.argv[2]]
        for _, event, flt in PERF_EVENTS:
            argv += ["-e", event] + (["--filter", flt] if flt else [])
        try:
            os.execvp("perf", argv + sys.argv[3:])
        except OSError as e:
            fail("perf: %s" % e)


if __name__ == "__main__":
    main()
