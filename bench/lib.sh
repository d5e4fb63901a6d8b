# What the HTTP benches (proxy_bench.sh, proxy_h2_bench.sh,
# demand_replay.sh) share, sourced by each after it has set BENCH (its
# name, for messages and its scratch directory) and PYTHON. Sourced, it
# sets CPU (the taskset that pins a program to the last CPU, or nothing)
# and PINNED (that, said for a person), makes DIR (a scratch directory)
# and PIDS (programs to stop), and stops them and removes DIR on exit.

CPU=""
PINNED="not pinned"
if command -v taskset >/dev/null; then
    CPU="taskset -c $(($(nproc) - 1))"
    PINNED="everything on CPU $(($(nproc) - 1))"
fi

HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)

DIR=$(mktemp -d "${TMPDIR:-/tmp}/tide-$BENCH-XXXXXX")
chmod 755 "$DIR"
PIDS=""
cleanup() {
    for p in $PIDS; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$DIR"
}
trap cleanup EXIT
# the EXIT trap cleans up: a signal's own trap would return into the run
trap 'exit 1' INT TERM

fail() {
    echo "$BENCH: $*" >&2
    exit 1
}

# a port free on 127.0.0.1 now (the kernel's choice)
free_port() {
    "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# PORT [PATH]: waits until an HTTP server answers there (10 s at most)
wait_port() {
    i=0
    until curl -s -o /dev/null "http://127.0.0.1:$1${2:-/}"; do
        i=$((i + 1))
        [ $i -lt 200 ] || fail "nothing answers on $1"
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
    [ -n "$w" ] || fail "no worker under nginx $1"
    echo "$w"
}

# D BODY: D/nginx.conf, one worker in the foreground, its files in D,
# connections kept as long as a bench runs, BODY inside its http block
nginx_conf() {
    mkdir -p "$1"
    cat >"$1/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $1/body; proxy_temp_path $1/proxy;
    fastcgi_temp_path $1/fcgi; uwsgi_temp_path $1/uwsgi;
    scgi_temp_path $1/scgi;
    keepalive_requests 10000000;
    keepalive_timeout 600s;
$2
}
CONF
}

# D PORT SERVER [PATH]: HAProxy 2.6 with its files in D, one thread,
# listening on PORT, its one backend server SERVER ("name address
# options"), idle server connections shared by every client (http-reuse
# always) and kept as long as a bench runs; checked, started pinned, its
# pid in STARTED (and PIDS), answering on PORT (at PATH) when this returns
start_haproxy_at() {
    mkdir -p "$1"
    cat >"$1/haproxy.cfg" <<CONF
global
    nbthread 1
    maxconn 8192
defaults
    mode http
    timeout connect 2s
    timeout client 600s
    timeout server 600s
    timeout http-keep-alive 600s
    timeout queue 60s
    http-reuse always
frontend fe
    bind 127.0.0.1:$2
    default_backend be
backend be
    server $3
CONF
    "$HAPROXY" -c -q -f "$1/haproxy.cfg" || fail "HAProxy refuses $1/haproxy.cfg"
    $CPU "$HAPROXY" -db -f "$1/haproxy.cfg" >"$1/haproxy.log" 2>&1 &
    STARTED=$!
    PIDS="$PIDS $STARTED"
    wait_port "$2" "${4:-/}"
}
