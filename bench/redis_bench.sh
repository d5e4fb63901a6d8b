#!/bin/sh
# The pooled Redis client (demos/redis/redis_load) beside redis-benchmark,
# against one redis-server started here on 127.0.0.1 (plain and TLS ports,
# a certificate made now), nothing saved, stopped at the end.
#
#   bench/redis_bench.sh [--quick] [BUILD_DIR] [REQUESTS] [RUNS]
#
# GET and SET at c1, c10 and c50 through the client, beside
# `redis-benchmark -k 1` (keep connections) and `-k 0` (a new connection per
# request), and at c10 over TLS beside `redis-benchmark --tls`, plus the
# client with a new TLS connection per request (--reconnect). The server is
# pinned to CPU 0 and every client to CPU 1 when taskset is there, and the
# variants are interleaved: run 1 of each, then run 2, ...; the client and
# `-k 1` run one after the other, the client first in odd runs and second
# in even ones. Each cell prints the median of the runs: requests/s, and
# for the client p50/p99 and the connections it opened per 1,000 requests
# after its warm-up (steady state). The goal's ratio, the client's
# requests/s over `-k 1`'s at c50, is given both as the ratio of the
# medians and as the median of the run-by-run ratios.
#
# Syscalls a command at c50, GET and SET, the client beside
# `redis-benchmark -k 1`: each program runs whole under `strace -f` over
# SYS_N and then 3 x SYS_N commands (preset 2,000), and the difference of
# the two traces over the 2 x SYS_N commands between is what a command
# costs (starting, connecting, warming up and exiting fall out), by
# syscall, the recvfroms with MSG_PEEK and the ioctl(FIONREAD)s apart
# (bench/syscalls.py); 3 passes, the median shown. strace stops the program
# at every syscall, so where perf can count the syscall tracepoints (root,
# linux-perf) the same difference is also taken without strace, over 10 x
# as many commands ("perf").
#
# Bounded: REQUESTS per cell (preset 20,000; the new-connection cells a
# quarter of it, not to run out of ports), RUNS runs (preset 3), and every
# command under `timeout`. --quick: 2,000 requests a cell, one run, one
# strace pass over 500 and 1,500 commands and no perf: well under a
# minute, to show in CI that the bench still runs.
set -eu

QUICK=0
if [ "${1:-}" = --quick ]; then
    QUICK=1
    shift
fi
BUILD=${1:-build}
if [ $QUICK -eq 1 ]; then
    N=${2:-2000}
    RUNS=${3:-1}
    SYS_N=500
    PASSES=1
else
    N=${2:-20000}
    RUNS=${3:-3}
    SYS_N=2000
    PASSES=3
fi
NEW_N=$((N / 4))
LOAD=$BUILD/demos/redis/redis_load
HERE=$(cd "$(dirname "$0")" && pwd)

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null ||
    ! command -v strace >/dev/null || ! command -v python3 >/dev/null; then
    echo "redis_bench: redis-server, redis-benchmark, strace and python3 are needed (Debian: redis-server, redis-tools, strace, python3)"
    exit 77
fi
# the interpreter itself, not a version manager's shim that takes a second
# to find it on each call
PYTHON=$(python3 -c 'import sys; print(sys.executable)')
if [ ! -x "$LOAD" ]; then
    echo "redis_bench: $LOAD is missing (build with hiredis)"
    exit 1
fi

if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    SERVER_CPU="taskset -c 0"
    CLIENT_CPU="taskset -c 1"
    PINNED="server on CPU 0, clients on CPU 1"
else
    SERVER_CPU=""
    CLIENT_CPU=""
    PINNED="not pinned"
fi

DIR=$(mktemp -d "${TMPDIR:-/tmp}/tide-redis-bench-XXXXXX")
PID=""
cleanup() {
    if [ -n "$PID" ]; then
        kill "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$DIR"
}
trap cleanup EXIT
# the EXIT trap cleans up: a signal's own trap would return into the run
trap 'exit 1' INT TERM

free_port() {
    "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -days 1 -keyout "$DIR/key.pem" -out "$DIR/cert.pem" 2>/dev/null
PORT=$(free_port)
TLS_PORT=$(free_port)
$SERVER_CPU redis-server --port "$PORT" --tls-port "$TLS_PORT" \
    --tls-cert-file "$DIR/cert.pem" --tls-key-file "$DIR/key.pem" \
    --tls-ca-cert-file "$DIR/cert.pem" --tls-auth-clients no \
    --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    --maxclients 10000 --dir "$DIR" --logfile "$DIR/redis.log" &
PID=$!
i=0
until redis-cli -p "$PORT" ping >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "redis_bench: the server did not start"; exit 1; }
    sleep 0.05
done

# one cell: NAME, then the command printing a CSV line; the requests/s
# (and for the client p50, p99, connections per 1,000) go to $DIR/NAME
tide() { # name op conc count [extra]
    name=$1 op=$2 conc=$3 count=$4
    shift 4
    timeout 120 $CLIENT_CPU "$LOAD" --port "$PORT" -t "$op" -c "$conc" -n "$count" --csv "$@" |
        awk -F, '{print $5, $6, $7, $9}' >>"$DIR/$name"
}
bench() { # name op conc count [extra]
    name=$1 op=$2 conc=$3 count=$4
    shift 4
    timeout 120 $CLIENT_CPU redis-benchmark -p "$PORT" -t "$(echo "$op" | tr A-Z a-z)" \
        -c "$conc" -n "$count" --csv "$@" 2>/dev/null |
        awk -F, 'NR==2 {gsub(/"/,"",$2); print $2}' >>"$DIR/$name"
}

# what else the machine was doing: figures taken under another load are
# lower all round, and their ratios less steady
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
for run in $(seq "$RUNS"); do
    for op in GET SET; do
        for c in 1 10 50; do
            if [ $((run % 2)) -eq 1 ]; then
                tide "tide-$op-$c" $op $c "$N"
                bench "k1-$op-$c" $op $c "$N" -k 1
            else
                bench "k1-$op-$c" $op $c "$N" -k 1
                tide "tide-$op-$c" $op $c "$N"
            fi
            bench "k0-$op-$c" $op $c "$NEW_N" -k 0
        done
    done
    tide tls-tide-GET-10 GET 10 "$N" --port "$TLS_PORT" --tls --cacert "$DIR/cert.pem"
    bench tls-bench-GET-10 GET 10 "$N" -p "$TLS_PORT" --tls --cacert "$DIR/cert.pem"
    tide tls-new-GET-10 GET 10 "$NEW_N" --port "$TLS_PORT" --tls --cacert "$DIR/cert.pem" --reconnect
done

# Syscalls a command at c50. NAME OP COUNT PASS [PROGRAM...]: PROGRAM
# (the client or redis-benchmark, its arguments) under strace, its trace
# in $DIR/NAME-OP-PASS-COUNT.trace
traced() {
    name=$1 op=$2 count=$3 pass=$4
    shift 4
    timeout 300 $CLIENT_CPU strace -f -s 0 -e signal=none \
        -o "$DIR/$name-$op-$pass-$count.trace" "$@" >/dev/null 2>"$DIR/traced.err" ||
        { echo "redis_bench: $name under strace failed: $(cat "$DIR/traced.err")"; exit 1; }
}
# NAME OP COUNT [PROGRAM...]: the same under perf stat
counted() {
    name=$1 op=$2 count=$3
    shift 3
    timeout 120 $CLIENT_CPU "$PYTHON" "$HERE/syscalls.py" perfstat \
        "$DIR/$name-$op-$count.csv" -- "$@" >/dev/null 2>"$DIR/traced.err" ||
        { echo "redis_bench: $name under perf failed: $(cat "$DIR/traced.err")"; exit 1; }
}
sys_run() { # traced|counted OP COUNT [PASS]
    how=$1 op=$2 count=$3
    shift 3
    $how tide "$op" "$count" "$@" "$LOAD" --port "$PORT" -t "$op" -c 50 -n "$count" --csv
    $how k1 "$op" "$count" "$@" redis-benchmark -p "$PORT" \
        -t "$(echo "$op" | tr A-Z a-z)" -c 50 -n "$count" -k 1 --csv
}
SYS_N2=$((3 * SYS_N))
for pass in $(seq "$PASSES"); do
    for op in GET SET; do
        for count in "$SYS_N" "$SYS_N2"; do
            sys_run traced "$op" "$count" "$pass"
        done
        for who in tide k1; do
            "$PYTHON" "$HERE/syscalls.py" strace "$DIR/strace-$who-$op-$pass.json" \
                "$SYS_N" "$DIR/$who-$op-$pass-$SYS_N.trace" \
                "$SYS_N2" "$DIR/$who-$op-$pass-$SYS_N2.trace"
            rm -f "$DIR/$who-$op-$pass-"*.trace
        done
    done
done
PERF=0
if [ $QUICK -eq 0 ] && "$PYTHON" "$HERE/syscalls.py" perfworks 2>/dev/null; then
    PERF=1
    for op in GET SET; do
        for count in $((10 * SYS_N)) $((10 * SYS_N2)); do
            sys_run counted "$op" "$count"
        done
        for who in tide k1; do
            "$PYTHON" "$HERE/syscalls.py" perf "$DIR/perf-$who-$op.json" \
                $((10 * SYS_N)) "$DIR/$who-$op-$((10 * SYS_N)).csv" \
                $((10 * SYS_N2)) "$DIR/$who-$op-$((10 * SYS_N2)).csv"
        done
    done
fi

# the median of column COL (1-based) of a cell's runs
median() {
    sort -n -k"$2" "$DIR/$1" | awk -v col="$2" '{v[NR]=$col} END {print v[int((NR+1)/2)]}'
}
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}'
}
# CELL PEER_CELL: the median of the run-by-run ratios of their requests/s
paired() {
    paste -d' ' "$DIR/$1" "$DIR/$2" | awk '{ print $1 / $5 }' | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] }'
}

echo "redis_bench: $RUNS runs interleaved, $N requests a cell ($NEW_N with a new connection per request), $PINNED"
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $(nproc) CPUs"
echo "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
printf "%-4s %-4s %10s %9s %9s %8s %10s %10s %7s %7s\n" \
    op conc tide_rps p50_us p99_us conn/1k "-k 1 rps" "-k 0 rps" "/ -k 1" "/ -k 0"
for op in GET SET; do
    for c in 1 10 50; do
        t=$(median "tide-$op-$c" 1)
        k1=$(median "k1-$op-$c" 1)
        k0=$(median "k0-$op-$c" 1)
        printf "%-4s %-4s %10s %9s %9s %8s %10s %10s %7s %7s\n" $op c$c "$t" \
            "$(median "tide-$op-$c" 2)" "$(median "tide-$op-$c" 3)" \
            "$(median "tide-$op-$c" 4)" "$k1" "$k0" "$(ratio "$t" "$k1")" \
            "$(ratio "$t" "$k0")"
    done
done
t=$(median tls-tide-GET-10 1)
b=$(median tls-bench-GET-10 1)
n=$(median tls-new-GET-10 1)
echo "TLS GET c10: tide $t rps (p50 $(median tls-tide-GET-10 2) us, p99 $(median tls-tide-GET-10 3) us, $(median tls-tide-GET-10 4) conn/1k)," \
    "redis-benchmark --tls $b rps ($(ratio "$t" "$b")x), a new TLS connection per request $n rps (pooled $(ratio "$t" "$n")x)"
echo
echo "the goal at c50: the client's requests/s over redis-benchmark -k 1's >= 1.10, as the ratio"
echo "of the medians and the median of the run-by-run ratios (met: both are; unclear: one is)"
for op in GET SET; do
    r=$(ratio "$(median "tide-$op-50" 1)" "$(median "k1-$op-50" 1)")
    p=$(paired "tide-$op-50" "k1-$op-50")
    printf "%-4s %s %s %s\n" $op "$r" "$p" "$(awk -v a="$r" -v b="$p" 'BEGIN {
        if (a >= 1.10 && b >= 1.10) print "met"
        else if (a < 1.10 && b < 1.10) print "below"
        else print "unclear" }')"
done
echo
set --
for op in GET SET; do
    for who in tide k1; do
        label="tidepool client $op"
        [ $who = tide ] || label="redis-benchmark -k 1 $op"
        files=""
        for pass in $(seq "$PASSES"); do
            files="$files${files:++}$DIR/strace-$who-$op-$pass.json"
        done
        [ $PERF -eq 0 ] || files="$files,$DIR/perf-$who-$op.json"
        set -- "$@" "$label=$files"
    done
done
passes="one pass"
[ "$PASSES" -eq 1 ] || passes="the median of $PASSES passes"
"$PYTHON" "$HERE/syscalls.py" table "syscalls a command at c50: strace -f over the whole program, $SYS_N then $SYS_N2 commands, the difference
over the $((SYS_N2 - SYS_N)) between, $passes (peek: recvfrom with MSG_PEEK; empty: of them, those that found nothing)" "$@"
if [ $PERF -eq 1 ]; then
    echo "perf: the same difference counted by perf's syscall tracepoints, over $((10 * SYS_N)) then $((10 * SYS_N2)) commands, no strace"
else
    echo "(no perf figures: --quick, or perf cannot count syscall tracepoints here)"
fi
