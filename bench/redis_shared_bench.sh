#!/bin/sh
# The pooled Redis client's shared connections (auto-pipelining: streams
# 64 on at most 4 connections, spread, preconnect 20%: the configuration a
# user picks for throughput on a few connections, as the pool then opens
# the next connection once the callers fill a fifth of the open ones' room
# and spreads them over all 4, where pack or spread alone would put up to
# 64 callers on one connection in strict ping-pong) beside today's
# exclusive client (streams 1: a connection per command in flight),
# hiredis's own asynchronous context
# on libevent driven by the same callers (bench/redis_hiredis_async.c: one
# connection), and `redis-benchmark -P 16 -c 4` (16 commands pipelined on
# each of 4 connections), against one redis-server started here on
# 127.0.0.1, nothing saved, stopped at the end.
#
#   bench/redis_shared_bench.sh [--quick] [BUILD_DIR] [REQUESTS] [RUNS]
#
# GET and SET at c1, c10, c50, c64 and c200. The server is pinned to CPU
# 0 and every client to CPU 1 (taskset), and the variants are interleaved: for
# each cell, one run of each, the order turned by one each run; RUNS runs
# (preset 1), each cell the median. Each run prints requests/s, p50 and
# p99 latency, the connections it opened, and the client's CPU time per
# command (user + system, /usr/bin/time, over every command it sent, the
# warm-up's included). The goals at c50: shared >= 3x the exclusive
# client and >= 1.0x hiredis async on <= 4 connections, >= 0.7x
# redis-benchmark -P 16 -c 4; at c1 the shared client's p99 <= 1.1x the
# exclusive one's.
#
# The same shape as redis-benchmark's, for a fair cell: at c50 the shared
# client on 4 connections of 13 (--streams 13 --conns 4: 52 in flight at
# most) beside `redis-benchmark -P 13 -c 4` (52 in flight), and at c64 on
# 4 connections of 16 (--streams 16 --conns 4) beside -P 16 -c 4 (64 in
# flight). The row "shape" is that run; its ratio is the median of the
# run-by-run ratios. Beside them, the shared client at c200 (more in
# flight than -P 16 -c 4's 64) against -P 16 -c 4.
#
# CONCS="50" (the environment) runs those concurrencies only (preset "1
# 10 50 64 200"). With several runs the goals are given both as the ratio of
# the medians and as the median of the run-by-run ratios.
#
# Bounded: REQUESTS a cell (preset 40,000, a quarter at c1; --quick
# 2,000), every command under `timeout`.
set -eu

QUICK=0
if [ "${1:-}" = --quick ]; then
    QUICK=1
    shift
fi
BUILD=${1:-build}
if [ $QUICK -eq 1 ]; then
    N=${2:-2000}
else
    N=${2:-40000}
fi
RUNS=${3:-1}
CONCS=${CONCS:-1 10 50 64 200}
LOAD=$BUILD/demos/redis/redis_load
HIREDIS=$BUILD/bench/redis_hiredis_async

for tool in redis-server redis-benchmark redis-cli taskset /usr/bin/time; do
    if ! command -v $tool >/dev/null; then
        echo "redis_shared_bench: $tool is needed (Debian: redis-server, redis-tools, util-linux, time)"
        exit 77
    fi
done
for prog in "$LOAD" "$HIREDIS"; do
    if [ ! -x "$prog" ]; then
        echo "redis_shared_bench: $prog is missing (build with hiredis)"
        exit 1
    fi
done
if [ "$(nproc)" -ge 2 ]; then
    SERVER_CPU="taskset -c 0"
    CLIENT_CPU="taskset -c 1"
    PINNED="server on CPU 0, clients on CPU 1"
else
    SERVER_CPU=""
    CLIENT_CPU=""
    PINNED="not pinned (one CPU)"
fi

DIR=$(mktemp -d "${TMPDIR:-/tmp}/tide-redis-shared-XXXXXX")
PID=""
cleanup() {
    if [ -n "$PID" ]; then
        kill "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# a port in 20000-60000 that nothing listens on
i=0
while :; do
    PORT=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000))
    redis-cli -p "$PORT" ping >/dev/null 2>&1 || break
    i=$((i + 1))
    [ $i -lt 20 ] || { echo "redis_shared_bench: no free port"; exit 1; }
done
$SERVER_CPU redis-server --port "$PORT" --bind 127.0.0.1 --save '' \
    --appendonly no --daemonize no --maxclients 10000 --dir "$DIR" \
    --logfile "$DIR/redis.log" &
PID=$!
i=0
until redis-cli -p "$PORT" ping >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "redis_shared_bench: the server did not start"; exit 1; }
    sleep 0.05
done

# One run of a variant: NAME OP CONC, then the program and its arguments
# (the CSV line's columns: rps p50 p99, and connections in all); appends
# "rps p50_us p99_us conns cpu_us_per_command" to $DIR/NAME-OP-CONC.
# SENT: the commands it sends in all (its warm-up included).
measure() {
    name=$1 op=$2 conc=$3 sent=$4
    shift 4
    line=$(timeout 300 /usr/bin/time -f "%U %S" -o "$DIR/time" $CLIENT_CPU "$@") ||
        { echo "redis_shared_bench: $name $op c$conc failed: $line"; exit 1; }
    cpu=$(awk -v n="$sent" '{ printf "%.2f", ($1 + $2) * 1e6 / n }' "$DIR/time")
    echo "$line" | awk -F, -v cpu="$cpu" '{ print $5, $6, $7, $12, cpu }' >>"$DIR/$name-$op-$conc"
}
# the requests of a cell: at c1 a quarter (one in flight: the slowest
# cells, and their p99 is still over thousands)
count() {
    if [ "$1" -eq 1 ]; then echo $((N / 4)); else echo "$N"; fi
}
tide_excl() { # op conc
    n=$(count "$2")
    measure excl "$1" "$2" $((n + 10 * $2)) "$LOAD" --port "$PORT" -t "$1" -c "$2" -n "$n" --csv
}
tide_shared() {
    n=$(count "$2")
    measure shared "$1" "$2" $((n + 10 * $2)) "$LOAD" --port "$PORT" -t "$1" -c "$2" -n "$n" --csv \
        --streams 64 --conns 4 --spread --preconnect 20
}
# the shape of redis-benchmark -P K -c 4: K in flight on each of 4
# connections (c50: 13, as -P 13; c64: 16, as -P 16); none at other
# concurrencies
shape_k() {
    case $1 in 50) echo 13 ;; 64) echo 16 ;; *) echo 0 ;; esac
}
tide_shape() {
    k=$(shape_k "$2")
    [ "$k" -gt 0 ] || return 0
    n=$(count "$2")
    measure shape "$1" "$2" $((n + 10 * $2)) "$LOAD" --port "$PORT" -t "$1" -c "$2" -n "$n" --csv \
        --streams "$k" --conns 4
}
hiredis() {
    n=$(count "$2")
    measure hiredis "$1" "$2" $((n + 10 * $2)) "$HIREDIS" --port "$PORT" -t "$1" -c "$2" -n "$n"
}
# redis-benchmark's CSV: "test","rps","avg","min","p50","p95","p99","max"
# (latencies in ms), one line a test; 4 connections, CPU over all it sent
pipelined() { # op [depth, preset 16]
    op=$1 depth=${2:-16}
    m=$((N * 4))
    line=$(timeout 300 /usr/bin/time -f "%U %S" -o "$DIR/time" $CLIENT_CPU \
        redis-benchmark -p "$PORT" -t "$(echo "$op" | tr A-Z a-z)" -P "$depth" -c 4 -n "$m" --csv |
        tail -1)
    cpu=$(awk -v n="$m" '{ printf "%.2f", ($1 + $2) * 1e6 / n }' "$DIR/time")
    echo "$line" | tr -d '"' | awk -F, -v cpu="$cpu" \
        '{ printf "%s %.1f %.1f 4 %s\n", $2, $5 * 1000, $7 * 1000, cpu }' >>"$DIR/rbP$depth-$op-4"
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
for run in $(seq "$RUNS"); do
    for op in GET SET; do
        for c in $CONCS; do
            case $(((run + c) % 3)) in
            0) tide_excl $op $c; tide_shared $op $c; hiredis $op $c; tide_shape $op $c ;;
            1) tide_shared $op $c; tide_shape $op $c; hiredis $op $c; tide_excl $op $c ;;
            *) tide_shape $op $c; hiredis $op $c; tide_excl $op $c; tide_shared $op $c ;;
            esac
            # each shape cell beside the redis-benchmark run of its shape
            k=$(shape_k "$c")
            if [ "$k" -gt 0 ] && [ "$k" -ne 16 ]; then pipelined $op "$k"; fi
        done
        pipelined $op
    done
done

# the median of column COL of a cell's runs
median() {
    sort -g -k"$2" "$DIR/$1" | awk -v col="$2" '{ v[NR] = $col } END { print v[int((NR + 1) / 2)] }'
}
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'
}

echo "redis_shared_bench: $RUNS run(s) interleaved, $N requests a cell ($((N / 4)) at c1), $PINNED"
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $(nproc) CPUs"
echo "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
echo "shared: redis_load --streams 64 --conns 4 --spread --preconnect 20 (the callers spread over 4 connections);"
echo "shape: redis_load --streams K --conns 4, K 13 at c50 and 16 at c64 (redis-benchmark -P K -c 4's shape);"
echo "exclusive: redis_load (streams 1, a connection per caller); hiredis: one redisAsyncContext on libevent;"
echo "-P16, -P13: redis-benchmark -P 16 (13) -c 4 (-n $((N * 4)))"
printf "%-4s %-5s %-8s %9s %8s %8s %6s %8s\n" op conc client req/s p50_us p99_us conns cpu_us/cmd
# OP CONC CLIENT FILE: one line of the table, each figure FILE's median
row() {
    printf "%-4s %-5s %-8s %9s %8s %8s %6s %8s\n" "$1" "$2" "$3" "$(median "$4" 1)" \
        "$(median "$4" 2)" "$(median "$4" 3)" "$(median "$4" 4)" "$(median "$4" 5)"
}
for op in GET SET; do
    for c in $CONCS; do
        for v in shared excl hiredis shape; do
            f="$v-$op-$c"
            [ -f "$DIR/$f" ] || continue
            row $op c$c $v "$f"
        done
    done
    for d in 16 13; do
        f="rbP$d-$op-4"
        [ -f "$DIR/$f" ] || continue
        row $op c4 -P$d "$f"
    done
done
# A B: the median of the run-by-run ratios of their requests/s
paired() {
    paste -d' ' "$DIR/$1" "$DIR/$2" | awk '{ print $1 / $6 }' | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] }'
}
case " $CONCS " in *" 50 "*) HAS50=1 ;; *) HAS50=0 ;; esac
if [ $HAS50 -eq 1 ]; then
    echo
    echo "goals at c50 (shared on <= 4 connections): / exclusive >= 3, / hiredis >= 1.0, / -P16 >= 0.7;"
    echo "at c1: shared p99 / exclusive p99 <= 1.1. Each: the ratio of the medians (run-by-run median)"
    printf "%-4s %13s %13s %13s %13s %6s\n" op "/excl" "/hiredis" "/-P16" "c1 p99" conns
    for op in GET SET; do
        s=$(median "shared-$op-50" 1)
        c1="-"
        if [ -f "$DIR/shared-$op-1" ]; then
            c1="$(ratio "$(median "shared-$op-1" 3)" "$(median "excl-$op-1" 3)")"
        fi
        printf "%-4s %13s %13s %13s %13s %6s\n" $op \
            "$(ratio "$s" "$(median "excl-$op-50" 1)") ($(paired "shared-$op-50" "excl-$op-50"))" \
            "$(ratio "$s" "$(median "hiredis-$op-50" 1)") ($(paired "shared-$op-50" "hiredis-$op-50"))" \
            "$(ratio "$s" "$(median "rbP16-$op-4" 1)") ($(paired "shared-$op-50" "rbP16-$op-4"))" \
            "$c1" "$(median "shared-$op-50" 4)"
    done
fi
# the fair cells: the same number in flight on 4 connections as
# redis-benchmark's, the median of the run-by-run ratios
echo
echo "same shape (4 connections, as many in flight), median of run-by-run ratios of req/s:"
printf "%-4s %19s %19s %19s %19s\n" op "shared c50 / -P13" "shape c50 / -P13" "shape c64 / -P16" \
    "shared c200 / -P16"
for op in GET SET; do
    a="-" b="-" c="-" d="-"
    [ -f "$DIR/shape-$op-50" ] && a=$(paired "shared-$op-50" "rbP13-$op-4") && b=$(paired "shape-$op-50" "rbP13-$op-4")
    [ -f "$DIR/shape-$op-64" ] && c=$(paired "shape-$op-64" "rbP16-$op-4")
    [ -f "$DIR/shared-$op-200" ] && d=$(paired "shared-$op-200" "rbP16-$op-4")
    printf "%-4s %19s %19s %19s %19s\n" $op "$a" "$b" "$c" "$d"
done
