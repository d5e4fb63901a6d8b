#!/bin/sh
# The pooled SMTP sender (demos/smtp/smtp_load) with session reuse beside a
# new session per message, in plaintext and with STARTTLS, at c1 and c8,
# against one aiosmtpd started here on 127.0.0.1 (Debian's
# python3-aiosmtpd, the Sink handler: every message accepted and dropped;
# a plaintext port, and a STARTTLS port with a certificate made now),
# stopped at the end.
#
#   bench/smtp_bench.sh [BUILD_DIR] [MESSAGES] [RUNS]
#
# The server is pinned to CPU 0 and the sender to CPU 1 when taskset is
# there, and the variants are interleaved: run 1 of each, then run 2, ...
# Each cell prints the median of the runs: messages/s, p50/p99 (ms), and
# the sessions opened per 1,000 messages after the warm-up (steady state;
# the per-session message limit is lifted for the reuse cells, so what
# is counted is the reuse alone).
# Bounded: MESSAGES per reuse cell (preset 2,000; the new-session cells a
# quarter of it), RUNS runs (preset 3), every command under `timeout`.
set -eu

BUILD=${1:-build}
N=${2:-2000}
RUNS=${3:-3}
NEW_N=$((N / 4))
LOAD=$BUILD/demos/smtp/smtp_load
PY=/usr/bin/python3

if ! "$PY" -c 'import aiosmtpd.smtp' 2>/dev/null; then
    echo "smtp_bench: python3-aiosmtpd is needed (Debian: python3-aiosmtpd)"
    exit 77
fi
if [ ! -x "$LOAD" ]; then
    echo "smtp_bench: $LOAD is missing"
    exit 1
fi

if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    SERVER_CPU="taskset -c 0"
    CLIENT_CPU="taskset -c 1"
    PINNED="server on CPU 0, sender on CPU 1"
else
    SERVER_CPU=""
    CLIENT_CPU=""
    PINNED="not pinned"
fi

DIR=$(mktemp -d "${TMPDIR:-/tmp}/tide-smtp-bench-XXXXXX")
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
    "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() {
    i=0
    until "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $1), 1).close()" 2>/dev/null; do
        i=$((i + 1))
        [ $i -lt 100 ] || { echo "smtp_bench: the server on $1 did not start"; exit 1; }
        sleep 0.05
    done
}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -days 1 -keyout "$DIR/key.pem" -out "$DIR/cert.pem" 2>/dev/null
PORT=$(free_port)
TLS_PORT=$(free_port)
$SERVER_CPU "$PY" -u -m aiosmtpd -n -l "127.0.0.1:$PORT" -c aiosmtpd.handlers.Sink \
    >"$DIR/plain.log" 2>&1 &
PIDS="$!"
$SERVER_CPU "$PY" -u -m aiosmtpd -n -l "127.0.0.1:$TLS_PORT" -c aiosmtpd.handlers.Sink \
    --tlscert "$DIR/cert.pem" --tlskey "$DIR/key.pem" >"$DIR/tls.log" 2>&1 &
PIDS="$PIDS $!"
wait_port "$PORT"
wait_port "$TLS_PORT"

# one cell: NAME CONC COUNT [extra]; messages/s, p50, p99 and sessions per
# 1,000 messages go to $DIR/NAME
cell() {
    name=$1 conc=$2 count=$3
    shift 3
    timeout 300 $CLIENT_CPU "$LOAD" -c "$conc" -n "$count" --csv "$@" |
        awk -F, '{print $5, $6, $7, $9}' >>"$DIR/$name"
}
TLS="--port $TLS_PORT --starttls --cacert $DIR/cert.pem"

for run in $(seq "$RUNS"); do
    for c in 1 8; do
        cell "plain-reuse-$c" $c "$N" --port "$PORT" --max-messages 1000000
        cell "plain-new-$c" $c "$NEW_N" --port "$PORT" --per-message
        cell "tls-reuse-$c" $c "$N" $TLS --max-messages 1000000
        cell "tls-new-$c" $c "$NEW_N" $TLS --per-message
    done
done

median() {
    sort -n -k"$2" "$DIR/$1" | awk -v col="$2" '{v[NR]=$col} END {print v[int((NR+1)/2)]}'
}
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}'
}

echo "smtp_bench: $RUNS runs interleaved, $N messages a reuse cell ($NEW_N with a new session per message), 1 recipient, 1 KB, $PINNED"
echo "aiosmtpd $("$PY" -c 'import aiosmtpd; print(aiosmtpd.__version__)'), $(nproc) CPUs"
printf "%-9s %-4s %12s %8s %8s %9s %12s %8s %8s %7s\n" \
    mode conc reuse_msg/s p50_ms p99_ms sess/1k new_msg/s p50_ms p99_ms reuse/new
for mode in plain tls; do
    for c in 1 8; do
        r=$(median "$mode-reuse-$c" 1)
        n=$(median "$mode-new-$c" 1)
        printf "%-9s %-4s %12s %8s %8s %9s %12s %8s %8s %7s\n" \
            "$([ $mode = tls ] && echo starttls || echo plain)" c$c "$r" \
            "$(median "$mode-reuse-$c" 2)" "$(median "$mode-reuse-$c" 3)" \
            "$(median "$mode-reuse-$c" 4)" "$n" "$(median "$mode-new-$c" 2)" \
            "$(median "$mode-new-$c" 3)" "$(ratio "$r" "$n")"
    done
done
