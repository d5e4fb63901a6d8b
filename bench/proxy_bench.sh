#!/bin/sh
# demos/proxy beside nginx and HAProxy as reverse proxies, in front of one
# nginx origin started here on 127.0.0.1 (everything stopped at the end),
# driven by wrk; then the syscalls each proxy makes a request, under strace.
#
#   bench/proxy_bench.sh [--quick] [BUILD_DIR] [DURATION] [RUNS] [CONNS]
#
# Variants: wrk straight to the origin; nginx as proxy with `keepalive N`
# in its upstream block (proxy_http_version 1.1, proxy_set_header
# Connection "", keepalive_requests and keepalive_timeout high on every
# side); HAProxy 2.6 (one thread) with `http-reuse always` and `maxconn N`
# on its HTTP/1.1 server line (idle connections kept as long); tidepool's
# proxy with pool size N; for N = 32 and 128. Each at `wrk -t1 -cC` for C
# in CONNS (preset "50 200") for DURATION (preset 2s), RUNS times (preset
# 5): about five minutes in all. --quick: c50 alone, 1s, one run, no
# warm-up, the syscalls over fewer requests and not counted by perf: well
# under a minute, to show in CI that the bench still runs (its figures
# judge nothing).
#
# wrk, the proxies and the origin are all pinned to one CPU (on this 2-core
# machine unpinned figures swing 2-4x between runs), and the variants are
# interleaved: run 1 of each, then run 2, ...; the three proxies of a pool
# size run one after the other, in an order that turns with each run so
# that none always goes first. Each cell prints the median of the runs:
# requests/s, p50 and p99 latency, new upstream connections per 1,000
# requests after a warm-up of each variant (the steady state; from the
# origin's stub_status accepts; for the direct variant these are wrk's own
# connections), and the proxy's CPU per request. The goals' ratios,
# tidepool's req/s over each peer's, are given both as the ratio of the
# medians and as the median of the run-by-run ratios (a pair ran seconds
# apart, so load from elsewhere moves both).
#
# CPU: wrk, the proxy and the origin each per request (the proxy's and the
# origin's from /proc before and after the run, nginx's workers rather than
# their masters; wrk's from its rusage). With all three on one CPU their
# sum is the inverse of req/s, and it moves with the machine as much; what
# does not is how the three share it: the origin and wrk do the same work
# per request behind any proxy, so the proxy's CPU over theirs in the same
# run ("proxy/rest") is the proxy's cost in units that slow down and speed
# up with it. Its tidepool/peer ratio, paired run by run, is the steadiest
# figure of the bench.
#
# Syscalls a proxied request: for each proxy and each C, strace -f is
# attached to the proxy's process (tidepool's, nginx's worker, HAProxy)
# while bench/http_exact.py sends exactly COUNT requests over C kept
# connections, one in flight on each (2,000 in each of 3 passes, the
# median pass shown; --quick 1,000, once); the connections are opened and
# used once before strace attaches and closed after it detached.
# bench/syscalls.py counts the trace by syscall, the recvfroms with
# MSG_PEEK and the ioctl(FIONREAD)s apart. strace stops the proxy at every
# syscall, so what falls in one loop round changes under it; where perf can
# count the syscall tracepoints (root, linux-perf), the same figures are
# also taken during plain wrk runs at C ("perf"; a 3 s run less a 1 s one,
# so that wrk's connects fall out).
#
# Then bench/proxy_h2_bench.sh's HTTP/2 rows, with the same duration, runs
# and connections.
set -eu

QUICK=0
if [ "${1:-}" = --quick ]; then
    QUICK=1
    shift
fi
BUILD=${1:-build}
if [ $QUICK -eq 1 ]; then
    DURATION=${2:-1s}
    RUNS=${3:-1}
    COUNT=1000
    PASSES=1
    CONNS=${4:-50}
else
    DURATION=${2:-2s}
    RUNS=${3:-5}
    COUNT=2000
    PASSES=3
    CONNS=${4:-50 200}
fi
PERF_LONG=3
PROXY=$BUILD/demos/proxy/tidepool-proxy
HERE=$(cd "$(dirname "$0")" && pwd)

for tool in nginx haproxy wrk curl strace python3; do
    if ! command -v $tool >/dev/null 2>&1 && [ ! -x /usr/sbin/$tool ]; then
        echo "proxy_bench: $tool is needed (Debian: nginx-light, haproxy, wrk, curl, strace, python3)"
        exit 77
    fi
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
# the interpreter itself, not a version manager's shim that takes a second
# to find it on each call
PYTHON=$(python3 -c 'import sys; print(sys.executable)')
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
if [ ! -x "$PROXY" ]; then
    echo "proxy_bench: $PROXY is missing (build with libhttp-parser-dev)"
    exit 1
fi

BENCH=proxy_bench
. "$HERE/lib.sh"

# PID: no longer one to stop at the end (it ended and was waited for)
forget() {
    PIDS=$(echo "$PIDS" | tr ' ' '\n' | grep -vx "$1" | tr '\n' ' ')
}

PERF=0
if [ $QUICK -eq 0 ] && "$PYTHON" "$HERE/syscalls.py" perfworks 2>/dev/null; then
    PERF=1
fi

# runs wrk (its arguments) and then prints "wrk-cpu-us N": the CPU wrk used
WRK_CPU='import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:]).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("wrk-cpu-us %.0f" % ((r.ru_utime + r.ru_stime) * 1e6), flush=True)
sys.exit(rc)'

# NAME PORT BODY: an nginx in $DIR/NAME with BODY inside its http block;
# its worker's pid in PID_NAME
start_nginx() {
    d=$DIR/$1
    nginx_conf "$d" "$3"
    $CPU "$NGINX" -p "$d" -e "$d/error.log" -c "$d/nginx.conf" &
    master=$!
    PIDS="$PIDS $master"
    wait_port "$2"
    eval "PID_$1=$(worker_of "$master")"
    eval "PORT_$1=$2"
}

# NAME PORT N: HAProxy, one thread, HTTP/1.1 to the origin with at most N
# connections, idle ones shared by every client (http-reuse always) and
# kept 600 s as nginx's and tidepool's are; no log (nginx logs nothing
# either); its pid in PID_NAME
start_haproxy() {
    start_haproxy_at "$DIR/$1" "$2" \
        "origin 127.0.0.1:$ORIGIN maxconn $3 pool-purge-delay 600s"
    eval "PID_$1=$STARTED"
    eval "PORT_$1=$2"
}

head -c 612 /dev/zero | tr '\0' 'x' >"$DIR/index.html"
ORIGIN=$(free_port)
start_nginx direct "$ORIGIN" "
    server {
        listen 127.0.0.1:$ORIGIN;
        root $DIR;
        location = /status { stub_status; }
    }"
ORIGIN_WORKER=$PID_direct
PID_direct=0

for k in 32 128; do
    port=$(free_port)
    start_nginx "nginx$k" "$port" "
    upstream origin {
        server 127.0.0.1:$ORIGIN;
        keepalive $k;
        keepalive_requests 10000000;
        keepalive_timeout 600s;
    }
    server {
        listen 127.0.0.1:$port;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }
    }"
    start_haproxy "haproxy$k" "$(free_port)" "$k"
    port=$(free_port)
    $CPU "$PROXY" --listen "127.0.0.1:$port" --upstream "127.0.0.1:$ORIGIN" \
        --pool-size "$k" --keep 600 >"$DIR/tide$k.log" 2>&1 &
    PIDS="$PIDS $!"
    eval "PID_tide$k=$!"
    eval "PORT_tide$k=$port"
    wait_port "$port"
done

VARIANTS="direct nginx32 haproxy32 tide32 nginx128 haproxy128 tide128"
PROXIES="nginx32 haproxy32 tide32 nginx128 haproxy128 tide128"
pid_of() { eval "echo \$PID_$1"; }
port_of() { eval "echo \$PORT_$1"; }

accepts() {
    curl -s "http://127.0.0.1:$ORIGIN/status" | awk 'NR == 3 { print $1 }'
}

# wrk's latency in ms
to_ms() {
    awk -v v="$1" 'BEGIN {
        n = v + 0
        if (v ~ /us$/) n /= 1000
        else if (v ~ /ms$/) n = n
        else if (v ~ /s$/) n *= 1000
        printf "%.3f", n }'
}

# one cell: VARIANT CONNECTIONS -> a line "rps p50 p99 per1000 non2xx
# wrk_us proxy_us origin_us proxy/rest" in $DIR/VARIANT-cCONNECTIONS, the
# CPU figures in us per request
cell() {
    proxy=$(pid_of "$1")
    before=$(accepts)
    p0=0
    [ "$proxy" -eq 0 ] || p0=$(cpu_ns "$proxy")
    o0=$(cpu_ns "$ORIGIN_WORKER")
    out=$(timeout 60 $CPU "$PYTHON" -c "$WRK_CPU" wrk -t1 -c"$2" \
        -d"$DURATION" --latency "http://127.0.0.1:$(port_of "$1")/index.html")
    o1=$(cpu_ns "$ORIGIN_WORKER")
    p1=0
    [ "$proxy" -eq 0 ] || p1=$(cpu_ns "$proxy")
    after=$(accepts)
    rps=$(echo "$out" | awk '/Requests\/sec/ { print $2 }')
    reqs=$(echo "$out" | awk '/requests in/ { print $1 }')
    p50=$(to_ms "$(echo "$out" | awk '$1 == "50%" { print $2 }')")
    p99=$(to_ms "$(echo "$out" | awk '$1 == "99%" { print $2 }')")
    bad=$(echo "$out" | awk '/Non-2xx/ { print $NF }')
    wrk_us=$(echo "$out" | awk '/^wrk-cpu-us/ { print $2 }')
    [ -n "$reqs" ] && [ "$reqs" -gt 0 ] || fail "wrk measured nothing through $1 at c$2: $out"
    # the status request itself is one connection
    per=$(awk -v a="$before" -v b="$after" -v n="$reqs" \
        'BEGIN { printf "%.3f", (b - a - 1) * 1000 / n }')
    cpu=$(awk -v n="$reqs" -v w="$wrk_us" -v p="$((p1 - p0))" \
        -v o="$((o1 - o0))" 'BEGIN {
        w /= n; p = p / 1000 / n; o = o / 1000 / n
        printf "%.2f %.2f %.2f %.4f", w, p, o, p / (w + o) }')
    echo "$rps $p50 $p99 $per ${bad:-0} $cpu" >>"$DIR/$1-c$2"
}

# NAME PID FILE...: waits (at most 120 s) for a file that PID writes
wait_file() {
    i=0
    until [ -e "$3" ]; do
        kill -0 "$2" 2>/dev/null || fail "$1 ended before $3 ($(cat "$DIR/client.err" 2>/dev/null))"
        i=$((i + 1))
        [ $i -lt 12000 ] || fail "$1 did not write $3 within 120 s"
        sleep 0.01
    done
}

# strace attached to PROXY's process over exactly COUNT requests on C
# connections: VARIANT C PASS -> $DIR/strace-VARIANT-cC-PASS.json
strace_cell() {
    d=$DIR/trace-$1-c$2-$3
    mkdir -p "$d"
    : >"$d/strace.err"
    $CPU "$PYTHON" "$HERE/http_exact.py" 127.0.0.1 "$(port_of "$1")" \
        /index.html "$2" "$COUNT" "$d" 2>"$DIR/client.err" &
    client=$!
    PIDS="$PIDS $client"
    wait_file client "$client" "$d/ready"
    $CPU strace -f -s 0 -e signal=none -o "$d/trace" -p "$(pid_of "$1")" \
        2>"$d/strace.err" &
    tracer=$!
    PIDS="$PIDS $tracer"
    i=0
    until grep -q attached "$d/strace.err"; do
        kill -0 $tracer 2>/dev/null || fail "strace: $(cat "$d/strace.err")"
        i=$((i + 1))
        [ $i -lt 1000 ] || fail "strace did not attach to $1 within 10 s"
        sleep 0.01
    done
    touch "$d/go"
    wait_file client "$client" "$d/done"
    # what the proxy does right after its last answer (a release) is the
    # request's too
    sleep 0.2
    kill -INT $tracer
    wait $tracer || true
    forget $tracer
    touch "$d/end"
    wait $client || fail "the client through $1 failed: $(cat "$DIR/client.err")"
    forget $client
    "$PYTHON" "$HERE/syscalls.py" strace "$DIR/strace-$1-c$2-$3.json" "$COUNT" "$d/trace"
    rm -rf "$d"
}

# VARIANT C SECONDS: perf's syscall counts on the proxy's process for as
# long as a wrk run at C lasts (perf runs wrk) into $DIR/perf-SECONDS.csv;
# prints wrk's requests
perf_run() {
    out=$(timeout 60 $CPU "$PYTHON" "$HERE/syscalls.py" perfstat "$DIR/perf-$3.csv" \
        -p "$(pid_of "$1")" -- wrk -t1 -c"$2" -d"$3s" \
        "http://127.0.0.1:$(port_of "$1")/index.html" 2>"$DIR/perf.err") ||
        fail "perf: $(cat "$DIR/perf.err")"
    echo "$out" | awk '/requests in/ { print $1 }'
}
# VARIANT C -> $DIR/perf-VARIANT-cC.json: the difference of a PERF_LONG s
# run and a 1 s one over the difference of their requests, which leaves
# out what wrk's connects and closes cost the proxy
perf_cell() {
    short=$(perf_run "$1" "$2" 1)
    long=$(perf_run "$1" "$2" "$PERF_LONG")
    "$PYTHON" "$HERE/syscalls.py" perf "$DIR/perf-$1-c$2.json" \
        "$short" "$DIR/perf-1.csv" "$long" "$DIR/perf-$PERF_LONG.csv"
}

# what else the machine was doing: figures taken under another load are
# lower all round, and their ratios less steady
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
STARTED=$(date +%s)

# a warm-up of each (not counted) at the most connections, so that every
# pool holds what it will hold and the cells measure the steady state
most=$(echo "$CONNS" | tr ' ' '\n' | sort -n | tail -1)
[ $QUICK -eq 1 ] || for v in $VARIANTS; do
    timeout 30 $CPU wrk -t1 -c"$most" -d1s "http://127.0.0.1:$(port_of "$v")/index.html" >/dev/null
done

# The three proxies of a pool size run one after the other, first nginx,
# HAProxy, tidepool, then turned by one each run, so that load that comes
# and goes on the machine moves the cells compared alike and none always
# runs first.
run=1
while [ $run -le "$RUNS" ]; do
    case $((run % 3)) in
    1) turn="nginx haproxy tide" ;;
    2) turn="haproxy tide nginx" ;;
    0) turn="tide nginx haproxy" ;;
    esac
    for c in $CONNS; do
        cell direct "$c"
        for k in 32 128; do
            for p in $turn; do
                cell "$p$k" "$c"
            done
        done
    done
    run=$((run + 1))
done
TIMED=$(($(date +%s) - STARTED))

# The syscalls, interleaved as the timed runs are. What strace counts
# moves between passes (±0.25 a request for tidepool's proxy: what falls in
# one loop round changes with how strace paces it), hence the passes and
# their median; perf's count under wrk moves by less than ±0.05.
pass=1
while [ $pass -le $PASSES ]; do
    for c in $CONNS; do
        for v in $PROXIES; do
            strace_cell "$v" "$c" $pass
        done
    done
    pass=$((pass + 1))
done
if [ $PERF -eq 1 ]; then
    for c in $CONNS; do
        for v in $PROXIES; do
            perf_cell "$v" "$c"
        done
    done
fi

echo "proxy_bench: wrk -t1 -d$DURATION, interleaved runs: $RUNS ($TIMED s), medians; $PINNED"
echo "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
echo "proxy us: the proxy's CPU a request; proxy/rest: that over wrk's and the origin's in the same run"
echo
perf_long=0
[ $PERF -eq 0 ] || perf_long=$PERF_LONG
"$PYTHON" "$HERE/proxy_report.py" "$DIR" "$CONNS" "$COUNT" "$PASSES" "$perf_long"
[ $PERF -eq 1 ] || echo "(no perf figures: --quick, or perf cannot count syscall tracepoints here)"

# the HTTP/2 rows: tidepool's proxy with an h2c upstream beside HAProxy's
# `proto h2` and tidepool's own HTTP/1.1 pool of 128, the same wrk runs
echo
sh "$HERE/proxy_h2_bench.sh" "$BUILD" "$DURATION" "$RUNS" "$CONNS"
