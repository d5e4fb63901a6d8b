#!/bin/sh
# demos/proxy beside nginx as a reverse proxy, in front of one nginx origin
# started here on 127.0.0.1 (stopped at the end), driven by wrk.
#
#   bench/proxy_bench.sh [BUILD_DIR] [DURATION] [RUNS]
#
# Variants: wrk straight to the origin; nginx as proxy with `keepalive 32`
# and with `keepalive 128` in its upstream block (proxy_http_version 1.1,
# proxy_set_header Connection "", keepalive_requests high on every side);
# tidepool's proxy with pool size 32 and 128. Each at `wrk -t1 -c50` and
# `-c1` for DURATION (preset 10s). wrk, the proxies and the origin are all
# pinned to one CPU (on this 2-core machine unpinned figures swing 2-4x
# between runs), and the variants are interleaved: run 1 of each, then run
# 2, ... (RUNS, preset 3), each tidepool cell beside its nginx one, which
# goes first in odd runs and second in even ones. Each cell prints the
# median of the runs:
# requests/s, p50 and p99 latency, and new upstream connections per 1,000
# requests after a warm-up of each variant (the steady state), from the origin's stub_status accepts (for the direct variant
# these are wrk's own connections). The tidepool/nginx ratios are given
# both as the ratio of the medians and as the median of run-by-run ratios.
#
# Each cell also measures the CPU time wrk, the proxy and the origin spent
# per request (the proxy's and the origin's from /proc before and after the
# run, nginx's workers rather than their masters; wrk's from its rusage).
# With all three on one CPU their sum is the inverse of req/s, and it moves
# with the machine as much; what does not is how the three share it: the
# origin and wrk do the same work per request behind either proxy (the same
# calls, the same segments), so the proxy's CPU over theirs in the same run
# ("proxy/rest") is the proxy's cost in units that slow down and speed up
# with it. Its tidepool/nginx ratio, paired run by run, is the steadiest
# figure of the bench.
set -eu

BUILD=${1:-build}
DURATION=${2:-10s}
RUNS=${3:-3}
PROXY=$BUILD/demos/proxy/proxy

for tool in nginx wrk curl; do
    if ! command -v $tool >/dev/null 2>&1 && [ ! -x /usr/sbin/$tool ]; then
        echo "proxy_bench: $tool is needed (Debian: nginx-light, wrk, curl)"
        exit 77
    fi
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if [ ! -x "$PROXY" ]; then
    echo "proxy_bench: $PROXY is missing (build with libhttp-parser-dev)"
    exit 1
fi

CPU=""
PINNED="not pinned"
if command -v taskset >/dev/null; then
    CPU="taskset -c $(($(nproc) - 1))"
    PINNED="everything on CPU $(($(nproc) - 1))"
fi

HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)

DIR=$(mktemp -d "${TMPDIR:-/tmp}/tide-proxy-bench-XXXXXX")
chmod 755 "$DIR"
PIDS=""
cleanup() {
    for p in $PIDS; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() {
    i=0
    until curl -s -o /dev/null "http://127.0.0.1:$1/"; do
        i=$((i + 1))
        [ $i -lt 200 ] || { echo "proxy_bench: nothing answers on $1"; exit 1; }
        sleep 0.05
    done
}

# ns of CPU a process has used, all its threads: the scheduler's own
# figure when the kernel keeps it, else utime + stime in clock ticks
cpu_ns() {
    if [ -r "/proc/$1/schedstat" ]; then
        cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f", s }'
    else
        sed 's/.*) //' "/proc/$1/stat" |
            awk -v hz="$HZ" '{ printf "%.0f", ($12 + $13) * 1e9 / hz }'
    fi
}

# the one worker of the nginx whose master is PID (worker_processes 1)
worker_of() {
    w=$(cat /proc/"$1"/task/*/children 2>/dev/null | awk '{ print $1 }')
    [ -n "$w" ] || w=$(ps -o pid= --ppid "$1" | awk 'NR == 1 { print $1 }')
    [ -n "$w" ] || { echo "proxy_bench: no worker under nginx $1"; exit 1; }
    echo "$w"
}

# runs wrk (its arguments) and then prints "wrk-cpu-us N": the CPU wrk used
WRK_CPU='import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:]).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("wrk-cpu-us %.0f" % ((r.ru_utime + r.ru_stime) * 1e6), flush=True)
sys.exit(rc)'

# NAME PORT BODY: an nginx in $DIR/NAME with BODY inside its http block;
# its worker's pid in WORKER_NAME
start_nginx() {
    d=$DIR/$1
    mkdir -p "$d"
    cat >"$d/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $d/body; proxy_temp_path $d/proxy;
    fastcgi_temp_path $d/fcgi; uwsgi_temp_path $d/uwsgi;
    scgi_temp_path $d/scgi;
    keepalive_requests 10000000;
    keepalive_timeout 600s;
$3
}
EOF
    $CPU "$NGINX" -p "$d" -e "$d/error.log" -c "$d/nginx.conf" &
    master=$!
    PIDS="$PIDS $master"
    wait_port "$2"
    eval "WORKER_$1=$(worker_of "$master")"
}

head -c 612 /dev/zero | tr '\0' 'x' >"$DIR/index.html"
ORIGIN=$(free_port)
start_nginx origin "$ORIGIN" "
    server {
        listen 127.0.0.1:$ORIGIN;
        root $DIR;
        location = /status { stub_status; }
    }"

for k in 32 128; do
    port=$(free_port)
    eval "NGINX_$k=$port"
    start_nginx "nginx$k" "$port" "
    upstream origin {
        server 127.0.0.1:$ORIGIN;
        keepalive $k;
        keepalive_requests 10000000;
    }
    server {
        listen 127.0.0.1:$port;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }
    }"
done

for k in 32 128; do
    port=$(free_port)
    eval "TIDE_$k=$port"
    $CPU "$PROXY" --listen "127.0.0.1:$port" --upstream "127.0.0.1:$ORIGIN" \
        --pool-size "$k" --keep 600 >"$DIR/tide$k.log" 2>&1 &
    PIDS="$PIDS $!"
    eval "WORKER_tide$k=$!"
    wait_port "$port"
done

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

# one cell: NAME PORT CONNECTIONS PROXY_PID (0: none) -> a line "rps p50
# p99 per1000 non2xx wrk_us proxy_us origin_us proxy/rest" in $DIR/NAME,
# the CPU figures in us per request
cell() {
    before=$(accepts)
    p0=0
    [ "$4" -eq 0 ] || p0=$(cpu_ns "$4")
    o0=$(cpu_ns "$WORKER_origin")
    out=$(timeout 60 $CPU python3 -c "$WRK_CPU" wrk -t1 -c"$3" \
        -d"$DURATION" --latency "http://127.0.0.1:$2/index.html")
    o1=$(cpu_ns "$WORKER_origin")
    p1=0
    [ "$4" -eq 0 ] || p1=$(cpu_ns "$4")
    after=$(accepts)
    rps=$(echo "$out" | awk '/Requests\/sec/ { print $2 }')
    reqs=$(echo "$out" | awk '/requests in/ { print $1 }')
    p50=$(to_ms "$(echo "$out" | awk '$1 == "50%" { print $2 }')")
    p99=$(to_ms "$(echo "$out" | awk '$1 == "99%" { print $2 }')")
    bad=$(echo "$out" | awk '/Non-2xx/ { print $NF }')
    wrk_us=$(echo "$out" | awk '/^wrk-cpu-us/ { print $2 }')
    # the status request itself is one connection
    per=$(awk -v a="$before" -v b="$after" -v n="$reqs" \
        'BEGIN { printf "%.3f", (b - a - 1) * 1000 / n }')
    cpu=$(awk -v n="$reqs" -v w="$wrk_us" -v p="$((p1 - p0))" \
        -v o="$((o1 - o0))" 'BEGIN {
        w /= n; p = p / 1000 / n; o = o / 1000 / n
        printf "%.2f %.2f %.2f %.4f", w, p, o, p / (w + o) }')
    echo "$rps $p50 $p99 $per ${bad:-0} $cpu" >>"$DIR/$1"
}

median() { # column of the file
    sort -g -k"$2","$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}

VARIANTS="direct nginx32 nginx128 tide32 tide128"
proxy_of() { # the pid whose CPU is the proxy's, 0 for none
    case $1 in
    direct) echo 0 ;;
    nginx32) echo "$WORKER_nginx32" ;;
    nginx128) echo "$WORKER_nginx128" ;;
    tide32) echo "$WORKER_tide32" ;;
    tide128) echo "$WORKER_tide128" ;;
    esac
}

port_of() {
    case $1 in
    direct) echo "$ORIGIN" ;;
    nginx32) echo "$NGINX_32" ;;
    nginx128) echo "$NGINX_128" ;;
    tide32) echo "$TIDE_32" ;;
    tide128) echo "$TIDE_128" ;;
    esac
}

# what else the machine was doing: figures taken under another load are
# lower all round, and their ratios less steady
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)

# a warm-up of each (not counted), so the cells measure the steady state
for c in 50 1; do
    for v in $VARIANTS; do
        timeout 30 $CPU wrk -t1 -c"$c" -d1s "http://127.0.0.1:$(port_of "$v")/index.html" >/dev/null
    done
done

# Each tidepool variant runs right beside the nginx one it is compared with,
# nginx first in odd runs and second in even ones, so load that comes and
# goes on the machine moves both cells of a pair alike and neither side
# always runs first.
run=1
while [ $run -le "$RUNS" ]; do
    if [ $((run % 2)) -eq 1 ]; then
        order="direct nginx32 tide32 nginx128 tide128"
    else
        order="direct tide32 nginx32 tide128 nginx128"
    fi
    for c in 50 1; do
        for v in $order; do
            cell "$v-c$c" "$(port_of "$v")" "$c" "$(proxy_of "$v")"
        done
    done
    run=$((run + 1))
done

echo "proxy_bench: wrk -t1 -d$DURATION, $RUNS runs interleaved, median; $PINNED"
echo "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
printf '%-10s %4s %10s %9s %9s %14s %8s\n' variant conn "req/s" "p50 ms" "p99 ms" "new/1k reqs" "non-2xx"
for c in 50 1; do
    for v in $VARIANTS; do
        f=$DIR/$v-c$c
        printf '%-10s %4s %10s %9s %9s %14s %8s\n' "$v" "c$c" \
            "$(median "$f" 1)" "$(median "$f" 2)" "$(median "$f" 3)" \
            "$(median "$f" 4)" "$(median "$f" 5)"
    done
done
for c in 50 1; do
    awk -v c="$c" -v t32="$(median "$DIR/tide32-c$c" 1)" \
        -v n32="$(median "$DIR/nginx32-c$c" 1)" \
        -v t128="$(median "$DIR/tide128-c$c" 1)" \
        -v n128="$(median "$DIR/nginx128-c$c" 1)" 'BEGIN {
        printf "c%s: tidepool/nginx at 32: %.2fx, at 128: %.2fx\n", c,
            t32 / n32, t128 / n128 }'
done
# what each process spent per request, and the proxy's part over the rest
echo "CPU per request (us; median of the runs): wrk, the proxy, the origin, all three; proxy/rest = the proxy's CPU over wrk's and the origin's in the same run"
printf '%-10s %4s %9s %9s %9s %9s %11s\n' variant conn "wrk" "proxy" "origin" "all" "proxy/rest"
for c in 50 1; do
    for v in $VARIANTS; do
        f=$DIR/$v-c$c
        if [ "$v" = direct ]; then
            printf '%-10s %4s %9s %9s %9s %9s %11s\n' "$v" "c$c" \
                "$(median "$f" 6)" - "$(median "$f" 8)" \
                "$(awk '{ print $6 + $8 }' "$f" | sort -g |
                    awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')" -
            continue
        fi
        printf '%-10s %4s %9s %9s %9s %9s %11s\n' "$v" "c$c" \
            "$(median "$f" 6)" "$(median "$f" 7)" "$(median "$f" 8)" \
            "$(awk '{ print $6 + $7 + $8 }' "$f" | sort -g |
                awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')" \
            "$(median "$f" 9)"
    done
done
# tidepool's proxy/rest over nginx's, run by run: below 1 it costs less
cost() { # TIDE NGINX -> median of run-by-run tide/nginx of proxy/rest
    paste -d' ' "$1" "$2" | awk '{ print $9 / $18 }' | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }'
}
for c in 50 1; do
    echo "c$c: tidepool's proxy CPU per request over nginx's (proxy/rest, paired, median): at 32: $(cost "$DIR/tide32-c$c" "$DIR/nginx32-c$c")x, at 128: $(cost "$DIR/tide128-c$c" "$DIR/nginx128-c$c")x"
done
# The same ratios run by run: the two cells of a pair ran one after the other, so
# load from elsewhere on the machine moves both; the median of the paired
# ratios is steadier than the ratio of the medians.
paired() { # TIDE NGINX -> median of run-by-run tide/nginx
    paste -d' ' "$1" "$2" | awk '{ print $1 / $10 }' | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] }'
}
for c in 50 1; do
    echo "c$c: paired, run by run (median): at 32: $(paired "$DIR/tide32-c$c" \
        "$DIR/nginx32-c$c")x, at 128: $(paired "$DIR/tide128-c$c" \
        "$DIR/nginx128-c$c")x"
done
# every run's req/s, to see how far the runs spread
for c in 50 1; do
    for v in $VARIANTS; do
        printf 'c%s %-9s runs: %s\n' "$c" "$v" \
            "$(awk '{ printf "%s ", $1 }' "$DIR/$v-c$c")"
    done
done
