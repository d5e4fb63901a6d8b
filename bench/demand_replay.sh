#!/bin/sh
# Connections by demand against the proxies people run: bench_demand's
# square wave (100 and 10 callers by turns, 2 s each, WAVES times, then 10
# callers for AFTER s) as HTTP requests through nginx (`keepalive 32`),
# HAProxy 2.6 (`http-reuse always`) and demos/proxy with the demand knobs
# off and on, each in front of the same nginx origin started here on
# 127.0.0.1, one after the other in one run (everything stopped at the end).
#
#   bench/demand_replay.sh [BUILD_DIR] [WAVES] [AFTER] [IDLE]
#
# (presets: build, 10 waves, 30 s, 30 s: under two minutes a row). After
# the quiet AFTER s all load stops, and IDLE s later the origin's
# established connections are counted: what each proxy still holds when
# nothing needs it. REPEAT=N (1) runs the two tidepool rows N times, in
# turns starting with knobs off and then with knobs on (off on, on off,
# off on, ...), and prints the median of the paired p99 ratios: on one
# shared CPU one run's p99 swings more than the knobs could move it. bench/demand_replay
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
# never queues a request), the client timeout as high as the others' (600
# s) and the preset --keep 60, with --demand 5000 --preconnect 90 for the
# "on" rows (bench_demand's knobs) and without for "off".
#
# KEEPS="N ..." (none preset) adds to each round a tidepool row with the
# knobs off and --keep N, named tide-keepN, the round's order turned by
# one each time so no row always runs first. With the preset keep 60 the
# knobs-off pool holds the burst's 100 connections through every quiet
# spell and never connects after the cold start; a keep shorter than the
# 2 s quiet spell (1) is the knobs-off pool that lets the burst's
# connections go between bursts, the other way a pool without the knobs
# keeps its footprint down, and connects again at each burst; keep 20
# outlasts the quiet spells and still has let the burst's go 30 s into the
# quiet load. The latency table then also shows the knobs-on row's p99 of
# the same round over each row's (on/p99), and a summary line each.
#
# TLS=1 puts the proxies' upstream connections on TLS: the origin also
# listens with ssl on a second port (a throwaway P-256 certificate made
# here, CN localhost, SAN localhost and 127.0.0.1; TLSv1.2 and TLSv1.3),
# nginx proxies to https:// (its defaults: sessions reused, nothing
# verified), HAProxy's server is "ssl verify none" (it resumes sessions
# by default), tidepool's upstream is tls:// with --ca the certificate
# (verified against the IP SAN). A connect then costs a handshake, not
# a loopback TCP connect's ~20 us: the script times openssl s_time's
# full and resumed handshakes against the origin, and a TLS table says
# how many of each proxy's new connections from the second burst on
# resumed a session (the origin's log, $ssl_session_reused). The plain
# port stays for stub_status (whose accepts count both ports), and the
# established connections counted are both ports'.
#
# Everything (client, proxy, origin) is pinned to one CPU, as in
# bench/proxy_bench.sh: on this 2-core machine unpinned figures swing 2-4x.
set -eu

BUILD=${1:-build}
WAVES=${2:-10}
AFTER=${3:-30}
IDLE=${4:-30}
REPEAT=${REPEAT:-1}
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
# TLS=1: the upstream connections go to a second, TLS port of the same
# server (the plain one keeps /status); the log's 4th field is "r" for a
# resumed session, "." for a full handshake, empty on the plain port
UP=$ORIGIN
TLS_ORIGIN=""
if [ "${TLS:-0}" = 1 ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -days 1 -keyout "$DIR/key.pem" -out "$DIR/cert.pem" 2>/dev/null ||
        fail "openssl cannot make a certificate"
    UP=$(free_port)
    TLS_ORIGIN="
        listen 127.0.0.1:$UP ssl;
        ssl_certificate $DIR/cert.pem;
        ssl_certificate_key $DIR/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;"
fi
start_nginx origin "$ORIGIN" "
    log_format replay '\$arg_v \$arg_w \$connection_requests \$ssl_session_reused';
    server {
        listen 127.0.0.1:$ORIGIN;$TLS_ORIGIN
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
    ss -Htn state established "( sport = :$ORIGIN or sport = :$UP )" | wc -l
}

# the cost of a connect over TLS: openssl s_time's connections one after
# the other, each a handshake and one GET of the file (without a read the
# client never takes TLS 1.3's tickets and -reuse resumes nothing), full
# handshakes (-new) or resuming (-reuse), pinned with the origin, so each
# takes the time both sides' CPU spends on it; timed here, as s_time
# says whole seconds
HANDSHAKE=""
if [ -n "$TLS_ORIGIN" ]; then
    for how in new reuse; do
        t0=$(date +%s%N)
        n=$($CPU openssl s_time -connect "127.0.0.1:$UP" -"$how" -time 3 \
            -www /index.html 2>/dev/null |
            awk '/connections in .* real seconds/ { print $1; exit }')
        t1=$(date +%s%N)
        HANDSHAKE="$HANDSHAKE $how $(awk -v n="${n:-0}" -v t="$((t1 - t0))" \
            'BEGIN { if (n > 0) printf "%.0f", t / 1000 / n; else printf "?" }') us"
    done
fi

# how each proxy reaches the origin: over TLS with each one's defaults
# (nginx resumes sessions, proxy_ssl_session_reuse on, and verifies
# nothing; HAProxy resumes and here verifies nothing; tidepool verifies
# the certificate, IP SAN 127.0.0.1)
SCHEME=http
HA_TLS=""
TIDE_UP=127.0.0.1:$UP
TIDE_CA=""
if [ -n "$TLS_ORIGIN" ]; then
    SCHEME=https
    HA_TLS=" ssl verify none"
    TIDE_UP=tls://127.0.0.1:$UP
    TIDE_CA="--ca $DIR/cert.pem"
fi

# VARIANT PORT: starts that proxy cold on PORT; its pid in $STARTED
start_proxy() {
    case $1 in
    nginx)
        start_nginx nginx "$2" "
    upstream origin {
        server 127.0.0.1:$UP;
        keepalive 32;
        keepalive_requests 10000000;
        keepalive_timeout 600s;
    }
    server {
        listen 127.0.0.1:$2;
        location / {
            proxy_pass $SCHEME://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }
    }"
        ;;
    haproxy)
        start_haproxy_at "$DIR/haproxy" "$2" "origin 127.0.0.1:$UP$HA_TLS"
        ;;
    tide-*)
        knobs=""
        case $1 in
        tide-on*) knobs="--demand 5000 --preconnect 90" ;;
        tide-keep*)
            n=${1#tide-keep}
            knobs="--keep ${n%%.*}"
            ;;
        esac
        # shellcheck disable=SC2086
        # a client connection may sit unused as long as in the other
        # proxies (600 s): its preset 60 s would close the 90 burst-only
        # callers' connections just as the idle spell ends
        $CPU "$PROXY" --listen "127.0.0.1:$2" \
            --upstream "$TIDE_UP" --pool-size 128 $knobs $TIDE_CA \
            --client-timeout 600000 \
            >"$DIR/$1.log" 2>&1 &
        STARTED=$!
        PIDS="$PIDS $STARTED"
        wait_port "$2"
        ;;
    esac
}

# the tidepool rows: REPEAT rounds of tide-off, tide-on and a tide-keepN
# for each N in KEEPS, each round's order the one before's turned by one
# (off on, on off, ...; off on keep1, on keep1 off, ...), named with .K
# (K from 1) when REPEAT > 1
if [ -z "${VARIANTS:-}" ]; then
    VARIANTS="nginx haproxy"
    ROUND="tide-off tide-on"
    for n in ${KEEPS:-}; do
        ROUND="$ROUND tide-keep$n"
    done
    k=1
    while [ $k -le "$REPEAT" ]; do
        sfx=""
        [ "$REPEAT" -eq 1 ] || sfx=".$k"
        for v in $ROUND; do
            VARIANTS="$VARIANTS $v$sfx"
        done
        # shellcheck disable=SC2086
        set -- $ROUND
        first=$1
        shift
        ROUND="$* $first"
        k=$((k + 1))
    done
fi
echo "demand_replay: $WAVES waves of 100 and 10 callers, 2 s each, then 10" \
    "for $AFTER s, then none for $IDLE s; origin nginx on" \
    "127.0.0.1:$ORIGIN; $PINNED; $(nproc) CPUs; in the order $VARIANTS"
[ -z "$TLS_ORIGIN" ] || echo "TLS: the proxies reach the origin on" \
    "127.0.0.1:$UP over TLS; a handshake (openssl s_time, both sides on" \
    "the one CPU, wall time each, with a GET):$HANDSHAKE"
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
    # DUMP=DIR keeps each request's phase, start and latency in DIR/$v.lat
    [ -z "${DUMP:-}" ] || stats="$stats --dump $DUMP/$v.lat"
    busy=$pid
    [ "$v" != nginx ] || busy=$(worker_of "$pid")
    c0=$(cpu_ns "$busy")
    o0=$(cpu_ns "$ORIGIN_WORKER")
    b0=$(cpu_busy_ns "$PIN_CPU")
    tls_port=""
    [ -z "$TLS_ORIGIN" ] || tls_port="--tls-port $UP"
    # shellcheck disable=SC2086
    $CPU "$CLIENT" --target "$port" --origin "$ORIGIN" --tag "$v" $tls_port \
        --waves "$WAVES" --after "$AFTER" --idle "$IDLE" --log "$DIR/origin.log" $stats \
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
    # TLS: from the second burst on, the first requests on a connection
    # whose handshake resumed a session (the log's "r") and on one whose
    # handshake was a full one
    [ -z "$TLS_ORIGIN" ] || awk -v t="$v" -v n="$((2 * WAVES))" '
        $1 == t && $2 >= 2 && $2 < n && $3 == 1 { if ($4 == "r") r++; else f++ }
        END { printf " resumed2=%d full2=%d\n", r, f }' "$DIR/origin.log" >>"$DIR/$v.out"
    tr '\n' ' ' <"$DIR/$v.out"
    echo
    stop "$pid"
done

# key=value lines into the tables
# shellcheck disable=SC2086
"$PYTHON" - "$DIR" $VARIANTS <<'EOF'
import statistics
import sys
d, names = sys.argv[1], sys.argv[2:]
rows = {}
for n in names:
    with open(f"{d}/{n}.out") as f:
        rows[n] = dict(kv.split("=", 1) for kv in f.read().split())
kind = lambda n: n.split(".")[0]
offs = [n for n in names if kind(n) == "tide-off"]
pair = lambda n: n.replace("tide-on", "tide-off")
# each knobs-on row against the knobs-off row of its pair (the same K),
# the others against the median knobs-off p99
def off_p99(n, k="p99"):
    if kind(n) == "tide-on" and pair(n) in rows:
        return float(rows[pair(n)][k])
    if offs:
        return statistics.median(float(rows[o][k]) for o in offs)
    return float("nan")
# the knobs-on row of n's round (the same K), the median knobs-on p99 for
# the rows outside the rounds (nginx, HAProxy)
keeps = [n for n in names if kind(n).startswith("tide-keep")]
onl = [n for n in names if kind(n) == "tide-on"]
def on_p99(n, k="p99"):
    on = "tide-on" + n[len(kind(n)):]
    if n.startswith("tide-") and on in rows:
        return float(rows[on][k])
    if onl:
        return statistics.median(float(rows[o][k]) for o in onl)
    return float("nan")
def cell(r, k):
    v = r.get(k, "-")
    if k in ("firstreq2", "waits2", "queued2") and v != "-":
        v = "%.2f%%" % (100 * float(v))
    return v
wn = max([10] + [len(n) for n in names])
def table(title, cols, extra=()):
    print(title)
    print("%-*s" % (wn, "variant") + "".join(" %11s" % h[:11] for _, h in cols)
          + "".join(" %9s" % h for h, _ in extra))
    for n in names:
        r = rows[n]
        print("%-*s" % (wn, n) + "".join(" %11s" % cell(r, k) for k, _ in cols)
              + "".join(" %9s" % f(n) for _, f in extra))
    print()
table("connections (the origin's accepts: in the warm-up, 10 requests at"
      " a time; new: over the square wave; b1, q1: in its first burst and"
      " quiet spell, the cold start; 2nd+: from the second burst on)",
      [("requests", "requests"), ("new_warm", "warm-up"), ("new", "new"),
       ("per1k", "new/1k"), ("new_b1", "new b1"), ("new_q1", "new q1"), ("new2", "new 2nd+"),
       ("per1k2", "/1k 2nd+"), ("firstreq2", "1stonconn2+"),
       ("queued2", "queued 2nd+"), ("waits2", "waited 2nd+"), ("new_tail", "new tail"),
       ("new_idle", "new idle"), ("preconnects", "ahead"),
       ("demand_retired", "shrunk"), ("errors", "errors")])
table("idle (the origin's established connections, AFTER s into the quiet"
      " load and IDLE s after all load stopped; the quiet load has 10 in"
      " flight)",
      [("live_after", "live quiet"), ("after_s", "quiet s"),
       ("idle_after", "idle stop"), ("idle_s", "stopped s"),
       ("idle_pool_live", "pool live"), ("quiet_need", "quiet need")])
table("latency (us; 2nd+: from the second burst on; slow: the requests at"
      " or above the p99: cold in the first wave, onset in a later burst's"
      " first 100 ms, burst later in one, quiet in a quiet spell)",
      [("p50", "p50"), ("p99", "p99"), ("p99_2", "p99 2nd+"),
       ("p50b", "p50 burst"), ("p99b", "p99 burst"), ("p50q", "p50 quiet"),
       ("p99q", "p99 quiet"), ("mean_b", "mean burst"),
       ("queue_b", "100/rate b"), ("slow", "slow"),
       ("slow_cold", "slow cold"), ("slow_onset", "slow onset"),
       ("slow_burst", "slow burst"), ("slow_quiet", "slow quiet"),
       ("waits_all", "waits all"), ("first_all", "1st on conn"),
       ("connect_us", "connect us"), ("wait_p99", "pool w p99"),
       ("cpu_us", "proxy us/rq"), ("others", "CPU others")],
      [("p99/off", lambda n: "%.2f" % (float(rows[n]["p99"]) / off_p99(n)))]
      # with tide-keepN rows, also the knobs-on row's p99 over this one's
      + ([("on/p99", lambda n: "%.2f" % (on_p99(n) / float(rows[n]["p99"])))]
         if keeps else []))
if any("resumed2" in rows[n] for n in names):
    table("TLS (from the second burst on: new, the origin's accepts, each a"
          " handshake; the first requests on a connection whose handshake"
          " resumed a session and on one whose was a full one, from the"
          " origin's log)",
          [("new2", "new 2nd+"), ("resumed2", "resumed"), ("full2", "full")])
ons = [n for n in names if kind(n) == "tide-on" and pair(n) in rows]
if ons:
    for k, what in (("p99", "over the square wave"),
                    ("p99_2", "from the second burst on")):
        ratios = [float(rows[n][k]) / off_p99(n, k) for n in ons]
        print("p99 knobs on / off %s, pair by pair: %s; median %.2f"
              % (what, " ".join("%.2f" % x for x in ratios),
                 statistics.median(ratios)))
    # each tide-keepN against the knobs-on row of its round
    for kk in sorted({kind(n) for n in keeps}, key=lambda x: int(x[9:])):
        ks = [n for n in keeps if kind(n) == kk]
        for k, what in (("p99", "over the square wave"),
                        ("p99_2", "from the second burst on")):
            ratios = [on_p99(n, k) / float(rows[n][k]) for n in ks]
            print("p99 knobs on / %s %s, pair by pair: %s; median %.2f"
                  % (kk, what, " ".join("%.2f" % x for x in ratios),
                     statistics.median(ratios)))
EOF
echo "goals (issue 27): new/1k <= 0.2 over the square wave (judged from" \
    "the second burst on; the cold start's ~90 are every pool's); >= 99%" \
    "served without waiting for a connect from the second burst on; idle" \
    "$IDLE s after the load stops <= 2x the quiet load's 10 in flight (20);" \
    "p99 <= 0.8x tidepool knobs off"
