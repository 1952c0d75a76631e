#!/bin/sh
# Throughput of GET /items?limit=10 on the items example (10 items stored,
# defaults: metrics and the memory rate limiter on, LOG_LEVEL=warn) against
# plain gin serving the same 10 items with c.JSON (plaingin/), with wrk,
# interleaved: each round runs both, in alternating order; the ratio is
# library req/s over plain gin req/s in the same round.
# Usage: wrkbench.sh [rounds] [seconds per run]
set -eu
rounds=${1:-7}
secs=${2:-5}
dir=$(mktemp -d)
trap 'kill $lib_pid $gin_pid 2>/dev/null || true; rm -rf "$dir"' EXIT
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
sleep 1
lib_url='http://127.0.0.1:18081/items?limit=10'
gin_url='http://127.0.0.1:18082/items?limit=10'
curl -fsS "$gin_url" >"$dir/gin.json"
cmp -s "$dir/items.json" "$dir/gin.json" || { echo "the two servers' items differ"; exit 1; }
wrk -t2 -c64 -d2s "$lib_url" >/dev/null
wrk -t2 -c64 -d2s "$gin_url" >/dev/null
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
rate() { wrk -t2 -c64 -d"${secs}s" "$1" | awk '/^Requests\/sec/ {print $2} /Non-2xx/ {print "NON2XX " $0 > "/dev/stderr"}'; }
echo "round library_rps plain_gin_rps ratio lib_server_cpu_s gin_server_cpu_s"
r=1
while [ "$r" -le "$rounds" ]; do
	l0=$(cpu $lib_pid); g0=$(cpu $gin_pid)
	if [ $((r % 2)) -eq 1 ]; then
		lib=$(rate "$lib_url"); gin=$(rate "$gin_url")
	else
		gin=$(rate "$gin_url"); lib=$(rate "$lib_url")
	fi
	l1=$(cpu $lib_pid); g1=$(cpu $gin_pid)
	tck=$(getconf CLK_TCK)
	echo "$r $lib $gin $(echo "$lib $gin" | awk '{printf "%.3f", $1/$2}') $(echo "$l0 $l1 $tck" | awk '{printf "%.1f", ($2-$1)/$3}') $(echo "$g0 $g1 $tck" | awk '{printf "%.1f", ($2-$1)/$3}')"
	r=$((r + 1))
done
