#!/bin/sh
# serve_load.sh: HTTP load on `linattn serve` with wrk: requests/s and latency of a short completion.
#
#   bench/serve_load.sh [-e EXE] [-m CONFIG] [-c CONNS] [-d SECONDS] [-r REPEAT] [-n TOKENS]
#
# Starts EXE serve CONFIG on 127.0.0.1 (a free port, --threads 1) and stops it at the
# end, then for each number of connections in CONNS (comma-separated) runs
# `wrk -t1 -cN -dSECONDS --latency` REPEAT times against POST /v1/completions with
# {"prompt": "In the beginning", "max_tokens": TOKENS, "temperature": 0} and prints
# the median run's requests/s and latency p50, p90, p99 (wrk's), and any non-2xx
# replies. Defaults: build/linattn, configs/kjv-linear.ini, CONNS 1,4,16, 10 s, 3
# runs, 8 tokens. wrk comes with Debian's `wrk` (scripts/install-deps.sh --tests).
# wrk shares the machine with the server: pin both with taskset (taskset -c 0
# bench/serve_load.sh) to keep them off cores others measure on.
set -eu

exe=build/linattn
config=configs/kjv-linear.ini
conns=1,4,16
secs=10
repeat=3
ntok=8
while getopts e:m:c:d:r:n:h opt; do
    case "$opt" in
    e) exe=$OPTARG ;;
    m) config=$OPTARG ;;
    c) conns=$OPTARG ;;
    d) secs=$OPTARG ;;
    r) repeat=$OPTARG ;;
    n) ntok=$OPTARG ;;
    h) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "serve_load.sh: see -h" >&2; exit 2 ;;
    esac
done
die() { echo "serve_load.sh: $*" >&2; exit 1; }
command -v wrk >/dev/null 2>&1 || die "no wrk (Debian: apt-get install wrk, or scripts/install-deps.sh --tests)"
[ -x "$exe" ] || die "$exe: not an executable (build first: ninja -C build)"
[ -f "$config" ] || die "$config: no such config"

tmp=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

"$exe" serve "$config" --port 0 --threads 1 >/dev/null 2>"$tmp/err" &
pid=$!
port=
for _ in $(seq 1 500); do
    port=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$tmp/err")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || die "the server exited: $(cat "$tmp/err")"
    sleep 0.02
done
[ -n "$port" ] || die "the server did not say where it listens"

cat >"$tmp/post.lua" <<EOF
wrk.method = "POST"
wrk.body = '{"prompt": "In the beginning", "max_tokens": $ntok, "temperature": 0}'
wrk.headers["Content-Type"] = "application/json"
EOF
url="http://127.0.0.1:$port/v1/completions"
refused=$(wrk -t1 -c1 -d1s -s "$tmp/post.lua" "$url" 2>&1 | grep -c "Non-2xx" || true)
[ "$refused" = 0 ] || die "the completion request is refused: $(wrk -t1 -c1 -d1s -s "$tmp/post.lua" "$url" 2>&1 | tail -3)"

# wrk's latency in ms whatever its unit (us, ms, s)
ms() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /[0-9]s$/ && v !~ /ms$/) n *= 1000; printf "%.2f", n }'; }

printf '%5s %10s %9s %9s %9s %8s  %s\n' conns 'req/s' 'p50 ms' 'p90 ms' 'p99 ms' non-2xx 'runs req/s'
for c in $(echo "$conns" | tr , ' '); do
    : >"$tmp/runs"
    for r in $(seq 1 "$repeat"); do
        wrk -t1 -c"$c" -d"${secs}s" --latency -s "$tmp/post.lua" "$url" >"$tmp/out" 2>&1
        rps=$(awk '/^Requests\/sec:/ {print $2}' "$tmp/out")
        p50=$(ms "$(awk '$1 == "50%" {print $2}' "$tmp/out")")
        p90=$(ms "$(awk '$1 == "90%" {print $2}' "$tmp/out")")
        p99=$(ms "$(awk '$1 == "99%" {print $2}' "$tmp/out")")
        bad=$(awk '/Non-2xx/ {print $NF}' "$tmp/out")
        echo "$rps $p50 $p90 $p99 ${bad:-0}" >>"$tmp/runs"
    done
    # the median run by requests/s
    sort -n "$tmp/runs" | awk -v c="$c" -v n="$repeat" '
        { rps[NR] = $1; row[NR] = $0 }
        END {
            split(row[int((n + 1) / 2)], m, " ")
            all = rps[1]; for (i = 2; i <= n; i++) all = all "," rps[i]
            printf "%5d %10.1f %9.2f %9.2f %9.2f %8d  %s\n", c, m[1], m[2], m[3], m[4], m[5], all
        }'
done
