#!/bin/sh
# Connections by demand against the proxies people run: bench_demand's
# square wave (100 and 10 callers by turns, 2 s each, WAVES times, then 10
# callers for AFTER s) as HTTP requests through nginx (`keepalive 32`),
# HAProxy 2.6 (`http-reuse always`) and demos/proxy with the demand knobs
# off and on, each in front of the same nginx origin started here on
# 127.0.0.1, one after the other in one run (everything stopped at the end).
#
#   bench/demand_replay.sh [BUILD_DIR] [WAVES] [AFTER]
#
# (presets: build, 10 waves, 30 s: about five minutes). bench/demand_replay
# (built with -Dbenchmarks=enabled) is the client and does the counting;
# its header comment says what each figure is. Each proxy is started cold
# just before its replay and stopped after it, and the next starts once the
# origin holds no connection, so the origin's accepts and its established
# connections are that proxy's alone.
#
# The proxies: nginx 1.22 with `keepalive 32` in its upstream block
# (proxy_http_version 1.1, Connection "", keepalive_requests and timeouts
# high on every side, as bench/proxy_bench.sh); HAProxy 2.6, one thread,
# `http-reuse always`, no maxconn on the server and its idle-connection
# purge as it ships (pool-purge-delay 5 s: it closes half the idle excess
# over the recent peak each period); demos/proxy with pools of 128 (above
# the 112 that preconnect's headroom needs at 100 in flight, so the size
# never queues a request) and the preset --keep 60, with --demand 5000
# --preconnect 90 for the "on" row (bench_demand's knobs) and without for
# "off".
#
# Everything (client, proxy, origin) is pinned to one CPU, as in
# bench/proxy_bench.sh: on this 2-core machine unpinned figures swing 2-4x.
set -eu

BUILD=${1:-build}
WAVES=${2:-10}
AFTER=${3:-30}
PROXY=$BUILD/demos/proxy/tidepool-proxy
CLIENT=$BUILD/bench/demand_replay
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
PYTHON=$(python3 -c 'import sys; print(sys.executable)')
for f in "$NGINX" "$HAPROXY"; do
    [ -x "$f" ] || {
        echo "demand_replay: $f is needed (Debian: nginx-light, haproxy)"
        exit 77
    }
done
for f in "$PROXY" "$CLIENT"; do
    [ -x "$f" ] || {
        echo "demand_replay: $f is missing (meson setup -Dbenchmarks=enabled)"
        exit 1
    }
done
BENCH=demand_replay
. "$(dirname "$0")/lib.sh"

# PID: stopped and waited for, and no longer one to stop at the end
stop() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    PIDS=$(echo "$PIDS" | tr ' ' '\n' | grep -vx "$1" | tr '\n' ' ')
}

# NAME PORT BODY: an nginx in $DIR/NAME with BODY in its http block; its
# master's pid in $STARTED
start_nginx() {
    d=$DIR/$1
    nginx_conf "$d" "$3"
    "$NGINX" -t -q -p "$d" -e "$d/error.log" -c "$d/nginx.conf" ||
        fail "nginx refuses $d/nginx.conf"
    $CPU "$NGINX" -p "$d" -e "$d/error.log" -c "$d/nginx.conf" &
    STARTED=$!
    PIDS="$PIDS $STARTED"
    wait_port "$2"
}

head -c 612 /dev/zero | tr '\0' 'x' >"$DIR/index.html"
ORIGIN=$(free_port)
start_nginx origin "$ORIGIN" "
    log_format replay '\$arg_v \$arg_w \$connection_requests';
    server {
        listen 127.0.0.1:$ORIGIN;
        root $DIR;
        location = /status { stub_status; }
        location = /index.html {
            access_log $DIR/origin.log replay buffer=64k flush=1s;
        }
    }"

# the busy time of CPU N so far, in ns (its /proc/stat line: all but idle
# and iowait, in clock ticks)
cpu_busy_ns() {
    awk -v c="cpu$1" -v hz="$HZ" '$1 == c {
        printf "%.0f", ($2 + $3 + $4 + $7 + $8 + $9) * 1e9 / hz }' /proc/stat
}
PIN_CPU=$(($(nproc) - 1))
ORIGIN_WORKER=$(worker_of "$STARTED")

# the origin's established connections (each upstream connection once)
origin_conns() {
    ss -Htn state established "( sport = :$ORIGIN )" | wc -l
}

# VARIANT PORT: starts that proxy cold on PORT; its pid in $STARTED
start_proxy() {
    case $1 in
    nginx)
        start_nginx nginx "$2" "
    upstream origin {
        server 127.0.0.1:$ORIGIN;
        keepalive 32;
        keepalive_requests 10000000;
        keepalive_timeout 600s;
    }
    server {
        listen 127.0.0.1:$2;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }
    }"
        ;;
    haproxy)
        start_haproxy_at "$DIR/haproxy" "$2" "origin 127.0.0.1:$ORIGIN"
        ;;
    tide-off | tide-on)
        knobs=""
        [ "$1" = tide-off ] || knobs="--demand 5000 --preconnect 90"
        # shellcheck disable=SC2086
        $CPU "$PROXY" --listen "127.0.0.1:$2" \
            --upstream "127.0.0.1:$ORIGIN" --pool-size 128 $knobs \
            >"$DIR/$1.log" 2>&1 &
        STARTED=$!
        PIDS="$PIDS $STARTED"
        wait_port "$2"
        ;;
    esac
}

VARIANTS=${VARIANTS:-nginx haproxy tide-off tide-on}
echo "demand_replay: $WAVES waves of 100 and 10 callers, 2 s each, then 10" \
    "for $AFTER s; origin nginx on 127.0.0.1:$ORIGIN; $PINNED; $(nproc) CPUs;" \
    "one run, in the order $VARIANTS"
for v in $VARIANTS; do
    i=0
    while [ "$(origin_conns)" -gt 0 ]; do
        i=$((i + 1))
        [ $i -lt 100 ] || fail "the origin still holds connections before $v"
        sleep 0.1
    done
    port=$(free_port)
    start_proxy "$v" "$port"
    pid=$STARTED
    stats=""
    case $v in tide-*) stats="--stats" ;; esac
    busy=$pid
    [ "$v" != nginx ] || busy=$(worker_of "$pid")
    c0=$(cpu_ns "$busy")
    o0=$(cpu_ns "$ORIGIN_WORKER")
    b0=$(cpu_busy_ns "$PIN_CPU")
    # shellcheck disable=SC2086
    $CPU "$CLIENT" --target "$port" --origin "$ORIGIN" --tag "$v" \
        --waves "$WAVES" --after "$AFTER" --log "$DIR/origin.log" $stats \
        >"$DIR/$v.out" || fail "the replay through $v failed"
    c1=$(cpu_ns "$busy")
    o1=$(cpu_ns "$ORIGIN_WORKER")
    b1=$(cpu_busy_ns "$PIN_CPU")
    # the proxy's CPU over the whole replay, per request (the quiet
    # spell's after the wave too)
    cpu=$(awk -v c="$((c1 - c0))" '{ for (i = 1; i <= NF; i++)
        if ($i ~ /^(requests|after_requests)=/) n += substr($i, index($i, "=") + 1) }
        END { printf " cpu_us=%.2f", c / 1000 / n }' "$DIR/$v.out")
    # the share of the pinned CPU's busy time that was not the replay's
    # (other programs on this shared machine): the noise in this row
    others=$(awk -v b="$((b1 - b0))" -v p="$((c1 - c0))" -v o="$((o1 - o0))" '{
        for (i = 1; i <= NF; i++)
            if ($i ~ /^client_cpu_us=/) k = substr($i, 15) * 1000 }
        END { x = (b - p - o - k) / b; printf " others=%.1f%%", 100 * (x < 0 ? 0 : x) }' \
        "$DIR/$v.out")
    echo "$cpu$others" >>"$DIR/$v.out"
    tr '\n' ' ' <"$DIR/$v.out"
    echo
    stop "$pid"
done

# key=value lines into the table
# shellcheck disable=SC2086
"$PYTHON" - "$DIR" $VARIANTS <<'EOF'
import sys
d, names = sys.argv[1], sys.argv[2:]
rows = {}
for n in names:
    with open(f"{d}/{n}.out") as f:
        rows[n] = dict(kv.split("=", 1) for kv in f.read().split())
off = float(rows["tide-off"]["p99"])
cols = [("requests", "requests"), ("new", "new"), ("per1k", "new/1k"),
        ("per1k2", "new/1k 2nd+"), ("firstreq2", "1st-on-conn 2nd+"),
        ("waits2", "waited 2nd+"), ("live_after", "live after"),
        ("p50", "p50 us"), ("p99", "p99 us"), ("p50b", "p50 burst"),
        ("p50q", "p50 quiet"), ("burst_share", "burst share"),
        ("cpu_us", "proxy us/req"), ("others", "CPU others"),
        ("preconnects", "ahead"), ("demand_retired", "shrunk"),
        ("errors", "errors")]
print("%-9s" % "variant" + "".join(" %12s" % h[:12] for _, h in cols)
      + "%9s" % "p99/off")
for n in names:
    r = rows[n]
    cells = []
    for k, _ in cols:
        v = r[k]
        if k in ("firstreq2", "waits2") and v != "-":
            v = "%.2f%%" % (100 * float(v))
        cells.append(" %12s" % v)
    print("%-9s" % n + "".join(cells) + "%9.2f" % (float(r["p99"]) / off))
EOF
echo "goals (issue 27): new/1k <= 0.2; >= 99% served without waiting for a" \
    "connect from the second burst; live $AFTER s into the quiet load <=" \
    "2x its 10 in flight (20); p99 <= 0.8x tidepool knobs off"
