#!/bin/sh
# The group routing around trouble, beside nginx `least_conn` and HAProxy
# `leastconn`, in front of the same four origins (tests/group/origin.py,
# 10 ms a request) started here on 127.0.0.1 and stopped at the end.
#
#   bench/group_bench.sh [BUILD_DIR] [SECONDS] [CLIENTS]
#
# The same closed-loop client (tests/group/route_client: CLIENTS clients,
# each request GET /c<client>/<seq>, every response checked to be its own)
# drives four variants, with the same load:
#
#   proxy     tidepool-proxy (demos/proxy) in front of the four origins:
#             --slow-start 5000 --retry-503, its ward otherwise as shipped
#             (a STRIKES breaker, 5 in a row, 5 s cooldown; connects backed
#             off); route_client --via it
#   group     tidepool's group in process, no proxy: route_client with one
#             pool per origin (a 5xx or a broken exchange is discarded and
#             retried with tide_group_retry within the budget), slow start
#             5 s
#   nginx     nginx least_conn, `proxy_next_upstream error timeout
#             http_503`, passive max_fails 1 (no slow start outside its
#             commercial edition)
#   haproxy   HAProxy leastconn, `retries 2`, `retry-on conn-failure
#             empty-response 503`, `option redispatch`, checks every
#             second, `slowstart 5s`
#
#   fast     all four at 10 ms: the p99 the next one is held to
#   slow     origin 0 at 100 ms (10x): its share of requests, p99 / fast p99
#   outage   origin 0 killed at 2 s, started again at 4 s, the run going
#            on 16 s more: client errors, and its share of the origins'
#            requests each second after it came back (the ramp; fair 25%)
#   brownout origins 0 and 1 answer 503 throughout: requests the origins
#            received over client requests, and client errors
#
# Interleaved: each scenario runs once for every variant before the next
# scenario. Pinned: the origins on CPU 1, the client and the proxies on
# CPU 0 (the machine has two). Prints one table. Run it under
# `flock /tmp/bench.lock` beside other benchmarks.
set -eu

BUILD=${1:-build}
SECONDS_RUN=${2:-6}
CLIENTS=${3:-8}
HERE=$(cd "$(dirname "$0")" && pwd)
ORIGIN="$HERE/../tests/group/origin.py"
CLIENT=$BUILD/tests/group/route_client
PROXY=$BUILD/demos/proxy/tidepool-proxy
for tool in nginx haproxy python3 curl taskset awk; do
    command -v $tool >/dev/null || { echo "group_bench: no $tool" >&2; exit 77; }
done
for b in "$CLIENT" "$PROXY"; do
    [ -x "$b" ] || { echo "group_bench: no $b (build first)" >&2; exit 1; }
done

DIR=$(mktemp -d /tmp/group-bench.XXXXXX)
BASE=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom) % 30000 ))
PX_NGINX=$((BASE + 10))
PX_HAPROXY=$((BASE + 11))
PX_TIDEPOOL=$((BASE + 12))
PIDS=""

origin_start() { # k delay_ms
    taskset -c 1 python3 "$ORIGIN" $((BASE + $1)) "$2" >"$DIR/o$1.log" 2>&1 &
    echo $! >"$DIR/o$1.pid"
    for _ in $(seq 50); do
        grep -q ready "$DIR/o$1.log" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "group_bench: origin $1 did not start" >&2
    return 1
}
origin_stop() { kill "$(cat "$DIR/o$1.pid")" 2>/dev/null || true; wait "$(cat "$DIR/o$1.pid")" 2>/dev/null || true; }
ctl() { curl -s -o /dev/null "http://127.0.0.1:$((BASE + $1))/_ctl?$2"; }
count() { curl -s "http://127.0.0.1:$((BASE + $1))/_count" 2>/dev/null || echo 0; }
counts() { echo $(( $(count 0) + $(count 1) + $(count 2) + $(count 3) )); }

cleanup() {
    for k in 0 1 2 3; do origin_stop $k; done
    [ -f "$DIR/nginx.pid" ] && kill "$(cat "$DIR/nginx.pid")" 2>/dev/null || true
    [ -n "$PIDS" ] && kill $PIDS 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

for k in 0 1 2 3; do origin_start $k 10; done

mkdir -p "$DIR/nginx"
cat >"$DIR/nginx.conf" <<EOF
worker_processes 1;
pid $DIR/nginx.pid;
error_log $DIR/nginx/error.log crit;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $DIR/nginx; proxy_temp_path $DIR/nginx;
  fastcgi_temp_path $DIR/nginx; uwsgi_temp_path $DIR/nginx; scgi_temp_path $DIR/nginx;
  upstream origins {
    least_conn;
    server 127.0.0.1:$BASE; server 127.0.0.1:$((BASE + 1));
    server 127.0.0.1:$((BASE + 2)); server 127.0.0.1:$((BASE + 3));
    keepalive 128; keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:$PX_NGINX;
    keepalive_requests 1000000;
    location / {
      proxy_pass http://origins;
      proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_next_upstream error timeout http_503;
      proxy_connect_timeout 1s;
    }
  }
}
EOF
taskset -c 0 nginx -p "$DIR" -e "$DIR/nginx/error.log" -c "$DIR/nginx.conf"

cat >"$DIR/haproxy.cfg" <<EOF
global
  nbthread 1
defaults
  mode http
  timeout connect 1s
  timeout client 30s
  timeout server 30s
  http-reuse always
  retries 2
  retry-on conn-failure empty-response 503
  option redispatch 1
frontend fe
  bind 127.0.0.1:$PX_HAPROXY
  default_backend be
backend be
  balance leastconn
  default-server check inter 1s fall 2 rise 2 slowstart 5s maxconn 1000
  server o0 127.0.0.1:$BASE
  server o1 127.0.0.1:$((BASE + 1))
  server o2 127.0.0.1:$((BASE + 2))
  server o3 127.0.0.1:$((BASE + 3))
EOF
taskset -c 0 haproxy -db -f "$DIR/haproxy.cfg" >"$DIR/haproxy.log" 2>&1 &
HAPROXY_PID=$!
taskset -c 0 "$PROXY" --listen 127.0.0.1:$PX_TIDEPOOL \
    --upstream 127.0.0.1:$BASE --upstream 127.0.0.1:$((BASE + 1)) \
    --upstream 127.0.0.1:$((BASE + 2)) --upstream 127.0.0.1:$((BASE + 3)) \
    --slow-start 5000 --retry-503 >"$DIR/proxy.log" 2>&1 &
PIDS="$HAPROXY_PID $!"
sleep 1
for port in $PX_NGINX $PX_HAPROXY $PX_TIDEPOOL; do
    curl -s -o /dev/null "http://127.0.0.1:$port/" || {
        echo "group_bench: no proxy on $port" >&2
        cat "$DIR/haproxy.log" "$DIR/nginx/error.log" "$DIR/proxy.log" >&2
        exit 1
    }
done

UPSTREAMS="--upstream 127.0.0.1:$BASE --upstream 127.0.0.1:$((BASE + 1)) --upstream 127.0.0.1:$((BASE + 2)) --upstream 127.0.0.1:$((BASE + 3))"

run() { # variant seconds -> route_client's output in $DIR/out
    case $1 in
    group) set -- $UPSTREAMS --slow-start 5000 --seconds "$2" ;;
    proxy) set -- --via --upstream 127.0.0.1:$PX_TIDEPOOL --seconds "$2" ;;
    nginx) set -- --via --upstream 127.0.0.1:$PX_NGINX --seconds "$2" ;;
    haproxy) set -- --via --upstream 127.0.0.1:$PX_HAPROXY --seconds "$2" ;;
    esac
    taskset -c 0 "$CLIENT" --clients "$CLIENTS" "$@" >"$DIR/out"
}
calc() { awk "BEGIN { print $1 }"; }
val() { awk -v k="$1" '$1 == k { print $2 }' "$DIR/out"; }
reset_origins() { for k in 0 1 2 3; do ctl $k "delay_ms=10&status=200"; done; }
VARIANTS="proxy group nginx haproxy"

printf '%-9s %-8s %s\n' scenario variant figures
for v in $VARIANTS; do
    reset_origins
    run $v 2 # warm-up: connections made, averages taken
    before=$(count 0); all=$(counts)
    run $v "$SECONDS_RUN"
    eval "fast_p99_$v=$(val p99_ms)"
    printf '%-9s %-8s req %s err %s wrong %s p50 %sms p99 %sms origin0 %.1f%%\n' \
        fast $v "$(val requests)" "$(val errors)" "$(val wrong)" "$(val p50_ms)" \
        "$(val p99_ms)" "$(calc "($(count 0) - $before) * 100 / ($(counts) - $all)")"
done
for v in $VARIANTS; do
    reset_origins
    ctl 0 delay_ms=100
    run $v 2
    before=$(count 0); all=$(counts)
    run $v "$SECONDS_RUN"
    eval "fast_p99=\$fast_p99_$v"
    printf '%-9s %-8s req %s err %s wrong %s p50 %sms p99 %sms (%.2fx fast) origin0 %.2f%%\n' \
        slow $v "$(val requests)" "$(val errors)" "$(val wrong)" "$(val p50_ms)" \
        "$(val p99_ms)" "$(calc "$(val p99_ms) / ($fast_p99 + 0.000001)")" \
        "$(calc "($(count 0) - $before) * 100 / ($(counts) - $all)")"
done
for v in $VARIANTS; do
    # outage: killed at 2 s, back at 4 s; origin 0's share of the origins'
    # requests each second after it came back, while the run goes on
    reset_origins
    run $v 2
    run $v $((SECONDS_RUN + 14)) &
    CLIENT_PID=$!
    sleep 2
    origin_stop 0
    sleep 2
    origin_start 0 10
    : >"$DIR/ramp"
    while kill -0 $CLIENT_PID 2>/dev/null; do
        echo "$(count 0) $(counts)" >>"$DIR/ramp"
        sleep 1
    done
    wait $CLIENT_PID
    ramp=$(awk 'NR > 1 && $2 > q { printf "%s%.0f%%", sep, 100 * ($1 - p) / ($2 - q); sep = " " } { p = $1; q = $2 }' "$DIR/ramp")
    printf '%-9s %-8s req %s err %s wrong %s p99 %sms origin0 share by second after return: %s\n' \
        outage $v "$(val requests)" "$(val errors)" "$(val wrong)" "$(val p99_ms)" "$ramp"
done
for v in $VARIANTS; do
    # brown-out: two of four answer 503
    reset_origins
    run $v 2
    ctl 0 status=503; ctl 1 status=503
    all=$(counts)
    run $v "$SECONDS_RUN"
    got=$(( $(counts) - all ))
    printf '%-9s %-8s req %s err %s (%.2f%%) wrong %s p99 %sms origin attempts / client requests %.3f\n' \
        brownout $v "$(val requests)" "$(val errors)" \
        "$(calc "$(val errors) * 100 / ($(val requests) + 0.000001)")" "$(val wrong)" \
        "$(val p99_ms)" "$(calc "$got / ($(val requests) + 0.000001)")"
    reset_origins
done
