#!/bin/bash
# Instructions per GET /health on the server's main thread, under callgrind: steadier than req/s or CPU time
# on a shared machine (the count does not follow the machine's load; kernel time, e.g. the socket write, is not
# in it). Usage: flock /tmp/bench.lock bench/health/instructions.sh <tree|bare> [requests] [path]
#   <tree>: a built checkout (its bin/tollgate.js serve --roles api, PGlite in memory); bare: bare-server.mjs.
# Starts under valgrind uninstrumented (minutes on a busy machine), warms up with 20,000 requests, then counts
# `requests` (default 10,000) at 10 connections. Background compiler and GC threads are reported apart
# ("all threads"); compare the main-thread figure, and take the median of a few runs (±4 % run to run).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tree=$1; n=${2:-10000}; path=${3:-/health}
autocannon="$root/node_modules/.bin/autocannon"
dir=$(mktemp -d /tmp/tollgate-instructions-XXXX); data=$(mktemp -d /tmp/tollgate-instructions-data-XXXX)
if [ "$tree" = bare ]; then cmd=(node "$root/bench/health/bare-server.mjs"); else cmd=(node "$tree/bin/tollgate.js" serve --roles api); fi
TOLLGATE_DATA_DIR=$data API_PORT=0 DEVCHAIN_PORT=0 LOG_LEVEL=warn DATABASE_URL='' \
  valgrind --tool=callgrind --instr-atstart=no --smc-check=all-non-file --separate-threads=yes \
  --callgrind-out-file="$dir/cg.out.%p" "${cmd[@]}" >"$dir/stdout" 2>"$dir/stderr" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$data"' EXIT
for _ in $(seq 1 900); do grep -qE '^(api\s+|listening )http' "$dir/stderr" "$dir/stdout" && break; sleep 1; done
url=$(cat "$dir/stderr" "$dir/stdout" | grep -oE '^(api\s+|listening )http://\S+' | awk '{print $2}')
[ "$tree" = bare ] || curl -s "$url/ready" >/dev/null
"$autocannon" -c 10 -a 20000 "$url$path" >/dev/null 2>&1
callgrind_control -i on $pid >/dev/null 2>&1
"$autocannon" -c 10 -a "$n" "$url$path" >"$dir/autocannon.txt" 2>&1
callgrind_control -d $pid >/dev/null 2>&1
callgrind_control -i off $pid >/dev/null 2>&1
kill $pid; wait $pid || true
main=$(grep -h '^summary:' "$dir"/cg.out.*.1-01 | awk '{s += $2} END {print s}')
all=$(grep -h '^summary:' "$dir"/cg.out.*.1-* | awk '{s += $2} END {print s}')
echo "$tree $path: main thread $((main / n)) instructions/request, all threads $((all / n)) ($n requests; profiles in $dir)"
