#!/bin/sh
# Throughput of GET /items?limit=10 on the items example (10 items stored,
# defaults: metrics and the memory rate limiter on, LOG_LEVEL=warn) against
# two floors serving the same 10 items with plain gin's c.JSON (plaingin/):
# "gin", the body only, and "ginh", also the headers the library sends
# (RateLimit-*, X-Content-Type-Options, X-Request-Id) with fixed values: the
# floor writing the same bytes. With wrk, interleaved: each round runs the
# three, the order rotating; a ratio is library req/s over a floor's req/s
# in the same round. The last line gives the medians.
# Usage: wrkbench.sh [rounds] [seconds per run]
set -eu
rounds=${1:-7}
secs=${2:-5}
dir=$(mktemp -d)
lib_pid='' gin_pid='' ginh_pid=''
trap 'kill $lib_pid $gin_pid $ginh_pid 2>/dev/null || true; rm -rf "$dir"' EXIT
cd "$(dirname "$0")"
go build -o "$dir/items" .
go build -o "$dir/plaingin" ./plaingin
PORT=18081 HOST=127.0.0.1 API_TOKEN=bench-token-0123456789 LOG_LEVEL=warn RATE_LIMIT_MAX=1000000000 \
	"$dir/items" >"$dir/items.log" 2>&1 &
lib_pid=$!
sleep 1
for i in 0 1 2 3 4 5 6 7 8 9; do
	curl -fsS -o /dev/null -H 'Authorization: Bearer bench-token-0123456789' -H 'Content-Type: application/json' \
		-d "{\"name\":\"Widget $i\",\"price\":$i.5,\"tags\":[\"tools\",\"blue\"]}" http://127.0.0.1:18081/items
done
curl -fsS 'http://127.0.0.1:18081/items?limit=10' >"$dir/items.json"
"$dir/plaingin" -addr 127.0.0.1:18082 -items "$dir/items.json" &
gin_pid=$!
"$dir/plaingin" -addr 127.0.0.1:18083 -items "$dir/items.json" -headers &
ginh_pid=$!
sleep 1
lib_url='http://127.0.0.1:18081/items?limit=10'
gin_url='http://127.0.0.1:18082/items?limit=10'
ginh_url='http://127.0.0.1:18083/items?limit=10'
for u in "$gin_url" "$ginh_url"; do
	curl -fsS "$u" >"$dir/gin.json"
	cmp -s "$dir/items.json" "$dir/gin.json" || { echo "the servers' items differ ($u)"; exit 1; }
done
# The same header names and value lengths (the date aside) on the library and ginh.
hdrs() { curl -fsS -D - -o /dev/null "$1" | tr -d '\r' | grep -iv '^date:' | sed 's/: .*$//' | sort; }
lens() { curl -fsS -D - -o /dev/null "$1" | tr -d '\r' | grep -iv '^date:' | awk '{print length($0)}' | sort -n | tr '\n' ' '; }
[ "$(hdrs "$lib_url")" = "$(hdrs "$ginh_url")" ] || { echo "ginh sends other headers than the library"; exit 1; }
[ "$(lens "$lib_url")" = "$(lens "$ginh_url")" ] || { echo "ginh's header lines differ in length from the library's"; exit 1; }
for u in "$lib_url" "$gin_url" "$ginh_url"; do wrk -t2 -c64 -d2s "$u" >/dev/null; done
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
rate() { wrk -t2 -c64 -d"${secs}s" "$1" | awk '/^Requests\/sec/ {print $2} /Non-2xx/ {print "NON2XX " $0 > "/dev/stderr"}'; }
tck=$(getconf CLK_TCK)
echo "round library_rps gin_rps ginh_rps lib/gin lib/ginh lib_cpu_s gin_cpu_s ginh_cpu_s"
r=1
out=$dir/rounds
while [ "$r" -le "$rounds" ]; do
	l0=$(cpu $lib_pid) g0=$(cpu $gin_pid) h0=$(cpu $ginh_pid)
	case $((r % 3)) in
	1) lib=$(rate "$lib_url") gin=$(rate "$gin_url") ginh=$(rate "$ginh_url") ;;
	2) gin=$(rate "$gin_url") ginh=$(rate "$ginh_url") lib=$(rate "$lib_url") ;;
	0) ginh=$(rate "$ginh_url") lib=$(rate "$lib_url") gin=$(rate "$gin_url") ;;
	esac
	l1=$(cpu $lib_pid) g1=$(cpu $gin_pid) h1=$(cpu $ginh_pid)
	echo "$r $lib $gin $ginh $l0 $l1 $g0 $g1 $h0 $h1 $tck" | awk '{printf "%d %s %s %s %.3f %.3f %.1f %.1f %.1f\n", $1, $2, $3, $4, $2/$3, $2/$4, ($6-$5)/$11, ($8-$7)/$11, ($10-$9)/$11}' | tee -a "$out"
	r=$((r + 1))
done
med() { sort -n | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else printf "%.3f\n", (v[NR/2]+v[NR/2+1])/2}'; }
echo "median lib/gin $(awk '{print $5}' "$out" | med) lib/ginh $(awk '{print $6}' "$out" | med)"
