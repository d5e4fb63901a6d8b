#!/usr/bin/env python3
"""The tables of bench/proxy_bench.sh, from the files its run left in DIR.

    proxy_report.py DIR CONNS COUNT PASSES PERF_LONG

DIR/VARIANT-cC: one line a run, "req/s p50_ms p99_ms new_per_1k non2xx
wrk_us proxy_us origin_us proxy/rest", runs in the order they ran (the
cells of one run are seconds apart, so run by run ratios pair them).
DIR/strace-VARIANT-cC-P.json (P = 1..PASSES) and DIR/perf-VARIANT-cC.json:
syscalls a request (bench/syscalls.py). CONNS: the connection counts, "50
200"; COUNT: the requests strace saw in a pass; PERF_LONG: the seconds of
the long wrk run perf counted over (less a 1 s one), 0 when perf counted
nothing.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import syscalls  # noqa: E402

POOLS = (32, 128)
PEERS = (("nginx", "nginx keepalive N"), ("haproxy", "HAProxy maxconn N"))
GOAL_RATIO = 1.10
GOAL_SYSCALLS = 4.2
STEADY = 0.15  # a cell whose runs spread wider was measured on a busy machine
COLUMNS = ("rps", "p50", "p99", "new", "bad", "wrk", "proxy", "origin", "share")


def label(variant):
    for prefix, name in (("nginx", "nginx keepalive %s"),
                         ("haproxy", "HAProxy maxconn %s"),
                         ("tide", "tidepool pool %s")):
        if variant.startswith(prefix):
            return name % variant[len(prefix):]
    return "origin alone"


def variants():
    return ["direct"] + ["%s%d" % (p, n) for n in POOLS
                         for p in ("nginx", "haproxy", "tide")]


def load_runs(path):
    runs = []
    with open(path) as f:
        for line in f:
            runs.append(dict(zip(COLUMNS, map(float, line.split()))))
    if not runs:
        raise SystemExit("proxy_report: %s holds no run" % path)
    return runs


def median(values):
    """The lower middle for an even count: one of the runs, never a mean."""
    values = sorted(values)
    return values[(len(values) - 1) // 2]


def med(runs, col):
    return median(r[col] for r in runs)


def paired(runs, peer_runs, col):
    return median(a[col] / b[col] for a, b in zip(runs, peer_runs))


def spread(runs):
    """(max - min) / median of a cell's req/s."""
    rps = [r["rps"] for r in runs]
    return (max(rps) - min(rps)) / median(rps)


def verdict(ratio, paired_ratio):
    if ratio >= GOAL_RATIO and paired_ratio >= GOAL_RATIO:
        return "met"
    if ratio < GOAL_RATIO and paired_ratio < GOAL_RATIO:
        return "below"
    return "unclear"


def main():
    if len(sys.argv) != 6:
        sys.stderr.write(__doc__)
        sys.exit(2)
    d, conns = sys.argv[1], [int(c) for c in sys.argv[2].split()]
    count, passes, perf_long = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])

    def strace_passes(v, c):
        paths = [os.path.join(d, "strace-%s-c%d-%d.json" % (v, c, p))
                 for p in range(1, passes + 1)]
        return [syscalls.load(p) for p in paths if os.path.exists(p)]

    cells = {(v, c): load_runs(os.path.join(d, "%s-c%d" % (v, c)))
             for v in variants() for c in conns}

    fmt = "%-5s %-20s %9s %7s %7s %7s %7s %9s %10s"
    print(fmt % ("conn", "variant", "req/s", "p50 ms", "p99 ms", "new/1k",
                 "non-2xx", "proxy us", "proxy/rest"))
    for c in conns:
        for v in variants():
            r = cells[v, c]
            proxied = v != "direct"
            print(fmt % ("c%d" % c, label(v), "%.0f" % med(r, "rps"),
                         "%.2f" % med(r, "p50"), "%.2f" % med(r, "p99"),
                         "%.1f" % med(r, "new"), "%.0f" % med(r, "bad"),
                         "%.2f" % med(r, "proxy") if proxied else "-",
                         "%.3f" % med(r, "share") if proxied else "-"))

    print()
    print("the goals: tidepool's req/s over each peer's >= %.2f, as the ratio of the medians"
          % GOAL_RATIO)
    print("and the median of the run-by-run ratios (met: both are; unclear: one is);")
    print("syscalls a proxied request <= %.1f (strace, below; perf's count beside it when"
          % GOAL_SYSCALLS)
    print("taken); CPU: tidepool's proxy/rest over the peer's, paired run by run (below 1:")
    print("tidepool costs less a request)")
    fmt = "%-5s %-5s %-25s %-25s %-20s %s"
    print(fmt % ("pool", "conn", "over nginx keepalive N", "over HAProxy maxconn N",
                 "syscalls/req (perf)", "CPU: over nginx, HAProxy"))
    for n in POOLS:
        for c in conns:
            tide = cells["tide%d" % n, c]
            ratios, costs = [], []
            for peer, _ in PEERS:
                other = cells["%s%d" % (peer, n), c]
                ratio = med(tide, "rps") / med(other, "rps")
                pr = paired(tide, other, "rps")
                ratios.append("%.2f %.2f %s" % (ratio, pr, verdict(ratio, pr)))
                costs.append("%.2f" % paired(tide, other, "share"))
            traced = strace_passes("tide%d" % n, c)
            if traced:
                total = syscalls.median_pass(traced).get("total", 0)
                sys_cell = "%.2f %s" % (total, "met" if total <= GOAL_SYSCALLS else "above")
            else:
                sys_cell = "-"
            pf = os.path.join(d, "perf-tide%d-c%d.json" % (n, c))
            if os.path.exists(pf):
                sys_cell += " (%.2f)" % syscalls.load(pf).get("total", 0)
            print(fmt % (n, "c%d" % c, ratios[0], ratios[1], sys_cell, "  ".join(costs)))
    widest = max(spread(r) for r in cells.values())
    if widest > STEADY:
        print("caution: the runs of a cell spread by up to %.0f%% (the last table): the req/s and "
              "their ratios\nmove with whatever else the machine ran; proxy/rest and the syscall "
              "counts hold better" % (100 * widest))

    for c in conns:
        rows = []
        for v in variants()[1:]:
            traced = strace_passes(v, c)
            pf = os.path.join(d, "perf-%s-c%d.json" % (v, c))
            if traced:
                rows.append((label(v), traced,
                             syscalls.load(pf) if os.path.exists(pf) else None))
        if rows:
            print()
            syscalls.table(
                "syscalls a proxied request at c%d: strace -f on the proxy over exactly %d "
                "requests on %d kept\nconnections, %s (peek: recvfrom with MSG_PEEK; "
                "empty: of them, those that found nothing)"
                % (c, count, c, "one pass" if passes == 1 else
                   "the median of %d passes" % passes), rows)
    if perf_long:
        print("perf: the same counted by perf's syscall tracepoints during wrk runs at the "
              "same c, no strace\nslowing the proxy: the difference of a %d s and a 1 s run "
              "(wrk's connects fall out)" % perf_long)

    print()
    print("CPU per request (us; median of the runs): wrk, the proxy, the origin, all three")
    fmt = "%-5s %-20s %9s %9s %9s %9s"
    print(fmt % ("conn", "variant", "wrk", "proxy", "origin", "all"))
    for c in conns:
        for v in variants():
            r = cells[v, c]
            print(fmt % ("c%d" % c, label(v), "%.2f" % med(r, "wrk"),
                         "%.2f" % med(r, "proxy") if v != "direct" else "-",
                         "%.2f" % med(r, "origin"),
                         "%.2f" % median(x["wrk"] + x["proxy"] + x["origin"] for x in r)))

    print()
    print("every run's req/s, in the order they ran (spread: (max - min) / median)")
    for c in conns:
        for v in variants():
            rps = [x["rps"] for x in cells[v, c]]
            print("c%-4d %-20s %5.1f%%  %s" % (c, label(v), 100 * spread(cells[v, c]),
                                             " ".join("%.0f" % x for x in rps)))


if __name__ == "__main__":
    main()
