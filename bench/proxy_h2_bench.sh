#!/bin/sh
# demos/proxy with an HTTP/2 upstream beside HAProxy 2.6 with one, in front
# of one nginx origin speaking h2c (and HTTP/1.1 on a second port, for
# tidepool's own HTTP/1.1 pool), started here on 127.0.0.1 and stopped at
# the end; driven by wrk (clients speak HTTP/1.1 to the proxies). Called by
# bench/proxy_bench.sh after its own rows; runs alone as well:
#
#   bench/proxy_h2_bench.sh [BUILD_DIR] [DURATION] [RUNS] [CONNS]
#
# Variants: HAProxy (one thread) with `proto h2` and `http-reuse always`
# on its server line (maxconn 1000: on an h2 server it bounds requests in
# flight, not connections); tidepool's proxy with --upstream h2c:// (its
# pool packs streams on as few connections as carry them: the origin's
# SETTINGS_MAX_CONCURRENT_STREAMS, nginx's 128, each); tidepool's proxy
# with an HTTP/1.1 pool of 128 to the origin's HTTP/1.1 port. Each at
# `wrk -t1 -cC` for C in CONNS (preset "50 200") for DURATION (preset 2s),
# RUNS times (preset 5), interleaved (run 1 of each, then run 2, ..., the
# order turned each run), everything pinned to the last CPU. Each cell is
# the median of the runs: requests/s, p50 and p99 latency, upstream
# connections opened per 1,000 requests after a warm-up (the origin's
# stub_status accepts), and the proxy's CPU per request (from /proc).
# Then the goals' ratios (tidepool h2 over HAProxy h2 at each C, tidepool
# h2 over its HTTP/1.1 pool of 128 at c50), as the median of the run-by-run
# ratios, and the upstream connections each proxy holds at the end.
set -eu

BUILD=${1:-build}
DURATION=${2:-2s}
RUNS=${3:-5}
CONNS=${4:-50 200}
PROXY=$BUILD/demos/proxy/tidepool-proxy
for tool in nginx haproxy wrk curl python3; do
    if ! command -v $tool >/dev/null 2>&1 && [ ! -x /usr/sbin/$tool ]; then
        echo "proxy_h2_bench: $tool is needed (Debian: nginx-light, haproxy, wrk, curl, python3)"
        exit 77
    fi
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
PYTHON=$(python3 -c 'import sys; print(sys.executable)')
[ -x "$PROXY" ] || { echo "proxy_h2_bench: $PROXY is missing"; exit 1; }

BENCH=proxy_h2_bench
. "$(dirname "$0")/lib.sh"

# the origin: h2c on H2, HTTP/1.1 (and stub_status) on H1; every limit
# that would end a connection set high (keepalive_requests caps the
# streams of an h2 connection too)
head -c 612 /dev/zero | tr '\0' 'x' >"$DIR/index.html"
H2=$(free_port)
H1=$(free_port)
nginx_conf "$DIR" "
    server {
        listen 127.0.0.1:$H2 http2;
        listen 127.0.0.1:$H1;
        root $DIR;
        location = /status { stub_status; }
    }"
$CPU "$NGINX" -p "$DIR" -e "$DIR/error.log" -c "$DIR/nginx.conf" &
PIDS="$PIDS $!"
wait_port "$H1" /index.html

PORT_haproxy=$(free_port)
start_haproxy_at "$DIR/haproxy" "$PORT_haproxy" \
    "origin 127.0.0.1:$H2 proto h2 maxconn 1000 pool-purge-delay 600s" \
    /index.html
PID_haproxy=$STARTED

PORT_tideh2=$(free_port)
$CPU "$PROXY" --listen "127.0.0.1:$PORT_tideh2" --upstream "h2c://127.0.0.1:$H2" \
    --keep 600 >"$DIR/tideh2.log" 2>&1 &
PIDS="$PIDS $!"
PID_tideh2=$!
wait_port "$PORT_tideh2" /index.html

PORT_tide128=$(free_port)
$CPU "$PROXY" --listen "127.0.0.1:$PORT_tide128" --upstream "127.0.0.1:$H1" \
    --pool-size 128 --keep 600 >"$DIR/tide128.log" 2>&1 &
PIDS="$PIDS $!"
PID_tide128=$!
wait_port "$PORT_tide128" /index.html

pid_of() { eval "echo \$PID_$1"; }
port_of() { eval "echo \$PORT_$1"; }
accepts() {
    curl -s "http://127.0.0.1:$H1/status" | awk 'NR == 3 { print $1 }'
}
to_ms() {
    awk -v v="$1" 'BEGIN {
        n = v + 0
        if (v ~ /us$/) n /= 1000
        else if (v ~ /ms$/) n = n
        else if (v ~ /s$/) n *= 1000
        printf "%.3f", n }'
}

# VARIANT C -> a line "rps p50 p99 per1000 non2xx proxy_us" in
# $DIR/VARIANT-cC
cell() {
    pid=$(pid_of "$1")
    before=$(accepts)
    p0=$(cpu_ns "$pid")
    out=$(timeout 60 $CPU wrk -t1 -c"$2" -d"$DURATION" --latency \
        "http://127.0.0.1:$(port_of "$1")/index.html")
    p1=$(cpu_ns "$pid")
    after=$(accepts)
    rps=$(echo "$out" | awk '/Requests\/sec/ { print $2 }')
    reqs=$(echo "$out" | awk '/requests in/ { print $1 }')
    p50=$(to_ms "$(echo "$out" | awk '$1 == "50%" { print $2 }')")
    p99=$(to_ms "$(echo "$out" | awk '$1 == "99%" { print $2 }')")
    bad=$(echo "$out" | awk '/Non-2xx/ { print $NF }')
    [ -n "$reqs" ] && [ "$reqs" -gt 0 ] || fail "wrk measured nothing through $1 at c$2: $out"
    awk -v a="$before" -v b="$after" -v n="$reqs" -v r="$rps" -v p50="$p50" \
        -v p99="$p99" -v bad="${bad:-0}" -v p="$((p1 - p0))" 'BEGIN {
        printf "%s %s %s %.3f %s %.2f\n", r, p50, p99, (b - a - 1) * 1000 / n,
            bad, p / 1000 / n }' >>"$DIR/$1-c$2"
}

VARIANTS="haproxy tideh2 tide128"
most=$(echo "$CONNS" | tr ' ' '\n' | sort -n | tail -1)
for v in $VARIANTS; do
    timeout 30 $CPU wrk -t1 -c"$most" -d1s "http://127.0.0.1:$(port_of "$v")/index.html" >/dev/null
done
run=1
while [ "$run" -le "$RUNS" ]; do
    case $((run % 3)) in
    1) turn="haproxy tideh2 tide128" ;;
    2) turn="tideh2 tide128 haproxy" ;;
    0) turn="tide128 haproxy tideh2" ;;
    esac
    for c in $CONNS; do
        for v in $turn; do
            cell "$v" "$c"
        done
    done
    run=$((run + 1))
done

# the upstream connections each holds now: tidepool's pools say so; the
# origin's own count of its open connections less the status request's
tide_conns() {
    curl -s "http://127.0.0.1:$(port_of "$1")/_tidepool/stats" |
        "$PYTHON" -c 'import json, sys; print(sum(u["pool"]["live"] for u in json.load(sys.stdin)["upstreams"]))'
}
ACTIVE=$(curl -s "http://127.0.0.1:$H1/status" | awk 'NR == 1 { print $3 }')

echo "proxy_h2_bench: wrk -t1 -d$DURATION, interleaved runs: $RUNS, medians; $PINNED"
echo "origin: nginx $("$NGINX" -v 2>&1 | sed 's/.*\///'), h2c (128 streams a connection) and HTTP/1.1; clients speak HTTP/1.1"
"$PYTHON" - "$DIR" "$CONNS" <<'EOF'
import statistics, sys
d, conns = sys.argv[1], sys.argv[2].split()
names = {"haproxy": "HAProxy 2.6 proto h2, http-reuse always",
         "tideh2": "tidepool h2c:// (shared loans)",
         "tide128": "tidepool HTTP/1.1 pool of 128"}
rows = {}
for v in names:
    for c in conns:
        rows[v, c] = [list(map(float, l.split())) for l in open(f"{d}/{v}-c{c}")]
print(f"{'variant':42} {'C':>4} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
      f"{'conns/1k':>9} {'non2xx':>7} {'proxy us/req':>13}")
for c in conns:
    for v in names:
        r = rows[v, c]
        med = [statistics.median(x[i] for x in r) for i in range(6)]
        print(f"{names[v]:42} {c:>4} {med[0]:9.0f} {med[1]:8.3f} {med[2]:8.3f} "
              f"{med[3]:9.3f} {med[4]:7.0f} {med[5]:13.2f}")
def ratio(a, b, c):
    return statistics.median(x[0] / y[0] for x, y in zip(rows[a, c], rows[b, c]))
for c in conns:
    print(f"tidepool h2 / HAProxy h2 at c{c}: {ratio('tideh2', 'haproxy', c):.3f}x (goal >= 1.0)")
if "50" in conns:
    print(f"tidepool h2 / tidepool HTTP/1.1 pool of 128 at c50: {ratio('tideh2', 'tide128', '50'):.3f}x (goal >= 0.8)")
EOF
echo "upstream connections held at the end: tidepool h2 $(tide_conns tideh2) (goal <= 2), tidepool HTTP/1.1 $(tide_conns tide128); origin's open connections in all: $((ACTIVE - 1))"
