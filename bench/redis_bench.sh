#!/bin/sh
# The pooled Redis client (demos/redis/redis_load) beside redis-benchmark,
# against one redis-server started here on 127.0.0.1 (plain and TLS ports,
# a certificate made now), nothing saved, stopped at the end.
#
#   bench/redis_bench.sh [BUILD_DIR] [REQUESTS] [RUNS]
#
# GET and SET at c1, c10 and c50 through the client, beside
# `redis-benchmark -k 1` (keep connections) and `-k 0` (a new connection per
# request), and at c10 over TLS beside `redis-benchmark --tls`, plus the
# client with a new TLS connection per request (--reconnect). The server is
# pinned to CPU 0 and every client to CPU 1 when taskset is there, and the
# variants are interleaved: run 1 of each, then run 2, ... Each cell prints
# the median of the runs: requests/s, and for the client p50/p99 and the
# connections it opened per 1,000 requests after its warm-up (steady state).
# Bounded: REQUESTS per cell (preset 20,000; the new-connection cells a
# quarter of it, not to run out of ports), RUNS runs (preset 3), and every
# command under `timeout`.
set -eu

BUILD=${1:-build}
N=${2:-20000}
RUNS=${3:-3}
NEW_N=$((N / 4))
LOAD=$BUILD/demos/redis/redis_load

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "redis_bench: redis-server and redis-benchmark are needed (Debian: redis-server, redis-tools)"
    exit 77
fi
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
trap cleanup EXIT INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
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

for run in $(seq "$RUNS"); do
    for op in GET SET; do
        for c in 1 10 50; do
            tide "tide-$op-$c" $op $c "$N"
            bench "k1-$op-$c" $op $c "$N" -k 1
            bench "k0-$op-$c" $op $c "$NEW_N" -k 0
        done
    done
    tide tls-tide-GET-10 GET 10 "$N" --port "$TLS_PORT" --tls --cacert "$DIR/cert.pem"
    bench tls-bench-GET-10 GET 10 "$N" -p "$TLS_PORT" --tls --cacert "$DIR/cert.pem"
    tide tls-new-GET-10 GET 10 "$NEW_N" --port "$TLS_PORT" --tls --cacert "$DIR/cert.pem" --reconnect
done

# the median of column COL (1-based) of a cell's runs
median() {
    sort -n -k"$2" "$DIR/$1" | awk -v col="$2" '{v[NR]=$col} END {print v[int((NR+1)/2)]}'
}
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}'
}

echo "redis_bench: $RUNS runs interleaved, $N requests a cell ($NEW_N with a new connection per request), $PINNED"
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $(nproc) CPUs"
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
